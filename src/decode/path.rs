//! Path resolution as the kernel does it, from the outside (design.md section 4).
//!
//! Pure: the tracee's cwd, root, fds and symlinks come in through [`ProcView`]; nothing here
//! touches the filesystem. Every path in and out is bytes (non-UTF-8 is preserved) and every
//! output path is absolute *as seen from sbx* (a chrooted workload's `/etc/passwd` is
//! `ROOT/etc/passwd`).
//!
//! [`resolve`] produces a [`PathObj`] with:
//! - `abs`: the path joined to its base (the dirfd's target, the cwd, or the process root for
//!   absolute paths) and normalized lexically (`.`, `//` and `..`, which never climbs above the
//!   process root); `/proc/self` and `/proc/thread-self` become `/proc/PID` and
//!   `/proc/PID/task/TID`, because for sbx they would name sbx itself;
//! - `resolved`: the result of walking the components and following symlinks through
//!   [`ProcView::readlink`] like the kernel does (absolute targets restart at the process root,
//!   relative ones continue in the link's directory, `..` after a symlink climbs from where the
//!   link led, magic links `/proc/PID/{fd/N,cwd,root,exe}` jump to the target the tracer reads,
//!   which is already absolute as seen from sbx), set only when it differs from `abs`.
//!   A symlink loop (more than [`MAX_LINKS`] links) leaves `resolved` empty: the kernel fails
//!   such a call with ELOOP, so `abs` is the best name of what was asked for.
//!
//! An unknown base (a closed dirfd, no cwd) is named `/proc/PID/fd/N` or `/proc/PID/cwd`, which
//! no profile allows by accident.

use crate::decode::ProcView;
use crate::event::PathObj;

/// The kernel's limit on symlinks followed in one lookup (MAXSYMLINKS).
pub const MAX_LINKS: usize = 40;

/// `AT_FDCWD` as the dirfd argument.
pub const AT_FDCWD: i32 = -100;

/// An absolute path under construction: the joined bytes plus where each component ends, so
/// pushing, popping and handing the current prefix to `readlink` are all O(component).
#[derive(Debug, Default, PartialEq, Eq)]
struct Stack {
    buf: Vec<u8>,
    ends: Vec<usize>,
}

/// Room a stack is made with beyond what it holds: the components pushed next then need no
/// reallocation (a typical path fits).
const STACK_ROOM: usize = 160;
const STACK_ROOM_COMPONENTS: usize = 16;

impl Clone for Stack {
    fn clone(&self) -> Stack {
        let mut s = Stack::with_room(self.buf.len(), self.ends.len());
        s.buf.extend_from_slice(&self.buf);
        s.ends.extend_from_slice(&self.ends);
        s
    }
}

impl Stack {
    fn with_room(bytes: usize, components: usize) -> Stack {
        Stack {
            buf: Vec::with_capacity(bytes + STACK_ROOM),
            ends: Vec::with_capacity(components + STACK_ROOM_COMPONENTS),
        }
    }

    fn from_path(path: &[u8]) -> Stack {
        let mut s = Stack::with_room(path.len(), 0);
        for c in split(path) {
            s.push(c);
        }
        s
    }

    fn push(&mut self, c: &[u8]) {
        self.buf.push(b'/');
        self.buf.extend_from_slice(c);
        self.ends.push(self.buf.len());
    }

    fn pop(&mut self) {
        self.ends.pop();
        self.buf.truncate(self.ends.last().copied().unwrap_or(0));
    }

    fn len(&self) -> usize {
        self.ends.len()
    }

    fn comp(&self, i: usize) -> &[u8] {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.buf[start + 1..self.ends[i]]
    }

    /// Whether `self` is `root` or below it.
    fn under(&self, root: &Stack) -> bool {
        self.len() >= root.len()
            && self.buf.starts_with(&root.buf)
            && (root.len() == 0 || self.ends[root.len() - 1] == root.buf.len())
    }

    fn path(&self) -> &[u8] {
        if self.buf.is_empty() { b"/" } else { &self.buf }
    }
}

fn split(path: &[u8]) -> impl Iterator<Item = &[u8]> {
    path.split(|&b| b == b'/').filter(|c| !c.is_empty())
}

fn num(n: i32) -> Vec<u8> {
    n.to_string().into_bytes()
}

fn is_digits(c: &[u8]) -> bool {
    !c.is_empty() && c.iter().all(u8::is_ascii_digit)
}

/// The process root (empty for `/`).
fn root_of(view: &dyn ProcView) -> Stack {
    view.root()
        .map(|r| Stack::from_path(&r))
        .unwrap_or_default()
}

/// The base of a relative lookup: the dirfd's target or the cwd. A base that is unknown or not
/// a directory path (`pipe:[12]`) is named by its /proc link.
fn base_of(view: &dyn ProcView, dirfd: Option<i32>) -> Stack {
    let pid = num(view.pid());
    let mut s = Stack::with_room(0, 0);
    match dirfd.filter(|&fd| fd != AT_FDCWD) {
        Some(fd) => match view.fd_path(fd) {
            Some(p) if p.starts_with(b"/") => return Stack::from_path(&p),
            _ => {
                for c in [b"proc".as_slice(), &pid, b"fd", &num(fd)] {
                    s.push(c);
                }
            }
        },
        None => match view.cwd() {
            Some(p) if p.starts_with(b"/") => return Stack::from_path(&p),
            _ => {
                for c in [b"proc".as_slice(), &pid, b"cwd"] {
                    s.push(c);
                }
            }
        },
    }
    s
}

/// If `stack` is `ROOT/proc/self` or `ROOT/proc/thread-self`, rewrite it to the tracee's pid
/// (and tid): for sbx those names would mean sbx itself.
fn rewrite_self(stack: &mut Stack, root: &Stack, view: &dyn ProcView) {
    let n = stack.len();
    if n != root.len() + 2 || stack.comp(n - 2) != b"proc" || !stack.under(root) {
        return;
    }
    let last = stack.comp(n - 1);
    if last == b"self" {
        stack.pop();
        stack.push(&num(view.pid()));
    } else if last == b"thread-self" {
        stack.pop();
        stack.push(&num(view.pid()));
        stack.push(b"task");
        stack.push(&num(view.tid()));
    }
}

/// Whether `stack` names a /proc magic link (`ROOT/proc/N/{fd/M,cwd,root,exe}`, also under
/// `task/T/`), whose target the tracer reads as an absolute path as seen from sbx.
fn is_magic(stack: &Stack, root: &Stack) -> bool {
    if !stack.under(root) {
        return false;
    }
    let rest: Vec<&[u8]> = (root.len()..stack.len()).map(|i| stack.comp(i)).collect();
    let rest = match rest.as_slice() {
        [p, pid, t, tid, more @ ..]
            if *p == b"proc" && is_digits(pid) && *t == b"task" && is_digits(tid) =>
        {
            more
        }
        [p, pid, more @ ..] if *p == b"proc" && is_digits(pid) => more,
        _ => return false,
    };
    match rest {
        [one] => *one == b"cwd" || *one == b"root" || *one == b"exe",
        [fd, n] => *fd == b"fd" && is_digits(n),
        _ => false,
    }
}

fn go_up(stack: &mut Stack, root: &Stack) {
    // `..` stops at the process root; outside it (a dirfd opened before chroot) it climbs to `/`.
    if *stack != *root {
        stack.pop();
    }
}

/// Lexical normalization of `path` onto `stack`.
fn lexical(view: &dyn ProcView, root: &Stack, mut stack: Stack, path: &[u8]) -> Vec<u8> {
    for c in split(path) {
        match c {
            b"." => {}
            b".." => go_up(&mut stack, root),
            _ => {
                stack.push(c);
                rewrite_self(&mut stack, root, view);
            }
        }
    }
    stack.path().to_vec()
}

/// Resolve `path` as the kernel would for the tracee `view` (see the module docs).
///
/// `dirfd: None` (or `Some(AT_FDCWD)`) means relative to the cwd. An empty `path` names the
/// base itself (AT_EMPTY_PATH; callers decide whether the flag was given): `abs` is then the
/// dirfd's target verbatim, even when it is not a path (`pipe:[12]`, `/memfd:x (deleted)`).
/// `follow_final`: whether a symlink in the last component is followed (a trailing `/` always
/// follows, like the kernel).
pub fn resolve(
    view: &dyn ProcView,
    dirfd: Option<i32>,
    path: &[u8],
    follow_final: bool,
) -> PathObj {
    resolve_as(view, dirfd, path, follow_final, true)
}

/// [`resolve`] for a call that looks up the parent and acts on the name itself (mkdir,
/// mknod, rmdir, unlink, rename, a link's or symlink's new name): the last component is
/// never followed, not even with a trailing `/` (the kernel then answers EEXIST or ENOTDIR
/// for a symlink there; it does not act on its target).
pub fn resolve_name(view: &dyn ProcView, dirfd: Option<i32>, path: &[u8]) -> PathObj {
    resolve_as(view, dirfd, path, false, false)
}

fn resolve_as(
    view: &dyn ProcView,
    dirfd: Option<i32>,
    path: &[u8],
    follow_final: bool,
    slash_follows: bool,
) -> PathObj {
    let root = root_of(view);
    if path.is_empty() {
        let raw = match dirfd.filter(|&fd| fd != AT_FDCWD) {
            Some(fd) => view.fd_path(fd),
            None => view.cwd(),
        };
        let abs = match raw {
            Some(p) if !p.is_empty() => p,
            _ => base_of(view, dirfd).path().to_vec(),
        };
        return PathObj {
            literal: Vec::new(),
            abs,
            resolved: None,
        };
    }
    let start = if path.starts_with(b"/") {
        root.clone()
    } else {
        base_of(view, dirfd)
    };
    let abs = lexical(view, &root, start.clone(), path);
    let resolved =
        walk(view, &root, start, path, follow_final, slash_follows).filter(|r| *r != abs);
    PathObj {
        literal: path.to_vec(),
        abs,
        resolved,
    }
}

/// The components still to walk, as the bytes of the rest of the path: popping a component
/// copies nothing, and a symlink's target is put in front of the rest in one copy. A trailing
/// `/` forces following the component before it.
struct Queue {
    buf: Vec<u8>,
    /// Where the rest starts in `buf`.
    pos: usize,
    /// How many components are left (a component followed by any other, even `.`, is not
    /// the last: the kernel follows it as a directory).
    real: usize,
}

impl Queue {
    fn of(path: &[u8]) -> Queue {
        Queue {
            buf: path.to_vec(),
            pos: 0,
            real: Self::count(path),
        }
    }

    fn count(path: &[u8]) -> usize {
        split(path).count()
    }

    /// The next component, as a range of `buf`.
    fn pop_front(&mut self) -> Option<std::ops::Range<usize>> {
        let rest = &self.buf[self.pos..];
        let start = self.pos + rest.iter().position(|&b| b != b'/')?;
        let end = self.buf[start..]
            .iter()
            .position(|&b| b == b'/')
            .map_or(self.buf.len(), |n| start + n);
        self.pos = end;
        self.real -= 1;
        Some(start..end)
    }

    /// Whether the path ends with `/` (after the last component popped, the rest is `/`).
    fn trailing_slash(&self) -> bool {
        self.buf.ends_with(b"/")
    }

    /// `target` followed by the rest.
    fn prepend(&mut self, target: &[u8]) {
        let mut buf = Vec::with_capacity(target.len() + self.buf.len() - self.pos);
        buf.extend_from_slice(target);
        buf.extend_from_slice(&self.buf[self.pos..]);
        self.real += Self::count(target);
        self.buf = buf;
        self.pos = 0;
    }
}

/// Follow symlinks component by component. `None` on a loop.
fn walk(
    view: &dyn ProcView,
    root: &Stack,
    mut stack: Stack,
    path: &[u8],
    follow_final: bool,
    slash_follows: bool,
) -> Option<Vec<u8>> {
    let mut queue = Queue::of(path);
    let mut links = 0usize;
    while let Some(c) = queue.pop_front() {
        let c = &queue.buf[c];
        match c {
            b"." => continue,
            b".." => {
                go_up(&mut stack, root);
                continue;
            }
            _ => {}
        }
        stack.push(c);
        rewrite_self(&mut stack, root, view);
        if queue.real == 0 && !follow_final && !(slash_follows && queue.trailing_slash()) {
            break;
        }
        let Some(target) = view.readlink(stack.path()) else {
            continue;
        };
        links += 1;
        if links > MAX_LINKS {
            return None;
        }
        if is_magic(&stack, root) {
            if !target.starts_with(b"/") {
                // pipe:[N], socket:[N], anon_inode:[...]: not a path; the kernel acts on the
                // object itself, and nothing below it can be looked up.
                return Some(target);
            }
            // Already the real, absolute object as seen from sbx: jump there.
            stack = Stack::from_path(&target);
            continue;
        }
        if target.starts_with(b"/") {
            stack = root.clone();
        } else {
            stack.pop();
        }
        queue.prepend(&target);
    }
    Some(stack.path().to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::memory::FakeProc;

    fn view() -> FakeProc {
        let mut v = FakeProc {
            pid: 42,
            tid: 43,
            cwd: b"/home/u/proj".to_vec(),
            root: b"/".to_vec(),
            ..FakeProc::default()
        };
        v.fds.insert(3, b"/etc".to_vec());
        v.fds.insert(4, b"pipe:[77]".to_vec());
        v.fds.insert(5, b"/memfd:x (deleted)".to_vec());
        let links: &[(&[u8], &[u8])] = &[
            (b"/home/u/proj/link", b"../secret"),
            (b"/home/u/proj/slashy", b"../secret/"),
            (b"/home/u/proj/abs", b"/etc/passwd"),
            (b"/home/u/proj/dirlink", b"/var/lib"),
            (b"/var/lib", b"../opt/lib"),
            (b"/loop1", b"/loop2"),
            (b"/dev/fd", b"/proc/self/fd"),
            (b"/dev/stdin", b"/proc/self/fd/0"),
            (b"/proc/42/fd/0", b"/dev/pts/1"),
            (b"/loop2", b"loop1"),
            (b"/proc/42/fd/3", b"/etc"),
            (b"/proc/42/fd/4", b"pipe:[77]"),
            (b"/proc/42/root", b"/"),
            (b"/proc/42/cwd", b"/home/u/proj"),
            (b"/proc/42/task/43/cwd", b"/home/u/proj"),
        ];
        for (k, t) in links {
            v.symlinks.insert(k.to_vec(), t.to_vec());
        }
        v
    }

    fn r(v: &FakeProc, dirfd: Option<i32>, path: &[u8], follow: bool) -> (String, Option<String>) {
        let p = resolve(v, dirfd, path, follow);
        assert_eq!(p.literal, path);
        let s = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        (s(&p.abs), p.resolved.as_deref().map(s))
    }

    macro_rules! cases {
        ($($name:ident: $dirfd:expr, $path:expr, $follow:expr => $abs:expr, $res:expr;)*) => {
            $(
                #[test]
                fn $name() {
                    let got = r(&view(), $dirfd, $path, $follow);
                    let want: (String, Option<String>) =
                        ($abs.to_string(), Option::<&str>::map($res, str::to_string));
                    assert_eq!(got, want);
                }
            )*
        };
    }

    #[test]
    fn a_name_is_never_followed_even_with_a_trailing_slash() {
        let v = view();
        let name = |p: &[u8]| {
            let o = resolve_name(&v, None, p);
            (String::from_utf8_lossy(&o.abs).into_owned(), o.resolved)
        };
        assert_eq!(name(b"link/"), ("/home/u/proj/link".into(), None));
        assert_eq!(name(b"link"), ("/home/u/proj/link".into(), None));
        // Links on the way are followed as always.
        assert_eq!(
            name(b"dirlink/x/"),
            (
                "/home/u/proj/dirlink/x".into(),
                Some(b"/opt/lib/x".to_vec())
            )
        );
        // `.` after it is not the last component: followed.
        assert_eq!(
            name(b"dirlink/."),
            ("/home/u/proj/dirlink".into(), Some(b"/opt/lib".to_vec()))
        );
    }

    cases! {
        absolute: None, b"/etc//./passwd", true => "/etc/passwd", None;
        cwd_relative: None, b"src/main.rs", true => "/home/u/proj/src/main.rs", None;
        at_fdcwd_is_cwd: Some(AT_FDCWD), b"a", true => "/home/u/proj/a", None;
        dirfd_relative: Some(3), b"hosts", true => "/etc/hosts", None;
        dotdot_lexical: None, b"../../../../x", true => "/x", None;
        dotdot_inside: None, b"a/../b", true => "/home/u/proj/b", None;
        final_link_followed: None, b"link", true => "/home/u/proj/link", Some("/home/u/secret");
        final_link_not_followed: None, b"link", false => "/home/u/proj/link", None;
        trailing_slash_follows: None, b"link/", false => "/home/u/proj/link", Some("/home/u/secret");
        dot_after_link_follows: None, b"dirlink/.", false => "/home/u/proj/dirlink", Some("/opt/lib");
        target_with_trailing_slash: None, b"slashy/f", false
            => "/home/u/proj/slashy/f", Some("/home/u/secret/f");
        final_target_with_trailing_slash: None, b"slashy", true
            => "/home/u/proj/slashy", Some("/home/u/secret");
        final_target_with_trailing_slash_unfollowed: None, b"slashy", false
            => "/home/u/proj/slashy", None;
        absolute_target: None, b"abs", true => "/home/u/proj/abs", Some("/etc/passwd");
        middle_component_link: None, b"dirlink/x", false
            => "/home/u/proj/dirlink/x", Some("/opt/lib/x");
        dotdot_after_link_uses_real_parent: None, b"dirlink/../y", false
            => "/home/u/proj/y", Some("/opt/y");
        proc_self_fd: None, b"/proc/self/fd/3/passwd", true
            => "/proc/42/fd/3/passwd", Some("/etc/passwd");
        proc_self_fd_pipe: None, b"/proc/self/fd/4", true => "/proc/42/fd/4", Some("pipe:[77]");
        proc_self_root: None, b"/proc/self/root/etc/shadow", true
            => "/proc/42/root/etc/shadow", Some("/etc/shadow");
        proc_self_cwd: None, b"/proc/self/cwd/../x", true => "/proc/42/x", Some("/home/u/x");
        thread_self: None, b"/proc/thread-self/cwd/f", true
            => "/proc/42/task/43/cwd/f", Some("/home/u/proj/f");
        dev_fd_goes_through_proc_self: None, b"/dev/fd/3/hosts", true
            => "/dev/fd/3/hosts", Some("/etc/hosts");
        dev_stdin: None, b"/dev/stdin", true => "/dev/stdin", Some("/dev/pts/1");
        dev_stdin_nofollow: None, b"/dev/stdin", false => "/dev/stdin", None;
        loop_stops: None, b"/loop1", true => "/loop1", None;
        loop_unfollowed_final: None, b"/loop1", false => "/loop1", None;
        empty_path_is_dirfd: Some(3), b"", false => "/etc", None;
        empty_path_memfd: Some(5), b"", false => "/memfd:x (deleted)", None;
        empty_path_pipe: Some(4), b"", false => "pipe:[77]", None;
        unknown_dirfd: Some(9), b"x", true => "/proc/42/fd/9/x", None;
        dirfd_not_a_dir: Some(4), b"x", true => "/proc/42/fd/4/x", None;
    }

    #[test]
    fn empty_literal_for_empty_path() {
        assert!(resolve(&view(), Some(3), b"", false).literal.is_empty());
    }

    #[test]
    fn chroot_prefixes_and_clamps() {
        let mut v = view();
        v.root = b"/srv/jail".to_vec();
        v.cwd = b"/srv/jail/home".to_vec();
        v.symlinks
            .insert(b"/srv/jail/lib".to_vec(), b"/usr/lib".to_vec());
        v.symlinks
            .insert(b"/srv/jail/home/up".to_vec(), b"../../../..".to_vec());
        assert_eq!(r(&v, None, b"/etc/passwd", true).0, "/srv/jail/etc/passwd");
        assert_eq!(r(&v, None, b"../../../etc", true).0, "/srv/jail/etc");
        assert_eq!(
            r(&v, None, b"/lib/libc.so", true),
            (
                "/srv/jail/lib/libc.so".into(),
                Some("/srv/jail/usr/lib/libc.so".into())
            )
        );
        assert_eq!(
            r(&v, None, b"up/etc/shadow", true),
            (
                "/srv/jail/home/up/etc/shadow".into(),
                Some("/srv/jail/etc/shadow".into())
            )
        );
        assert_eq!(
            r(&v, None, b"/proc/self/fd/3", false).0,
            "/srv/jail/proc/42/fd/3"
        );
    }

    #[test]
    fn non_utf8_is_preserved() {
        let v = view();
        let p = resolve(&v, None, b"caf\xe9/\xff", true);
        assert_eq!(p.abs, b"/home/u/proj/caf\xe9/\xff");
        assert_eq!(p.literal, b"caf\xe9/\xff");
    }

    #[test]
    fn very_long_paths_do_not_blow_up() {
        let v = view();
        let long = b"a/".repeat(100_000);
        let p = resolve(&v, None, &long, true);
        assert!(p.abs.len() > 200_000);
        let dots = b"../".repeat(100_000);
        assert_eq!(resolve(&v, None, &dots, true).abs, b"/");
    }

    #[test]
    fn self_link_chain_is_bounded() {
        let mut v = view();
        // A link to itself via a longer path grows the queue each time: still bounded.
        v.symlinks
            .insert(b"/grow".to_vec(), b"/grow/a/b/c".to_vec());
        let p = resolve(&v, None, b"/grow", true);
        assert_eq!(p.resolved, None);
    }
}
