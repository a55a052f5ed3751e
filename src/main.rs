//! The `sbx` binary: parse the command line, run, map the result to an exit code.

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = sbx::cli::Cli::parse();
    match sbx::cli::run(cli) {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            if let Some(io) = e.downcast_ref::<std::io::Error>()
                && io.kind() == std::io::ErrorKind::BrokenPipe
            {
                return ExitCode::SUCCESS;
            }
            eprintln!("sbx: error: {e:#}");
            ExitCode::from(sbx::cli::exit::SBX_ERROR)
        }
    }
}
