#!/usr/bin/env bash
# aarch64 CI (issue 8; docs/aarch64.md): cross-build sbx for aarch64-unknown-linux-gnu and run
# the pure unit tests under qemu-user. Called by .ci/run; runs as root on Debian.
#
# What this proves and what it cannot (qemu-user emulates no ptrace and no seccomp filters, so
# nothing that traces or filters a workload runs here; .ci/aarch64-vm.sh does that in a
# full-system VM) is written down in docs/aarch64.md.
#
# Unit tests that need the host kernel's ptrace, seccomp or fork live in modules named `live`
# (src/filter.rs: `tests::live`, also cfg(target_arch = "x86_64") because it runs `int 0x80`);
# `--skip ::live::` keeps them out of the qemu run should one ever be compiled for aarch64.
set -euo pipefail
cd "$(dirname "$0")/.."

target=aarch64-unknown-linux-gnu
export DEBIAN_FRONTEND=noninteractive

# Cross linker + sysroot (also the aarch64 kernel headers the table test reads) and qemu-user.
if ! command -v aarch64-linux-gnu-gcc >/dev/null || ! command -v qemu-aarch64 >/dev/null \
  || [ ! -e /usr/aarch64-linux-gnu/include/asm/unistd.h ]; then
  apt-get update -qq
  apt-get install -y -qq gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user >/dev/null
fi
rustup target add "$target"

# .cargo/config.toml names the linker and the runner (qemu-aarch64 -L /usr/aarch64-linux-gnu).
cargo build --locked --target "$target"

# Lints of the cfg(target_arch = "aarch64") code, which the x86_64 clippy run never sees. The
# crate is clippy-clean on both targets and .ci/run always sets SBX_AARCH64_CLIPPY=1; unset, a
# quick local run skips these ~20 s.
if [ -n "${SBX_AARCH64_CLIPPY:-}" ]; then
  cargo clippy --locked --target "$target" --all-targets -- -D warnings
fi

# The pure unit tests, under qemu-aarch64. SBX_REQUIRE_KERNEL_HEADERS turns the "headers not
# installed" skip of arch::tests::tables_match_installed_kernel_headers into a failure.
SBX_REQUIRE_KERNEL_HEADERS=1 cargo test --locked --target "$target" --lib -- --skip ::live::
