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
    let arch = Arch::native();
    let spec = FilterSpec {
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
    let file = File::create(&a.output).with_context(|| format!("cannot create {:?}", a.output))?;
    let writer = TraceWriter::new(BufWriter::new(file), &header)
        .with_context(|| format!("cannot write {:?}", a.output))?;
    let mut sink = RecordSink::new(arch, writer);
    super::note_no_new_privs();
    let mut status = super::status::StatusSink::new(&mut sink);
    let result = Tracer::run(&a.command, &programs, &mut status);
    status.clear();
    if super::verbose() {
        eprintln!("{}", status.summary());
    }
    let writer = sink.finish()?;
    writer
        .finish()
        .with_context(|| format!("cannot write {:?}", a.output))?;
    match result {
        Ok(w) => Ok(exit::workload(w.code())),
        Err(e) => super::tracer_error(e),
    }
}
