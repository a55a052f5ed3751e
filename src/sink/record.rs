//! The record sink: every stopped syscall is decoded, completed with its result at syscall
//! exit, and written to the trace together with spawn, exec and exit events.

use std::io::Write;

use crate::arch::{Arch, Class};
use crate::decode::ExecArgs;
use crate::event::{
    Event, EventKind, Exec, Exit, ExitStatus, Object, Outcome, ProcInfo, Resolved, Spawn, SpawnVia,
    Syscall,
};
use crate::trace::TraceWriter;
use crate::tracer::{Error, ExecFile, Sink, SyscallStop, TaskRef, Verdict};

#[derive(Debug)]
struct Pending {
    time_ns: u64,
    pid: i32,
    proc: ProcInfo,
    syscall: Syscall,
    exec: Option<ExecArgs>,
}

/// Writes what the workload does into a trace.
#[derive(Debug)]
pub struct RecordSink<W: Write> {
    arch: Arch,
    writer: TraceWriter<W>,
    /// Syscalls waiting for their exit stop, by tid.
    pending: crate::tid::TidMap<Pending>,
    links: super::LinkCache,
    /// DNS answers and /etc/hosts names, written as `Resolved` events.
    dns: super::dns::DnsTracker,
    /// Whether the root of the tree has exec'd (before that it is sbx's own spawn code).
    root_exec_seen: bool,
    /// The environment variables enforce removed from the program of the next exec event.
    thinned: Vec<Vec<u8>>,
    /// When the trace was last flushed at a process boundary (event time).
    flushed_ns: u64,
    /// sbx's own files (the trace being written, the one it will replace): a workload that
    /// scans its directory touches them, and they are no part of what it does.
    own_files: Vec<Vec<u8>>,
}

/// The trace is flushed at an exec or the end of a process if this much time passed since
/// the last such flush (the buffer is written whenever it fills, too): a recorder killed by
/// SIGKILL loses at most the events of the last 100 ms before its last process boundary,
/// and a loop of short processes does not pay a `write` for each.
const FLUSH_EVERY_NS: u64 = 100_000_000;

impl<W: Write> RecordSink<W> {
    /// The environment variables enforce removed from the program of the next exec event
    /// (written with it: `sbx show` marks the exec).
    pub fn exec_thinned(&mut self, names: Vec<Vec<u8>>) {
        self.thinned = names;
    }

    pub fn new(arch: Arch, writer: TraceWriter<W>) -> Self {
        RecordSink {
            arch,
            writer,
            pending: Default::default(),
            links: super::LinkCache::default(),
            dns: super::dns::DnsTracker::default(),
            root_exec_seen: false,
            thinned: Vec::new(),
            flushed_ns: 0,
            own_files: Vec::new(),
        }
    }

    /// Leave accesses to these absolute paths (sbx's own output) out of the trace.
    pub fn ignoring(mut self, paths: Vec<Vec<u8>>) -> Self {
        self.own_files = paths;
        self
    }

    /// Flush and hand back the writer.
    pub fn finish(mut self) -> Result<TraceWriter<W>, Error> {
        for (tid, p) in std::mem::take(&mut self.pending) {
            self.write_syscall(tid, p, Outcome::Unknown)?;
        }
        Ok(self.writer)
    }

    /// The syscall `tid` is stopped in will not return normally (refused or killed by
    /// enforce): write it now with `outcome`.
    pub fn complete(&mut self, tid: i32, outcome: Outcome) -> Result<(), Error> {
        match self.pending.remove(&tid) {
            Some(p) => self.write_syscall(tid, p, outcome),
            None => Ok(()),
        }
    }

    pub fn events_written(&self) -> u64 {
        self.writer.events_written()
    }

    fn write(&mut self, ev: &Event) -> Result<(), Error> {
        self.writer
            .write(ev)
            .map_err(|e| Error::Sink(format!("cannot write the trace: {e}")))
    }

    /// Flush at a process boundary, at most every [`FLUSH_EVERY_NS`].
    fn flush_at_boundary(&mut self, time_ns: u64) {
        if time_ns.saturating_sub(self.flushed_ns) >= FLUSH_EVERY_NS {
            self.flushed_ns = time_ns;
            let _ = self.writer.flush();
        }
    }

    fn write_resolved(&mut self, stop: &SyscallStop<'_>, r: Resolved) -> Result<(), Error> {
        self.write(&Event {
            time_ns: stop.time_ns,
            pid: stop.pid,
            tid: stop.tid,
            proc: stop.proc.clone(),
            kind: EventKind::Resolved(r),
        })
    }

    /// Write a syscall with its outcome. Every recorded call passes here once: what it
    /// changed (when it succeeded) is forgotten by the symlink cache now.
    fn write_syscall(&mut self, tid: i32, p: Pending, outcome: Outcome) -> Result<(), Error> {
        let mut syscall = p.syscall;
        syscall.outcome = outcome;
        match self
            .arch
            .by_nr(u64::from(syscall.nr))
            .filter(|d| d.name == syscall.name)
        {
            Some(def) => self.links.after(Some(def), &syscall.targets, outcome),
            // Another ABI's call (i386), not decoded: it may have changed anything.
            None if !matches!(outcome, Outcome::Errno(_) | Outcome::Denied(_)) => {
                self.links.clear();
            }
            None => {}
        }
        self.write(&Event {
            time_ns: p.time_ns,
            pid: p.pid,
            tid,
            proc: p.proc,
            kind: EventKind::Syscall(syscall),
        })
    }
}

impl<W: Write> Sink for RecordSink<W> {
    fn on_syscall(&mut self, stop: &SyscallStop<'_>) -> Result<Verdict, Error> {
        let def = (stop.audit_arch == self.arch.audit_arch())
            .then(|| self.arch.by_nr(stop.nr))
            .flatten();
        if let Some(def) = def.filter(|d| d.class == Class::Answer) {
            // A receive that may carry a DNS answer: written only as `Resolved` events.
            self.dns.recv_entry(stop, def);
            return Ok(Verdict::AllowWatchExit);
        }
        let mut d = super::decode_stop_with(self.arch, stop, Some(&self.links), true);
        if !self.own_files.is_empty() {
            d.syscall.targets.retain(|t| {
                !matches!(&t.object, crate::event::Object::Path(p)
                    if self.own_files.iter().any(|f| *f == p.abs || f == p.effective()))
            });
        }
        // The trace says `Create` only for a name that did not exist (learn's provenance).
        if def.is_some_and(|d| d.class == Class::Checked) {
            super::owned::settle_creates(&mut d.syscall.targets);
        }
        if let Some(def) = def {
            let q = super::dns::query_targets(stop, def, &d.syscall.targets);
            d.syscall.targets.extend(q.targets);
        }
        for r in self.dns.hosts_opened(stop.pid, &d.syscall.targets) {
            self.write_resolved(stop, r)?;
        }
        let exec = d.decoded.exec;
        let p = Pending {
            time_ns: stop.time_ns,
            pid: stop.pid,
            proc: stop.proc.clone(),
            syscall: d.syscall,
            exec,
        };
        if let Some(old) = self.pending.insert(stop.tid, p) {
            // A seccomp stop without the exit of the previous one (the previous call was
            // interrupted by exec or never returned): keep it with an unknown outcome.
            self.write_syscall(stop.tid, old, Outcome::Unknown)?;
        }
        Ok(Verdict::AllowWatchExit)
    }

    fn on_syscall_exit(&mut self, stop: &SyscallStop<'_>, rval: i64) -> Result<Verdict, Error> {
        if self.dns.waits_for(stop.tid) {
            for r in self.dns.recv_exit(stop, rval) {
                self.write_resolved(stop, r)?;
            }
            return Ok(Verdict::Allow);
        }
        if let Some(p) = self.pending.remove(&stop.tid) {
            let mut p = p;
            // Credentials may have changed during the call (setuid family): report the new ones.
            p.proc.creds = stop.proc.creds;
            self.write_syscall(stop.tid, p, Outcome::from_raw(rval))?;
        }
        Ok(Verdict::Allow)
    }

    fn on_spawn(
        &mut self,
        time_ns: u64,
        parent: &TaskRef<'_>,
        child: i32,
        thread: bool,
        via: SpawnVia,
    ) {
        // A new task's number may be one an ended task had.
        self.links.forget_cwd(child);
        let ev = Event {
            time_ns,
            pid: parent.pid,
            tid: parent.tid,
            proc: parent.proc.clone(),
            kind: EventKind::Spawn(Spawn { child, thread, via }),
        };
        let _ = self.write(&ev);
    }

    fn exec_comm(&self, tid: i32) -> Option<Vec<u8>> {
        let sc = &self.pending.get(&tid)?.syscall;
        let def = self.arch.by_name(&sc.name)?;
        match &sc.targets.first()?.object {
            Object::Path(p) => crate::decode::exec_comm(def, &sc.args, &p.literal),
            _ => None,
        }
    }

    fn exec_file(&self, tid: i32) -> Option<ExecFile> {
        let sc = &self.pending.get(&tid)?.syscall;
        let def = self.arch.by_name(&sc.name)?;
        match &sc.targets.first()?.object {
            Object::Path(p) => Some(ExecFile {
                path: crate::decode::exec_file(def, p)?.to_vec(),
                named: p.literal.clone(),
            }),
            _ => None,
        }
    }

    fn on_exec(&mut self, time_ns: u64, task: &TaskRef<'_>, former_tid: Option<i32>) -> Verdict {
        let caller = former_tid.unwrap_or(task.tid);
        self.links.forget_cwd(task.tid);
        self.links.forget_cwd(caller);
        let exec_file = self.exec_file(caller).map(|f| f.path);
        let mut pending = self.pending.remove(&caller);
        // The execve's own record does not carry them: moved, not copied.
        let (argv, env_names) = pending
            .as_mut()
            .and_then(|p| p.exec.take())
            .map(|e| (e.argv, e.env_names))
            .unwrap_or_default();
        if let Some(mut p) = pending {
            // Before its first exec the root of the tree is sbx's spawn code (comm `sbx`):
            // that execve is the program's start, shown under the program's comm and exe so
            // that `sbx show --comm PROG` finds it.
            if p.proc.ppid == 0 && !self.root_exec_seen {
                p.proc.comm.clone_from(&task.proc.comm);
                p.proc.exe.clone_from(&task.proc.exe);
            }
            let _ = self.write_syscall(caller, p, Outcome::Value(0));
        }
        if task.proc.ppid == 0 {
            self.root_exec_seen = true;
        }
        let program = crate::tracer::procfs::program_identity(
            task.pid,
            &task.proc.exe,
            exec_file.as_deref(),
            Some(&argv),
        );
        let ev = Event {
            time_ns,
            pid: task.pid,
            tid: task.tid,
            proc: task.proc.clone(),
            kind: EventKind::Exec(Exec {
                path: task.proc.exe.to_vec(),
                argv,
                env_names,
                former_tid,
                program,
                thinned: std::mem::take(&mut self.thinned),
            }),
        };
        let _ = self.write(&ev);
        self.flush_at_boundary(time_ns);
        Verdict::Allow
    }

    fn on_exit(
        &mut self,
        time_ns: u64,
        task: &TaskRef<'_>,
        status: ExitStatus,
        process: bool,
    ) -> Verdict {
        self.dns.forget(task.tid);
        self.links.forget_cwd(task.tid);
        if let Some(p) = self.pending.remove(&task.tid) {
            let _ = self.write_syscall(task.tid, p, Outcome::Unknown);
        }
        let ev = Event {
            time_ns,
            pid: task.pid,
            tid: task.tid,
            proc: task.proc.clone(),
            kind: EventKind::Exit(Exit { status, process }),
        };
        let _ = self.write(&ev);
        if process {
            self.flush_at_boundary(time_ns);
        }
        Verdict::Allow
    }
}
