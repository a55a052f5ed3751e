//! Streaming trace writer: [`Header`], then one length-delimited postcard frame per record.
//!
//! Events are converted to the private wire records of `trace::wire`: every string (paths,
//! comm, exe, syscall names, argv and env entries) is interned, and a `DefineString` frame is
//! emitted before an id's first use. Time is delta-encoded, argument words are written as the
//! difference to the previous call of the same syscall, and process info is omitted when
//! it equals the previous event's. Output goes through an internal buffer that is written out
//! whenever it exceeds [`FLUSH_AT`] bytes and on [`TraceWriter::flush`]; the caller flushes at
//! important points (before a kill, at exit) so a trace cut short loses little.
//!
//! Memory is bounded: the intern table grows only with distinct strings, and once it holds
//! more than [`TraceWriter::with_intern_limit`] bytes (default [`DEFAULT_INTERN_LIMIT`]) the
//! writer emits `ResetStrings` and starts afresh. Pure over `Write`: no ptrace, no `/proc`.

use std::collections::HashMap;
use std::io::Write;

use super::wire::{
    self, MAX_FRAME, Record, WireEvent, WireExit, WireKind, WireObject, WireOutcome, WireProc,
    WireSyscall, WireTarget, WireVia,
};
use super::{FORMAT_VERSION, Header, MAGIC};
use crate::event::{
    Event, EventKind, ExitStatus, Object, Outcome, ProcInfo, ResolveSource, SockAddr, SpawnVia,
};

/// The buffer is written out once it holds more than this many bytes.
pub const FLUSH_AT: usize = 64 * 1024;
/// Default bound on the interned string bytes before the table is reset.
pub const DEFAULT_INTERN_LIMIT: usize = 64 << 20;

/// An error while writing a trace.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    #[error("cannot write trace: {0}")]
    Io(#[from] std::io::Error),
    #[error("cannot encode trace record: {0}")]
    Encode(#[from] postcard::Error),
    /// A single record would exceed the frame size readers accept.
    #[error("trace record of {len} bytes exceeds the {max} byte limit")]
    FrameTooLarge { len: usize, max: u64 },
}

/// Writes a trace: construct with [`TraceWriter::new`], [`write`](TraceWriter::write) events,
/// then [`finish`](TraceWriter::finish). Dropping without `finish` flushes and ignores errors.
#[derive(Debug)]
pub struct TraceWriter<W: Write> {
    /// `None` only after `finish` took it.
    out: Option<W>,
    buf: Vec<u8>,
    /// Scratch space for one frame body, reused.
    scratch: Vec<u8>,
    strings: HashMap<Vec<u8>, u32>,
    string_bytes: usize,
    intern_limit: usize,
    prev_time: u64,
    prev_proc: Option<ProcInfo>,
    /// The previous argument words per syscall-name id: args are written as deltas.
    prev_args: HashMap<u32, [u64; 6]>,
    events: u64,
    bytes: u64,
}

impl<W: Write> TraceWriter<W> {
    /// Write the magic, the format version and `header`, and return a writer for events.
    pub fn new(out: W, header: &Header) -> Result<Self, WriteError> {
        let mut w = TraceWriter {
            out: Some(out),
            buf: Vec::with_capacity(FLUSH_AT + 4096),
            scratch: Vec::new(),
            strings: HashMap::new(),
            string_bytes: 0,
            intern_limit: DEFAULT_INTERN_LIMIT,
            prev_time: 0,
            prev_proc: None,
            prev_args: HashMap::new(),
            events: 0,
            bytes: 0,
        };
        w.buf.extend_from_slice(&MAGIC);
        w.buf.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
        let body = postcard::to_stdvec(header)?;
        if body.len() as u64 > wire::MAX_HEADER {
            return Err(WriteError::FrameTooLarge {
                len: body.len(),
                max: wire::MAX_HEADER,
            });
        }
        wire::put_varint(&mut w.buf, body.len() as u64);
        w.buf.extend_from_slice(&body);
        w.bytes = w.buf.len() as u64;
        w.flush()?;
        Ok(w)
    }

    /// Bound the interned string bytes (mainly for tests). The table is reset only between
    /// events, so one event's strings always stay defined.
    pub fn with_intern_limit(mut self, bytes: usize) -> Self {
        self.intern_limit = bytes;
        self
    }

    /// Append one event. It reaches `out` when the buffer fills or on `flush`.
    pub fn write(&mut self, ev: &Event) -> Result<(), WriteError> {
        if self.string_bytes > self.intern_limit {
            self.strings.clear();
            self.prev_args.clear();
            self.string_bytes = 0;
            self.frame(&Record::ResetStrings)?;
        }
        let proc = if self.prev_proc.as_ref() == Some(&ev.proc) {
            None
        } else {
            let p = &ev.proc;
            let c = p.creds;
            Some(WireProc {
                ppid: p.ppid,
                comm: self.intern(&p.comm)?,
                exe: self.intern(&p.exe)?,
                creds: [c.uid, c.euid, c.gid, c.egid],
            })
        };
        let kind = self.wire_kind(&ev.kind)?;
        let rec = Record::Event(WireEvent {
            dt: ev.time_ns.wrapping_sub(self.prev_time).cast_signed(),
            pid: ev.pid,
            tid_off: ev.tid.wrapping_sub(ev.pid),
            proc,
            kind,
        });
        self.frame(&rec)?;
        self.prev_time = ev.time_ns;
        if self.prev_proc.as_ref() != Some(&ev.proc) {
            self.prev_proc = Some(ev.proc.clone());
        }
        self.events += 1;
        if self.buf.len() > FLUSH_AT {
            self.write_out()?;
        }
        Ok(())
    }

    /// Write the buffer out and flush `out`.
    pub fn flush(&mut self) -> Result<(), WriteError> {
        self.write_out()?;
        if let Some(out) = self.out.as_mut() {
            out.flush()?;
        }
        Ok(())
    }

    /// Flush and give back the underlying writer.
    pub fn finish(mut self) -> Result<W, WriteError> {
        self.flush()?;
        match self.out.take() {
            Some(out) => Ok(out),
            None => Err(WriteError::Io(std::io::Error::other(
                "trace writer already finished",
            ))),
        }
    }

    /// Events accepted so far.
    pub fn events_written(&self) -> u64 {
        self.events
    }

    /// Bytes of trace encoded so far (header included), whether or not still buffered.
    pub fn bytes_written(&self) -> u64 {
        self.bytes
    }

    fn write_out(&mut self) -> Result<(), WriteError> {
        if self.buf.is_empty() {
            return Ok(());
        }
        if let Some(out) = self.out.as_mut() {
            out.write_all(&self.buf)?;
        }
        self.buf.clear();
        Ok(())
    }

    /// Encode `rec` as one frame (varint length + postcard body) into the buffer.
    fn frame(&mut self, rec: &Record<'_>) -> Result<(), WriteError> {
        let mut scratch = std::mem::take(&mut self.scratch);
        scratch.clear();
        let scratch = postcard::to_extend(rec, scratch)?;
        if scratch.len() as u64 > MAX_FRAME {
            let len = scratch.len();
            self.scratch = scratch;
            return Err(WriteError::FrameTooLarge {
                len,
                max: MAX_FRAME,
            });
        }
        let before = self.buf.len();
        wire::put_varint(&mut self.buf, scratch.len() as u64);
        self.buf.extend_from_slice(&scratch);
        self.bytes += (self.buf.len() - before) as u64;
        self.scratch = scratch;
        Ok(())
    }

    /// The id of `s`, emitting its definition first if it is new.
    fn intern(&mut self, s: &[u8]) -> Result<u32, WriteError> {
        if let Some(&id) = self.strings.get(s) {
            return Ok(id);
        }
        let id = u32::try_from(self.strings.len()).unwrap_or(u32::MAX);
        self.frame(&Record::DefineString { id, bytes: s })?;
        self.strings.insert(s.to_vec(), id);
        self.string_bytes += s.len() + 32;
        Ok(id)
    }

    fn intern_opt(&mut self, s: Option<&[u8]>) -> Result<Option<u32>, WriteError> {
        s.map(|s| self.intern(s)).transpose()
    }

    fn wire_kind(&mut self, kind: &EventKind) -> Result<WireKind, WriteError> {
        Ok(match kind {
            EventKind::Syscall(sys) => {
                let name = self.intern(sys.name.as_bytes())?;
                let mut targets = Vec::with_capacity(sys.targets.len());
                for t in &sys.targets {
                    let object = self.wire_object(&t.object)?;
                    targets.push(WireTarget {
                        access: t.access.0,
                        object,
                    });
                }
                WireKind::Syscall(WireSyscall {
                    name,
                    nr: sys.nr,
                    args: {
                        let prev = self.prev_args.insert(name, sys.args).unwrap_or_default();
                        let mut d = [0i64; 6];
                        for (i, a) in d.iter_mut().enumerate() {
                            *a = sys.args[i].wrapping_sub(prev[i]).cast_signed();
                        }
                        d
                    },
                    targets,
                    outcome: match sys.outcome {
                        Outcome::Value(v) => WireOutcome::Value(v),
                        Outcome::Errno(e) => WireOutcome::Errno(e),
                        Outcome::Unknown => WireOutcome::Unknown,
                        Outcome::Denied(e) => WireOutcome::Denied(e),
                        Outcome::Killed => WireOutcome::Killed,
                    },
                    sock_type: sys.sock_type,
                })
            }
            EventKind::Spawn(s) => WireKind::Spawn {
                child: s.child,
                thread: s.thread,
                via: match s.via {
                    SpawnVia::Fork => WireVia::Fork,
                    SpawnVia::Vfork => WireVia::Vfork,
                    SpawnVia::Clone => WireVia::Clone,
                },
            },
            EventKind::Exec(x) => {
                let path = self.intern(&x.path)?;
                let mut argv = Vec::with_capacity(x.argv.len());
                for a in &x.argv {
                    argv.push(self.intern(a)?);
                }
                let mut env_names = Vec::with_capacity(x.env_names.len());
                for e in &x.env_names {
                    env_names.push(self.intern(e)?);
                }
                let program = match &x.program {
                    Some(p) => Some(self.intern(p)?),
                    None => None,
                };
                let mut thinned = Vec::with_capacity(x.thinned.len());
                for t in &x.thinned {
                    thinned.push(self.intern(t)?);
                }
                WireKind::ExecProgram {
                    path,
                    argv,
                    env_names,
                    former_tid: x.former_tid,
                    program,
                    thinned,
                }
            }
            EventKind::Exit(x) => WireKind::Exit {
                status: match x.status {
                    ExitStatus::Code(c) => WireExit::Code(c),
                    ExitStatus::Signal(s) => WireExit::Signal(s),
                },
                process: x.process,
            },
            EventKind::Resolved(r) => WireKind::Resolved {
                name: self.intern(r.name.as_bytes())?,
                addrs: r
                    .addrs
                    .iter()
                    .map(|ip| match ip {
                        std::net::IpAddr::V4(v4) => v4.octets().to_vec(),
                        std::net::IpAddr::V6(v6) => v6.octets().to_vec(),
                    })
                    .collect(),
                server: match &r.source {
                    ResolveSource::Dns(server) => {
                        Some(self.wire_object(&Object::Socket(server.clone()))?)
                    }
                    ResolveSource::Hosts => None,
                },
            },
        })
    }

    fn wire_object(&mut self, o: &Object) -> Result<WireObject, WriteError> {
        Ok(match o {
            Object::Path(p) => WireObject::Path {
                literal: self.intern(&p.literal)?,
                abs: self.intern(&p.abs)?,
                resolved: self.intern_opt(p.resolved.as_deref())?,
            },
            Object::Socket(s) => match s {
                SockAddr::Inet { addr, port } => WireObject::Inet {
                    addr: *addr,
                    port: *port,
                },
                SockAddr::Inet6 {
                    addr,
                    port,
                    scope_id,
                } => WireObject::Inet6 {
                    addr: *addr,
                    port: *port,
                    scope_id: *scope_id,
                },
                SockAddr::Unix(p) => WireObject::Unix(self.intern(p)?),
                SockAddr::UnixAbstract(p) => WireObject::UnixAbstract(self.intern(p)?),
                SockAddr::UnixUnnamed => WireObject::UnixUnnamed,
                SockAddr::Other { family, bytes } => WireObject::OtherSock {
                    family: *family,
                    bytes: self.intern(bytes)?,
                },
                SockAddr::Invalid { len } => WireObject::InvalidSock { len: *len },
                SockAddr::Netlink {
                    protocol,
                    port_id,
                    groups,
                } => WireObject::Netlink {
                    protocol: *protocol,
                    port_id: *port_id,
                    groups: *groups,
                },
            },
            Object::Fd { fd, path } => WireObject::Fd {
                fd: *fd,
                path: self.intern_opt(path.as_deref())?,
            },
            Object::Anon(a) => WireObject::Anon(self.intern(a)?),
            Object::DnsName(n) => WireObject::DnsName(self.intern(n.as_bytes())?),
            Object::Text(t) => WireObject::Text(self.intern(t)?),
            Object::Ids(ids) => WireObject::Ids(ids.clone()),
        })
    }
}

impl<W: Write> Drop for TraceWriter<W> {
    fn drop(&mut self) {
        // Best effort, like BufWriter: callers that care call `finish` and see the error.
        let _ = self.flush();
    }
}
