//! Integration tests: real processes under real ptrace, one binary with topic modules.

/// Dir, Sbx builder with a hang guard, fixtures, trace reading.
mod util;

/// sbx record: the tracer core and the trace it writes.
mod record;

/// sbx enforce: each verb stopped, modes, report, diff, fail-closed cases, no false alarms.
mod enforce;
