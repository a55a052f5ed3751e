//! Trace reader: validates the magic, version and [`Header`], then yields events.
//!
//! Every length read from the file is bounded before anything is allocated (frames at
//! 16 MiB, the header at 1 MiB), string ids must be defined in order before use, and no input
//! makes it panic. A string is stored once, but events carry owned copies, so what a trace
//! may expand to is bounded too ([`Budget`]): one event at most [`MAX_EVENT_STRINGS`] bytes of
//! strings, the whole trace at most [`EXPANSION`] times the bytes read plus
//! [`EXPANSION_FLOOR`]. A crafted trace that names a big string by a one-byte id a million
//! times is a one-line error, not gigabytes. A trace cut short (sbx killed mid-write) yields every whole record and then
//! ends; [`TraceReader::truncated`] says where the cut record began so the CLI can warn.
//! Anything else that does not decode is a one-line [`ReadError`] with the byte offset; the
//! iterator ends after it. Pure over `Read`: no ptrace, no `/proc`.

use std::cell::Cell;
use std::collections::HashMap;
use std::io::{BufReader, Read};
use std::net::IpAddr;

use super::wire::{
    MAX_FRAME, MAX_HEADER, MAX_VARINT, Record, WireEvent, WireExit, WireKind, WireObject,
    WireOutcome, WireVia,
};
use super::{FORMAT_VERSION, Header, MAGIC};
use crate::event::{
    AccessSet, Creds, Event, EventKind, Exec, Exit, ExitStatus, Object, Outcome, PathObj, ProcInfo,
    ResolveSource, Resolved, SockAddr, Spawn, SpawnVia, Syscall, Target,
};

/// An error reading a trace, at a byte offset of the file.
///
/// Displayed as `byte 1234: corrupt record: ...`; the caller, which knows the file name,
/// prefixes it (`trace.bin: byte 1234: ...`).
#[derive(Debug, thiserror::Error)]
#[error("byte {offset}: {kind}")]
pub struct ReadError {
    /// Where the offending record (or field) starts.
    pub offset: u64,
    pub kind: ReadErrorKind,
}

#[derive(Debug, thiserror::Error)]
pub enum ReadErrorKind {
    #[error("read failed: {0}")]
    Io(#[from] std::io::Error),
    #[error("not an sbx trace (bad magic)")]
    BadMagic,
    #[error("not an sbx trace (empty file)")]
    Empty,
    #[error("format version {found} is newer than this sbx supports ({supported})")]
    NewerVersion { found: u32, supported: u32 },
    #[error("unsupported format version {0}")]
    BadVersion(u32),
    #[error("trace header is cut short (the file is truncated)")]
    TruncatedHeader,
    #[error("corrupt header: {0}")]
    CorruptHeader(String),
    #[error("corrupt record: {0}")]
    Corrupt(String),
    #[error("string id {0} used before definition")]
    UndefinedString(u32),
    #[error("{0} (a hostile trace?)")]
    Expansion(String),
}

/// Most bytes of strings one event may carry once its ids are looked up. The largest honest
/// event is an exec: Linux caps its argv and environment at 6 MiB (3/4 of `_STK_LIM`), and
/// a trace holds only the environment's names. Syscall events carry a few paths of at most
/// `PATH_MAX` each.
pub const MAX_EVENT_STRINGS: u64 = 16 << 20;
/// Most bytes of strings a whole trace may expand to, per byte read, above
/// [`EXPANSION_FLOOR`]. The writer's traces expand about 10 times (a path id of one to three
/// bytes names a path of tens of bytes); a trace of nothing but renames of 4 KiB paths would
/// be about 600.
pub const EXPANSION: u64 = 256;
/// Bytes of strings any trace may expand to whatever its size.
pub const EXPANSION_FLOOR: u64 = 256 << 20;

/// What the strings looked up so far cost: the current event's bytes and the trace's.
#[derive(Debug, Default)]
struct Budget {
    event: Cell<u64>,
    total: Cell<u64>,
}

/// How a varint or frame read ended.
enum Got<T> {
    Value(T),
    /// Clean end of input before the first byte.
    End,
    /// End of input in the middle.
    Cut,
}

/// Reads a trace; iterate it for events.
#[derive(Debug)]
pub struct TraceReader<R: Read> {
    inp: BufReader<R>,
    header: Header,
    /// Bytes consumed so far.
    offset: u64,
    strings: Vec<Vec<u8>>,
    prev_time: u64,
    prev_proc: Option<ProcInfo>,
    /// The previous argument words per syscall-name string id (args are delta-encoded).
    prev_args: HashMap<u32, [u64; 6]>,
    /// Body of the current frame, reused.
    frame: Vec<u8>,
    truncated: Option<u64>,
    done: bool,
    /// The file's format version ([`OLDEST_READ`]..=[`FORMAT_VERSION`]).
    version: u32,
    budget: Budget,
}

/// The oldest format version this reader decodes. Version 4 differs from 5 only in what a
/// `create` access means: in 4 it was any `O_CREAT` (the name may have existed), in 5 the
/// name did not exist. A version-4 `create` is read as a `write`, its old meaning for the
/// policy and learn.
pub const OLDEST_READ: u32 = 4;

impl<R: Read> TraceReader<R> {
    /// Read and validate the magic, the format version and the header.
    pub fn new(inp: R) -> Result<Self, ReadError> {
        let mut r = TraceReader {
            inp: BufReader::with_capacity(64 * 1024, inp),
            header: Header {
                sbx_version: String::new(),
                arch: crate::arch::Arch::X86_64,
                kernel: String::new(),
                argv: Vec::new(),
                cwd: Vec::new(),
                home: Vec::new(),
                tmpdir: Vec::new(),
                uid: 0,
                gid: 0,
                user: String::new(),
                start_unix: 0,
                metadata: false,
            },
            offset: 0,
            strings: Vec::new(),
            prev_time: 0,
            prev_proc: None,
            prev_args: HashMap::new(),
            frame: Vec::new(),
            truncated: None,
            done: false,
            version: FORMAT_VERSION,
            budget: Budget::default(),
        };
        let mut magic = [0u8; 8];
        let n = r.read_up_to(&mut magic)?;
        if n == 0 {
            return Err(ReadError {
                offset: 0,
                kind: ReadErrorKind::Empty,
            });
        }
        if magic[..n] != MAGIC[..n] {
            return Err(ReadError {
                offset: 0,
                kind: ReadErrorKind::BadMagic,
            });
        }
        if n < magic.len() {
            return Err(ReadError {
                offset: 0,
                kind: ReadErrorKind::TruncatedHeader,
            });
        }
        let mut version = [0u8; 4];
        let at = r.offset;
        if r.read_up_to(&mut version)? < version.len() {
            return Err(ReadError {
                offset: at,
                kind: ReadErrorKind::TruncatedHeader,
            });
        }
        let version = u32::from_le_bytes(version);
        if version > FORMAT_VERSION {
            let kind = ReadErrorKind::NewerVersion {
                found: version,
                supported: FORMAT_VERSION,
            };
            return Err(ReadError { offset: at, kind });
        }
        r.version = version;
        if version < OLDEST_READ {
            return Err(ReadError {
                offset: at,
                kind: ReadErrorKind::BadVersion(version),
            });
        }
        let at = r.offset;
        match r.read_frame(MAX_HEADER)? {
            Got::Value(()) => {}
            Got::End | Got::Cut => {
                return Err(ReadError {
                    offset: at,
                    kind: ReadErrorKind::TruncatedHeader,
                });
            }
        }
        r.header = match postcard::take_from_bytes::<Header>(&r.frame) {
            Ok((h, [])) => h,
            Ok((_, rest)) => {
                let msg = format!("{} trailing bytes", rest.len());
                return Err(ReadError {
                    offset: at,
                    kind: ReadErrorKind::CorruptHeader(msg),
                });
            }
            Err(e) => {
                let kind = ReadErrorKind::CorruptHeader(e.to_string());
                return Err(ReadError { offset: at, kind });
            }
        };
        Ok(r)
    }

    /// The trace's header.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// `Some(offset)` when the input ended inside the record starting at `offset`: every whole
    /// record before it was returned. Meaningful once the iterator has ended.
    pub fn truncated(&self) -> Option<u64> {
        self.truncated
    }

    /// Read until `buf` is full or the input ends; returns the bytes read.
    fn read_up_to(&mut self, buf: &mut [u8]) -> Result<usize, ReadError> {
        let mut n = 0;
        while n < buf.len() {
            match self.inp.read(&mut buf[n..]) {
                Ok(0) => break,
                Ok(k) => n += k,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => {
                    let offset = self.offset + n as u64;
                    return Err(ReadError {
                        offset,
                        kind: ReadErrorKind::Io(e),
                    });
                }
            }
        }
        self.offset += n as u64;
        Ok(n)
    }

    fn read_varint(&mut self) -> Result<Got<u64>, ReadError> {
        let start = self.offset;
        let mut v: u64 = 0;
        for i in 0..MAX_VARINT {
            let mut b = [0u8; 1];
            if self.read_up_to(&mut b)? == 0 {
                return Ok(if i == 0 { Got::End } else { Got::Cut });
            }
            let low = u64::from(b[0] & 0x7f);
            if i == MAX_VARINT - 1 && b[0] > 1 {
                break;
            }
            v |= low << (7 * i);
            if b[0] & 0x80 == 0 {
                return Ok(Got::Value(v));
            }
        }
        let kind = ReadErrorKind::Corrupt("frame length is not a valid varint".into());
        Err(ReadError {
            offset: start,
            kind,
        })
    }

    /// Read one frame body (of at most `max` bytes) into `self.frame`.
    fn read_frame(&mut self, max: u64) -> Result<Got<()>, ReadError> {
        let start = self.offset;
        let len = match self.read_varint()? {
            Got::Value(len) => len,
            Got::End => return Ok(Got::End),
            Got::Cut => return Ok(Got::Cut),
        };
        if len > max {
            let kind = ReadErrorKind::Corrupt(format!(
                "frame of {len} bytes exceeds the {max} byte limit"
            ));
            return Err(ReadError {
                offset: start,
                kind,
            });
        }
        self.frame.clear();
        // `take` bounds the read; the buffer grows only as bytes really arrive.
        let got = match (&mut self.inp).take(len).read_to_end(&mut self.frame) {
            Ok(n) => n,
            Err(e) => {
                return Err(ReadError {
                    offset: self.offset,
                    kind: ReadErrorKind::Io(e),
                });
            }
        };
        self.offset += got as u64;
        if (got as u64) < len {
            return Ok(Got::Cut);
        }
        Ok(Got::Value(()))
    }

    /// The next event, `Ok(None)` at the end (clean or truncated).
    fn next_event(&mut self) -> Result<Option<Event>, ReadError> {
        loop {
            let start = self.offset;
            match self.read_frame(MAX_FRAME)? {
                Got::Value(()) => {}
                Got::End => return Ok(None),
                Got::Cut => {
                    self.truncated = Some(start);
                    return Ok(None);
                }
            }
            let corrupt = |msg: String| ReadError {
                offset: start,
                kind: ReadErrorKind::Corrupt(msg),
            };
            let frame = std::mem::take(&mut self.frame);
            let rec = match postcard::take_from_bytes::<Record<'_>>(&frame) {
                Ok((rec, [])) => rec,
                Ok((_, rest)) => return Err(corrupt(format!("{} trailing bytes", rest.len()))),
                Err(e) => return Err(corrupt(e.to_string())),
            };
            let out = match rec {
                Record::DefineString { id, bytes } => {
                    if id as usize != self.strings.len() {
                        let want = self.strings.len();
                        return Err(corrupt(format!(
                            "string id {id} defined out of order (next is {want})"
                        )));
                    }
                    self.strings.push(bytes.to_vec());
                    None
                }
                Record::ResetStrings => {
                    self.strings.clear();
                    self.prev_args.clear();
                    None
                }
                Record::Event(w) => {
                    self.budget.event.set(0);
                    Some(self.event(w).map_err(|kind| ReadError {
                        offset: start,
                        kind,
                    })?)
                }
            };
            self.frame = frame;
            if let Some(ev) = out {
                return Ok(Some(ev));
            }
        }
    }

    /// The bytes of string `id`, charged to the [`Budget`]; a look-up past it refuses the
    /// event before anything is copied.
    fn s(&self, id: u32) -> Result<Vec<u8>, ReadErrorKind> {
        let bytes = self
            .strings
            .get(id as usize)
            .ok_or(ReadErrorKind::UndefinedString(id))?;
        let len = bytes.len() as u64;
        let event = self.budget.event.get().saturating_add(len);
        let total = self.budget.total.get().saturating_add(len);
        self.budget.event.set(event);
        self.budget.total.set(total);
        if event > MAX_EVENT_STRINGS {
            return Err(ReadErrorKind::Expansion(format!(
                "one event names more than {MAX_EVENT_STRINGS} bytes of strings"
            )));
        }
        if total > EXPANSION_FLOOR.saturating_add(self.offset.saturating_mul(EXPANSION)) {
            return Err(ReadErrorKind::Expansion(format!(
                "the events up to byte {} name {total} bytes of strings, more than {EXPANSION} times the bytes read plus {EXPANSION_FLOOR}",
                self.offset
            )));
        }
        Ok(bytes.clone())
    }

    fn strs(&self, ids: Vec<u32>) -> Result<Vec<Vec<u8>>, ReadErrorKind> {
        ids.into_iter().map(|id| self.s(id)).collect()
    }

    fn s_opt(&self, id: Option<u32>) -> Result<Option<Vec<u8>>, ReadErrorKind> {
        id.map(|id| self.s(id)).transpose()
    }

    fn event(&mut self, w: WireEvent) -> Result<Event, ReadErrorKind> {
        let proc = match w.proc {
            Some(p) => ProcInfo {
                ppid: p.ppid,
                comm: self.s(p.comm)?.into(),
                exe: self.s(p.exe)?.into(),
                creds: Creds {
                    uid: p.creds[0],
                    euid: p.creds[1],
                    gid: p.creds[2],
                    egid: p.creds[3],
                },
            },
            None => match &self.prev_proc {
                Some(p) => p.clone(),
                None => {
                    let msg = "first event refers to a previous process".to_string();
                    return Err(ReadErrorKind::Corrupt(msg));
                }
            },
        };
        let kind = match w.kind {
            WireKind::Syscall(s) => {
                let name = String::from_utf8(self.s(s.name)?)
                    .map_err(|_| ReadErrorKind::Corrupt("syscall name is not UTF-8".into()))?;
                let mut targets = Vec::with_capacity(s.targets.len());
                for t in s.targets {
                    targets.push(Target {
                        access: AccessSet(t.access),
                        object: self.object(t.object)?,
                    });
                }
                EventKind::Syscall(Syscall {
                    name,
                    nr: s.nr,
                    args: {
                        let prev = self.prev_args.get(&s.name).copied().unwrap_or_default();
                        let mut args = [0u64; 6];
                        for (i, a) in args.iter_mut().enumerate() {
                            *a = prev[i].wrapping_add(s.args[i].cast_unsigned());
                        }
                        self.prev_args.insert(s.name, args);
                        args
                    },
                    targets,
                    outcome: match s.outcome {
                        WireOutcome::Value(v) => Outcome::Value(v),
                        WireOutcome::Errno(e) => Outcome::Errno(e),
                        WireOutcome::Unknown => Outcome::Unknown,
                        WireOutcome::Denied(e) => Outcome::Denied(e),
                        WireOutcome::Killed => Outcome::Killed,
                    },
                    sock_type: s.sock_type,
                })
            }
            WireKind::Spawn { child, thread, via } => EventKind::Spawn(Spawn {
                child,
                thread,
                via: match via {
                    WireVia::Fork => SpawnVia::Fork,
                    WireVia::Vfork => SpawnVia::Vfork,
                    WireVia::Clone => SpawnVia::Clone,
                },
            }),
            WireKind::Exec {
                path,
                argv,
                env_names,
                former_tid,
            } => EventKind::Exec(Exec {
                path: self.s(path)?,
                argv: self.strs(argv)?,
                env_names: self.strs(env_names)?,
                former_tid,
                program: None,
                thinned: Vec::new(),
            }),
            WireKind::ExecProgram {
                path,
                argv,
                env_names,
                former_tid,
                program,
                thinned,
            } => EventKind::Exec(Exec {
                path: self.s(path)?,
                argv: self.strs(argv)?,
                env_names: self.strs(env_names)?,
                former_tid,
                program: self.s_opt(program)?,
                thinned: self.strs(thinned)?,
            }),
            WireKind::Exit { status, process } => EventKind::Exit(Exit {
                status: match status {
                    WireExit::Code(c) => ExitStatus::Code(c),
                    WireExit::Signal(s) => ExitStatus::Signal(s),
                },
                process,
            }),
            WireKind::Resolved {
                name,
                addrs,
                server,
            } => EventKind::Resolved(Resolved {
                name: self.text(name)?,
                addrs: addrs
                    .into_iter()
                    .map(|b| match b.len() {
                        4 => Ok(IpAddr::from(
                            <[u8; 4]>::try_from(b.as_slice()).unwrap_or_default(),
                        )),
                        16 => Ok(IpAddr::from(
                            <[u8; 16]>::try_from(b.as_slice()).unwrap_or_default(),
                        )),
                        n => Err(ReadErrorKind::Corrupt(format!("a {n}-byte IP address"))),
                    })
                    .collect::<Result<_, _>>()?,
                source: match server {
                    None => ResolveSource::Hosts,
                    Some(o) => match self.object(o)? {
                        Object::Socket(a @ (SockAddr::Inet { .. } | SockAddr::Inet6 { .. })) => {
                            ResolveSource::Dns(a)
                        }
                        _ => {
                            return Err(ReadErrorKind::Corrupt(
                                "a DNS server that is no inet address".into(),
                            ));
                        }
                    },
                },
            }),
        };
        let time_ns = self.prev_time.wrapping_add(w.dt.cast_unsigned());
        self.prev_time = time_ns;
        if self.prev_proc.as_ref() != Some(&proc) {
            self.prev_proc = Some(proc.clone());
        }
        Ok(Event {
            time_ns,
            pid: w.pid,
            tid: w.pid.wrapping_add(w.tid_off),
            proc,
            kind,
        })
    }

    fn object(&self, o: WireObject) -> Result<Object, ReadErrorKind> {
        Ok(match o {
            WireObject::Path {
                literal,
                abs,
                resolved,
            } => Object::Path(PathObj {
                literal: self.s(literal)?,
                abs: self.s(abs)?,
                resolved: self.s_opt(resolved)?,
            }),
            WireObject::Inet { addr, port } => Object::Socket(SockAddr::Inet { addr, port }),
            WireObject::Inet6 {
                addr,
                port,
                scope_id,
            } => Object::Socket(SockAddr::Inet6 {
                addr,
                port,
                scope_id,
            }),
            WireObject::Unix(p) => Object::Socket(SockAddr::Unix(self.s(p)?)),
            WireObject::UnixAbstract(p) => Object::Socket(SockAddr::UnixAbstract(self.s(p)?)),
            WireObject::UnixUnnamed => Object::Socket(SockAddr::UnixUnnamed),
            WireObject::OtherSock { family, bytes } => Object::Socket(SockAddr::Other {
                family,
                bytes: self.s(bytes)?,
            }),
            WireObject::InvalidSock { len } => Object::Socket(SockAddr::Invalid { len }),
            WireObject::Netlink {
                protocol,
                port_id,
                groups,
            } => Object::Socket(SockAddr::Netlink {
                protocol,
                port_id,
                groups,
            }),
            WireObject::Fd { fd, path } => Object::Fd {
                fd,
                path: self.s_opt(path)?,
            },
            WireObject::Anon(a) => Object::Anon(self.s(a)?),
            WireObject::DnsName(n) => Object::DnsName(self.text(n)?),
            WireObject::Text(t) => Object::Text(self.s(t)?),
            WireObject::Ids(ids) => Object::Ids(ids),
        })
    }

    /// An interned string that must be UTF-8 (host names).
    fn text(&self, id: u32) -> Result<String, ReadErrorKind> {
        String::from_utf8(self.s(id)?)
            .map_err(|_| ReadErrorKind::Corrupt("a host name that is not UTF-8".into()))
    }
}

/// Read a version-4 event: its `create` (any `O_CREAT`, the name may have existed) is a
/// `write`, what it meant to the policy and to learn before version 5.
pub fn create_as_write(ev: &mut Event) {
    use crate::event::EventKind;
    if let EventKind::Syscall(sc) = &mut ev.kind {
        for t in &mut sc.targets {
            t.access = t.access.create_as_write();
        }
    }
}

impl<R: Read> Iterator for TraceReader<R> {
    type Item = Result<Event, ReadError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        match self.next_event() {
            Ok(Some(mut ev)) => {
                if self.version < 5 {
                    create_as_write(&mut ev);
                }
                Some(Ok(ev))
            }
            Ok(None) => {
                self.done = true;
                None
            }
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }
}

impl<R: Read> std::iter::FusedIterator for TraceReader<R> {}

#[cfg(test)]
// Synthetic test data uses small counters: the casts cannot lose anything.
#[allow(clippy::cast_possible_truncation, clippy::cast_possible_wrap)]
mod tests {
    use super::*;
    use crate::arch::Arch;
    use crate::event::{Access, Creds};
    use crate::trace::TraceWriter;
    use crate::trace::wire::put_varint;
    use proptest::prelude::*;

    fn header() -> Header {
        Header {
            sbx_version: "0.1.0".into(),
            arch: Arch::X86_64,
            kernel: "6.18.0".into(),
            argv: vec![b"npm".to_vec(), b"install".to_vec()],
            cwd: b"/home/u/app".to_vec(),
            home: b"/home/u".to_vec(),
            tmpdir: b"/tmp".to_vec(),
            uid: 1000,
            gid: 1000,
            user: "u".into(),
            start_unix: 1_790_000_000,
            metadata: false,
        }
    }

    fn proc(comm: &str, ppid: i32, euid: u32) -> ProcInfo {
        ProcInfo {
            ppid,
            comm: comm.as_bytes().into(),
            exe: format!("/usr/bin/{comm}").into_bytes().into(),
            creds: Creds {
                uid: 1000,
                euid,
                gid: 1000,
                egid: 1000,
            },
        }
    }

    fn path(lit: &[u8], abs: &[u8], resolved: Option<&[u8]>) -> Object {
        Object::Path(PathObj {
            literal: lit.to_vec(),
            abs: abs.to_vec(),
            resolved: resolved.map(<[u8]>::to_vec),
        })
    }

    /// A realistic, varied stream: `n` events cycling through every kind and object.
    pub(crate) fn events(n: usize) -> Vec<Event> {
        let mut out = Vec::with_capacity(n);
        let mut t = 1_000u64;
        for i in 0..n {
            t += 3_000 + (i as u64 % 7) * 911;
            let pid = 4711 + (i as i32 / 50);
            let tid = if i % 3 == 0 { pid + 1 } else { pid };
            let p = proc(
                if i % 5 == 0 { "node" } else { "sh" },
                4700,
                if i % 97 == 0 { 0 } else { 1000 },
            );
            let file = format!("/home/u/app/node_modules/pkg{}/index.js", i % 40);
            let kind = match i % 11 {
                0 => EventKind::Spawn(Spawn {
                    child: pid + 2,
                    thread: i % 2 == 0,
                    via: SpawnVia::Clone,
                }),
                1 => EventKind::Exec(Exec {
                    path: b"/bin/ls".to_vec(),
                    argv: vec![b"ls".to_vec(), b"-l".to_vec(), format!("f{i}").into_bytes()],
                    env_names: vec![b"PATH".to_vec(), b"HOME".to_vec()],
                    former_tid: (i % 2 == 0).then_some(tid),
                    program: (i % 4 == 1).then(|| b"/usr/lib/ls.js".to_vec()),
                    thinned: if i % 4 == 1 {
                        vec![b"NPM_TOKEN".to_vec()]
                    } else {
                        Vec::new()
                    },
                }),
                2 => EventKind::Exit(Exit {
                    status: if i % 4 == 0 {
                        ExitStatus::Signal(9)
                    } else {
                        ExitStatus::Code(i as i32 % 3)
                    },
                    process: i % 2 == 1,
                }),
                3 => sys(
                    "connect",
                    42,
                    vec![Target {
                        access: AccessSet::of(Access::Connect),
                        object: Object::Socket(SockAddr::Inet {
                            addr: [127, 0, 0, 1],
                            port: 8080,
                        }),
                    }],
                    Outcome::Errno(111),
                ),
                4 => sys(
                    "connect",
                    42,
                    vec![Target {
                        access: AccessSet::of(Access::Connect),
                        object: Object::Socket(match i % 4 {
                            0 => SockAddr::Inet6 {
                                addr: [0xfe; 16],
                                port: 443,
                                scope_id: 2,
                            },
                            1 => SockAddr::UnixAbstract(b"abs\0x".to_vec()),
                            2 => SockAddr::Other {
                                family: 16,
                                bytes: vec![1, 2, 3],
                            },
                            _ => SockAddr::Invalid { len: 200 },
                        }),
                    }],
                    Outcome::Value(0),
                ),
                5 => sys(
                    "fchmod",
                    91,
                    vec![Target {
                        access: AccessSet::of(Access::Chmod),
                        object: Object::Fd {
                            fd: 3,
                            path: (i % 2 == 0).then(|| file.clone().into_bytes()),
                        },
                    }],
                    Outcome::Denied(13),
                ),
                6 => sys(
                    "renameat2",
                    316,
                    vec![
                        Target {
                            access: AccessSet::of(Access::Delete),
                            object: path(b"a\xff", b"/tmp/a\xff", None),
                        },
                        Target {
                            access: AccessSet::of(Access::Create),
                            object: path(b"b", b"/tmp/b", Some(b"/real/b")),
                        },
                    ],
                    Outcome::Killed,
                ),
                7 if i % 2 == 1 => sys(
                    "sendto",
                    44,
                    vec![
                        Target {
                            access: AccessSet::of(Access::Send),
                            object: Object::Socket(SockAddr::Inet {
                                addr: [10, 0, 0, 53],
                                port: 53,
                            }),
                        },
                        Target {
                            access: AccessSet::of(Access::Resolve),
                            object: Object::DnsName("registry.npmjs.org".into()),
                        },
                    ],
                    Outcome::Value(40),
                ),
                8 => EventKind::Resolved(Resolved {
                    name: "registry.npmjs.org".into(),
                    addrs: vec![
                        IpAddr::from([104, 16, 1, 35]),
                        IpAddr::from([0x2606, 0x4700, 0, 0, 0, 0, 0, 0x6810]),
                    ],
                    source: if i % 2 == 0 {
                        ResolveSource::Dns(SockAddr::Inet6 {
                            addr: [0xfd; 16],
                            port: 53,
                            scope_id: 0,
                        })
                    } else {
                        ResolveSource::Hosts
                    },
                }),
                // Version 3: a gated call's arguments, without access.
                9 if i % 2 == 1 => sys(
                    "mount",
                    165,
                    vec![
                        Target {
                            access: AccessSet::EMPTY,
                            object: Object::Text(b"proc".to_vec()),
                        },
                        Target {
                            access: AccessSet::EMPTY,
                            object: path(b"/proc", b"/proc", None),
                        },
                        Target {
                            access: AccessSet::EMPTY,
                            object: Object::Text(b"proc".to_vec()),
                        },
                    ],
                    Outcome::Errno(1),
                ),
                9 => sys(
                    "setgroups",
                    116,
                    vec![Target {
                        access: AccessSet::EMPTY,
                        object: Object::Ids(vec![0, 27, u32::MAX]),
                    }],
                    Outcome::Value(0),
                ),
                7 => sys(
                    "memfd_create",
                    319,
                    vec![Target {
                        access: AccessSet::of(Access::Write),
                        object: Object::Anon(b"memfd:x".to_vec()),
                    }],
                    Outcome::Unknown,
                ),
                _ => sys(
                    "openat",
                    257,
                    vec![Target {
                        access: AccessSet::of(Access::Read),
                        object: path(file.as_bytes(), file.as_bytes(), None),
                    }],
                    if i % 4 == 0 {
                        Outcome::Errno(2)
                    } else {
                        Outcome::Value(3 + (i as i64 % 20))
                    },
                ),
            };
            out.push(Event {
                time_ns: t,
                pid,
                tid,
                proc: p,
                kind,
            });
        }
        out
    }

    fn sys(name: &str, nr: u32, targets: Vec<Target>, outcome: Outcome) -> EventKind {
        // Pointers that move a little between calls, and a garbage unused register.
        let wobble = u64::from(nr % 13) * 0x40 + u64::try_from(targets.len()).unwrap_or(0) * 0x1000;
        EventKind::Syscall(Syscall {
            name: name.into(),
            nr,
            args: [
                (-100i64).cast_unsigned(),
                0x7ffc_1234_5678 + wobble,
                0o2_000_000,
                0,
                0x55d0_0000_0000 + wobble * 7,
                u64::MAX,
            ],
            // Calls on sockets carry the socket's type.
            sock_type: targets
                .iter()
                .any(|t| matches!(t.object, Object::Socket(_)))
                .then_some(2),
            targets,
            outcome,
        })
    }

    fn encode(evs: &[Event]) -> Vec<u8> {
        let mut w = TraceWriter::new(Vec::new(), &header()).expect("header");
        for e in evs {
            w.write(e).expect("write");
        }
        w.finish().expect("finish")
    }

    fn decode(bytes: &[u8]) -> (Result<Vec<Event>, ReadError>, Option<u64>) {
        let mut r = match TraceReader::new(bytes) {
            Ok(r) => r,
            Err(e) => return (Err(e), None),
        };
        let evs = r.by_ref().collect::<Result<Vec<_>, _>>();
        (evs, r.truncated())
    }

    /// Offsets where frames start (and the end), walking the framing independently.
    fn boundaries(bytes: &[u8]) -> Vec<usize> {
        let mut at = 12; // magic + version
        let mut out = Vec::new();
        while at < bytes.len() {
            let (mut len, mut shift, mut i) = (0u64, 0, at);
            loop {
                let b = bytes[i];
                len |= u64::from(b & 0x7f) << shift;
                shift += 7;
                i += 1;
                if b & 0x80 == 0 {
                    break;
                }
            }
            at = i + len as usize;
            out.push(at);
        }
        out
    }

    #[test]
    fn round_trip_varied_events() {
        let evs = events(500);
        let bytes = encode(&evs);
        let r = TraceReader::new(&bytes[..]).expect("header");
        assert_eq!(r.header(), &header());
        let (got, trunc) = decode(&bytes);
        assert_eq!(got.expect("events"), evs);
        assert_eq!(trunc, None);
    }

    #[test]
    fn round_trip_with_intern_resets() {
        let evs = events(300);
        let mut w = TraceWriter::new(Vec::new(), &header())
            .expect("header")
            .with_intern_limit(200);
        for e in &evs {
            w.write(e).expect("write");
        }
        let bytes = w.finish().expect("finish");
        assert_eq!(decode(&bytes).0.expect("events"), evs);
        // Resets make the file bigger: the same strings are defined again.
        assert!(bytes.len() > encode(&evs).len());
    }

    #[test]
    fn counters_and_size() {
        let evs = events(10_000);
        let mut w = TraceWriter::new(Vec::new(), &header()).expect("header");
        for e in &evs {
            w.write(e).expect("write");
        }
        assert_eq!(w.events_written(), 10_000);
        let n = w.bytes_written();
        let bytes = w.finish().expect("finish");
        assert_eq!(n, bytes.len() as u64);
        let per_event = bytes.len() as f64 / evs.len() as f64;
        eprintln!("bytes/event: {per_event:.1}");
        assert!(per_event < 40.0, "{per_event} bytes/event");
    }

    /// A `Write` whose bytes the test can see while the writer still owns it.
    #[derive(Debug, Clone, Default)]
    struct Shared(std::rc::Rc<std::cell::RefCell<Vec<u8>>>);

    impl std::io::Write for Shared {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.borrow_mut().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn flush_policy() {
        let sink = Shared::default();
        let mut w = TraceWriter::new(sink.clone(), &header()).expect("header");
        let after_header = sink.0.borrow().len();
        assert!(after_header > 12, "the header is written out at once");
        let evs = events(5000);
        let mut i = 0;
        while sink.0.borrow().len() == after_header {
            w.write(&evs[i]).expect("write");
            i += 1;
        }
        // Output reached the sink without flush only once the buffer passed 64 KiB.
        let out = sink.0.borrow().len() - after_header;
        assert!(out > crate::trace::writer::FLUSH_AT, "{out}");
        assert!(out < crate::trace::writer::FLUSH_AT + 4096, "{out}");
        w.write(&evs[i]).expect("write");
        let before = sink.0.borrow().len();
        w.flush().expect("flush");
        assert!(sink.0.borrow().len() > before);
        assert_eq!(sink.0.borrow().len() as u64, w.bytes_written());
        // Dropping flushes what is left.
        w.write(&evs[i + 1]).expect("write");
        drop(w);
        let bytes = sink.0.borrow().clone();
        assert_eq!(decode(&bytes).0.expect("events"), evs[..i + 2]);
    }

    #[derive(Debug)]
    struct Broken;

    impl std::io::Write for Broken {
        fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
            Err(std::io::Error::other("disk on fire"))
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn write_errors_surface() {
        let e = TraceWriter::new(Broken, &header()).expect_err("must fail");
        assert_eq!(e.to_string(), "cannot write trace: disk on fire");
    }

    #[test]
    fn first_event_must_carry_process_info() {
        let rec = Record::Event(WireEvent {
            dt: 0,
            pid: 1,
            tid_off: 0,
            proc: None,
            kind: WireKind::Spawn {
                child: 2,
                thread: false,
                via: WireVia::Fork,
            },
        });
        let bytes = with_frames(&[postcard::to_stdvec(&rec).expect("encode")]);
        let e = decode(&bytes).0.expect_err("corrupt");
        assert!(
            e.to_string()
                .contains("first event refers to a previous process"),
            "{e}"
        );
    }

    #[test]
    fn truncation_at_every_offset_gives_a_prefix() {
        let evs = events(40);
        let bytes = encode(&evs);
        let bounds = boundaries(&bytes);
        let header_end = bounds[0];
        for cut in 0..bytes.len() {
            let (got, trunc) = decode(&bytes[..cut]);
            if cut < header_end {
                let e = got.expect_err("cut inside the header must fail");
                assert!(
                    matches!(
                        e.kind,
                        ReadErrorKind::TruncatedHeader | ReadErrorKind::Empty
                    ),
                    "cut {cut}: {e}"
                );
                continue;
            }
            let got = got.unwrap_or_else(|e| panic!("cut {cut}: {e}"));
            assert_eq!(got[..], evs[..got.len()], "cut {cut}");
            if bounds.contains(&cut) {
                assert_eq!(trunc, None, "cut {cut} is at a record boundary");
            } else {
                let at = trunc.unwrap_or_else(|| panic!("cut {cut} not reported"));
                assert!(
                    bounds.contains(&(at as usize)) && (at as usize) < cut,
                    "cut {cut} at {at}"
                );
            }
        }
    }

    #[test]
    fn wrong_magic_and_versions() {
        let good = encode(&events(3));
        let cases: Vec<(Vec<u8>, &str)> = vec![
            (
                b"\x7fELF\x02\x01\x01\0\0\0\0\0".to_vec(),
                "byte 0: not an sbx trace (bad magic)",
            ),
            (
                b"SBX".to_vec(),
                "byte 0: trace header is cut short (the file is truncated)",
            ),
            (Vec::new(), "byte 0: not an sbx trace (empty file)"),
            (
                [&MAGIC[..], &7u32.to_le_bytes(), &good[12..]].concat(),
                "byte 8: format version 7 is newer than this sbx supports (6)",
            ),
            (
                [&MAGIC[..], &0u32.to_le_bytes()].concat(),
                "byte 8: unsupported format version 0",
            ),
            (
                [&MAGIC[..], &3u32.to_le_bytes()].concat(),
                "byte 8: unsupported format version 3",
            ),
        ];
        for (bytes, want) in cases {
            let e = TraceReader::new(&bytes[..]).expect_err(want);
            assert_eq!(e.to_string(), want);
        }
    }

    /// A trace with the given raw frames after a valid header.
    fn with_frames(frames: &[Vec<u8>]) -> Vec<u8> {
        let mut out = encode(&[]);
        for f in frames {
            put_varint(&mut out, f.len() as u64);
            out.extend_from_slice(f);
        }
        out
    }

    #[test]
    fn corrupt_records_are_errors() {
        let ev = |s: u32| {
            postcard::to_stdvec(&Record::Event(WireEvent {
                dt: 1,
                pid: 1,
                tid_off: 0,
                proc: Some(crate::trace::wire::WireProc {
                    ppid: 0,
                    comm: s,
                    exe: s,
                    creds: [0; 4],
                }),
                kind: WireKind::Exit {
                    status: WireExit::Code(0),
                    process: true,
                },
            }))
            .expect("encode")
        };
        let def = |id: u32| {
            postcard::to_stdvec(&Record::DefineString { id, bytes: b"x" }).expect("encode")
        };
        let hdr = encode(&[]).len();
        let cases: Vec<(Vec<u8>, String)> = vec![
            (
                with_frames(&[ev(99)]),
                format!("byte {hdr}: string id 99 used before definition"),
            ),
            (
                with_frames(&[def(1)]),
                format!("byte {hdr}: corrupt record: string id 1 defined out of order (next is 0)"),
            ),
            (
                with_frames(&[vec![9, 1, 2]]),
                format!("byte {hdr}: corrupt record: Serde Deserialization Error"),
            ),
            (
                with_frames(&[[def(0), vec![0]].concat()]),
                format!("byte {hdr}: corrupt record: 1 trailing bytes"),
            ),
            (
                [encode(&[]), vec![0xff, 0xff, 0xff, 0xff, 0x7f]].concat(),
                format!(
                    "byte {hdr}: corrupt record: frame of 34359738367 bytes exceeds the 16777216 byte limit"
                ),
            ),
            (
                [encode(&[]), vec![0xff; 11]].concat(),
                format!("byte {hdr}: corrupt record: frame length is not a valid varint"),
            ),
        ];
        for (bytes, want) in cases {
            let mut r = TraceReader::new(&bytes[..]).expect("header");
            let e = r.next().expect("one item").expect_err(&want);
            assert_eq!(e.to_string(), want);
            assert!(r.next().is_none(), "the iterator ends after an error");
        }
    }

    #[test]
    fn an_event_naming_a_string_too_often_is_refused_before_copying() {
        let big = vec![b'a'; 64 << 10];
        let def = |id: u32, bytes: &[u8]| {
            postcard::to_stdvec(&Record::DefineString { id, bytes }).expect("encode")
        };
        let exec = |n: usize| {
            postcard::to_stdvec(&Record::Event(WireEvent {
                dt: 1,
                pid: 1,
                tid_off: 0,
                proc: Some(crate::trace::wire::WireProc {
                    ppid: 0,
                    comm: 0,
                    exe: 0,
                    creds: [0; 4],
                }),
                kind: WireKind::Exec {
                    path: 1,
                    argv: vec![1; n],
                    env_names: Vec::new(),
                    former_tid: None,
                },
            }))
            .expect("encode")
        };
        // 250 references to 64 KiB (plus the path): under 16 MiB, read.
        let ok = with_frames(&[def(0, b"x"), def(1, &big), exec(250)]);
        let evs = decode(&ok).0.expect("under the bound");
        assert_eq!(evs.len(), 1);
        // 300: refused, one line, at the event's frame.
        let bad = with_frames(&[def(0, b"x"), def(1, &big), exec(300)]);
        let at = bad.len() - exec(300).len() - 2;
        let e = decode(&bad).0.expect_err("over the bound");
        assert_eq!(
            e.to_string(),
            format!(
                "byte {at}: one event names more than 16777216 bytes of strings (a hostile trace?)"
            )
        );
    }

    #[test]
    fn whole_records_then_event_free_tail_is_clean() {
        // A definition with no event after it is a whole record: no truncation, no event.
        let def =
            postcard::to_stdvec(&Record::DefineString { id: 0, bytes: b"x" }).expect("encode");
        let (got, trunc) = decode(&with_frames(&[def]));
        assert_eq!(got.expect("ok"), vec![]);
        assert_eq!(trunc, None);
    }

    /// The committed sample traces (tests/data/traces/) must keep reading back, and the writer
    /// must keep producing the same bytes: a failure here means the wire format changed, which
    /// needs a FORMAT_VERSION bump (docs/trace-format.md). `SBX_REGEN_TRACES=1` rewrites them.
    #[test]
    fn golden_traces() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/traces");
        let evs = events(12);
        let small = encode(&evs);
        let cut = small.len() - 5;
        let mut bad = small.clone();
        bad[..8].copy_from_slice(b"NOTATRCE");
        if std::env::var_os("SBX_REGEN_TRACES").is_some() {
            std::fs::create_dir_all(&dir).expect("mkdir");
            std::fs::write(dir.join("small.bin"), &small).expect("write");
            std::fs::write(dir.join("truncated.bin"), &small[..cut]).expect("write");
            std::fs::write(dir.join("bad-magic.bin"), &bad).expect("write");
        }
        let golden = std::fs::read(dir.join("small.bin")).expect("tests/data/traces/small.bin");
        assert_eq!(decode(&golden).0.expect("events"), evs);
        assert_eq!(
            golden, small,
            "the writer's output changed: bump FORMAT_VERSION?"
        );
        // A version-5 trace (before program identities) still reads: its execs have none.
        let v5 = std::fs::read(dir.join("small-v5.bin")).expect("small-v5.bin");
        let mut old = evs.clone();
        for ev in &mut old {
            if let EventKind::Exec(x) = &mut ev.kind {
                x.program = None;
                x.thinned.clear();
            }
        }
        assert_eq!(decode(&v5).0.expect("v5 events"), old);
        let trunc = std::fs::read(dir.join("truncated.bin")).expect("truncated.bin");
        let (got, at) = decode(&trunc);
        assert_eq!(got.expect("prefix"), evs[..11]);
        assert!(at.is_some());
        let bad = std::fs::read(dir.join("bad-magic.bin")).expect("bad-magic.bin");
        assert!(matches!(
            decode(&bad).0,
            Err(ReadError {
                kind: ReadErrorKind::BadMagic,
                ..
            })
        ));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]

        #[test]
        fn random_bytes_never_panic(tail in proptest::collection::vec(any::<u8>(), 0..400), prefix in 0u8..3) {
            // The current version, so that random bytes reach the header decoder; and after a
            // valid header, so that they reach the record decoder.
            let bytes = match prefix {
                0 => tail,
                1 => [&MAGIC[..], &FORMAT_VERSION.to_le_bytes(), &tail].concat(),
                _ => [encode(&[]), tail].concat(),
            };
            let (got, _) = decode(&bytes);
            let _ = got.map(|v| v.len());
        }

        #[test]
        fn mutated_traces_never_panic(edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..6)) {
            let mut bytes = encode(&events(30));
            for (i, b) in &edits {
                let i = i.index(bytes.len());
                bytes[i] = *b;
            }
            match decode(&bytes) {
                (Ok(evs), _) => prop_assert!(evs.len() <= 30 + edits.len()),
                (Err(e), _) => prop_assert!(!e.to_string().is_empty()),
            }
        }
    }
}
