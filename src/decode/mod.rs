//! Turn a raw syscall (number + six argument words) into the [`Target`]s it acts on.
//!
//! Pure: memory and `/proc` come in through the [`Memory`] and [`ProcView`] traits, so every
//! decoder is unit-tested with byte arrays. Owns open-flag, sockaddr and path decoding; the
//! arch table's [`Sem`] says where each syscall's objects are.
//!
//! Data in: a [`SyscallDef`], a [`RawSyscall`], the tracee's memory and `/proc` view. Data out:
//! a [`Decoded`] (targets, the exact strings read, exec arguments). Nothing here decides
//! anything: `policy` judges the targets, `sink` records them.
//!
//! Failing closed: when a string or struct the kernel will read cannot be read (bad pointer,
//! longer than PATH_MAX, torn read), [`Decoded::unreadable`] is set and the target is missing;
//! enforce must then refuse the call rather than allow it unchecked.

pub mod memory;

pub use memory::{Memory, Prefetched, ProcView};
pub mod flags;
pub mod path;
pub mod sockaddr;

use crate::arch::{Arch, Arg, Follow, Sem, SockOp, SyscallDef, TwoKind};
use crate::event::{Access, AccessSet, Object, PathObj, SockAddr, Target};

/// PATH_MAX, including the NUL: the longest path the kernel accepts.
pub const PATH_MAX: usize = 4096;
/// At most this many argv or envp entries are read.
pub const MAX_EXEC_ENTRIES: usize = 4096;
/// At most this many bytes of argv (and separately of env names' strings) are read.
pub const MAX_EXEC_BYTES: usize = 128 * 1024;
/// At most this many ids of setgroups' list are read (NGROUPS_MAX is 65536).
pub const MAX_IDS: usize = 1024;
/// `MS_BIND` and `MS_MOVE`: mount's source is then a path.
pub const MS_BIND_OR_MOVE: u64 = 0x1000 | 0x2000;
/// `UIO_MAXIOV`: the kernel's cap on sendmmsg's vlen.
const MAX_MMSG: u64 = 1024;

/// `AT_FDCWD`.
pub const AT_FDCWD: i32 = path::AT_FDCWD;
/// `AT_EMPTY_PATH`.
pub const AT_EMPTY_PATH: u64 = 0x1000;
/// `AT_SYMLINK_NOFOLLOW`.
pub const AT_SYMLINK_NOFOLLOW: u64 = 0x100;
/// `RENAME_EXCHANGE` (renameat2).
pub const RENAME_EXCHANGE: u64 = 2;
/// `RESOLVE_IN_ROOT` (openat2): the dirfd is the root of the lookup.
pub const RESOLVE_IN_ROOT: u64 = 0x10;

/// Open flags whose values are the same on x86_64 and aarch64.
pub mod oflags {
    pub const O_ACCMODE: u64 = 0o3;
    pub const O_WRONLY: u64 = 0o1;
    pub const O_RDWR: u64 = 0o2;
    pub const O_CREAT: u64 = 0o100;
    pub const O_EXCL: u64 = 0o200;
    pub const O_TRUNC: u64 = 0o1000;
    pub const O_PATH: u64 = 0o10000000;
    /// `__O_TMPFILE` (O_TMPFILE is this plus O_DIRECTORY).
    pub const O_TMPFILE_BIT: u64 = 0o20000000;
}

/// `O_NOFOLLOW` on `arch` (it differs between x86_64 and the generic ABI of aarch64).
pub fn o_nofollow(arch: Arch) -> u64 {
    arch.open_flags().nofollow
}

/// `RESOLVE_NO_SYMLINKS` (openat2): fail with ELOOP on any symlink, magic links included.
pub const RESOLVE_NO_SYMLINKS: u64 = 0x04;

/// The `struct open_how` (flags, mode) the kernel builds for `open`/`openat`/`creat` with these
/// flags and mode (fs/open.c `build_open_how` and the 64-bit `force_o_largefile`), so that the
/// same request can be made through `openat2`, which refuses what `open` silently ignores:
/// unknown flag bits, a mode without O_CREAT/O_TMPFILE, other flags beside O_PATH.
pub fn open_how_of(arch: Arch, flags: u64, mode: u64) -> (u64, u64) {
    use oflags::*;
    // O_DIRECTORY, O_NOFOLLOW, O_LARGEFILE move between architectures; the set of valid bits
    // (VALID_OPEN_FLAGS) is the same on both.
    const VALID: u64 = 0o37777703;
    const O_CLOEXEC: u64 = 0o2000000;
    let (o_directory, o_largefile) = (arch.open_flags().directory, arch.open_flags().largefile);
    let mut f = (flags | o_largefile) & VALID;
    if f & O_PATH != 0 {
        f &= o_directory | o_nofollow(arch) | O_PATH | O_CLOEXEC;
    }
    let m = if f & (O_CREAT | O_TMPFILE_BIT) != 0 {
        mode & 0o7777
    } else {
        0
    };
    (f, m)
}

/// A syscall as the tracer saw it at entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawSyscall {
    pub arch: Arch,
    pub nr: u64,
    pub args: [u64; 6],
}

/// What a syscall acts on.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Decoded {
    pub targets: Vec<Target>,
    /// Every string argument read: (argument index, the exact bytes read, NUL excluded).
    pub strings: Vec<(u8, Vec<u8>)>,
    pub exec: Option<ExecArgs>,
    /// Something the kernel will read could not be read (or was too long): a target may be
    /// missing, so enforce must fail closed.
    pub unreadable: bool,
    /// Non-string memory arguments that were decided on (sockaddrs, `struct open_how`, a
    /// `struct msghdr` and its name), exactly as read: the race defence copies them out of
    /// the workload's reach together with `strings`.
    pub blobs: Vec<Blob>,
}

/// A memory argument as read by the decoder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Blob {
    /// The argument register that points to it.
    pub arg: u8,
    pub bytes: Vec<u8>,
    pub kind: BlobKind,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BlobKind {
    /// Plain bytes (a sockaddr; an open_how, whose size argument is `size_arg`).
    Plain { size_arg: Option<u8> },
    /// A `struct msghdr` (56 bytes) whose `msg_name` (offset 0, length at offset 8) is `name`
    /// (empty: no address, msg_name NULL), and, when `payload` is set, whose data (the
    /// iovecs) is these bytes as one iovec.
    ///
    /// `mmsg` (sendmmsg's flags) when it is the first `struct mmsghdr` of a sendmmsg: the guard
    /// then turns the call into `sendmsg(fd, copy, flags)`, which sends that message alone (a
    /// partial send, which sendmmsg callers handle), and the exit stop converts sendmsg's
    /// result back (`msg_len` written, 1 returned). The kernel would otherwise read every
    /// message of the array from workload memory after the check.
    ///
    /// `control`: the ancillary data (`msg_control`, `msg_controllen` bytes) as read, which
    /// the guard hands to the kernel from its copy too (the decision looks at its cmsgs).
    MsgHdr {
        name: Vec<u8>,
        payload: Option<Vec<u8>>,
        mmsg: Option<u64>,
        control: Vec<u8>,
    },
}

/// The most ancillary data a checked `sendmsg` may carry (a guard slot holds the copy):
/// 4 KiB is some 1000 passed fds. More is refused as an unreadable argument (fail closed).
pub const MAX_CONTROL: u64 = 4096;

/// The `(level, type)` of every control message in `control` (a `msg_control` buffer), as
/// the kernel walks them (`CMSG_FIRSTHDR`/`CMSG_NXTHDR` on an LP64 ABI: a 16-byte header
/// `{u64 len; i32 level; i32 type}`, each message 8-byte aligned). A buffer shorter than
/// one header holds none; the walk stops at a message whose length is below the header's or
/// past the end, where the kernel fails the call with EINVAL.
pub fn cmsgs(control: &[u8]) -> Vec<(u32, u32)> {
    const HDR: usize = 16;
    let mut out = Vec::new();
    let mut at = 0usize;
    while control.len().saturating_sub(at) >= HDR {
        let word = |o: usize, n: usize| &control[at + o..at + o + n];
        let len = u64::from_le_bytes(word(0, 8).try_into().unwrap_or([0; 8]));
        let level = u32::from_le_bytes(word(8, 4).try_into().unwrap_or([0; 4]));
        let ty = u32::from_le_bytes(word(12, 4).try_into().unwrap_or([0; 4]));
        if len < HDR as u64 || len > (control.len() - at) as u64 {
            break;
        }
        out.push((level, ty));
        let Some(next) = usize::try_from(len)
            .ok()
            .and_then(|l| l.checked_add(7))
            .map(|l| at + (l & !7))
        else {
            break;
        };
        at = next;
    }
    out
}

/// The argument vector and environment variable names of an exec.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExecArgs {
    pub argv: Vec<Vec<u8>>,
    /// Names only (the bytes before the first `=`): values are secrets.
    pub env_names: Vec<Vec<u8>>,
}

/// The access an open with `flags` asks for.
pub fn open_access(flags: u64) -> AccessSet {
    use oflags::*;
    if flags & O_PATH != 0 {
        // An O_PATH fd reads and writes nothing: like a stat.
        return AccessSet::of(Access::Stat);
    }
    if flags & O_TMPFILE_BIT != 0 {
        // An unnamed file in the directory `path`.
        return AccessSet::of(Access::Create);
    }
    let mut a = match flags & O_ACCMODE {
        0 => AccessSet::of(Access::Read),
        O_WRONLY => AccessSet::of(Access::Write),
        // O_RDWR, and 3 (no data access but needs read and write permission).
        _ => AccessSet::of(Access::Read).with(Access::Write),
    };
    if flags & O_CREAT != 0 {
        a = a.with(Access::Create);
    }
    if flags & O_TRUNC != 0 {
        // The kernel truncates even with O_RDONLY (and checks write permission for it).
        a = a.with(Access::Truncate);
    }
    a
}

/// Whether an open with `flags` follows a symlink in the final component.
pub fn open_follows(arch: Arch, flags: u64) -> bool {
    use oflags::*;
    let excl_create = flags & (O_CREAT | O_EXCL) == (O_CREAT | O_EXCL);
    flags & o_nofollow(arch) == 0 && !excl_create
}

/// The `int` in the low half of an argument word (dirfds and fds are C ints).
/// An `int` argument: its low 32 bits, as the kernel reads it.
pub fn int_arg(word: u64) -> i32 {
    i32::from_le_bytes(word.to_le_bytes()[..4].try_into().unwrap_or([0; 4]))
}

/// Read exactly `len` bytes at `addr`, or `None`.
fn read_exact(mem: &dyn Memory, addr: u64, len: usize) -> Option<Vec<u8>> {
    let mut buf = vec![0u8; len];
    (mem.read(addr, &mut buf) == len).then_some(buf)
}

/// Read a 64-bit little-endian word (pointers and u64 fields; both supported ABIs are LP64 LE).
fn read_u64(mem: &dyn Memory, addr: u64) -> Option<u64> {
    let b = read_exact(mem, addr, 8)?;
    Some(u64::from_le_bytes(b.try_into().ok()?))
}

fn read_u32(mem: &dyn Memory, addr: u64) -> Option<u32> {
    let b = read_exact(mem, addr, 4)?;
    Some(u32::from_le_bytes(b.try_into().ok()?))
}

/// The name the kernel gives a program at a successful exec (its new `comm`), from the
/// execve/execveat call that started it: the last component of the path it was given,
/// cut to 15 bytes (`begin_new_exec`: `__set_task_comm(kbasename(bprm->filename))`). `None`
/// when the kernel names the program some other way: an execveat relative to a directory fd
/// or of the fd itself names it `/dev/fd/N/...` or after the file's dentry (Linux 6.14+).
pub fn exec_comm(def: &SyscallDef, args: &[u64; 6], literal: &[u8]) -> Option<Vec<u8>> {
    let Sem::Exec { dirfd, .. } = def.sem else {
        return None;
    };
    if literal.is_empty() {
        return None;
    }
    let by_fd = dirfd.is_some_and(|i| int_arg(arg_at(args, i)) != AT_FDCWD);
    if by_fd && literal[0] != b'/' {
        return None;
    }
    let base = literal.rsplit(|&b| b == b'/').next().unwrap_or(literal);
    // TASK_COMM_LEN is 16 with the terminating NUL.
    Some(base[..base.len().min(15)].to_vec())
}

/// The file an execve/execveat runs, from the path it decoded: the absolute path in the
/// caller's root with every symlink resolved ([`PathObj::effective`]). `None` when that is not
/// the file's own name: an exec of the fd itself (`AT_EMPTY_PATH`, an empty path), or a path
/// under `/proc` or `/dev` (magic links such as `/proc/self/exe` or `/dev/fd/N` stand for a
/// file whose name the path does not give).
pub fn exec_file<'a>(def: &SyscallDef, p: &'a PathObj) -> Option<&'a [u8]> {
    if !matches!(def.sem, Sem::Exec { .. }) || p.literal.is_empty() {
        return None;
    }
    let file = p.effective();
    let magic = [b"/proc/".as_slice(), b"/dev/"]
        .iter()
        .any(|dir| file.starts_with(dir));
    (file.first() == Some(&b'/') && !magic).then_some(file)
}

/// Whether a call with these arguments follows a symlink in the last component of its path.
pub fn follow_of(follow: Follow, args: &[u64; 6]) -> bool {
    match follow {
        Follow::Yes => true,
        Follow::No => false,
        Follow::UnlessFlag { arg, nofollow } => arg_at(args, arg) & nofollow == 0,
        Follow::IfFlag { arg, follow } => arg_at(args, arg) & follow != 0,
    }
}

fn arg_at(args: &[u64; 6], i: u8) -> u64 {
    args.get(usize::from(i)).copied().unwrap_or(0)
}

/// A [`ProcView`] whose root is a directory fd's target (openat2 RESOLVE_IN_ROOT).
struct Rooted<'a> {
    inner: &'a dyn ProcView,
    root: Vec<u8>,
}

impl ProcView for Rooted<'_> {
    fn pid(&self) -> i32 {
        self.inner.pid()
    }
    fn tid(&self) -> i32 {
        self.inner.tid()
    }
    fn cwd(&self) -> Option<Vec<u8>> {
        self.inner.cwd()
    }
    fn root(&self) -> Option<Vec<u8>> {
        Some(self.root.clone())
    }
    fn fd_path(&self, fd: i32) -> Option<Vec<u8>> {
        self.inner.fd_path(fd)
    }
    fn readlink(&self, path: &[u8]) -> Option<Vec<u8>> {
        self.inner.readlink(path)
    }
}

/// Names of syscalls where a NULL path pointer means "act on the dirfd" (utimensat(fd, NULL)).
const NULL_PATH_IS_DIRFD: &[&str] = &["utimensat", "futimesat"];

struct Ctx<'a> {
    exec_args: bool,
    def: &'a SyscallDef,
    raw: &'a RawSyscall,
    mem: &'a dyn Memory,
    view: &'a dyn ProcView,
    out: Decoded,
}

impl Ctx<'_> {
    fn arg(&self, i: u8) -> u64 {
        arg_at(&self.raw.args, i)
    }

    fn dirfd(&self, i: Option<u8>) -> Option<i32> {
        i.map(|i| int_arg(self.arg(i))).filter(|&fd| fd != AT_FDCWD)
    }

    /// Read the path string in argument `i`; records it in `strings`. `None` (and
    /// `unreadable`) when it cannot be read.
    fn path_arg(&mut self, i: u8) -> Option<Vec<u8>> {
        match self.mem.read_cstr(self.arg(i), PATH_MAX - 1) {
            Some(s) => {
                self.out.strings.push((i, s.clone()));
                Some(s)
            }
            None => {
                self.out.unreadable = true;
                None
            }
        }
    }

    fn push(&mut self, access: AccessSet, object: Object) {
        self.out.targets.push(Target { access, object });
    }

    fn push_path(&mut self, access: AccessSet, p: PathObj) {
        self.push(access, Object::Path(p));
    }

    /// Resolve a path argument with AT_EMPTY_PATH semantics: an empty path names the dirfd
    /// only when `empty_ok`; otherwise the kernel fails with ENOENT and there is no target.
    fn resolve(
        &mut self,
        dirfd: Option<u8>,
        path: u8,
        follow: bool,
        empty_ok: bool,
    ) -> Option<PathObj> {
        let s = self.path_arg(path)?;
        if s.is_empty() && !empty_ok {
            return None;
        }
        Some(path::resolve(self.view, self.dirfd(dirfd), &s, follow))
    }

    /// A path argument whose last component is acted on itself ([`path::resolve_name`]).
    fn resolve_name(&mut self, dirfd: Option<u8>, path: u8) -> Option<PathObj> {
        let s = self.path_arg(path)?;
        if s.is_empty() {
            return None;
        }
        Some(path::resolve_name(self.view, self.dirfd(dirfd), &s))
    }

    fn open(&mut self, dirfd: Option<u8>, path: u8, flags: Option<u8>, how: bool) {
        let (flags, resolve_flags) = match (flags, how) {
            (None, _) => (oflags::O_CREAT | oflags::O_WRONLY | oflags::O_TRUNC, 0),
            (Some(i), false) => (self.arg(i) & 0xffff_ffff, 0),
            (Some(i), true) => {
                // struct open_how { u64 flags; u64 mode; u64 resolve; }
                let Some(how) = read_exact(self.mem, self.arg(i), 24) else {
                    self.out.unreadable = true;
                    return;
                };
                let word = |k: usize| {
                    let mut w = [0u8; 8];
                    w.copy_from_slice(&how[k * 8..k * 8 + 8]);
                    u64::from_le_bytes(w)
                };
                let (f, r) = (word(0), word(2));
                self.out.blobs.push(Blob {
                    arg: i,
                    bytes: how,
                    kind: BlobKind::Plain {
                        size_arg: Some(i + 1),
                    },
                });
                (f, r)
            }
        };
        let access = open_access(flags);
        let follow = open_follows(self.raw.arch, flags);
        let Some(s) = self.path_arg(path) else {
            return;
        };
        if s.is_empty() {
            return; // ENOENT
        }
        let dirfd = self.dirfd(dirfd);
        let p = if resolve_flags & RESOLVE_IN_ROOT != 0 {
            let root = match dirfd {
                Some(fd) => self.view.fd_path(fd),
                None => self.view.cwd(),
            };
            match root {
                Some(root) if root.starts_with(b"/") => {
                    let rooted = Rooted {
                        inner: self.view,
                        root,
                    };
                    path::resolve(&rooted, dirfd, &s, follow)
                }
                _ => {
                    self.out.unreadable = true;
                    return;
                }
            }
        } else {
            path::resolve(self.view, dirfd, &s, follow)
        };
        self.push_path(access, p);
    }

    fn exec(&mut self, dirfd: Option<u8>, path: u8, argv: u8, envp: u8, flags: Option<u8>) {
        let f = flags.map_or(0, |i| self.arg(i));
        let follow = f & AT_SYMLINK_NOFOLLOW == 0;
        if let Some(p) = self.resolve(dirfd, path, follow, f & AT_EMPTY_PATH != 0) {
            self.push_path(AccessSet::of(Access::Exec), p);
        }
        if !self.exec_args {
            return;
        }
        let argv = self.string_array(self.arg(argv), false);
        let env_names = self.string_array(self.arg(envp), true);
        self.out.exec = Some(ExecArgs { argv, env_names });
    }

    /// A NULL-terminated array of string pointers (argv, envp), bounded. Unreadable entries
    /// end the array: these strings are for display and learning, not for decisions. With
    /// `names`, only each string's bytes before its first `=` are kept (environment values
    /// are secrets, and are never copied).
    fn string_array(&self, mut addr: u64, names: bool) -> Vec<Vec<u8>> {
        let keep = |s: &[u8]| -> Vec<u8> {
            let end = if names {
                s.iter().position(|&b| b == b'=').unwrap_or(s.len())
            } else {
                s.len()
            };
            s[..end].to_vec()
        };
        let mut out = Vec::new();
        let mut total = 0usize;
        if addr == 0 {
            return out;
        }
        // The pointers are read a page-bounded block at a time (one read for a typical
        // environment instead of one per entry).
        let mut block: Vec<u64> = Vec::new();
        let mut at = 0usize;
        while out.len() < MAX_EXEC_ENTRIES && total < MAX_EXEC_BYTES {
            if at == block.len() {
                let mut buf = vec![0u8; pointer_block_len(addr)];
                let got = self.mem.read(addr, &mut buf) / 8;
                if got == 0 {
                    break;
                }
                block = buf[..got * 8]
                    .chunks_exact(8)
                    .map(|c| u64::from_le_bytes(c.try_into().unwrap_or([0; 8])))
                    .collect();
                at = 0;
                let Some(next) = addr.checked_add(got as u64 * 8) else {
                    break;
                };
                addr = next;
            }
            // The strings of this block of pointers, their first bytes read in one go.
            let ptrs: Vec<u64> = block[at..]
                .iter()
                .copied()
                .take_while(|&p| p != 0)
                .collect();
            let ended = at + ptrs.len() < block.len();
            at = block.len();
            // Strings already read (an exec's prefetch) need no head read.
            let held: Vec<Option<&[u8]>> = ptrs
                .iter()
                .map(|&p| self.mem.held_cstr(p, MAX_EXEC_BYTES))
                .collect();
            let unread: Vec<u64> = ptrs
                .iter()
                .zip(&held)
                .filter(|(_, h)| h.is_none())
                .map(|(&p, _)| p)
                .collect();
            let mut heads = self.mem.read_heads(&unread).into_iter();
            for (p, held) in ptrs.iter().zip(held) {
                if out.len() >= MAX_EXEC_ENTRIES || total >= MAX_EXEC_BYTES {
                    return out;
                }
                let was_held = held.is_some();
                if let Some(s) = held.filter(|s| s.len() <= MAX_EXEC_BYTES - total) {
                    total += s.len() + 1;
                    out.push(keep(s));
                    continue;
                }
                // A held string longer than what is left of the budget has no head: it is
                // read below, and ends the list.
                let head = if was_held {
                    None
                } else {
                    heads.next().flatten()
                };
                let s = match head
                    .as_deref()
                    .and_then(|h| h.iter().position(|&b| b == 0).map(|e| &h[..e]))
                {
                    Some(s) if s.len() <= MAX_EXEC_BYTES - total => {
                        total += s.len() + 1;
                        keep(s)
                    }
                    // Longer than the head, or unreadable there: read it on its own.
                    _ => match self.mem.read_cstr(*p, MAX_EXEC_BYTES - total) {
                        Some(s) => {
                            total += s.len() + 1;
                            if names { keep(&s) } else { s }
                        }
                        None => return out,
                    },
                };
                out.push(s);
            }
            if ended {
                break;
            }
        }
        out
    }

    /// A sockaddr in argument `arg` with length in argument `len_arg`, recorded as a blob
    /// (a unix path resolved as [`Self::resolve_unix`] says, `follow`ing a final symlink).
    fn sockaddr_arg(&mut self, arg: u8, len_arg: u8, follow: bool) -> Option<SockAddr> {
        let addr = self.arg(arg);
        let (sa, mut bytes) = self.sockaddr_bytes(addr, self.arg(len_arg) & 0xffff_ffff)?;
        let sa = self.resolve_unix(sa, bytes.as_mut(), follow);
        if let Some(bytes) = bytes {
            self.out.blobs.push(Blob {
                arg,
                bytes,
                kind: BlobKind::Plain {
                    size_arg: Some(len_arg),
                },
            });
        }
        Some(sa)
    }

    /// A unix socket path names a file the kernel looks up like any path: relative to the
    /// cwd, every symlink on the way followed (the last one too, except for bind, which
    /// creates it). The address decided on, and recorded, is that absolute, symlink-resolved
    /// path, so a symlink in a writable directory cannot make an allowed name reach another
    /// socket. When it fits in `sun_path`, the sockaddr handed to the kernel (`raw`, which the
    /// guard copies out of the workload's reach) names it too, so a `chdir` of another thread
    /// after the check changes nothing.
    fn resolve_unix(&mut self, sa: SockAddr, raw: Option<&mut Vec<u8>>, follow: bool) -> SockAddr {
        let SockAddr::Unix(literal) = &sa else {
            return sa;
        };
        let p = path::resolve(self.view, None, literal, follow);
        let eff = p.effective().to_vec();
        if !eff.starts_with(b"/") {
            return sa;
        }
        if let Some(raw) = raw
            && eff.len() < sockaddr::SUN_PATH_LEN
            && raw.len() >= 2
        {
            raw.truncate(2);
            raw.extend_from_slice(&eff);
            raw.push(0);
        }
        SockAddr::Unix(eff)
    }

    fn sockaddr(&mut self, addr: u64, len: u64) -> Option<SockAddr> {
        self.sockaddr_bytes(addr, len).map(|(sa, _)| sa)
    }

    fn sockaddr_bytes(&mut self, addr: u64, len: u64) -> Option<(SockAddr, Option<Vec<u8>>)> {
        if addr == 0 {
            return None;
        }
        let Ok(n) = usize::try_from(len) else {
            return Some((SockAddr::Invalid { len: u32::MAX }, None));
        };
        if n > sockaddr::SOCKADDR_MAX {
            // The kernel refuses it with EINVAL.
            return Some((
                SockAddr::Invalid {
                    len: u32::try_from(n).unwrap_or(u32::MAX),
                },
                None,
            ));
        }
        match read_exact(self.mem, addr, n) {
            Some(b) => Some((sockaddr::parse(&b), Some(b))),
            None => {
                self.out.unreadable = true;
                None
            }
        }
    }

    /// The destination of a `struct msghdr` at `addr`: msg_name (ptr, offset 0) and
    /// msg_namelen (u32, offset 8).
    fn msghdr_dest(&mut self, addr: u64) -> Option<SockAddr> {
        let (Some(name), Some(len)) = (
            read_u64(self.mem, addr),
            addr.checked_add(8).and_then(|a| read_u32(self.mem, a)),
        ) else {
            self.out.unreadable = true;
            return None;
        };
        if len == 0 {
            return None;
        }
        let sa = self.sockaddr(name, u64::from(len))?;
        Some(self.resolve_unix(sa, None, true))
    }

    /// The destination of the `struct msghdr` at `at`, read once: the 56-byte header is
    /// copied, and its `msg_name` is read through the pointer in that copy. The copy is what
    /// the guard hands to the kernel instead of the workload's header, as a
    /// [`BlobKind::MsgHdr`] blob for argument 1, with exactly the address returned here, or
    /// none when it returns `None` (a thread racing the check can neither change the address
    /// nor add one). An unreadable header or address sets `unreadable` (fail closed). `mmsg`
    /// is sendmmsg's flags argument when the header is the first of its array.
    fn msghdr_copy(&mut self, at: u64, mmsg: Option<u64>) -> Option<SockAddr> {
        let Some(hdr) = read_exact(self.mem, at, 56) else {
            self.out.unreadable = true;
            return None;
        };
        let name_ptr = u64::from_le_bytes(hdr[0..8].try_into().unwrap_or([0; 8]));
        let name_len = u32::from_le_bytes(hdr[8..12].try_into().unwrap_or([0; 4]));
        let (dest, name) = if name_len == 0 {
            (None, Vec::new())
        } else {
            match self.sockaddr_bytes(name_ptr, u64::from(name_len)) {
                Some((sa, mut bytes)) => {
                    let sa = self.resolve_unix(sa, bytes.as_mut(), true);
                    (Some(sa), bytes.unwrap_or_default())
                }
                None => (None, Vec::new()),
            }
        };
        let control_ptr = u64::from_le_bytes(hdr[32..40].try_into().unwrap_or([0; 8]));
        let control_len = u64::from_le_bytes(hdr[40..48].try_into().unwrap_or([0; 8]));
        let control = if control_len == 0 {
            Vec::new()
        } else if control_len > MAX_CONTROL {
            self.out.unreadable = true;
            Vec::new()
        } else {
            // Bounded by MAX_CONTROL just above.
            let n = usize::try_from(control_len).unwrap_or(0);
            read_exact(self.mem, control_ptr, n).unwrap_or_else(|| {
                self.out.unreadable = true;
                Vec::new()
            })
        };
        self.out.blobs.push(Blob {
            arg: 1,
            bytes: hdr,
            kind: BlobKind::MsgHdr {
                name,
                payload: None,
                mmsg,
                control,
            },
        });
        dest
    }

    fn sock(&mut self, op: SockOp) {
        let fd = int_arg(self.arg(0));
        let mut dests = Vec::new();
        let access = match op {
            // Answers are read at the exit (sink::dns), not decoded at entry.
            SockOp::Socket | SockOp::RecvFrom | SockOp::RecvMsg | SockOp::RecvMmsg => return,
            SockOp::Listen => {
                let path = self.view.fd_path(fd);
                self.push(AccessSet::of(Access::Listen), Object::Fd { fd, path });
                return;
            }
            SockOp::Connect | SockOp::Bind => {
                dests.extend(self.sockaddr_arg(1, 2, op == SockOp::Connect));
                if self.arg(1) == 0 {
                    dests.push(SockAddr::Invalid { len: 0 });
                }
                AccessSet::of(if op == SockOp::Connect {
                    Access::Connect
                } else {
                    Access::Bind
                })
            }
            SockOp::SendTo => {
                dests.extend(self.sockaddr_arg(4, 5, true));
                AccessSet::of(Access::Send)
            }
            SockOp::SendMsg => {
                dests.extend(self.msghdr_copy(self.arg(1), None));
                AccessSet::of(Access::Send)
            }
            SockOp::SendMmsg => {
                // struct mmsghdr { struct msghdr (56 bytes); unsigned msg_len; } = 64 bytes.
                // The guard sends the first message alone, from a copy (as sendmsg); the
                // others are checked too: they are what the workload means to send next.
                let base = self.arg(1);
                let vlen = (self.arg(2) & 0xffff_ffff).min(MAX_MMSG);
                for i in 0..vlen {
                    let Some(at) = base.checked_add(i * 64) else {
                        break;
                    };
                    let d = if i == 0 {
                        self.msghdr_copy(at, Some(self.arg(3)))
                    } else {
                        self.msghdr_dest(at)
                    };
                    if let Some(d) = d
                        && !dests.contains(&d)
                    {
                        dests.push(d);
                    }
                }
                AccessSet::of(Access::Send)
            }
        };
        for d in dests {
            self.push(access, Object::Socket(d));
        }
    }

    fn two(
        &mut self,
        kind: TwoKind,
        od: Option<u8>,
        old: u8,
        nd: Option<u8>,
        new: u8,
        follow: Follow,
    ) {
        let follow_old = follow_of(follow, &self.raw.args);
        // linkat(AT_EMPTY_PATH) links the dirfd's file itself; its flags are where the
        // follow flag is.
        let empty_ok = match follow {
            Follow::IfFlag { arg, .. } | Follow::UnlessFlag { arg, .. } => {
                self.arg(arg) & AT_EMPTY_PATH != 0
            }
            _ => false,
        };
        let old_p = match kind {
            TwoKind::Rename => self.resolve_name(od, old),
            _ => self.resolve(od, old, follow_old, empty_ok),
        };
        let new_p = self.resolve_name(nd, new);
        let r = AccessSet::of(Access::Read);
        let (old_a, new_a) = match kind {
            TwoKind::Rename => {
                let moved_from = r.with(Access::Delete);
                let moved_to = AccessSet::of(Access::Create).with(Access::Write);
                if self.def.name == "renameat2" && self.arg(4) & RENAME_EXCHANGE != 0 {
                    let both = AccessSet(moved_from.0 | moved_to.0);
                    (both, both)
                } else {
                    (moved_from, moved_to)
                }
            }
            TwoKind::Link => (r.with(Access::Write), AccessSet::of(Access::Create)),
        };
        if let Some(p) = old_p {
            self.push_path(old_a, p);
        }
        if let Some(p) = new_p {
            self.push_path(new_a, p);
        }
    }

    /// The objects of a [`Sem::Args`] call, in argument order: paths as path targets, strings
    /// as text, setgroups' list as ids, fds with their paths, each with no access. NULL pointers
    /// are skipped (`acct(NULL)`, mount without a type); an unreadable one sets `unreadable`.
    fn args(&mut self, list: &[Arg]) {
        for (i, a) in list.iter().enumerate() {
            let i = u8::try_from(i).unwrap_or(u8::MAX);
            let as_path = match *a {
                Arg::Path { dirfd, follow } => Some((dirfd, follow)),
                Arg::MountSource if self.arg(3) & MS_BIND_OR_MOVE != 0 => Some((None, Follow::Yes)),
                Arg::MountSource | Arg::Str => None,
                Arg::GidList => {
                    self.id_list(i);
                    continue;
                }
                Arg::Fd => {
                    // setns' namespace file, finit_module's module, kexec's kernel.
                    let fd = int_arg(self.arg(i));
                    if fd >= 0 {
                        let path = self.view.fd_path(fd);
                        self.push(AccessSet::EMPTY, Object::Fd { fd, path });
                    }
                    continue;
                }
                _ => continue,
            };
            if self.arg(i) == 0 {
                continue;
            }
            match as_path {
                Some((dirfd, follow)) => {
                    let follow = follow_of(follow, &self.raw.args);
                    if let Some(p) = self.resolve(dirfd, i, follow, false) {
                        self.push_path(AccessSet::EMPTY, p);
                    }
                }
                None => {
                    if let Some(s) = self.path_arg(i) {
                        self.push(AccessSet::EMPTY, Object::Text(s));
                    }
                }
            }
        }
    }

    /// setgroups(size, list): `size` gids (bounded by [`MAX_IDS`]) at argument `i`.
    fn id_list(&mut self, i: u8) {
        let n = usize::try_from(self.arg(0) & 0xffff_ffff)
            .unwrap_or(0)
            .min(MAX_IDS);
        if n == 0 || self.arg(i) == 0 {
            return;
        }
        match read_exact(self.mem, self.arg(i), n * 4) {
            Some(b) => {
                let ids = b
                    .chunks_exact(4)
                    .map(|c| u32::from_le_bytes(c.try_into().unwrap_or([0; 4])))
                    .collect();
                self.push(AccessSet::EMPTY, Object::Ids(ids));
            }
            None => self.out.unreadable = true,
        }
    }
}

/// How many bytes of a pointer array [`Ctx::string_array`] reads at a time from `addr`: up to
/// 64 pointers, not past the page end.
fn pointer_block_len(addr: u64) -> usize {
    let to_page_end = 4096 - (addr % 4096);
    usize::try_from(to_page_end / 8).unwrap_or(1).clamp(1, 64) * 8
}

/// An exec's path, the first block of both pointer arrays and the first bytes of every string
/// those blocks point to, read in two goes (one read each would be five: the path, the argv
/// block, its strings, the envp block, its strings; each read costs a `process_vm_readv`).
fn exec_prefetch<'a>(mem: &'a dyn Memory, path: u64, argv: u64, envp: u64) -> Prefetched<'a> {
    let blocks = [argv, envp].map(|a| (a, pointer_block_len(a)));
    let mut pre = Prefetched::new(mem, &[(path, memory::head_len(path)), blocks[0], blocks[1]]);
    let mut heads = Vec::new();
    for (at, len) in blocks {
        let Some(block) = pre.held(at, len) else {
            continue;
        };
        heads.extend(
            block
                .chunks_exact(8)
                .map(|c| u64::from_le_bytes(c.try_into().unwrap_or([0; 8])))
                .take_while(|&p| p != 0)
                .map(|p| (p, memory::head_len(p))),
        );
    }
    pre.add(&heads);
    pre
}

/// Decode `raw`, a call of `def`, against the tracee's memory and `/proc` view.
pub fn decode(
    def: &SyscallDef,
    raw: &RawSyscall,
    mem: &dyn Memory,
    view: &dyn ProcView,
) -> Decoded {
    decode_with(def, raw, mem, view, true)
}

/// [`decode`]; `exec_args: false` skips reading an exec's argv and environment names (they
/// are for the trace; enforce decides on the path alone).
pub fn decode_with(
    def: &SyscallDef,
    raw: &RawSyscall,
    mem: &dyn Memory,
    view: &dyn ProcView,
    exec_args: bool,
) -> Decoded {
    let prefetched;
    let mem: &dyn Memory = match def.sem {
        Sem::Exec {
            path, argv, envp, ..
        } if exec_args => {
            let at = |i| arg_at(&raw.args, i);
            prefetched = exec_prefetch(mem, at(path), at(argv), at(envp));
            &prefetched
        }
        _ => mem,
    };
    let mut c = Ctx {
        def,
        raw,
        mem,
        view,
        exec_args,
        out: Decoded::default(),
    };
    match def.sem {
        Sem::Raw => {}
        Sem::Open {
            dirfd,
            path,
            flags,
            how,
        } => c.open(dirfd, path, flags, how),
        Sem::Exec {
            dirfd,
            path,
            argv,
            envp,
            flags,
        } => c.exec(dirfd, path, argv, envp, flags),
        Sem::Path {
            dirfd,
            path,
            access,
            follow,
            empty_path_flag,
        } => {
            // utimensat(fd, NULL, ...) acts on fd; with AT_FDCWD the kernel answers EFAULT.
            if c.dirfd(dirfd).is_some()
                && c.arg(path) == 0
                && NULL_PATH_IS_DIRFD.contains(&def.name)
            {
                let p = path::resolve(view, c.dirfd(dirfd), b"", false);
                c.push_path(access, p);
            } else {
                let empty_ok = empty_path_flag.is_some_and(|i| c.arg(i) & AT_EMPTY_PATH != 0);
                // mkdir, mknod, rmdir, unlink: the name itself, whatever its trailing `/`.
                let name_only = follow == Follow::No
                    && (access.contains(Access::Create) || access.contains(Access::Delete));
                let p = if name_only && !empty_ok {
                    c.resolve_name(dirfd, path)
                } else {
                    c.resolve(dirfd, path, follow_of(follow, &raw.args), empty_ok)
                };
                if let Some(p) = p {
                    c.push_path(access, p);
                }
            }
        }
        Sem::TwoPath {
            kind,
            olddirfd,
            old,
            newdirfd,
            new,
            follow,
        } => {
            c.two(kind, olddirfd, old, newdirfd, new, follow);
        }
        Sem::Symlink {
            target,
            newdirfd,
            new,
        } => {
            // The target is stored text, not looked up now: recorded as shown text, never
            // judged or learned (a link's target is read through the link's own path).
            if let Some(t) = c.path_arg(target) {
                c.push(AccessSet::EMPTY, Object::Text(t));
            }
            if let Some(p) = c.resolve_name(newdirfd, new) {
                c.push_path(AccessSet::of(Access::Create), p);
            }
        }
        Sem::Fd { fd, access } => {
            let fd = int_arg(c.arg(fd));
            let path = view.fd_path(fd);
            c.push(access, Object::Fd { fd, path });
        }
        Sem::Sock { op } => c.sock(op),
        Sem::Args(list) => c.args(list),
    }
    c.out
}

#[cfg(test)]
mod how_tests {
    use super::*;

    #[test]
    fn open_how_mimics_build_open_how() {
        use oflags::*;
        // Mode dropped without O_CREAT; O_LARGEFILE forced on 64-bit.
        assert_eq!(open_how_of(Arch::X86_64, 0, 0o666), (0o100000, 0));
        assert_eq!(
            open_how_of(Arch::X86_64, O_CREAT | O_WRONLY, 0o100644),
            (0o100000 | O_CREAT | O_WRONLY, 0o644)
        );
        // Unknown bits are ignored by open(), so they are dropped.
        assert_eq!(open_how_of(Arch::X86_64, 1 << 40, 0).0, 0o100000);
        // O_PATH keeps only O_DIRECTORY, O_NOFOLLOW, O_CLOEXEC (O_LARGEFILE goes too).
        assert_eq!(
            open_how_of(Arch::X86_64, O_PATH | O_TRUNC | 0o2000000, 0),
            (O_PATH | 0o2000000, 0)
        );
        assert_eq!(
            open_how_of(Arch::Aarch64, O_PATH | 0o100000, 0),
            (O_PATH | 0o100000, 0)
        );
    }
}

#[cfg(test)]
mod tests {

    /// Control messages are walked as the kernel walks them: 8-byte aligned, a short or
    /// overlong length ends the walk.
    #[test]
    fn control_messages_are_walked_like_the_kernel() {
        let cmsg = |len: u64, level: u32, ty: u32, data: usize| {
            let mut b = len.to_le_bytes().to_vec();
            b.extend_from_slice(&level.to_le_bytes());
            b.extend_from_slice(&ty.to_le_bytes());
            b.resize(16 + data, 0xaa);
            while !b.len().is_multiple_of(8) {
                b.push(0);
            }
            b
        };
        assert!(cmsgs(&[]).is_empty());
        assert!(cmsgs(&[0; 15]).is_empty());
        let mut two = cmsg(20, 1, 1, 4); // SCM_RIGHTS, one fd, padded to 24
        two.extend(cmsg(16 + 40, 41, 57, 40));
        assert_eq!(cmsgs(&two), vec![(1, 1), (41, 57)]);
        // A length past the end stops the walk (the kernel: EINVAL).
        let mut bad = cmsg(20, 1, 1, 4);
        bad.extend(cmsg(4096, 0, 7, 8));
        assert_eq!(cmsgs(&bad), vec![(1, 1)]);
        // A length below the header's too.
        assert!(cmsgs(&cmsg(8, 0, 7, 0)).is_empty());
    }
    use super::*;
    use crate::decode::memory::{FakeMemory, FakeProc};

    const BASE: u64 = 0x10_000;
    const BAD: u64 = 0xdead_0000;

    /// A memory image built by appending values; each `put` returns the value's address.
    struct Img(FakeMemory);

    impl Img {
        fn new() -> Img {
            Img(FakeMemory {
                base: BASE,
                bytes: vec![0; 8],
            })
        }
        fn bytes(&mut self, b: &[u8]) -> u64 {
            let at = BASE + self.0.bytes.len() as u64;
            self.0.bytes.extend_from_slice(b);
            // Keep 8-byte alignment for the next value.
            while !self.0.bytes.len().is_multiple_of(8) {
                self.0.bytes.push(0xAA);
            }
            at
        }
        fn str(&mut self, s: &[u8]) -> u64 {
            let mut v = s.to_vec();
            v.push(0);
            self.bytes(&v)
        }
        fn ptrs(&mut self, ps: &[u64]) -> u64 {
            let v: Vec<u8> = ps.iter().flat_map(|p| p.to_le_bytes()).collect();
            self.bytes(&v)
        }
    }

    fn view() -> FakeProc {
        let mut v = FakeProc {
            pid: 7,
            tid: 7,
            cwd: b"/w".to_vec(),
            root: b"/".to_vec(),
            ..FakeProc::default()
        };
        v.fds.insert(3, b"/etc".to_vec());
        v.fds.insert(5, b"/memfd:x (deleted)".to_vec());
        v.fds.insert(6, b"socket:[99]".to_vec());
        v.symlinks
            .insert(b"/w/link".to_vec(), b"/etc/shadow".to_vec());
        v.symlinks
            .insert(b"/etc/hosts".to_vec(), b"/tmp/evil".to_vec());
        v
    }

    #[test]
    fn exec_file_is_the_resolved_path_unless_the_path_does_not_name_it() {
        let execve = Arch::X86_64.by_name("execve").unwrap();
        let openat = Arch::X86_64.by_name("openat").unwrap();
        let obj = |literal: &str, abs: &str, resolved: Option<&str>| PathObj {
            literal: literal.into(),
            abs: abs.into(),
            resolved: resolved.map(Into::into),
        };
        let f =
            |def, p: &PathObj| exec_file(def, p).map(|v| String::from_utf8(v.to_vec()).unwrap());
        let linked = obj("/bin/true", "/bin/true", Some("/usr/bin/true"));
        assert_eq!(f(execve, &linked).as_deref(), Some("/usr/bin/true"));
        let plain = obj("./x", "/w/x", None);
        assert_eq!(f(execve, &plain).as_deref(), Some("/w/x"));
        // Not an exec; an exec of the fd itself; magic links; a path not made absolute.
        assert_eq!(f(openat, &linked), None);
        assert_eq!(f(execve, &obj("", "/w", None)), None);
        assert_eq!(
            f(execve, &obj("/proc/self/exe", "/proc/self/exe", None)),
            None
        );
        assert_eq!(
            f(execve, &obj("/dev/fd/3", "/dev/fd/3", Some("/proc/7/fd/3"))),
            None
        );
        assert_eq!(f(execve, &obj("/x/fd3", "/x/fd3", Some("/dev/fd/3"))), None);
        assert_eq!(f(execve, &obj("x", "x", None)), None);
    }

    #[test]
    fn exec_comm_is_the_last_component_cut_to_15_bytes() {
        let execve = Arch::X86_64.by_name("execve").unwrap();
        let execveat = Arch::X86_64.by_name("execveat").unwrap();
        let cwd = u64::from_le_bytes(i64::from(AT_FDCWD).to_le_bytes());
        let c =
            |def, args, p: &[u8]| exec_comm(def, &args, p).map(|v| String::from_utf8(v).unwrap());
        assert_eq!(c(execve, [0; 6], b"/usr/bin/true").as_deref(), Some("true"));
        assert_eq!(c(execve, [0; 6], b"true").as_deref(), Some("true"));
        assert_eq!(
            c(execve, [0; 6], b"./a/b/run.sh").as_deref(),
            Some("run.sh")
        );
        assert_eq!(
            c(execve, [0; 6], b"/x/a-very-long-program-name").as_deref(),
            Some("a-very-long-pro")
        );
        assert_eq!(c(execve, [0; 6], b"").as_deref(), None);
        // execveat: by name from the cwd or an absolute path only.
        assert_eq!(
            c(execveat, [cwd, 0, 0, 0, 0, 0], b"bin/ls").as_deref(),
            Some("ls")
        );
        assert_eq!(
            c(execveat, [3, 0, 0, 0, 0, 0], b"/bin/ls").as_deref(),
            Some("ls")
        );
        assert_eq!(c(execveat, [3, 0, 0, 0, 0, 0], b"ls").as_deref(), None);
        assert_eq!(c(execveat, [3, 0, 0, 0, 0, 0x1000], b"").as_deref(), None);
        let openat = Arch::X86_64.by_name("openat").unwrap();
        assert_eq!(c(openat, [cwd, 0, 0, 0, 0, 0], b"/bin/ls").as_deref(), None);
    }

    fn run(name: &str, args: [u64; 6], img: &Img) -> Decoded {
        let def = Arch::X86_64
            .by_name(name)
            .unwrap_or_else(|| panic!("{name} not in table"));
        let raw = RawSyscall {
            arch: Arch::X86_64,
            nr: u64::from(def.nr),
            args,
        };
        decode(def, &raw, &img.0, &view())
    }

    fn fdcwd() -> u64 {
        u64::from_le_bytes(i64::from(AT_FDCWD).to_le_bytes())
    }

    /// (access names, effective path) of every path target.
    fn paths(d: &Decoded) -> Vec<(Vec<&'static str>, String)> {
        d.targets
            .iter()
            .map(|t| {
                let acc: Vec<&str> = t.access.iter().map(Access::name).collect();
                let p = match &t.object {
                    Object::Path(p) => String::from_utf8_lossy(p.effective()).into_owned(),
                    Object::Fd { fd, path } => {
                        format!(
                            "fd {fd} {}",
                            String::from_utf8_lossy(path.as_deref().unwrap_or(b"?"))
                        )
                    }
                    other => format!("{other:?}"),
                };
                (acc, p)
            })
            .collect()
    }

    /// (syscall, arguments, expected `paths`).
    type Case = (&'static str, [u64; 6], Vec<(Vec<&'static str>, String)>);

    fn one(acc: &[&'static str], p: &str) -> Vec<(Vec<&'static str>, String)> {
        vec![(acc.to_vec(), p.to_string())]
    }

    #[test]
    fn open_family_flags() {
        use oflags::*;
        let mut img = Img::new();
        let f = img.str(b"f");
        let link = img.str(b"link");
        let hosts = img.str(b"hosts");
        let cases: Vec<Case> = vec![
            ("open", [f, 0, 0, 0, 0, 0], one(&["read"], "/w/f")),
            (
                "openat",
                [fdcwd(), f, O_WRONLY | O_CREAT | O_TRUNC, 0, 0, 0],
                one(&["write", "create", "truncate"], "/w/f"),
            ),
            (
                "openat",
                [fdcwd(), f, O_RDWR, 0, 0, 0],
                one(&["read", "write"], "/w/f"),
            ),
            (
                "openat",
                [fdcwd(), f, O_PATH | O_RDWR, 0, 0, 0],
                one(&["stat"], "/w/f"),
            ),
            (
                "openat",
                [fdcwd(), f, O_TMPFILE_BIT | 0o200000 | O_RDWR, 0, 0, 0],
                one(&["create"], "/w/f"),
            ),
            (
                "openat",
                [fdcwd(), f, 0o200000, 0, 0, 0],
                one(&["read"], "/w/f"),
            ),
            (
                "creat",
                [f, 0o644, 0, 0, 0, 0],
                one(&["write", "create", "truncate"], "/w/f"),
            ),
            ("open", [link, 0, 0, 0, 0, 0], one(&["read"], "/etc/shadow")),
            (
                "open",
                [link, 0o400000, 0, 0, 0, 0],
                one(&["read"], "/w/link"),
            ),
            (
                "open",
                [link, O_CREAT | O_EXCL | O_WRONLY, 0, 0, 0, 0],
                one(&["write", "create"], "/w/link"),
            ),
            (
                "openat",
                [3, hosts, 0, 0, 0, 0],
                one(&["read"], "/tmp/evil"),
            ),
            // The high half of a dirfd word is ignored, as by the kernel.
            (
                "openat",
                [0xffff_ffff_0000_0003, hosts, 0, 0, 0, 0],
                one(&["read"], "/tmp/evil"),
            ),
        ];
        for (name, args, want) in cases {
            let d = run(name, args, &img);
            assert!(!d.unreadable, "{name} {args:?}");
            assert_eq!(paths(&d), want, "{name} {args:?}");
        }
        let d = run("openat", [fdcwd(), f, 0, 0, 0, 0], &img);
        assert_eq!(d.strings, vec![(1, b"f".to_vec())]);
    }

    #[test]
    fn openat2_reads_open_how_and_resolve_in_root() {
        let mut img = Img::new();
        let x = img.str(b"/passwd");
        let how = img.ptrs(&[oflags::O_RDWR, 0, 0]);
        let how_in_root = img.ptrs(&[0, 0, RESOLVE_IN_ROOT]);
        let d = run("openat2", [fdcwd(), x, how, 24, 0, 0], &img);
        assert_eq!(paths(&d), one(&["read", "write"], "/passwd"));
        let d = run("openat2", [3, x, how_in_root, 24, 0, 0], &img);
        assert_eq!(paths(&d), one(&["read"], "/etc/passwd"));
        let d = run("openat2", [3, x, BAD, 24, 0, 0], &img);
        assert!(d.unreadable && d.targets.is_empty());
    }

    #[test]
    fn unreadable_and_too_long_paths_fail_closed() {
        let mut img = Img::new();
        let long = img.str(&[b'a'; 5000]);
        let d = run("utimensat", [fdcwd(), 0, 0, 0, 0, 0], &img);
        assert!(
            d.unreadable && d.targets.is_empty(),
            "utimensat(AT_FDCWD, NULL) is EFAULT"
        );
        for ptr in [BAD, 0, long] {
            let d = run("openat", [fdcwd(), ptr, 0, 0, 0, 0], &img);
            assert!(d.unreadable, "{ptr:#x}");
            assert!(d.targets.is_empty());
        }
        let empty = img.str(b"");
        let d = run("unlinkat", [fdcwd(), empty, 0, 0, 0, 0], &img);
        assert!(
            !d.unreadable && d.targets.is_empty(),
            "empty path: ENOENT, nothing touched"
        );
    }

    #[test]
    fn exec_reads_argv_and_env_names() {
        let mut img = Img::new();
        let path = img.str(b"/bin/ls");
        let a0 = img.str(b"ls");
        let a1 = img.str(b"-l");
        let e0 = img.str(b"HOME=/root");
        let e1 = img.str(b"NOEQ");
        let argv = img.ptrs(&[a0, a1, 0]);
        let envp = img.ptrs(&[e0, e1, 0]);
        let d = run("execve", [path, argv, envp, 0, 0, 0], &img);
        assert_eq!(paths(&d), one(&["exec"], "/bin/ls"));
        let exec = d.exec.expect("exec args");
        assert_eq!(exec.argv, vec![b"ls".to_vec(), b"-l".to_vec()]);
        assert_eq!(exec.env_names, vec![b"HOME".to_vec(), b"NOEQ".to_vec()]);
        // fexecve of a memfd.
        let empty = img.str(b"");
        let d = run("execveat", [5, empty, 0, 0, AT_EMPTY_PATH, 0], &img);
        assert_eq!(paths(&d), one(&["exec"], "/memfd:x (deleted)"));
        assert_eq!(d.exec, Some(ExecArgs::default()));
    }

    /// Counts what a decoder asks of the memory below it.
    struct Counting<'a> {
        inner: &'a dyn Memory,
        reads: std::cell::Cell<usize>,
        span_reads: std::cell::Cell<usize>,
    }

    impl Memory for Counting<'_> {
        fn read(&self, addr: u64, buf: &mut [u8]) -> usize {
            self.reads.set(self.reads.get() + 1);
            self.inner.read(addr, buf)
        }
        fn read_spans(&self, spans: &[(u64, usize)]) -> Vec<Option<Vec<u8>>> {
            self.span_reads.set(self.span_reads.get() + 1);
            self.inner.read_spans(spans)
        }
        fn read_ranges(&self, spans: &[(u64, usize)]) -> Vec<(u64, Vec<u8>, bool)> {
            self.span_reads.set(self.span_reads.get() + 1);
            self.inner.read_ranges(spans)
        }
    }

    #[test]
    fn exec_args_are_read_in_two_goes() {
        let mut img = Img::new();
        let path = img.str(b"/bin/ls");
        let a1 = img.str(b"-l");
        let env: Vec<u64> = (0..40)
            .map(|i| img.str(format!("VAR{i}=value {i}").as_bytes()))
            .collect();
        let long = img.str(&[b'L'; 300]);
        let mut envp = env.clone();
        envp.extend([long, 0]);
        let argv = img.ptrs(&[path, a1, 0]);
        let envp = img.ptrs(&envp);
        let def = Arch::X86_64.by_name("execve").unwrap();
        let raw = RawSyscall {
            arch: Arch::X86_64,
            nr: u64::from(def.nr),
            args: [path, argv, envp, 0, 0, 0],
        };
        let mem = Counting {
            inner: &img.0,
            reads: 0.into(),
            span_reads: 0.into(),
        };
        let d = decode(def, &raw, &mem, &view());
        // The path, both pointer blocks, then every string's head; only the rest of the
        // string longer than a head is read on its own (read_cstr's second chunk).
        assert_eq!((mem.span_reads.get(), mem.reads.get()), (2, 1));
        let plain = decode(def, &raw, &img.0, &view());
        assert_eq!(d, plain, "the same decoding as one read at a time");
        let exec = d.exec.expect("exec args");
        assert_eq!(exec.argv, vec![b"/bin/ls".to_vec(), b"-l".to_vec()]);
        assert_eq!(exec.env_names.len(), 41);
        assert_eq!(exec.env_names[39], b"VAR39");
        assert_eq!(exec.env_names[40], vec![b'L'; 300]);
        // Enforce (no exec args) reads only the path.
        let mem = Counting {
            inner: &img.0,
            reads: 0.into(),
            span_reads: 0.into(),
        };
        let d = decode_with(def, &raw, &mem, &view(), false);
        assert_eq!(d.exec, None);
        assert_eq!((mem.span_reads.get(), mem.reads.get()), (0, 1));
    }

    #[test]
    fn exec_arrays_are_bounded() {
        let mut img = Img::new();
        let path = img.str(b"/bin/x");
        let s = img.str(b"y");
        let many = img.ptrs(&vec![s; MAX_EXEC_ENTRIES + 10]);
        let d = run("execve", [path, many, BAD, 0, 0, 0], &img);
        let exec = d.exec.expect("exec args");
        assert_eq!(exec.argv.len(), MAX_EXEC_ENTRIES);
        assert!(exec.env_names.is_empty());
    }

    #[test]
    fn path_syscalls() {
        let mut img = Img::new();
        let empty = img.str(b"");
        let link = img.str(b"link");
        let a = img.str(b"a");
        let b = img.str(b"b");
        let cases: Vec<Case> = vec![
            (
                "newfstatat",
                [3, empty, 0, AT_EMPTY_PATH, 0, 0],
                one(&["stat"], "/etc"),
            ),
            (
                "newfstatat",
                [fdcwd(), link, 0, 0, 0, 0],
                one(&["stat"], "/etc/shadow"),
            ),
            (
                "newfstatat",
                [fdcwd(), link, 0, AT_SYMLINK_NOFOLLOW, 0, 0],
                one(&["stat"], "/w/link"),
            ),
            ("newfstatat", [3, empty, 0, 0, 0, 0], vec![]),
            (
                "statx",
                [3, empty, AT_EMPTY_PATH, 0, 0, 0],
                one(&["stat"], "/etc"),
            ),
            ("lstat", [link, 0, 0, 0, 0, 0], one(&["stat"], "/w/link")),
            ("unlink", [link, 0, 0, 0, 0, 0], one(&["delete"], "/w/link")),
            (
                "unlinkat",
                [3, a, 0x200, 0, 0, 0],
                one(&["delete"], "/etc/a"),
            ),
            ("mkdir", [a, 0o755, 0, 0, 0, 0], one(&["create"], "/w/a")),
            (
                "chmod",
                [link, 0o600, 0, 0, 0, 0],
                one(&["chmod"], "/etc/shadow"),
            ),
            (
                "fchownat",
                [3, empty, 0, 0, AT_EMPTY_PATH, 0],
                one(&["chown"], "/etc"),
            ),
            ("truncate", [a, 0, 0, 0, 0, 0], one(&["truncate"], "/w/a")),
            ("utimensat", [3, 0, 0, 0, 0, 0], one(&["write"], "/etc")),
            ("futimesat", [3, 0, 0, 0, 0, 0], one(&["write"], "/etc")),
            (
                "utimensat",
                [fdcwd(), link, 0, AT_SYMLINK_NOFOLLOW, 0, 0],
                one(&["write"], "/w/link"),
            ),
            ("chdir", [a, 0, 0, 0, 0, 0], one(&["chdir"], "/w/a")),
            (
                "fchmod",
                [3, 0o600, 0, 0, 0, 0],
                one(&["chmod"], "fd 3 /etc"),
            ),
            ("fchdir", [9, 0, 0, 0, 0, 0], one(&["chdir"], "fd 9 ?")),
            (
                "rename",
                [a, b, 0, 0, 0, 0],
                vec![
                    (vec!["read", "delete"], "/w/a".into()),
                    (vec!["write", "create"], "/w/b".into()),
                ],
            ),
            (
                "renameat2",
                [fdcwd(), a, 3, b, RENAME_EXCHANGE, 0],
                vec![
                    (vec!["read", "write", "create", "delete"], "/w/a".into()),
                    (vec!["read", "write", "create", "delete"], "/etc/b".into()),
                ],
            ),
            (
                "link",
                [link, b, 0, 0, 0, 0],
                vec![
                    (vec!["read", "write"], "/w/link".into()),
                    (vec!["create"], "/w/b".into()),
                ],
            ),
            (
                "linkat",
                [fdcwd(), link, fdcwd(), b, 0x400, 0],
                vec![
                    (vec!["read", "write"], "/etc/shadow".into()),
                    (vec!["create"], "/w/b".into()),
                ],
            ),
            (
                "linkat",
                [5, empty, 3, b, AT_EMPTY_PATH, 0],
                vec![
                    (vec!["read", "write"], "/memfd:x (deleted)".into()),
                    (vec!["create"], "/etc/b".into()),
                ],
            ),
            (
                "symlinkat",
                [link, 3, a, 0, 0, 0],
                vec![
                    (vec![], "Text([108, 105, 110, 107])".into()),
                    (vec!["create"], "/etc/a".into()),
                ],
            ),
        ];
        for (name, args, want) in cases {
            let d = run(name, args, &img);
            assert!(!d.unreadable, "{name} {args:?}");
            assert_eq!(paths(&d), want, "{name} {args:?}");
        }
        let d = run("symlink", [link, a, 0, 0, 0, 0], &img);
        assert_eq!(d.strings, vec![(0, b"link".to_vec()), (1, b"a".to_vec())]);
        // The target text is kept for display, with no access: only the new name is judged.
        assert_eq!(
            d.targets[0],
            Target {
                access: AccessSet::EMPTY,
                object: Object::Text(b"link".to_vec())
            }
        );
        assert_eq!(d.targets.len(), 2);
        assert!(d.targets[1].access.contains(Access::Create));
    }

    fn inet(port: u16, addr: [u8; 4]) -> Vec<u8> {
        let mut b = vec![2, 0];
        b.extend_from_slice(&port.to_be_bytes());
        b.extend_from_slice(&addr);
        b.extend_from_slice(&[0; 8]);
        b
    }

    fn msghdr(img: &mut Img, name: u64, len: u32) -> Vec<u8> {
        let _ = img;
        let mut m = Vec::new();
        m.extend_from_slice(&name.to_le_bytes());
        m.extend_from_slice(&u64::from(len).to_le_bytes());
        m.resize(64, 0);
        m
    }

    #[test]
    fn unix_paths_are_resolved_like_file_paths() {
        fn un(path: &[u8]) -> Vec<u8> {
            let mut b = 1u16.to_le_bytes().to_vec();
            b.extend_from_slice(path);
            b.push(0);
            b
        }
        let mut img = Img::new();
        let rel = img.bytes(&un(b"app.sock"));
        let link = img.bytes(&un(b"/w/link"));
        let unix = |p: &str| Object::Socket(SockAddr::Unix(p.as_bytes().to_vec()));
        // Relative: made absolute from the cwd; the sockaddr the guard hands to the kernel
        // names the absolute path, and the length argument is set to it.
        let d = run("connect", [4, rel, 11, 0, 0, 0], &img);
        assert_eq!(d.targets[0].object, unix("/w/app.sock"));
        assert_eq!(
            d.blobs,
            vec![Blob {
                arg: 1,
                bytes: un(b"/w/app.sock"),
                kind: BlobKind::Plain { size_arg: Some(2) },
            }]
        );
        // A symlink is followed: the decision is about where it leads.
        let d = run("connect", [4, link, 10, 0, 0, 0], &img);
        assert_eq!(d.targets[0].object, unix("/etc/shadow"));
        let d = run("sendto", [4, 0, 0, 0, link, 10], &img);
        assert_eq!(d.targets[0].object, unix("/etc/shadow"));
        // bind creates its last component: a symlink there is not followed (EADDRINUSE).
        let d = run("bind", [4, link, 10, 0, 0, 0], &img);
        assert_eq!(d.targets[0].object, unix("/w/link"));
    }

    #[test]
    fn sockets() {
        let mut img = Img::new();
        let a = img.bytes(&inet(443, [1, 2, 3, 4]));
        let b = img.bytes(&inet(53, [8, 8, 8, 8]));
        let one_msg = msghdr(&mut img, a, 16);
        let m1 = img.bytes(&one_msg);
        let mut two = msghdr(&mut img, a, 16);
        two.extend(msghdr(&mut img, b, 16));
        two.extend(msghdr(&mut img, 0, 0));
        let m3 = img.bytes(&two);
        let inet_a = Object::Socket(SockAddr::Inet {
            addr: [1, 2, 3, 4],
            port: 443,
        });
        let inet_b = Object::Socket(SockAddr::Inet {
            addr: [8, 8, 8, 8],
            port: 53,
        });
        let t = |a: Access, o: &Object| Target {
            access: AccessSet::of(a),
            object: o.clone(),
        };

        let d = run("connect", [4, a, 16, 0, 0, 0], &img);
        assert_eq!(d.targets, vec![t(Access::Connect, &inet_a)]);
        let d = run("bind", [4, a, 200, 0, 0, 0], &img);
        assert_eq!(
            d.targets,
            vec![t(
                Access::Bind,
                &Object::Socket(SockAddr::Invalid { len: 200 })
            )]
        );
        let d = run("sendto", [4, 0, 0, 0, 0, 0], &img);
        assert!(d.targets.is_empty() && !d.unreadable);
        let d = run("sendto", [4, 0, 0, 0, b, 16], &img);
        assert_eq!(d.targets, vec![t(Access::Send, &inet_b)]);
        let d = run("sendmsg", [4, m1, 0, 0, 0, 0], &img);
        assert_eq!(d.targets, vec![t(Access::Send, &inet_a)]);
        let d = run("sendmmsg", [4, m3, 3, 0, 0, 0], &img);
        assert_eq!(
            d.targets,
            vec![t(Access::Send, &inet_a), t(Access::Send, &inet_b)]
        );
        let d = run("sendmsg", [4, BAD, 0, 0, 0, 0], &img);
        assert!(d.unreadable);

        // What the guard hands to the kernel: a copy of the header, with the checked address,
        // or none when none was checked (a connected socket: a racing thread cannot add one);
        // for sendmmsg the first message's header, marked with the call's flags.
        let blob = |d: &Decoded| match d.blobs.as_slice() {
            [
                Blob {
                    arg: 1,
                    bytes,
                    kind:
                        BlobKind::MsgHdr {
                            name,
                            payload: None,
                            mmsg,
                            ..
                        },
                },
            ] => (bytes.clone(), name.clone(), *mmsg),
            other => panic!("{other:?}"),
        };
        let a_bytes = inet(443, [1, 2, 3, 4]);
        let d = run("sendmsg", [4, m1, 0, 0, 0, 0], &img);
        assert_eq!(blob(&d), (one_msg[..56].to_vec(), a_bytes.clone(), None));
        let no_name_hdr = msghdr(&mut img, 0, 0);
        let no_name = img.bytes(&no_name_hdr);
        let d = run("sendmsg", [4, no_name, 0, 0, 0, 0], &img);
        assert!(d.targets.is_empty() && !d.unreadable);
        assert_eq!(blob(&d).1, Vec::<u8>::new());
        let d = run("sendmmsg", [4, m3, 3, 0x40, 0, 0], &img);
        assert_eq!(blob(&d), (two[..56].to_vec(), a_bytes, Some(0x40)));
        // A vector of none sends nothing: nothing to copy.
        let d = run("sendmmsg", [4, m3, 0, 0, 0, 0], &img);
        assert!(d.blobs.is_empty() && d.targets.is_empty());
        let d = run("connect", [4, BAD, 16, 0, 0, 0], &img);
        assert!(d.unreadable && d.targets.is_empty());
        let d = run("listen", [6, 5, 0, 0, 0, 0], &img);
        assert_eq!(
            d.targets,
            vec![t(
                Access::Listen,
                &Object::Fd {
                    fd: 6,
                    path: Some(b"socket:[99]".to_vec())
                }
            )]
        );
        assert!(run("socket", [2, 1, 0, 0, 0, 0], &img).targets.is_empty());
    }

    #[test]
    fn raw_syscalls_decode_to_nothing() {
        let img = Img::new();
        assert_eq!(run("read", [0, BAD, 10, 0, 0, 0], &img), Decoded::default());
        // ptrace's arguments are all words: named by `show`, nothing read.
        assert_eq!(
            run("ptrace", [16, 42, 0, 0, 0, 0], &img),
            Decoded::default()
        );
        assert_eq!(
            run("unshare", [0x2000_0000, 0, 0, 0, 0, 0], &img),
            Decoded::default()
        );
    }

    /// Gated calls: paths resolved like checked ones but without access, strings as text,
    /// NULL skipped, setgroups' ids read, fds named.
    #[test]
    fn gated_arguments() {
        let mut img = Img::new();
        let jail = img.str(b"../jail/./x/");
        let link = img.str(b"link");
        let proc_ = img.str(b"proc");
        let mnt = img.str(b"/mnt");
        let ext4 = img.str(b"ext4");
        let gids = img.bytes(&[0, 0, 0, 0, 27, 0, 0, 0, 0xe8, 0x03, 0, 0]);
        let none = |p: &str| (Vec::<&str>::new(), p.to_string());
        let text = |s: &str| (Vec::<&str>::new(), format!("Text({:?})", s.as_bytes()));
        const MS_BIND: u64 = 0x1000;
        let cases: Vec<Case> = vec![
            ("chroot", [jail, 0, 0, 0, 0, 0], vec![none("/jail/x")]),
            ("chroot", [link, 0, 0, 0, 0, 0], vec![none("/etc/shadow")]),
            (
                "pivot_root",
                [jail, mnt, 0, 0, 0, 0],
                vec![none("/jail/x"), none("/mnt")],
            ),
            (
                "mount",
                [proc_, mnt, proc_, 0xe, 0, 0],
                vec![text("proc"), none("/mnt"), text("proc")],
            ),
            (
                "mount",
                [jail, mnt, 0, MS_BIND, 0, 0],
                vec![none("/jail/x"), none("/mnt")],
            ),
            (
                "mount",
                [0, mnt, ext4, 0, 0, 0],
                vec![none("/mnt"), text("ext4")],
            ),
            // umount2(UMOUNT_NOFOLLOW) acts on the link itself.
            ("umount2", [link, 8, 0, 0, 0, 0], vec![none("/w/link")]),
            ("umount2", [link, 2, 0, 0, 0, 0], vec![none("/etc/shadow")]),
            ("acct", [0, 0, 0, 0, 0, 0], vec![]),
            ("swapon", [jail, 0, 0, 0, 0, 0], vec![none("/jail/x")]),
            (
                "setns",
                [3, 0x4000_0000, 0, 0, 0, 0],
                vec![none("fd 3 /etc")],
            ),
            (
                "finit_module",
                [3, ext4, 0, 0, 0, 0],
                vec![none("fd 3 /etc"), text("ext4")],
            ),
            (
                "setgroups",
                [3, gids, 0, 0, 0, 0],
                vec![none("Ids([0, 27, 1000])")],
            ),
            ("setgroups", [0, 0, 0, 0, 0, 0], vec![]),
            ("setresuid", [0, 0, 0, 0, 0, 0], vec![]),
            (
                "perf_event_open",
                [BAD, 0, u64::MAX, u64::MAX, 0, 0],
                vec![],
            ),
        ];
        for (name, args, want) in cases {
            let d = run(name, args, &img);
            assert_eq!(paths(&d), want, "{name} {args:x?}");
            assert!(!d.unreadable, "{name}");
        }
        // Unreadable strings fail closed like any other.
        assert!(run("chroot", [BAD, 0, 0, 0, 0, 0], &img).unreadable);
        assert!(run("setgroups", [2, BAD, 0, 0, 0, 0], &img).unreadable);
        // The same words decode the same on aarch64 (the tables share the argument lists).
        let def = Arch::Aarch64.by_name("chroot").expect("chroot");
        let raw = RawSyscall {
            arch: Arch::Aarch64,
            nr: u64::from(def.nr),
            args: [jail, 0, 0, 0, 0, 0],
        };
        assert_eq!(
            paths(&decode(def, &raw, &img.0, &view())),
            vec![none("/jail/x")]
        );
    }
}
