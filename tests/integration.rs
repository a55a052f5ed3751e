//! Integration tests: real processes under real ptrace, one binary with topic modules.

/// Dir, Sbx builder with a hang guard, fixtures, trace reading.
mod util;

/// sbx record: the tracer core and the trace it writes.
mod record;

/// sbx show/stats on real traces: text lines, filters, JSON Lines, and a strace cross-check.
mod show;

/// The trace CLI on bad input (garbage, versions, cuts, killed recorder), profile commands, size.
mod trace_cli;

/// The attack suite: real attacks with benign twins, bare vs enforce (`attacks: X/Y stopped`).
mod attacks;
