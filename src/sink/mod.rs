//! Sinks connect the tracer to the pure core: `record` decodes and writes the trace, `enforce`
//! decodes and asks the policy. Both share [`decode_stop`], so a decoding fix fixes both.

pub mod chains;
pub mod decide;
pub mod dns;
pub mod enforce;
pub mod memo;
pub mod owned;
pub mod record;
pub mod sharing;
pub mod targets;

use crate::arch::{AUDIT_ARCH_I386, Arch, Sem, SyscallDef};
use crate::decode::{self, Decoded, RawSyscall};
use crate::event::{Object, Outcome, SockAddr, Syscall, Target};
use crate::tracer::SyscallStop;
use crate::tracer::memory::TraceeMemory;
use crate::tracer::procfs;
use crate::tracer::procfs::TraceeProc;

/// A decoded seccomp stop.
#[derive(Debug)]
pub struct DecodedStop {
    pub def: Option<&'static SyscallDef>,
    /// The event, with the decoded targets.
    pub syscall: Syscall,
    /// The rest of the decoding (strings and blobs to protect, exec arguments); its
    /// `targets` are empty, moved into `syscall`.
    pub decoded: Decoded,
}

/// Symlink lookups remembered between stops. Record: a permissive run loses nothing but
/// precision when a path changes behind it. The calls that can change what is a
/// symlink (rename, unlink, rmdir, symlink, link) resolve their own paths afresh, and when
/// one succeeds the cache forgets its paths and everything below them; a gated call (mount
/// and the like) empties it. Keys are paths with every symlink before their last component
/// resolved, as the walk reaches them, so a change at `P` can only make stale the entries at
/// `P` and below it. Not seen: a change made outside the traced tree, or through another
/// mount of the same directory (a bind mount), until the next gated call.
///
/// Enforce uses it only for calls whose path the kernel then walks again, as the checked,
/// resolved path, with `RESOLVE_NO_SYMLINKS` (the openat2 rewrite of opens, the held
/// directories of other path calls: `EnforceSink::links_usable`), so a stale answer can
/// never make the kernel reach anything but the path that was checked: a directory that
/// became a symlink fails with ELOOP, a symlink that became a directory is not entered (the
/// checked path, through the old target, is opened). A refusal decided on a cached answer is
/// decided again afresh; a call that may change symlinks forgets its paths before it runs,
/// and nothing at or below them is remembered while it runs (`begin_change`, until its
/// thread stops again, execs or ends: `end_change`); a gated call (a mount, a namespace)
/// stops all remembering while it runs.
///
/// Enforce also keeps each thread's working directory here ([`Self::keep_cwds`]), under the
/// same rule: used only where the kernel walks the checked absolute path again, so a stale
/// cwd can only make the call reach a path that was checked, never one that was not. A cwd
/// changes through chdir and fchdir (enforce then stops them, and forgets every cwd at each:
/// threads may share one), a namespace or root change (gated: everything is forgotten), or a
/// rename or removal of the directory or one above it (forgotten with the paths below it).
/// A rename made outside the traced tree is not seen: the workload's relative paths then
/// lead to the directory's old name (checked), as they would have just before the rename.
#[derive(Debug, Default)]
pub struct LinkCache {
    map: std::cell::RefCell<std::collections::HashMap<Vec<u8>, Option<Vec<u8>>>>,
    /// A lookup was answered from the map since [`Self::take_hit`] was last called.
    hit: std::cell::Cell<bool>,
    /// Answers read now are not remembered (enforce: a call that may change symlinks is
    /// running, and what is read may be from before or after it).
    frozen: std::cell::Cell<bool>,
    /// Every directory some cached path lies below: only a change at one of them has entries
    /// below it to forget (a temporary file unlinked has none, and costs no scan).
    parents: std::cell::RefCell<std::collections::HashSet<Vec<u8>>>,
    /// Each thread's cwd as last read ([`Self::keep_cwds`]); absolute paths only.
    cwds: std::cell::RefCell<crate::tid::TidMap<Vec<u8>>>,
    /// Remember cwds (enforce, which stops chdir and fchdir to forget them).
    cwds_on: std::cell::Cell<bool>,
    /// Calls that may change what is a symlink, running now ([`Self::begin_change`]): per
    /// thread, the paths they change, `None` for anything (a gated call). No answer at or
    /// below one of them, and no cwd there, is remembered until it is over.
    running: std::cell::RefCell<crate::tid::TidMap<Option<Vec<Vec<u8>>>>>,
    /// Threads running a chdir or fchdir: no cwd is remembered until they are over.
    cwd_running: std::cell::RefCell<crate::tid::TidSet>,
    /// Per thread that asked what one of its fds refers to: `None` after the first question,
    /// its fd directory held open from the second on ([`procfs::FdDir`]: one `readlinkat`
    /// instead of a walk of `/proc` per question). Dropped when the task starts, execs or
    /// ends ([`Self::forget_cwd`]); a held directory that fails is dropped and the question
    /// asked again by path, so a stale one can never make an fd look closed.
    fd_dirs: std::cell::RefCell<crate::tid::TidMap<Option<procfs::FdDir>>>,
    /// Opens decided on these answers ([`memo::OpenMemo`]): forgotten with the answers they
    /// asked for.
    opens: std::cell::RefCell<memo::OpenMemo>,
    /// While `Some`: every path whose symlink answer a resolution asks for
    /// ([`Self::start_asking`]).
    asked: std::cell::RefCell<Option<Vec<Vec<u8>>>>,
}

/// Is `path` `top` or below it?
fn at_or_below(path: &[u8], top: &[u8]) -> bool {
    top == b"/" || (path.starts_with(top) && matches!(path.get(top.len()), None | Some(b'/')))
}

impl LinkCache {
    const MAX: usize = 200_000;
    const MAX_CWDS: usize = 65_536;

    /// Whether a call of `def` can change what is a symlink.
    pub fn changes_links(def: Option<&SyscallDef>) -> bool {
        use crate::arch::Sem;
        match def.map(|d| d.sem) {
            Some(Sem::TwoPath { .. } | Sem::Symlink { .. }) => true,
            Some(Sem::Path { access, .. }) => access.contains(crate::event::Access::Delete),
            // Mounts change everything (gated, rare).
            _ => def.is_some_and(|d| d.class == crate::arch::Class::Gated),
        }
    }

    /// A call of `def` on `targets` ended with `outcome`: forget what it may have changed.
    /// A failed call changed nothing.
    pub fn after(&self, def: Option<&SyscallDef>, targets: &[Target], outcome: Outcome) {
        if !Self::changes_links(def) || matches!(outcome, Outcome::Errno(_) | Outcome::Denied(_)) {
            return;
        }
        if def.is_some_and(|d| d.class == crate::arch::Class::Gated) {
            self.clear();
            return;
        }
        for t in targets {
            if let Object::Path(p) = &t.object {
                self.forget_below(&p.abs);
                if let Some(r) = &p.resolved {
                    self.forget_below(r);
                }
            }
        }
    }

    /// The open memo, kept with the answers it was worked out from.
    pub fn opens(&self) -> std::cell::RefMut<'_, memo::OpenMemo> {
        self.opens.borrow_mut()
    }

    /// Note every path whose answer is asked for from now on, until [`Self::take_asked`].
    pub fn start_asking(&self) {
        *self.asked.borrow_mut() = Some(Vec::new());
    }

    /// The paths whose answers were asked for since [`Self::start_asking`] (and stop noting).
    pub fn take_asked(&self) -> Option<Vec<Vec<u8>>> {
        self.asked.borrow_mut().take()
    }

    /// Are answers remembered now, with no call that may change symlinks running (so an
    /// answer worked out now from remembered ones stays true until the next change)?
    pub fn settled(&self) -> bool {
        !self.frozen.get() && self.running.borrow().is_empty()
    }

    /// Was a lookup answered from the cache since the last call?
    pub fn take_hit(&self) -> bool {
        self.hit.replace(false)
    }

    /// Stop (or resume) remembering new answers.
    pub fn freeze(&self, frozen: bool) {
        self.frozen.set(frozen);
    }

    /// A call of `def` on `targets` may change what is a symlink at them: forget what is
    /// cached there, before it runs (enforce, where most calls have no exit stop).
    pub fn before(&self, def: Option<&SyscallDef>, targets: &[Target]) {
        self.after(def, targets, Outcome::Value(0));
    }

    /// `tid` starts a call of `def` on `targets` that may change what is a symlink there
    /// ([`Self::changes_links`]): forget what is cached there now, and remember nothing at
    /// or below those paths (anything, for a gated call) until [`Self::end_change`] of `tid`.
    /// Answers elsewhere are not affected by the call and are still remembered.
    pub fn begin_change(&self, tid: i32, def: Option<&SyscallDef>, targets: &[Target]) {
        if !Self::changes_links(def) {
            return;
        }
        self.before(def, targets);
        let paths = if def.is_some_and(|d| d.class == crate::arch::Class::Gated) {
            None
        } else {
            let mut v = Vec::new();
            for t in targets {
                if let Object::Path(p) = &t.object {
                    v.push(p.abs.clone());
                    if let Some(r) = &p.resolved {
                        v.push(r.clone());
                    }
                }
            }
            Some(v)
        };
        let mut running = self.running.borrow_mut();
        match (running.get_mut(&tid), paths) {
            (Some(Some(old)), Some(new)) => old.extend(new),
            (Some(old), None) => *old = None,
            (Some(None), Some(_)) => {}
            (None, paths) => {
                running.insert(tid, paths);
            }
        }
    }

    /// `tid` starts a chdir or fchdir: every cwd is forgotten (threads may share one), and
    /// none is remembered until [`Self::end_change`] of `tid`.
    pub fn begin_cwd_change(&self, tid: i32) {
        self.forget_cwds();
        self.cwd_running.borrow_mut().insert(tid);
    }

    /// `tid`'s last call is over (it stopped again, exec'd or ended).
    pub fn end_change(&self, tid: i32) {
        if !self.running.borrow().is_empty() {
            self.running.borrow_mut().remove(&tid);
        }
        if !self.cwd_running.borrow().is_empty() {
            self.cwd_running.borrow_mut().remove(&tid);
        }
    }

    /// May a call running now change what `path` is?
    fn changing(&self, path: &[u8]) -> bool {
        let running = self.running.borrow();
        running.values().any(|paths| match paths {
            None => true,
            Some(ps) => ps.iter().any(|top| at_or_below(path, top)),
        })
    }

    /// Forget everything.
    pub fn clear(&self) {
        self.opens.borrow_mut().clear();
        self.map.borrow_mut().clear();
        self.parents.borrow_mut().clear();
        self.forget_cwds();
    }

    /// Remember threads' cwds from now on. Only for a sink that calls [`Self::forget_cwds`]
    /// at every chdir and fchdir before it runs, and [`Self::forget_cwd`] for every task that
    /// starts, execs or ends.
    pub fn keep_cwds(&self) {
        self.cwds_on.set(true);
    }

    /// Are cwds remembered?
    pub fn keeps_cwds(&self) -> bool {
        self.cwds_on.get()
    }

    /// Forget every thread's cwd (a chdir or fchdir is about to run).
    pub fn forget_cwds(&self) {
        self.cwds.borrow_mut().clear();
    }

    /// Forget `tid`'s cwd and fd directory (a task that starts, execs or ends: its number may
    /// be reused).
    pub fn forget_cwd(&self, tid: i32) {
        if self.cwds_on.get() {
            self.cwds.borrow_mut().remove(&tid);
        }
        if !self.fd_dirs.borrow().is_empty() {
            self.fd_dirs.borrow_mut().remove(&tid);
        }
    }

    /// The most fd directories held open at once.
    const MAX_FD_DIRS: usize = 256;

    /// What fd `fd` of thread `tid` of process `pid` refers to (`/proc/PID/task/TID/fd/N`).
    fn fd_path(&self, pid: i32, tid: i32, fd: i32) -> Option<Vec<u8>> {
        let by_path = || TraceeProc { pid, tid }.fd_path_bytes(fd);
        let mut dirs = self.fd_dirs.borrow_mut();
        match dirs.get(&tid) {
            Some(Some(dir)) => {
                if let Some(p) = dir.fd_path(fd) {
                    return Some(p);
                }
                // Not open, or the directory is stale: ask by path, and start over.
                dirs.remove(&tid);
                by_path()
            }
            Some(None) => {
                let dir = procfs::FdDir::open(pid, tid);
                let p = dir.as_ref().and_then(|d| d.fd_path(fd));
                if p.is_some() {
                    dirs.insert(tid, dir);
                    p
                } else {
                    dirs.remove(&tid);
                    by_path()
                }
            }
            None => {
                if dirs.len() < Self::MAX_FD_DIRS {
                    dirs.insert(tid, None);
                }
                by_path()
            }
        }
    }

    /// `tid`'s remembered cwd, if there is one (nothing is read).
    pub fn remembered_cwd(&self, tid: i32) -> Option<Vec<u8>> {
        self.cwd(tid)
    }

    /// `tid`'s remembered cwd.
    fn cwd(&self, tid: i32) -> Option<Vec<u8>> {
        if !self.cwds_on.get() {
            return None;
        }
        self.cwds.borrow().get(&tid).cloned()
    }

    /// Remember `tid`'s cwd, read now (not while a call that may change it runs).
    fn insert_cwd(&self, tid: i32, cwd: &[u8]) {
        if !self.cwds_on.get()
            || self.frozen.get()
            || !cwd.starts_with(b"/")
            || !self.cwd_running.borrow().is_empty()
            || self.changing(cwd)
        {
            return;
        }
        let mut cwds = self.cwds.borrow_mut();
        if cwds.len() >= Self::MAX_CWDS {
            cwds.clear();
        }
        cwds.insert(tid, cwd.to_vec());
    }

    /// The cached answer for `path`, if any.
    fn get(&self, path: &[u8]) -> Option<Option<Vec<u8>>> {
        self.map.borrow().get(path).cloned()
    }

    /// Remember the answer for `path` (absolute, normalized).
    fn insert(&self, path: &[u8], link: Option<Vec<u8>>) {
        if self.frozen.get() || self.changing(path) {
            return;
        }
        if self.map.borrow().len() >= Self::MAX {
            self.clear();
        }
        // Every directory above `path`, nearest first, up to one already known (whose own
        // ancestors are then known too). A walk can start below directories it never looked
        // up (a /proc/PID/cwd jump), so the parent alone would not do.
        let mut parents = self.parents.borrow_mut();
        let mut dir = path;
        while let Some(cut) = dir.iter().rposition(|&b| b == b'/') {
            dir = &dir[..cut.max(1)];
            if parents.contains(dir) {
                break;
            }
            parents.insert(dir.to_vec());
            if dir == b"/" {
                break;
            }
        }
        self.map.borrow_mut().insert(path.to_vec(), link);
    }

    /// Forget `path` and every path below it. Lookups (one per path component walked) far
    /// outnumber changes, so the map is hashed (a BTreeMap's range made every lookup a dozen
    /// comparisons of long, mostly equal paths: 2% of record's CPU on a C build), and a change
    /// at a directory something was cached below scans it.
    fn forget_below(&self, path: &[u8]) {
        if path == b"/" {
            self.clear();
            return;
        }
        self.opens.borrow_mut().forget_below(path);
        // A cwd at or below `path` is renamed or removed with it.
        let at_or_below =
            |k: &[u8]| k.starts_with(path) && matches!(k.get(path.len()), None | Some(b'/'));
        if self.cwds_on.get() {
            self.cwds.borrow_mut().retain(|_, c| !at_or_below(c));
        }
        let mut m = self.map.borrow_mut();
        m.remove(path);
        let mut parents = self.parents.borrow_mut();
        if !parents.remove(path) {
            return;
        }
        let below = |k: &[u8]| k.starts_with(path) && k.get(path.len()) == Some(&b'/');
        m.retain(|k, _| !below(k));
        parents.retain(|k| !below(k));
    }
}

/// The [`ProcView`](decode::ProcView) of a stop: `/proc` of the tracee, with repeated
/// `readlink`s of ordinary paths answered from a [`LinkCache`] and the root from the tracer's
/// [`RootCache`](procfs::RootCache) when the caller allows.
struct StopView<'a> {
    inner: TraceeProc,
    links: Option<&'a LinkCache>,
    root: Option<&'a procfs::RootCache>,
}

impl decode::ProcView for StopView<'_> {
    fn pid(&self) -> i32 {
        self.inner.pid
    }
    fn tid(&self) -> i32 {
        self.inner.tid
    }
    fn cwd(&self) -> Option<Vec<u8>> {
        let Some(cache) = self.links else {
            return self.inner.cwd();
        };
        if let Some(hit) = cache.cwd(self.inner.tid) {
            cache.hit.set(true);
            return Some(hit);
        }
        let cwd = self.inner.cwd()?;
        cache.insert_cwd(self.inner.tid, &cwd);
        Some(cwd)
    }
    fn root(&self) -> Option<Vec<u8>> {
        match self.root {
            Some(cache) => cache.get_or_read(&self.inner),
            None => self.inner.root(),
        }
    }
    fn fd_path(&self, fd: i32) -> Option<Vec<u8>> {
        match self.links {
            Some(cache) => cache.fd_path(self.inner.pid, self.inner.tid, fd),
            None => self.inner.fd_path(fd),
        }
    }
    fn readlink(&self, path: &[u8]) -> Option<Vec<u8>> {
        // /proc and /dev/fd links change with every process and fd: never cached.
        let Some(cache) = self.links else {
            return self.inner.readlink(path);
        };
        if let Some(asked) = cache.asked.borrow_mut().as_mut() {
            asked.push(path.to_vec());
        }
        if path.starts_with(b"/proc/") || path.starts_with(b"/dev/") {
            return self.inner.readlink(path);
        }
        if let Some(hit) = cache.get(path) {
            cache.hit.set(true);
            return hit;
        }
        let v = self.inner.readlink(path);
        cache.insert(path, v.clone());
        v
    }
}

/// Decode a stop with the real tracee memory and `/proc` view (exec argv and environment
/// names included).
pub fn decode_stop(arch: Arch, stop: &SyscallStop<'_>) -> DecodedStop {
    decode_stop_with(arch, stop, None, true)
}

/// [`decode_stop`], with symlink lookups answered from `cache` when given (record: the
/// tracer's root cache is then used too), and exec arguments read only when `exec_args`.
pub fn decode_stop_with(
    arch: Arch,
    stop: &SyscallStop<'_>,
    cache: Option<&LinkCache>,
    exec_args: bool,
) -> DecodedStop {
    decode_stop_opts(
        arch,
        stop,
        DecodeOpts {
            links: cache,
            changes_too: false,
            cached_root: cache.is_some(),
            exec_args,
            head: None,
        },
    )
}

/// How [`decode_stop_opts`] reads the tracee.
#[derive(Debug, Clone, Copy)]
pub struct DecodeOpts<'a> {
    /// Answer symlink lookups from this cache (record only).
    pub links: Option<&'a LinkCache>,
    /// Also for a call that may change symlinks itself (enforce, which hands such calls
    /// over through held directories opened symlink-free: a stale answer makes them fail,
    /// never reach an unchecked path). Record resolves their paths afresh.
    pub changes_too: bool,
    /// Take the root from the tracer's cache ([`SyscallStop::root`]): only when every syscall
    /// that can change a root stops (see [`procfs::RootCache`]).
    pub cached_root: bool,
    /// Read exec argv and environment names.
    pub exec_args: bool,
    /// Tracee memory already read at this stop: `(address, bytes, short)`, `short` when the
    /// read stopped before unreadable memory. Decoding reads these bytes from here, so what
    /// is decided is what was read then.
    pub head: Option<(u64, &'a [u8], bool)>,
}

/// Decode a stop with the real tracee memory and `/proc` view, as `opts` says.
pub fn decode_stop_opts(arch: Arch, stop: &SyscallStop<'_>, opts: DecodeOpts<'_>) -> DecodedStop {
    let DecodeOpts {
        links: cache,
        changes_too,
        cached_root,
        exec_args,
        head,
    } = opts;
    let raw = RawSyscall {
        arch,
        nr: stop.nr,
        args: stop.args,
    };
    let foreign = stop.audit_arch != arch.audit_arch();
    let def = if foreign { None } else { arch.by_nr(stop.nr) };
    let view = TraceeProc {
        pid: stop.pid,
        tid: stop.tid,
    };
    // A call that changes symlinks resolves its own paths afresh (record).
    let cache = cache.filter(|_| changes_too || !LinkCache::changes_links(def));
    let view = StopView {
        inner: view,
        links: cache,
        root: cached_root.then_some(stop.root),
    };
    let decoded = match def {
        Some(d) => {
            let memory = TraceeMemory { tid: stop.tid };
            match head {
                Some((addr, bytes, short)) => {
                    let pre = decode::Prefetched::known(&memory, addr, bytes.to_vec(), short);
                    decode::decode_with(d, &raw, &pre, &view, exec_args)
                }
                None => decode::decode_with(d, &raw, &memory, &view, exec_args),
            }
        }
        None => Decoded::default(),
    };
    let name = match def {
        Some(d) => d.name.to_string(),
        None if foreign && stop.audit_arch == AUDIT_ARCH_I386 => format!("i386:{}", stop.nr),
        None if foreign => format!("abi{:#x}:{}", stop.audit_arch, stop.nr),
        None => format!("syscall_{}", stop.nr),
    };
    let mut decoded = decoded;
    let mut sock_type = None;
    for t in &mut decoded.targets {
        // The kernel reads the fd as an int: bit 32 set must not hide the socket.
        let fd = crate::decode::int_arg(stop.args[0]);
        match &mut t.object {
            // The netlink protocol is a property of the socket, not of the address.
            Object::Socket(SockAddr::Netlink { protocol, .. }) => {
                *protocol = procfs::socket_protocol(stop.pid, stop.tid, fd)
                    .and_then(|p| u16::try_from(p).ok());
            }
            // So is TCP or UDP (learn writes `connect udp` for a datagram socket).
            Object::Socket(SockAddr::Inet { .. } | SockAddr::Inet6 { .. })
                if sock_type.is_none()
                    && def.is_some_and(|d| matches!(d.sem, Sem::Sock { .. })) =>
            {
                sock_type = procfs::socket_type(stop.pid, stop.tid, fd).map(|t| t & 0xf);
            }
            _ => {}
        }
    }
    // listen: the address the socket listens on (its port, when bind chose it as 0), as a
    // target with no access: learn and enforce know the run's own servers by it (a connect
    // to one is the run talking to itself).
    if def.is_some_and(|d| {
        matches!(
            d.sem,
            Sem::Sock {
                op: crate::arch::SockOp::Listen
            }
        )
    }) && let Some(name) =
        procfs::socket_name(stop.pid, stop.tid, crate::decode::int_arg(stop.args[0]))
    {
        let addr = crate::decode::sockaddr::parse(&name);
        if matches!(addr, SockAddr::Inet { .. } | SockAddr::Inet6 { .. }) {
            decoded.targets.push(crate::event::Target {
                access: crate::event::AccessSet::EMPTY,
                object: Object::Socket(addr),
            });
        }
    }
    let syscall = Syscall {
        name,
        nr: u32::try_from(stop.nr).unwrap_or(u32::MAX),
        args: stop.args,
        // Moved, not copied: the targets live on in the event (`decoded.targets` is left empty).
        targets: std::mem::take(&mut decoded.targets),
        outcome: Outcome::Unknown,
        sock_type,
    };
    DecodedStop {
        def,
        syscall,
        decoded,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{Access, AccessSet, PathObj};

    /// Names both architectures have (aarch64 has only the `*at` calls).
    fn def(name: &str) -> Option<&'static SyscallDef> {
        let d = Arch::native().by_name(name);
        assert!(d.is_some(), "{name}");
        d
    }

    fn path(abs: &str, resolved: Option<&str>) -> Target {
        Target {
            access: AccessSet::of(Access::Delete),
            object: Object::Path(PathObj {
                literal: abs.as_bytes().to_vec(),
                abs: abs.as_bytes().to_vec(),
                resolved: resolved.map(|r| r.as_bytes().to_vec()),
            }),
        }
    }

    #[test]
    fn cwds_are_kept_only_when_asked_and_forgotten_with_their_directory() {
        let c = LinkCache::default();
        c.insert_cwd(1, b"/w/a");
        assert_eq!(c.cwd(1), None, "not kept unless keep_cwds");
        c.keep_cwds();
        for (tid, cwd) in [(1, "/w/a"), (2, "/w/a/sub"), (3, "/w/ab"), (4, "/x")] {
            c.insert_cwd(tid, cwd.as_bytes());
        }
        c.insert_cwd(5, b"pipe:[3]");
        assert_eq!(c.cwd(5), None, "only absolute paths");
        // /w/a renamed or removed: its cwds and those below it go, /w/ab stays.
        c.after(def("renameat"), &[path("/w/a", None)], Outcome::Value(0));
        assert_eq!(c.cwd(1), None);
        assert_eq!(c.cwd(2), None);
        assert_eq!(c.cwd(3), Some(b"/w/ab".to_vec()));
        // Not remembered while a call that changes links runs.
        c.freeze(true);
        c.insert_cwd(1, b"/w/c");
        assert_eq!(c.cwd(1), None);
        c.freeze(false);
        c.forget_cwd(3);
        assert_eq!(c.cwd(3), None);
        assert_eq!(c.cwd(4), Some(b"/x".to_vec()));
        c.forget_cwds();
        assert_eq!(c.cwd(4), None);
        c.insert_cwd(4, b"/x");
        c.clear();
        assert_eq!(c.cwd(4), None, "a gated call forgets everything");
    }

    #[test]
    fn nothing_is_remembered_where_a_running_call_changes_links_until_it_is_over() {
        let c = LinkCache::default();
        c.keep_cwds();
        c.insert(b"/w/a/x", None);
        c.insert(b"/w/b/y", None);
        // Thread 7 renames /w/a (reached through /l/a) onto /w/c: what was cached there is
        // forgotten, and nothing at or below those paths is remembered while it runs.
        c.begin_change(
            7,
            def("renameat"),
            &[path("/l/a", Some("/w/a")), path("/w/c", None)],
        );
        assert_eq!(c.get(b"/w/a/x"), None);
        assert_eq!(c.get(b"/w/b/y"), Some(None), "other paths are kept");
        for p in ["/w/a", "/w/a/x", "/l/a/z", "/w/c", "/w/c/q"] {
            c.insert(p.as_bytes(), None);
            assert_eq!(
                c.get(p.as_bytes()),
                None,
                "{p} remembered while the rename runs"
            );
        }
        c.insert_cwd(1, b"/w/c/sub");
        assert_eq!(c.cwd(1), None);
        // Elsewhere (a sibling whose name extends one, an ancestor) answers are remembered.
        for p in ["/w/ab", "/w", "/w/b/z"] {
            c.insert(p.as_bytes(), None);
            assert_eq!(c.get(p.as_bytes()), Some(None), "{p}");
        }
        c.insert_cwd(2, b"/w/b");
        assert_eq!(c.cwd(2), Some(b"/w/b".to_vec()));
        // A call that changes no link registers nothing.
        c.begin_change(8, def("openat"), &[path("/x", None)]);
        c.insert(b"/x", None);
        assert_eq!(c.get(b"/x"), Some(None));
        // Another thread's stop does not end thread 7's call; thread 7's next stop does.
        c.end_change(8);
        c.insert(b"/w/a", None);
        assert_eq!(c.get(b"/w/a"), None);
        c.end_change(7);
        c.insert(b"/w/a", None);
        assert_eq!(c.get(b"/w/a"), Some(None));
        // A gated call (a mount) stops all remembering while it runs.
        c.begin_change(9, def("mount"), &[]);
        assert_eq!(c.get(b"/w/a"), None, "a gated call forgets everything");
        c.insert(b"/q", None);
        assert_eq!(c.get(b"/q"), None);
        c.end_change(9);
        c.insert(b"/q", None);
        assert_eq!(c.get(b"/q"), Some(None));
        // A chdir forgets every cwd and keeps none until its thread stops again.
        c.insert_cwd(3, b"/w/b");
        c.begin_cwd_change(4);
        assert_eq!(c.cwd(3), None);
        c.insert_cwd(3, b"/w/b");
        assert_eq!(c.cwd(3), None);
        c.end_change(4);
        c.insert_cwd(3, b"/w/b");
        assert_eq!(c.cwd(3), Some(b"/w/b".to_vec()));
    }

    fn cache(keys: &[&str]) -> LinkCache {
        let c = LinkCache::default();
        for k in keys {
            c.insert(k.as_bytes(), None);
        }
        c
    }

    /// The cached paths, sorted.
    fn keys(c: &LinkCache) -> Vec<String> {
        let mut k: Vec<String> = c
            .map
            .borrow()
            .keys()
            .map(|k| String::from_utf8_lossy(k).into_owned())
            .collect();
        k.sort();
        k
    }

    const KEYS: &[&str] = &["/a", "/a/b", "/a/b/c", "/a/bc", "/a/b.d", "/x/y", "/z"];

    #[test]
    fn a_change_forgets_its_path_and_below_only() {
        let c = cache(KEYS);
        c.after(def("unlinkat"), &[path("/a/b", None)], Outcome::Value(0));
        assert_eq!(keys(&c), ["/a", "/a/b.d", "/a/bc", "/x/y", "/z"]);
    }

    /// A walk that jumped (through `/proc/PID/cwd`) caches paths whose directories it never
    /// looked up itself; a change at any of those directories still forgets them.
    #[test]
    fn a_change_above_paths_cached_without_their_directories_forgets_them() {
        let c = cache(&["/home/u/x/f", "/home/v"]);
        c.after(
            def("renameat2"),
            &[path("/home/u", None)],
            Outcome::Value(0),
        );
        assert_eq!(keys(&c), ["/home/v"]);
        c.after(
            def("unlinkat"),
            &[path("/home/v/w", None)],
            Outcome::Value(0),
        );
        assert_eq!(keys(&c), ["/home/v"], "nothing below a leaf");
        c.after(def("unlinkat"), &[path("/home", None)], Outcome::Value(0));
        assert!(keys(&c).is_empty());
    }

    #[test]
    fn a_rename_forgets_both_names_as_written_and_as_resolved() {
        let c = cache(KEYS);
        c.after(
            def("renameat2"),
            &[path("/a/bc", None), path("/l/y", Some("/x/y"))],
            Outcome::Value(0),
        );
        assert_eq!(keys(&c), ["/a", "/a/b", "/a/b.d", "/a/b/c", "/z"]);
    }

    #[test]
    fn failed_or_harmless_calls_forget_nothing() {
        let c = cache(KEYS);
        c.after(
            def("unlinkat"),
            &[path("/a", None)],
            Outcome::Errno(libc::ENOENT),
        );
        c.after(def("openat"), &[path("/a", None)], Outcome::Value(3));
        c.after(def("mkdirat"), &[path("/a", None)], Outcome::Value(0));
        assert_eq!(keys(&c).len(), KEYS.len());
    }

    #[test]
    fn an_unknown_outcome_counts_as_done() {
        let c = cache(KEYS);
        c.after(def("unlinkat"), &[path("/x", None)], Outcome::Unknown);
        assert!(!keys(&c).iter().any(|k| k.starts_with("/x")));
    }

    #[test]
    fn gated_calls_and_the_root_forget_everything() {
        let c = cache(KEYS);
        c.after(def("mount"), &[], Outcome::Value(0));
        assert!(keys(&c).is_empty());
        let c = cache(KEYS);
        c.after(def("renameat2"), &[path("/", None)], Outcome::Value(0));
        assert!(keys(&c).is_empty());
    }

    #[test]
    fn calls_that_change_links_bypass_the_cache() {
        for n in ["renameat", "renameat2", "unlinkat", "symlinkat", "linkat"] {
            assert!(LinkCache::changes_links(def(n)), "{n}");
        }
        for n in ["openat", "mkdirat", "fchmodat", "execve"] {
            assert!(!LinkCache::changes_links(def(n)), "{n}");
        }
    }
}
