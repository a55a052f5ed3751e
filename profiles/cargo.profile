# cargo: Rust's package manager and the rustup toolchains. Shipped with sbx (`include cargo`,
# added by `sbx learn` when the trace ran cargo or rustc). Rooted in ${CARGO_HOME} and
# ${RUSTUP_HOME}, which are ${HOME}/.cargo and ${HOME}/.rustup when unset, as cargo and rustup
# decide (the rust Docker images set /usr/local/cargo and /usr/local/rustup).
# ${CARGO_HOME}/credentials.toml holds the registry token and is not allowed here.

include base

# cargo: the identity of `cargo` for rights bound to it. Build scripts and proc-macros run
# as their own programs (or inside rustc), never as cargo. rustup's proxies in .cargo/bin are
# links to rustup, and a program's identity is the file that runs: rustup, which then runs
# the toolchain's cargo (or rustc, which is not cargo). Where rustup lives does not follow
# HOME (CARGO_HOME, RUSTUP_HOME; /usr/local in the rust Docker images).
program cargo /**/.cargo/bin/{cargo,rustup}
# The toolchains' cargo that rustup's proxy runs.
program cargo /**/.rustup/toolchains/*/bin/cargo
# The rust Docker images (CARGO_HOME=/usr/local/cargo, RUSTUP_HOME=/usr/local/rustup).
program cargo /usr/local/{cargo/bin/{cargo,rustup},rustup/toolchains/*/bin/cargo}
# cargo from a distribution package.
program cargo /usr/bin/cargo

# rustup's proxies (cargo, rustc, rustdoc...) in cargo's bin directory.
exec ${CARGO_HOME}/bin/*
# The toolchains' programs (rustc, cargo, the linker wrapper).
exec ${RUSTUP_HOME}/toolchains/*/bin/*
# The toolchains' libraries and rustup's settings.
read ${RUSTUP_HOME}/**
# cargo's configuration (no credentials: those are in credentials.toml).
read ${CARGO_HOME}/{config,config.toml}
# The registry: index cache, downloaded .crate files and their unpacked sources, the tool's
# own store whether this run finds it warm or cold, read by everything that compiles.
read ${CARGO_HOME}/registry/**
# ...written by cargo alone: a build script or proc-macro (its own program, started by cargo)
# rewriting another crate's sources under registry/src would poison every later build.
own ${CARGO_HOME}/registry by cargo
# git dependencies, read by everything that compiles them.
read ${CARGO_HOME}/git/**
# ...checked out by cargo alone (same risk as the registry).
own ${CARGO_HOME}/git by cargo
# cargo's lock on its package cache.
own ${CARGO_HOME}/.package-cache
# ...and the lock it takes to change the cache.
own ${CARGO_HOME}/.package-cache-mutate
# cargo's SQLite database of when each cached crate was last used, and its journal: written
# only when the stored times are a few minutes old, so a run recorded right after another
# never shows the journal. See: docs/real-world.md cargo (a rebuild killed 7 minutes later).
own ${CARGO_HOME}/.global-cache
# ...the journal SQLite keeps beside it while it writes (rollback or WAL mode).
own ${CARGO_HOME}/.global-cache-{journal,wal,shm}
# SQLite opens the database's directory to sync it after a write (its list of names only).
read ${CARGO_HOME}
# On a fresh HOME cargo creates its home itself.
create ${CARGO_HOME}
