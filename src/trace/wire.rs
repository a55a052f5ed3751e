//! The on-disk record types of the trace file (docs/trace-format.md).
//!
//! Private to `trace`: writer and reader convert between [`crate::event::Event`] and these
//! types. Strings are interned: a [`Record::DefineString`] gives bytes an id before the id's
//! first use, and events carry only ids. The order of every enum's variants and of every
//! struct's fields IS the file format: changing them bumps [`super::FORMAT_VERSION`].

use serde::{Deserialize, Serialize};

/// Largest frame body (the bytes after the varint length prefix) a reader accepts.
pub(crate) const MAX_FRAME: u64 = 16 << 20;
/// Largest header body a reader accepts.
pub(crate) const MAX_HEADER: u64 = 1 << 20;
/// Longest varint: a u64 needs at most 10 groups of 7 bits.
pub(crate) const MAX_VARINT: usize = 10;

/// One frame of the record stream.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) enum Record<'a> {
    /// Bytes for string id `id`; ids are given out in order 0, 1, 2... after each reset.
    DefineString {
        id: u32,
        bytes: &'a [u8],
    },
    /// Forget every string id (the writer bounds its table); ids restart at 0.
    ResetStrings,
    Event(WireEvent),
}

#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct WireEvent {
    /// `time_ns` minus the previous event's (wrapping; the first event's base is 0).
    pub dt: i64,
    pub pid: i32,
    /// `tid - pid` (wrapping): 0 for the leader thread.
    pub tid_off: i32,
    /// `None`: the same process info as the previous event.
    pub proc: Option<WireProc>,
    pub kind: WireKind,
}

#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct WireProc {
    pub ppid: i32,
    pub comm: u32,
    pub exe: u32,
    /// uid, euid, gid, egid.
    pub creds: [u32; 4],
}

#[derive(Debug, Serialize, Deserialize)]
pub(crate) enum WireKind {
    Syscall(WireSyscall),
    Spawn {
        child: i32,
        thread: bool,
        via: WireVia,
    },
    Exec {
        path: u32,
        argv: Vec<u32>,
        env_names: Vec<u32>,
        former_tid: Option<i32>,
    },
    Exit {
        status: WireExit,
        process: bool,
    },
    /// Version 2.
    Resolved {
        name: u32,
        /// 4 or 16 bytes each.
        addrs: Vec<Vec<u8>>,
        /// The DNS server (an `Inet`/`Inet6` object); `None` for /etc/hosts.
        server: Option<WireObject>,
    },
    /// Version 6: an exec with the program's identity (an interpreter's script), when it is
    /// not the exe. Writers of version 6 write this instead of `Exec`.
    ExecProgram {
        path: u32,
        argv: Vec<u32>,
        env_names: Vec<u32>,
        former_tid: Option<i32>,
        program: Option<u32>,
        /// Names of the environment variables sbx removed (`env` rules).
        thinned: Vec<u32>,
    },
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub(crate) enum WireVia {
    Fork,
    Vfork,
    Clone,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub(crate) enum WireExit {
    Code(i32),
    Signal(i32),
}

#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct WireSyscall {
    pub name: u32,
    pub nr: u32,
    /// Each raw word minus the same word of the previous event with the same `name` id (0
    /// for the first; wrapping), as `i64` so small differences either way are short zigzag
    /// varints. The memory of previous words is cleared by `ResetStrings`.
    pub args: [i64; 6],
    pub targets: Vec<WireTarget>,
    pub outcome: WireOutcome,
    /// Version 4: the socket type ([`crate::event::Syscall::sock_type`]).
    pub sock_type: Option<i32>,
}

#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct WireTarget {
    /// `AccessSet` bits.
    pub access: u32,
    pub object: WireObject,
}

#[derive(Debug, Serialize, Deserialize)]
pub(crate) enum WireObject {
    Path {
        literal: u32,
        abs: u32,
        resolved: Option<u32>,
    },
    Inet {
        addr: [u8; 4],
        port: u16,
    },
    Inet6 {
        addr: [u8; 16],
        port: u16,
        scope_id: u32,
    },
    Unix(u32),
    UnixAbstract(u32),
    UnixUnnamed,
    OtherSock {
        family: u16,
        bytes: u32,
    },
    InvalidSock {
        len: u32,
    },
    Fd {
        fd: i32,
        path: Option<u32>,
    },
    Anon(u32),
    Netlink {
        protocol: Option<u16>,
        port_id: u32,
        groups: u32,
    },
    /// Version 2: a DNS query name.
    DnsName(u32),
    /// Version 3: a string argument of a gated syscall that names no file.
    Text(u32),
    /// Version 3: a list of ids (setgroups).
    Ids(Vec<u32>),
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub(crate) enum WireOutcome {
    Value(i64),
    Errno(i32),
    Unknown,
    Denied(i32),
    Killed,
}

/// Append `v` as an unsigned LEB128 varint (the same encoding postcard uses for lengths).
pub(crate) fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    loop {
        let low = u8::try_from(v & 0x7f).unwrap_or(0);
        v >>= 7;
        if v == 0 {
            out.push(low);
            return;
        }
        out.push(low | 0x80);
    }
}
