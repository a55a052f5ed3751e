//! `sbx show` and `sbx stats`: read a trace and print it.

use std::fs::File;
use std::io::{BufReader, BufWriter, Write};
use std::path::Path;

use anyhow::Context;

use super::{ShowArgs, StatsArgs};
use crate::show::{Filter, NameLinks, Stats, event_json, format_event, terminal_line};
use crate::trace::TraceReader;

/// Open a trace, with the file name in every error.
pub fn open_trace(path: &Path) -> anyhow::Result<TraceReader<BufReader<File>>> {
    let f = File::open(path).with_context(|| format!("cannot open trace {}", path.display()))?;
    TraceReader::new(BufReader::with_capacity(1 << 16, f)).map_err(|e| {
        use crate::trace::reader::ReadErrorKind as K;
        let hint = match e.kind {
            K::BadMagic | K::Empty => {
                " (hint: sbx reads the binary traces written by `sbx record -o FILE -- CMD`)"
            }
            K::NewerVersion { .. } => " (hint: read it with the sbx version that wrote it)",
            K::BadVersion(_) => " (hint: this trace comes from an older sbx; record it again)",
            _ => "",
        };
        anyhow::anyhow!("{}: {e}{hint}", path.display())
    })
}

/// Iterate the events of a trace, calling `f` on each; a truncated tail is a warning, a
/// corrupt record an error.
pub fn for_each_event(
    path: &Path,
    f: impl FnMut(&crate::trace::Header, &crate::event::Event) -> anyhow::Result<()>,
) -> anyhow::Result<crate::trace::Header> {
    scan(path, true, f)
}

/// Like [`for_each_event`]; `warn` says whether to warn about a truncated tail (a first pass
/// over a trace that is read twice stays quiet).
pub fn scan(
    path: &Path,
    warn: bool,
    mut f: impl FnMut(&crate::trace::Header, &crate::event::Event) -> anyhow::Result<()>,
) -> anyhow::Result<crate::trace::Header> {
    let mut r = open_trace(path)?;
    let header = r.header().clone();
    for ev in r.by_ref() {
        let ev = ev.map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
        f(&header, &ev)?;
    }
    if let Some(off) = r.truncated().filter(|_| warn && super::chatty()) {
        eprintln!(
            "sbx: warning: {}: trace cut short at byte {off} (the recorder was killed?); read up to the last whole record",
            path.display()
        );
    }
    Ok(header)
}

pub fn run_show(a: ShowArgs) -> anyhow::Result<u8> {
    let path_glob = match &a.path {
        Some(g) => match crate::profile::parse::glob_builder(g).build() {
            Ok(glob) => Some(glob.compile_matcher()),
            Err(e) => return super::usage_error(&format!("bad --path glob {g:?}: {e}")),
        },
        None => None,
    };
    // A name no table knows would silently match nothing (strace refuses it too).
    if let Some(n) = a.syscall.iter().find(|n| {
        [crate::arch::Arch::X86_64, crate::arch::Arch::Aarch64]
            .iter()
            .all(|arch| arch.by_name(n).is_none())
    }) {
        return super::usage_error(&format!(
            "unknown syscall {n:?} for --syscall (not in sbx's x86_64 or aarch64 table; see `sbx syscalls`)"
        ));
    }
    let filter = Filter {
        pids: a.pid,
        comms: a.comm,
        syscalls: a.syscall,
        path_glob,
    };
    let stdout = std::io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    // Every event (filtered or not) teaches the links: a connect is shown with the names that
    // resolved to its address earlier in the run.
    let mut links = NameLinks::default();
    for_each_event(&a.trace, |h, ev| {
        let names = links.observe(ev);
        if !filter.matches(ev) {
            return Ok(());
        }
        if a.json {
            let mut v = event_json(ev, h.arch);
            if !names.is_empty() {
                v["peer_names"] = serde_json::json!(names);
            }
            // Serialized first, then written: a write error stays an io::Error for main's
            // BrokenPipe check (tests/trace_cli.rs show_into_a_closed_pipe_is_quiet).
            let text = serde_json::to_string(&v).map_err(std::io::Error::from)?;
            out.write_all(crate::show::terminal_json(&text).as_bytes())?;
            out.write_all(b"\n")?;
        } else if names.is_empty() {
            writeln!(out, "{}", terminal_line(&format_event(ev, h.arch)))?;
        } else {
            let line = format!("{} [{}]", format_event(ev, h.arch), names.join(", "));
            writeln!(out, "{}", terminal_line(&line))?;
        }
        Ok(())
    })?;
    out.flush()?;
    Ok(super::exit::OK)
}

pub fn run_stats(a: StatsArgs) -> anyhow::Result<u8> {
    let mut stats = Stats::new();
    let mut n: u64 = 0;
    let header = for_each_event(&a.trace, |_, ev| {
        n += 1;
        if !a.count {
            stats.add(ev);
        }
        Ok(())
    })?;
    // See: tests/trace_cli.rs show_into_a_closed_pipe_is_quiet. `print!` panics on a closed
    // pipe; write_all returns the BrokenPipe error that main turns into a quiet exit.
    let text = if a.count {
        format!("{n}\n")
    } else {
        stats.render(&header)
    };
    let text = crate::show::terminal_text(&text);
    std::io::stdout().lock().write_all(text.as_bytes())?;
    Ok(super::exit::OK)
}
