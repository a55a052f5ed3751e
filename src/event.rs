//! The vocabulary shared by every layer: what a traced workload did.
//!
//! An [`Event`] is produced by the tracer sinks (record, enforce), written to and read back from
//! the trace file (`trace`), rendered by `show`, folded by `learn` and judged by `policy`.
//! This module is pure data: no I/O, no ptrace, no `/proc`.
//!
//! Paths are bytes (`Vec<u8>`): Linux paths need not be UTF-8, and a sandbox that lossily
//! converts them can be fooled by the difference.

use serde::{Deserialize, Serialize};

/// One thing a workload did, with who did it and when.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Event {
    /// Nanoseconds since the start of the run (monotonic clock).
    pub time_ns: u64,
    /// Thread-group id (the process id).
    pub pid: i32,
    /// Thread id.
    pub tid: i32,
    /// Who the process is at the time of the event.
    pub proc: ProcInfo,
    pub kind: EventKind,
}

/// The identity of the acting process, captured at the event.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcInfo {
    /// Parent process id as sbx saw it at spawn (0 for the root of the tree).
    pub ppid: i32,
    /// `/proc/PID/comm`, at most 15 bytes. Shared: every event of a process carries it.
    pub comm: std::sync::Arc<[u8]>,
    /// The executable (`/proc/PID/exe`), absolute. Shared like `comm`.
    pub exe: std::sync::Arc<[u8]>,
    pub creds: Creds,
}

/// Real and effective user and group ids.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Creds {
    pub uid: u32,
    pub euid: u32,
    pub gid: u32,
    pub egid: u32,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum EventKind {
    /// A checked, metadata or gated syscall, decoded.
    Syscall(Syscall),
    /// A new thread or process appeared in the tree.
    Spawn(Spawn),
    /// A successful execve/execveat: the process now runs `path`.
    Exec(Exec),
    /// A thread or process left the tree.
    Exit(Exit),
    /// A host name resolved to addresses: a DNS answer the workload received, or a name of
    /// `/etc/hosts` when the workload opened it. Later connects to these addresses are linked
    /// to the name (learn writes the name, enforce admits by name).
    Resolved(Resolved),
}

/// Where a [`Resolved`] came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum ResolveSource {
    /// A DNS answer received from this server (`addr:53`).
    Dns(SockAddr),
    /// `/etc/hosts`.
    Hosts,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Resolved {
    /// The name asked for, normalized.
    pub name: String,
    /// The addresses it resolved to (A/AAAA on the CNAME chain), possibly none.
    pub addrs: Vec<std::net::IpAddr>,
    pub source: ResolveSource,
}

/// How a child was created.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum SpawnVia {
    Fork,
    Vfork,
    Clone,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Spawn {
    /// The new thread id (for a process: also its pid).
    pub child: i32,
    /// True for a thread of the same process (CLONE_THREAD).
    pub thread: bool,
    pub via: SpawnVia,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Exec {
    /// The absolute path of the program now running (`/proc/PID/exe` after exec).
    pub path: Vec<u8>,
    pub argv: Vec<Vec<u8>>,
    /// Environment variable names only: values are secrets.
    pub env_names: Vec<Vec<u8>>,
    /// The thread id that called exec when it was not the leader (it becomes the leader).
    pub former_tid: Option<i32>,
    /// The program's identity when it is not `path`: the script an interpreter runs
    /// (`/usr/lib/node_modules/npm/bin/npm-cli.js` for `node`, or the `#!` file the execve
    /// named), absolute and symlink-free ([`crate::identity`]). Rights scoped with `by` are
    /// bound to identities. `None` in traces before format 6.
    pub program: Option<Vec<u8>>,
    /// Environment variables sbx removed from the new program (an `env` rule keeps them for
    /// other programs). Empty in traces before format 6.
    #[serde(default)]
    pub thinned: Vec<Vec<u8>>,
}

impl Exec {
    /// Who this program is for `by` scoping: its script, else its executable.
    pub fn identity(&self) -> &[u8] {
        self.program.as_deref().unwrap_or(&self.path)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ExitStatus {
    Code(i32),
    Signal(i32),
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Exit {
    pub status: ExitStatus,
    /// True when the whole process (thread group) is gone, false for a single thread.
    pub process: bool,
}

/// A decoded syscall.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Syscall {
    /// The syscall's name in the arch table (e.g. `openat`).
    pub name: String,
    /// The raw number on the trace's architecture.
    pub nr: u32,
    /// The raw argument words, as the kernel saw them at entry.
    pub args: [u64; 6],
    /// What the syscall does to which object; empty for gated syscalls without objects.
    pub targets: Vec<Target>,
    pub outcome: Outcome,
    /// For a call on an inet socket (connect, bind, listen, sendto, sendmsg, sendmmsg with an
    /// address): the socket's type (`SO_TYPE`: 1 stream, 2 datagram, 3 raw, 5 seqpacket), so
    /// that learn writes `connect udp` for a UDP socket. `None` for other calls, or when the
    /// socket could not be asked.
    #[serde(default)]
    pub sock_type: Option<i32>,
}

/// One object a syscall acts on and how.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Target {
    pub access: AccessSet,
    pub object: Object,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Object {
    /// A filesystem path.
    Path(PathObj),
    /// A socket address.
    Socket(SockAddr),
    /// An open file descriptor with no path argument (e.g. fchmod), resolved when possible.
    Fd { fd: i32, path: Option<Vec<u8>> },
    /// An anonymous object (memfd, pipe) that has no path.
    Anon(Vec<u8>),
    /// A host name asked of DNS (normalized: lower case, no trailing dot), or
    /// [`crate::dns::MALFORMED`] for a payload to port 53 that is not a DNS query.
    DnsName(String),
    /// A string argument of a gated syscall that names no file (mount's file system type or
    /// source device, a key type, module parameters), exactly as read. Always with an empty
    /// access set: it is shown, never learned or judged.
    Text(Vec<u8>),
    /// A list of ids read from memory (setgroups' group list), with an empty access set.
    Ids(Vec<u32>),
}

/// A path argument: as written, as resolved by sbx, and where symlinks lead.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct PathObj {
    /// The bytes the workload passed, unchanged.
    pub literal: Vec<u8>,
    /// Absolute and lexically normalized against the dirfd/cwd/root (no symlinks followed).
    pub abs: Vec<u8>,
    /// The symlink-resolved target, when it differs from `abs`.
    pub resolved: Option<Vec<u8>>,
}

impl PathObj {
    /// Is this a relative path starting with a name (not `.` or `..`) whose base `/proc`
    /// showed as `DIR (deleted)`: a name looked up in a working directory or dirfd that had
    /// been removed? (Or in a directory really named so: the callers also ask the outcome, or
    /// the directory itself.)
    pub fn under_deleted_base(&self) -> bool {
        let first = self
            .literal
            .split(|&b| b == b'/')
            .find(|c| !c.is_empty() && *c != b".");
        !self.literal.starts_with(b"/")
            && first.is_some_and(|c| c != b"..")
            && self.abs.windows(11).any(|w| w == b" (deleted)/")
    }

    /// The path the kernel acts on: the resolved target if known, else the absolute path.
    pub fn effective(&self) -> &[u8] {
        self.resolved.as_deref().unwrap_or(&self.abs)
    }
}

/// A decoded socket address.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum SockAddr {
    Inet {
        addr: [u8; 4],
        port: u16,
    },
    Inet6 {
        addr: [u8; 16],
        port: u16,
        scope_id: u32,
    },
    /// A path-bound unix socket.
    Unix(Vec<u8>),
    /// An abstract unix socket (the leading NUL removed).
    UnixAbstract(Vec<u8>),
    /// An unnamed unix socket (zero-length sun_path).
    UnixUnnamed,
    /// Netlink, packet and other families: the family number and the raw bytes.
    Other {
        family: u16,
        bytes: Vec<u8>,
    },
    /// The address could not be read or had a bad length.
    Invalid {
        len: u32,
    },
    /// A netlink address (talking to the kernel when `port_id` is 0). `protocol` is the
    /// socket's netlink protocol (NETLINK_ROUTE = 0...), filled in by the tracer.
    Netlink {
        protocol: Option<u16>,
        port_id: u32,
        groups: u32,
    },
}

/// The result of a syscall.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Outcome {
    /// The returned value (not an error).
    Value(i64),
    /// The kernel returned `-errno` (the value was in -4095..=-1).
    Errno(i32),
    /// The syscall was not observed at exit (e.g. enforce without an exit stop, or exec).
    Unknown,
    /// sbx refused the syscall with this errno (enforce deny mode, or in-kernel ENOSYS).
    Denied(i32),
    /// sbx killed the process before the syscall ran.
    Killed,
}

impl Outcome {
    /// Decode a raw return register value: -4095..=-1 is an errno, anything else a value.
    pub fn from_raw(ret: i64) -> Outcome {
        if (-4095..=-1).contains(&ret) {
            Outcome::Errno(i32::try_from(-ret).unwrap_or(i32::MAX))
        } else {
            Outcome::Value(ret)
        }
    }
}

/// What a syscall does to an object. Several may apply at once (open O_RDWR|O_CREAT|O_TRUNC).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[repr(u8)]
pub enum Access {
    Read = 0,
    Write = 1,
    Create = 2,
    Truncate = 3,
    Exec = 4,
    Delete = 5,
    Rename = 6,
    Link = 7,
    Symlink = 8,
    Stat = 9,
    Chmod = 10,
    Chown = 11,
    Connect = 12,
    Bind = 13,
    Listen = 14,
    Send = 15,
    /// A directory was made the working directory (chdir).
    Chdir = 16,
    /// A DNS query for a name (the object is [`Object::DnsName`]).
    Resolve = 17,
}

impl Access {
    pub const ALL: [Access; 18] = [
        Access::Read,
        Access::Write,
        Access::Create,
        Access::Truncate,
        Access::Exec,
        Access::Delete,
        Access::Rename,
        Access::Link,
        Access::Symlink,
        Access::Stat,
        Access::Chmod,
        Access::Chown,
        Access::Connect,
        Access::Bind,
        Access::Listen,
        Access::Send,
        Access::Chdir,
        Access::Resolve,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Access::Read => "read",
            Access::Write => "write",
            Access::Create => "create",
            Access::Truncate => "truncate",
            Access::Exec => "exec",
            Access::Delete => "delete",
            Access::Rename => "rename",
            Access::Link => "link",
            Access::Symlink => "symlink",
            Access::Stat => "stat",
            Access::Chmod => "chmod",
            Access::Chown => "chown",
            Access::Connect => "connect",
            Access::Bind => "bind",
            Access::Listen => "listen",
            Access::Send => "send",
            Access::Chdir => "chdir",
            Access::Resolve => "resolve",
        }
    }
}

/// A set of [`Access`] values, stored as a bit mask.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct AccessSet(pub u32);

impl AccessSet {
    pub const EMPTY: AccessSet = AccessSet(0);

    pub const fn of(a: Access) -> AccessSet {
        AccessSet(1 << (a as u8))
    }

    pub const fn with(self, a: Access) -> AccessSet {
        AccessSet(self.0 | (1 << (a as u8)))
    }

    pub fn contains(self, a: Access) -> bool {
        self.0 & (1 << (a as u8)) != 0
    }

    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The set with `Create` read as `Write`: a name that exists is written, not made.
    pub fn create_as_write(self) -> AccessSet {
        if self.contains(Access::Create) {
            AccessSet((self.0 & !(1 << (Access::Create as u8))) | (1 << (Access::Write as u8)))
        } else {
            self
        }
    }

    pub fn iter(self) -> impl Iterator<Item = Access> {
        Access::ALL.into_iter().filter(move |a| self.contains(*a))
    }
}

impl FromIterator<Access> for AccessSet {
    fn from_iter<I: IntoIterator<Item = Access>>(iter: I) -> Self {
        iter.into_iter().fold(AccessSet::EMPTY, AccessSet::with)
    }
}

/// Errno names for display and for profiles (`= -1 ENOENT`).
pub fn errno_name(errno: i32) -> &'static str {
    match errno {
        1 => "EPERM",
        2 => "ENOENT",
        3 => "ESRCH",
        4 => "EINTR",
        5 => "EIO",
        6 => "ENXIO",
        7 => "E2BIG",
        8 => "ENOEXEC",
        9 => "EBADF",
        10 => "ECHILD",
        11 => "EAGAIN",
        12 => "ENOMEM",
        13 => "EACCES",
        14 => "EFAULT",
        16 => "EBUSY",
        17 => "EEXIST",
        18 => "EXDEV",
        19 => "ENODEV",
        20 => "ENOTDIR",
        21 => "EISDIR",
        22 => "EINVAL",
        23 => "ENFILE",
        24 => "EMFILE",
        25 => "ENOTTY",
        26 => "ETXTBSY",
        27 => "EFBIG",
        28 => "ENOSPC",
        29 => "ESPIPE",
        30 => "EROFS",
        31 => "EMLINK",
        32 => "EPIPE",
        36 => "ENAMETOOLONG",
        38 => "ENOSYS",
        39 => "ENOTEMPTY",
        40 => "ELOOP",
        61 => "ENODATA",
        88 => "ENOTSOCK",
        95 => "EOPNOTSUPP",
        97 => "EAFNOSUPPORT",
        98 => "EADDRINUSE",
        99 => "EADDRNOTAVAIL",
        101 => "ENETUNREACH",
        103 => "ECONNABORTED",
        104 => "ECONNRESET",
        106 => "EISCONN",
        107 => "ENOTCONN",
        110 => "ETIMEDOUT",
        111 => "ECONNREFUSED",
        113 => "EHOSTUNREACH",
        115 => "EINPROGRESS",
        _ => "E?",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_under_a_deleted_base() {
        let p = |literal: &str, abs: &str| PathObj {
            literal: literal.as_bytes().to_vec(),
            abs: abs.as_bytes().to_vec(),
            resolved: None,
        };
        assert!(p("foo", "/w/t (deleted)/foo").under_deleted_base());
        assert!(p("./a/b", "/w/t (deleted)/a/b").under_deleted_base());
        // `.` names the directory itself, `..` leaves it: both are looked up as before.
        assert!(!p(".", "/w/t (deleted)").under_deleted_base());
        assert!(!p("../x", "/w/x").under_deleted_base());
        assert!(!p("./../x", "/w/x").under_deleted_base());
        // Absolute, or an ordinary base.
        assert!(!p("/w/t (deleted)/foo", "/w/t (deleted)/foo").under_deleted_base());
        assert!(!p("foo", "/w/t/foo").under_deleted_base());
        assert!(!p("", "/w/t (deleted)").under_deleted_base());
    }

    #[test]
    fn outcome_from_raw_uses_errno_range() {
        assert_eq!(Outcome::from_raw(3), Outcome::Value(3));
        assert_eq!(Outcome::from_raw(-2), Outcome::Errno(2));
        assert_eq!(Outcome::from_raw(-4095), Outcome::Errno(4095));
        // mmap can return high addresses that look negative: not an errno.
        assert_eq!(Outcome::from_raw(-4096), Outcome::Value(-4096));
    }

    #[test]
    fn access_set_round_trips() {
        let s: AccessSet = [Access::Read, Access::Create].into_iter().collect();
        assert!(s.contains(Access::Read) && s.contains(Access::Create));
        assert!(!s.contains(Access::Write));
        assert_eq!(
            s.iter().collect::<Vec<_>>(),
            vec![Access::Read, Access::Create]
        );
    }
}
