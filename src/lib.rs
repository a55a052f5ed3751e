//! sbx: learn a sandbox policy from a real run, then enforce it.
//!
//! ```text
//! record:  cli::record ─► tracer(filter::record) ─► sink::Record ─► decode ─► trace::Writer
//! learn:   cli::learn  ─► trace::Reader ─► learn ─► profile::render ─► stdout
//! enforce: cli::enforce ─► profile::parse ─► policy::compile ─► filter::enforce ─► tracer
//!                       ─► sink::Enforce ─► decode ─► policy::decide ─► kill | deny | audit
//! ```
//!
//! Layers (a module uses only its own layer and those below):
//! - L3 `cli`: clap, anyhow, exit codes;
//! - L2 `sink`: connects the tracer to the pure core;
//! - L1 `tracer`: ptrace, fork/exec, `/proc`: the only `unsafe`;
//! - L0 everything else: pure data in, data out.

pub mod arch;
pub mod ci;
pub mod cli;
pub mod decode;
pub mod diff;
pub mod dns;
pub mod event;
pub mod explain;
pub mod fence;
pub mod filter;
pub mod fuzzing;
pub mod identity;
pub mod learn;
pub mod policy;
pub mod profile;
pub mod report;
pub mod show;
pub mod sink;
pub mod tid;
pub mod trace;
pub mod tracer;
