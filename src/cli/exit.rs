//! The one table of sbx's exit codes (documented in README.md and docs/exit-codes.md).
//!
//! sbx passes the workload's status through, so its own codes are taken from the range shells
//! and coreutils (`env`, `timeout`, `nice`) already reserve for the wrapper.

/// Success (and, for `record`/`enforce --mode audit`, the workload's own 0).
pub const OK: u8 = 0;
/// `sbx check`: the profile is invalid.
pub const INVALID: u8 = 1;
/// Command-line usage error (clap's convention).
pub const USAGE: u8 = 2;
/// `enforce`: a policy violation was found (kill or deny mode).
pub const VIOLATION: u8 = 124;
/// sbx itself failed: bad input (profile, trace), unsupported kernel, tracer error.
pub const SBX_ERROR: u8 = 125;
/// The command was found but could not be executed.
pub const NOT_EXECUTABLE: u8 = 126;
/// The command was not found.
pub const NOT_FOUND: u8 = 127;
/// Interrupted twice (a second Ctrl-C or SIGTERM while the workload went on): sbx killed the
/// tree. 128 + SIGINT, as a shell reports an interrupted command.
pub const INTERRUPTED: u8 = 130;
/// `--timeout` passed: sbx killed the tree (128 + SIGKILL), whether or not the root process
/// had already exited (a daemon it left behind kept the run going).
pub const TIMED_OUT: u8 = 137;

/// Map a workload status (code, or 128+N for signal N) into the u8 range.
pub fn workload(code: i32) -> u8 {
    u8::try_from(code.clamp(0, 255)).unwrap_or(SBX_ERROR)
}
