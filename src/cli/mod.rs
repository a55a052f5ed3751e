//! The command line: clap definitions (their doc comments are the `--help`) and dispatch.
//! Only this layer uses `anyhow`; it adds the context (file names) errors need.

pub mod exit;
pub mod record;

use std::ffi::OsString;
use std::path::PathBuf;

use clap::{Parser, Subcommand};

/// sbx: learn a sandbox policy from a real run, then enforce it.
///
/// Exit codes: the workload's own status (128+N when killed by signal N); 124 policy
/// violation; 125 sbx error (bad profile or trace, unsupported kernel); 126 command not
/// executable; 127 command not found; 2 usage error.
#[derive(Debug, Parser)]
#[command(name = "sbx", version, about, long_about)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a command under the tracer and write what it does to a trace.
    ///
    /// Example: sbx record -o npm.trace -- npm install
    Record(RecordArgs),
}

#[derive(Debug, clap::Args)]
pub struct RecordArgs {
    /// Where to write the trace.
    #[arg(short, long, default_value = "trace.bin")]
    pub output: PathBuf,
    /// Also stop on metadata syscalls (stat, access, readlink...): slower, finer profiles.
    #[arg(long)]
    pub metadata: bool,
    /// The command to run, after `--`.
    #[arg(required = true, trailing_var_arg = true, allow_hyphen_values = true)]
    pub command: Vec<OsString>,
}

/// Run the parsed command; returns the process exit code.
pub fn run(cli: Cli) -> anyhow::Result<u8> {
    match cli.command {
        Command::Record(a) => record::run(a),
    }
}

/// The trace header for a run of `argv` starting now.
pub fn header(arch: crate::arch::Arch, argv: &[OsString], metadata: bool) -> crate::trace::Header {
    use std::os::unix::ffi::{OsStrExt, OsStringExt};
    let env_bytes = |k: &str| std::env::var_os(k).map(OsStringExt::into_vec).unwrap_or_default();
    let tmpdir = std::env::var_os("TMPDIR")
        .filter(|t| !t.is_empty())
        .map(OsStringExt::into_vec)
        .unwrap_or_else(|| b"/tmp".to_vec());
    let uid = nix::unistd::getuid();
    let user = nix::unistd::User::from_uid(uid)
        .ok()
        .flatten()
        .map(|u| u.name)
        .unwrap_or_else(|| uid.to_string());
    crate::trace::Header {
        sbx_version: env!("CARGO_PKG_VERSION").to_string(),
        arch,
        kernel: nix::sys::utsname::uname()
            .map(|u| u.release().to_string_lossy().into_owned())
            .unwrap_or_default(),
        argv: argv.iter().map(|a| a.as_bytes().to_vec()).collect(),
        cwd: std::env::current_dir().map(|d| d.into_os_string().into_vec()).unwrap_or_default(),
        home: env_bytes("HOME"),
        tmpdir,
        uid: uid.as_raw(),
        gid: nix::unistd::getgid().as_raw(),
        user,
        start_unix: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0),
        metadata,
    }
}

/// Turn a tracer error into sbx's exit code, printing the one-line message.
pub fn tracer_error(e: crate::tracer::Error) -> anyhow::Result<u8> {
    use crate::tracer::Error;
    match e {
        Error::CommandNotFound { .. } => {
            eprintln!("sbx: error: {e}");
            Ok(exit::NOT_FOUND)
        }
        Error::NotExecutable { .. } => {
            eprintln!("sbx: error: {e}");
            Ok(exit::NOT_EXECUTABLE)
        }
        e => Err(e.into()),
    }
}
