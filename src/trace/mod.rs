//! The trace file (design.md section 6, docs/trace-format.md): a [`Header`] followed by
//! length-delimited postcard frames, written as events happen.
//!
//! `writer` streams events through a buffer and interns repeated strings; `reader` reads them
//! back, bounds every length before allocating, reads a trace cut short up to its last whole
//! record (with a warning) and rejects garbage with a one-line error. Pure over `Read`/`Write`.

pub mod reader;
mod wire;
pub mod writer;

pub use reader::{ReadError, ReadErrorKind, TraceReader};
pub use writer::{TraceWriter, WriteError};

use serde::{Deserialize, Serialize};

use crate::arch::Arch;

/// The first bytes of every trace file.
pub const MAGIC: [u8; 8] = *b"SBXTRACE";
/// Bumped on any incompatible change; readers refuse newer versions.
pub const FORMAT_VERSION: u32 = 6;

/// Who ran what, where: everything learn needs to abstract paths into variables.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Header {
    /// The sbx version that wrote the trace.
    pub sbx_version: String,
    pub arch: Arch,
    /// `uname -r` of the recording machine.
    pub kernel: String,
    /// The workload command line.
    pub argv: Vec<Vec<u8>>,
    /// The directory the workload started in (`${CWD}`).
    pub cwd: Vec<u8>,
    /// `$HOME` (`${HOME}`), empty if unset.
    pub home: Vec<u8>,
    /// `$TMPDIR` or `/tmp` (`${TMPDIR}`).
    pub tmpdir: Vec<u8>,
    /// The user sbx ran as.
    pub uid: u32,
    pub gid: u32,
    pub user: String,
    /// Wall-clock start time, seconds since the Unix epoch.
    pub start_unix: u64,
    /// Whether metadata syscalls were recorded (`--metadata`).
    pub metadata: bool,
}
