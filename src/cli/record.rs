//! `sbx record`: run the workload under the record filter and write the trace.

use std::fs::File;
use std::io::BufWriter;

use anyhow::Context;

use super::RecordArgs;
use super::exit;
use crate::arch::Arch;
use crate::filter::{self, FilterMode, FilterSpec};
use crate::sink::record::RecordSink;
use crate::trace::TraceWriter;
use crate::tracer::Tracer;

pub fn run(a: RecordArgs) -> anyhow::Result<u8> {
    // Checked and bound before the trace file is created.
    let gdb = match super::gdb_listener(a.gdb.as_deref())? {
        Ok(l) => l,
        Err(code) => return Ok(code),
    };
    super::check_environment()?;
    let arch = Arch::native();
    let spec = FilterSpec {
        cwd_changes: false,
        arch,
        mode: FilterMode::Record,
        metadata: a.metadata,
        guard: None,
        dns: true,
        queries: false,
    };
    let programs = filter::build(&spec).context("cannot build the seccomp filter")?;
    super::describe_filter(arch, &programs, &spec);
    let header = super::header(arch, &a.command, a.metadata);
    // Written beside the output and renamed over it when the run succeeded: a failed run
    // never replaces an earlier trace with a shorter one (a recorder killed meanwhile leaves
    // the partial file, readable up to its last whole record).
    // A device or a link as output (`-o /dev/null`) is written in place, never renamed over.
    let in_place = !super::replaceable(&a.output);
    let partial = if in_place {
        a.output.clone()
    } else {
        partial_name(&a.output)
    };
    let file = File::create(&partial).with_context(|| format!("cannot create {partial:?}"))?;
    let writer = TraceWriter::new(BufWriter::new(file), &header)
        .with_context(|| format!("cannot write {partial:?}"))?;
    let own: Vec<Vec<u8>> = [&partial, &a.output]
        .iter()
        .filter_map(|p| absolute(p))
        .collect();
    let mut sink = RecordSink::new(arch, writer).ignoring(own);
    super::note_no_new_privs();
    let mut status = super::status::StatusSink::new(&mut sink);
    let result = Tracer::run_with(
        &a.command,
        &programs,
        &[],
        a.timeout.map(Into::into),
        gdb,
        &mut status,
    );
    status.clear();
    if super::verbose() {
        eprintln!("{}", status.summary());
    }
    let writer = sink.finish()?;
    writer
        .finish()
        .with_context(|| format!("cannot write {partial:?}"))?;
    let succeeded = matches!(&result, Ok(w) if w.code() == 0);
    // sbx could not set the run up (a refused kernel feature): the workload never started and
    // there is no trace to keep, whatever was there before.
    let refused = matches!(
        &result,
        Err(crate::tracer::Error::Refused { .. } | crate::tracer::Error::Attach(_))
    );
    if refused {
        if !in_place {
            let _ = std::fs::remove_file(&partial);
        }
    } else if !in_place && (succeeded || !a.output.exists()) {
        std::fs::rename(&partial, &a.output)
            .with_context(|| format!("cannot rename {partial:?} to {:?}", a.output))?;
    } else if !in_place
        && matches!(
            &result,
            Err(crate::tracer::Error::CommandNotFound { .. }
                | crate::tracer::Error::NotExecutable { .. })
        )
    {
        // The workload never started: nothing worth keeping beside the earlier trace (the
        // error says why, once).
        let _ = std::fs::remove_file(&partial);
    } else if !in_place {
        eprintln!(
            "sbx: the run failed: its trace is in {}, beside {} (not replaced)",
            partial.display(),
            a.output.display()
        );
    }
    match result {
        Ok(w) if w.timed_out => {
            if let Some(t) = a.timeout {
                eprintln!("sbx: the workload ran longer than --timeout {t}: killed");
            }
            Ok(exit::TIMED_OUT)
        }
        Ok(w) if w.interrupted => {
            eprintln!("sbx: interrupted twice: killed the workload");
            Ok(exit::INTERRUPTED)
        }
        Ok(w) => Ok(exit::workload(w.code())),
        Err(e) => super::tracer_error(e),
    }
}

/// `DIR/.NAME.sbx-partial` beside `output`.
fn partial_name(output: &std::path::Path) -> std::path::PathBuf {
    let name = output
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "trace.bin".into());
    output.with_file_name(format!(".{name}.sbx-partial"))
}

/// `p` made absolute with symlinks of its directory resolved (as the tracer names paths).
fn absolute(p: &std::path::Path) -> Option<Vec<u8>> {
    use std::os::unix::ffi::OsStrExt;
    let dir = match p.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.canonicalize().ok()?,
        _ => std::env::current_dir().ok()?.canonicalize().ok()?,
    };
    Some(dir.join(p.file_name()?).as_os_str().as_bytes().to_vec())
}
