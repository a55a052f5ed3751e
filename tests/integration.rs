//! Integration tests: real processes under real ptrace, one binary with topic modules.

/// Dir, Sbx builder with a hang guard, fixtures, trace reading.
mod util;

/// sbx record: the tracer core and the trace it writes.
mod record;

/// sbx show / stats on real traces, and a differential check against strace -f.
mod show;

/// Bad trace input, truncated traces, and the small CLI commands (check, diff, profiles).
mod trace_cli;

/// Hostile input: traces crafted to expand read within a memory bound, names with terminal
/// control bytes printed escaped, and the bounded fuzz pass over the trace and profile
/// readers.
mod hostile;

/// Learn quality on real recorded runs: stability, portability, tightness, determinism.
mod learn;

/// sbx explain on real runs (npm, make, sh): evidence per rule, --check, learn --annotate.
mod explain;

/// Temp names of the real generators (Python, mktemp, Node, nanoid, Rust's tempfile, Go):
/// learned from one name, the rule admits the generator's next 10,000 and no sibling.
mod tempnames;

/// sbx enforce: each verb stopped, modes, report, diff, fail-closed cases, no false alarms.
mod enforce;

/// The attack suite: real attacks with benign twins, bare vs enforce (`attacks: X/Y stopped`).
mod attacks;

/// The bundled examples end to end: record -> learn -> enforce passes (same and another dir),
/// the compromised npm install and a tampered Makefile are killed and leave nothing on disk.
mod examples;

/// Host-name rules in a private network with its own DNS server: egress by name, DNS queries
/// checked, the attacker's server receives nothing.
mod net;

/// Learned profiles across ecosystems (npm, pnpm, yarn, pytest, cargo, autoconf+make, git,
/// pip, uv): the current releases through `bash -c` (row `ci`) and the machine's tools (row
/// `system`), S1-S5 in kill mode and the tightness checks.
mod ecosystems;

/// Rights bound to programs (`by`): npm's token, registry and environment stay npm's, an
/// install script that reaches for them is killed; a pipeline stage keeps its own peer.
mod scoping;

/// The kernel fence alone (issue 40): Landlock rights from learned make, pip and npm profiles
/// refuse a secret read, a ~/.bashrc write and a stray exec with the ptrace checks off.
mod fence;

/// What CI reads: job summary, annotations at the profile line, SARIF (schema-validated),
/// Code Quality, and the GitHub Action's steps in a simulated runner with a tool cache.
mod ci;

/// Container conditions (a runtime's default seccomp profile, dropped capabilities, a
/// non-root user) reproduced with a small seccomp loader and setpriv.
mod containers;

/// The syscall ABI under enforce: argument registers the guard re-points are put back.
mod regs;

/// `--gdb`: the real gdb in batch mode debugs a workload under enforce and record.
mod gdb;
