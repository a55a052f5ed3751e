//! Provenance: what the running workload created is its own (docs/profile-format.md,
//! "Provenance").
//!
//! Both sinks first settle what a `Create` access means: [`settle_creates`] keeps `Create`
//! only for a name that does not exist when the call stops (the kernel will make it) and turns
//! it into `Write` otherwise, so the trace says what was really created and the policy can
//! tell a new name (`create`) from a change to an existing file (`write`).
//!
//! Enforce then remembers, by device and inode, every object the run made (an `O_CREAT` open
//! that created its file, `mkdir`, `mknod`, `symlink`), once the call that made it is over
//! (without stopping it at its exit: see [`Owned`]), and answers the policy's [`Provenance`] question by looking the path up (`lstat`) and
//! asking whether the object found there is one of them. By inode, not by name: a rename
//! keeps ownership, and a name that now leads elsewhere (a symlink swapped in, a file renamed
//! over it by someone allowed to) gains nothing. The set is bounded ([`Owned::MAX`]); past it,
//! new objects are not remembered, which only makes later accesses need a rule (fail closed).
//! Known limit: an inode freed and reused by a file another program outside the workload
//! creates during the run would be taken for the workload's (docs/security.md).

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;

use crate::event::{Access, Object, Target};
use crate::policy::Provenance;

/// Turn `Create` into `Write` on every path target whose effective path exists now (or cannot
/// be looked up: fail closed, a write needs a rule where a create might not). Returns the
/// paths that will be new if the call succeeds.
///
/// Also drops `Delete` where the name does not exist: there is nothing to delete, the call
/// fails with ENOENT (`rm -f conf$$.exe` in every configure script). A name made by another
/// process between this look and the call could be deleted; only the workload's own
/// processes, with a right to create it, could make it (docs/security.md).
pub fn settle_creates(targets: &mut [Target]) -> Vec<Vec<u8>> {
    settle_creates_with(targets, &|path| {
        std::fs::symlink_metadata(std::ffi::OsStr::from_bytes(path))
            .map(|m| (m.dev(), m.ino()))
            .map_err(|e| e.raw_os_error().unwrap_or(0))
    })
}

/// [`settle_creates`], looking paths up with `lstat` (enforce: [`Owned::lstat`], so the
/// decision that follows gets the same answers).
pub fn settle_creates_with(
    targets: &mut [Target],
    lstat: &dyn Fn(&[u8]) -> Looked,
) -> Vec<Vec<u8>> {
    let mut new = Vec::new();
    for t in targets {
        let create = t.access.contains(Access::Create);
        if !create && !t.access.contains(Access::Delete) {
            continue;
        }
        let Object::Path(p) = &t.object else {
            continue;
        };
        let path = p.effective();
        let absent = lstat(path) == Err(libc::ENOENT);
        if !create {
            if absent {
                t.access = t.access.iter().filter(|a| *a != Access::Delete).collect();
            }
            continue;
        }
        if absent {
            new.push(path.to_vec());
        } else {
            t.access = t.access.create_as_write();
        }
    }
    new
}

/// Objects the run created, by (device, inode), each with the number of its remembering
/// (see [`Owned::forget`]); and the calls that may still be making or freeing some.
///
/// **No exit stop.** A call that makes a new name (or deletes an owned object's last name) is
/// not stopped again at its exit: it is *pending* ([`Owned::begin`]) until it is known to be
/// over, when its task stops again ([`Owned::end`]: settled once that task's next call is on
/// its way, [`Owned::finish_ended`]; or at once when the task execs or ends,
/// [`Owned::finish`]), and is settled before any question about provenance
/// ([`Owned::settle`]) and before any rename, link or symlink of the run. The object then found at the name is taken as the
/// call's only if it is reached without crossing a symlink (a directory swapped for one leads
/// nowhere) and was **born after the call stopped** (its birth time, `statx` `STATX_BTIME`,
/// against the coarse clock new inodes are stamped from, read at the stop): an object that
/// existed before (moved there by a rename or link under any spelling of the path: bind
/// mounts, case-insensitive directories) is older, and stays not the run's. On a filesystem that keeps no birth time, the object is
/// taken only if no rename, link or symlink of the run started since the call stopped, nor
/// was running then (what can put an existing object at a name). In both cases, a rename or
/// link settles what is pending first and drops the pending names at or below its paths that
/// are still absent ([`Owned::place`]), and while it runs a new name there is not pending.
/// What can still be taken for the run's: an object born after the call stopped by a process
/// outside the run (as with the look before the call: docs/security.md), or one of the run's
/// own objects that was not remembered.
#[derive(Debug, Default)]
pub struct Owned {
    set: RefCell<HashMap<(u64, u64), u64>>,
    /// How many objects were remembered so far.
    seq: Cell<u64>,
    /// The bound was reached; said once.
    full: Cell<bool>,
    warned: bool,
    /// `lstat` answers of the decision under way ([`Self::lstat`]): a probe of an absent
    /// path asks for the same path (and its ancestors) up to four times in one decision.
    looks: RefCell<Vec<(Vec<u8>, Looked)>>,
    /// Calls that may still be making or freeing owned objects, by task.
    pending: RefCell<crate::tid::TidMap<Pending>>,
    /// Calls that are over (their task stopped again, [`Self::end`]) and not settled yet:
    /// settled once that task's new call is on its way ([`Self::finish_ended`]), or before
    /// any question, as pending ones are.
    ended: RefCell<Vec<Pending>>,
    /// Renames and links running (allowed, their exit not seen yet), by task: the paths
    /// under which they may give an existing object a new name.
    placing: crate::tid::TidMap<Vec<Vec<u8>>>,
    /// Renames, links and symlinks of the run started so far ([`Self::changed`]).
    changes: u64,
}

/// What a call of one task may be making or freeing ([`Owned::begin`]).
#[derive(Debug)]
struct Pending {
    /// Names absent when the call stopped, that it makes if it succeeds.
    made: Vec<Vec<u8>>,
    /// When the call stopped (coarse clock): what it makes is born since.
    since: Option<std::time::SystemTime>,
    /// [`Owned::changes`] then, and whether a rename or link was running: for filesystems
    /// without birth times.
    changes: u64,
    busy: bool,
    /// Owned objects it deletes the last name of, with that name.
    gone: Vec<(Vec<u8>, Gone)>,
}

/// What `lstat` of a path answered: its (device, inode), or the errno.
type Looked = Result<(u64, u64), i32>;

/// Answers remembered in one decision at most (a path and its ancestors).
const LOOKS_MAX: usize = 32;

/// `path` is `top` or lies below it.
fn under(path: &[u8], top: &[u8]) -> bool {
    path.strip_prefix(top)
        .is_some_and(|rest| rest.is_empty() || rest[0] == b'/' || top.ends_with(b"/"))
}

/// Is an object born at `born` (None: the filesystem keeps no birth time), found at a name a
/// call stopped at `since` was to make, that call's? With no birth time, only if no rename,
/// link or symlink of the run could have put another object there (`unchanged`).
fn takes(
    born: Option<std::time::SystemTime>,
    since: Option<std::time::SystemTime>,
    unchanged: bool,
) -> bool {
    match (born, since) {
        (Some(b), Some(s)) => b >= s,
        _ => unchanged,
    }
}

/// The clock filesystems stamp new inodes from (coarse real time): what a call makes is born
/// at or after this clock's reading at its stop. `None` if it cannot be read (then birth
/// times are not used: see [`takes`]).
fn coarse_now() -> Option<std::time::SystemTime> {
    let t = nix::time::clock_gettime(nix::time::ClockId::CLOCK_REALTIME_COARSE).ok()?;
    let secs = u64::try_from(t.tv_sec()).ok()?;
    let nanos = u32::try_from(t.tv_nsec()).ok()?;
    std::time::UNIX_EPOCH.checked_add(std::time::Duration::new(secs, nanos))
}

/// Look `path` up without following any symlink (a final one is the object): `Ok` when
/// something is there, else the errno (`ELOOP` for a symlink on the way, `ENOSYS` where
/// openat2 does not exist). One `openat2(O_PATH | O_NOFOLLOW, RESOLVE_NO_SYMLINKS)`.
pub fn look_without_symlinks(path: &[u8]) -> Result<(), i32> {
    open_without_symlinks(path).map(drop).map_err(|e| e as i32)
}

/// `openat2(O_PATH | O_NOFOLLOW, RESOLVE_NO_SYMLINKS)` of `path`.
fn open_without_symlinks(path: &[u8]) -> nix::Result<std::os::fd::OwnedFd> {
    use nix::fcntl::{OFlag, OpenHow, ResolveFlag};
    let how = OpenHow::new()
        .flags(OFlag::O_PATH | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC)
        .resolve(ResolveFlag::RESOLVE_NO_SYMLINKS);
    nix::fcntl::openat2(nix::fcntl::AT_FDCWD, std::ffi::OsStr::from_bytes(path), how)
}

/// [`exists_without_symlinks`], keeping the `O_PATH` fd (for the caller to close when it
/// suits it).
pub fn held_without_symlinks(path: &[u8]) -> Option<std::os::fd::OwnedFd> {
    open_without_symlinks(path).ok()
}

/// Is there an object at `path` (a final symlink counts), reached without following any
/// symlink on the way? `false` where openat2 does not exist or anything else fails: the
/// caller then lets the kernel answer.
pub fn exists_without_symlinks(path: &[u8]) -> bool {
    look_without_symlinks(path).is_ok()
}

/// The object at `path`, walked without following any symlink (a final one is the object):
/// its key, and its birth time when the filesystem keeps one. A symlink on the way is
/// `ELOOP`: a directory swapped for a symlink leads nowhere.
fn look_born(path: &[u8]) -> Result<((u64, u64), Option<std::time::SystemTime>), i32> {
    let os = std::ffi::OsStr::from_bytes(path);
    let m = match open_without_symlinks(path) {
        Ok(fd) => std::fs::File::from(fd).metadata(),
        // No openat2 (qemu-user): look at each directory on the way with lstat.
        Err(nix::errno::Errno::ENOSYS) => {
            let p = std::path::Path::new(os);
            if p.ancestors()
                .skip(1)
                .any(|a| std::fs::symlink_metadata(a).is_ok_and(|m| m.file_type().is_symlink()))
            {
                return Err(libc::ELOOP);
            }
            std::fs::symlink_metadata(p)
        }
        Err(e) => return Err(e as i32),
    }
    .map_err(|e| e.raw_os_error().unwrap_or(0))?;
    Ok(((m.dev(), m.ino()), m.created().ok()))
}

impl Owned {
    /// At most this many objects are remembered (about 40 bytes each).
    pub const MAX: usize = 1 << 20;

    fn insert(&self, key: (u64, u64)) {
        let mut set = self.set.borrow_mut();
        if set.len() >= Self::MAX {
            self.full.set(true);
            return;
        }
        self.seq.set(self.seq.get() + 1);
        set.insert(key, self.seq.get());
    }

    /// A new decision starts (a stop, from its first look at the filesystem: enforce's
    /// `settle_creates_with`): the filesystem may have changed since the last one, so forget
    /// the `lstat` answers remembered for that one.
    pub fn new_decision(&self) {
        self.looks.borrow_mut().clear();
    }

    /// `lstat(path)`: (device, inode), or the errno. Asked once per path and decision (see
    /// [`Self::new_decision`]): every question of one decision about the same path gets the
    /// same answer, as if the filesystem were looked at once.
    pub fn lstat(&self, path: &[u8]) -> Result<(u64, u64), i32> {
        if let Some((_, r)) = self.looks.borrow().iter().find(|(p, _)| p == path) {
            return *r;
        }
        let r = std::fs::symlink_metadata(std::ffi::OsStr::from_bytes(path))
            .map(|m| (m.dev(), m.ino()))
            .map_err(|e| e.raw_os_error().unwrap_or(0));
        let mut looks = self.looks.borrow_mut();
        if looks.len() < LOOKS_MAX {
            looks.push((path.to_vec(), r));
        }
        r
    }

    /// The object now at `path` (not following a final symlink) was made by the run.
    pub fn add_path(&mut self, path: &[u8]) {
        if let Ok((key, _)) = look_born(path) {
            self.insert(key);
        }
    }

    /// A rename, link or symlink of the run is about to run: it may put an existing object
    /// at a pending name (or a symlink above one), which a filesystem without birth times
    /// cannot tell. The calls already over are settled first: nothing can have come
    /// between them and their names (a review of the deferred settling found that a mkdir
    /// followed by a symlink in the new directory, on a filesystem without birth times,
    /// lost the directory's ownership otherwise).
    pub fn changed(&mut self) {
        if !self.ended.get_mut().is_empty() {
            self.settle_ended();
        }
        self.changes += 1;
    }

    /// Task `tid`'s call, allowed, makes the names `made` (absent when it stopped) and frees
    /// the owned objects `gone`, if it succeeds. Pending until [`Self::finish`] or
    /// [`Self::settle`]. A name at or below a path of another task's rename or link still
    /// running is left out: that call may put an existing object there.
    pub fn begin(&mut self, tid: i32, mut made: Vec<Vec<u8>>, gone: Vec<(Vec<u8>, Gone)>) {
        if !self.placing.is_empty() {
            made.retain(|name| {
                !self
                    .placing
                    .iter()
                    .any(|(&t, tops)| t != tid && tops.iter().any(|top| under(name, top)))
            });
        }
        if made.is_empty() && gone.is_empty() {
            return;
        }
        let since = coarse_now();
        let p = Pending {
            made,
            since,
            changes: self.changes,
            busy: !self.placing.is_empty(),
            gone,
        };
        self.pending.borrow_mut().insert(tid, p);
    }

    /// Task `tid`'s rename or link, allowed, may give an existing object a name at or below
    /// `paths` (its sources and destinations) until its exit ([`Self::finish`]). What is
    /// pending is settled first; a pending name there that is still absent is dropped (the
    /// object that may come there is not necessarily the one its call makes).
    pub fn place(&mut self, tid: i32, paths: Vec<Vec<u8>>) {
        self.settle();
        self.changed();
        // (`settle` left no call ended.)
        for p in self.pending.get_mut().values_mut() {
            p.made
                .retain(|name| !paths.iter().any(|top| under(name, top)));
        }
        self.placing.insert(tid, paths);
    }

    /// Task `tid` stopped again, exec'd or ended: its call is over. What it made is the run's
    /// own; what it freed is forgotten; a name still absent was not made (the call failed).
    pub fn finish(&mut self, tid: i32) {
        if !self.placing.is_empty() {
            self.placing.remove(&tid);
        }
        let p = self.pending.get_mut().remove(&tid);
        if let Some(mut p) = p {
            self.resolve(&mut p, true);
        }
    }

    /// Task `tid` stopped again for its next call: its last call is over, and is settled by
    /// [`Self::finish_ended`] once that next call is on its way (so that the look at what it
    /// made is not on the thread's way), or by any question before. What the next call does
    /// cannot change it unseen: a rename or link settles first ([`Self::place`]), a delete
    /// asks what it deletes ([`Self::owned_at`]), and a create of the same name finds it
    /// there or makes the object itself.
    pub fn end(&mut self, tid: i32) {
        if !self.placing.is_empty() {
            self.placing.remove(&tid);
        }
        if let Some(p) = self.pending.get_mut().remove(&tid) {
            self.ended.get_mut().push(p);
        }
    }

    /// Settle the calls [`Self::end`] found over: what they made is the run's own, what
    /// they freed is forgotten, a name still absent was not made.
    pub fn finish_ended(&mut self) {
        if !self.ended.get_mut().is_empty() {
            self.settle_ended();
        }
    }

    /// [`Self::finish_ended`], from a question.
    fn settle_ended(&self) {
        let mut ended = std::mem::take(&mut *self.ended.borrow_mut());
        for p in &mut ended {
            self.resolve(p, true);
        }
        ended.clear();
        // Nothing is ended while it is taken; the allocation is kept.
        *self.ended.borrow_mut() = ended;
    }

    /// Task `tid`'s call will not run (refused, or restarted by sbx and decided again).
    pub fn cancel(&mut self, tid: i32) {
        self.placing.remove(&tid);
        self.pending.get_mut().remove(&tid);
    }

    /// Settle every pending call as far as the filesystem tells now: a name that exists is
    /// the run's own, an owned object no longer at the name it was being deleted by is
    /// forgotten. The rest stays pending (the call may not have run yet).
    pub fn settle(&self) {
        if !self.ended.borrow().is_empty() {
            self.settle_ended();
        }
        if self.pending.borrow().is_empty() {
            return;
        }
        let mut pending = std::mem::take(&mut *self.pending.borrow_mut());
        pending.retain(|_, p| {
            self.resolve(p, false);
            !p.made.is_empty() || !p.gone.is_empty()
        });
        // Nothing is added to `pending` while it is taken (resolve does not begin calls).
        *self.pending.borrow_mut() = pending;
    }

    /// Settle `p`: what the filesystem tells is done and removed from it; with `over`, the
    /// rest is dropped too (the call ended without making or freeing it).
    fn resolve(&self, p: &mut Pending, over: bool) {
        let unchanged = !p.busy && p.changes == self.changes;
        p.made.retain(|name| match look_born(name) {
            Ok((key, born)) => {
                // Born since the call stopped: its own (or, with no birth time kept, nothing
                // could have put an older object there).
                if takes(born, p.since, unchanged) {
                    self.insert(key);
                }
                false
            }
            Err(_) => !over,
        });
        p.gone.retain(|(name, g)| {
            if look_born(name).is_ok_and(|(key, _)| key == g.key) {
                // Not deleted yet, or the delete failed.
                !over
            } else {
                self.forget(*g);
                false
            }
        });
    }

    /// The owned object at `path` (not following a final symlink), if it is one: what a
    /// delete of `path` will free (its inode may then be reused by anything).
    /// With the key, how many objects were remembered when this was asked: [`Self::forget`]
    /// takes both.
    pub fn owned_at(&self, path: &[u8]) -> Option<Gone> {
        if self.is_empty() {
            return None;
        }
        self.settle();
        let m = std::fs::symlink_metadata(std::ffi::OsStr::from_bytes(path)).ok()?;
        let key = (m.dev(), m.ino());
        (self.set.borrow().contains_key(&key) && (m.is_dir() || m.nlink() <= 1)).then_some(Gone {
            key,
            seen: self.seq.get(),
        })
    }

    /// The object of `gone` is gone (its delete succeeded): forget it, so a reuse of its inode
    /// is not the run's. Unless the run made a new object with that inode since the delete
    /// was decided: the inode was freed by the delete and taken at once by another of the
    /// run's creates, settled before the delete (two tasks' calls are not settled in the
    /// order they ended).
    pub fn forget(&self, gone: Gone) {
        let mut set = self.set.borrow_mut();
        if set.get(&gone.key).is_some_and(|&n| n <= gone.seen) {
            set.remove(&gone.key);
        }
    }

    /// True once, the first time the bound is found reached.
    pub fn newly_full(&mut self) -> bool {
        let first = self.full.get() && !self.warned;
        self.warned |= self.full.get();
        first
    }

    /// How many objects are remembered (pending calls not counted).
    pub fn len(&self) -> usize {
        self.set.borrow().len()
    }

    /// Nothing owned and nothing pending.
    pub fn is_empty(&self) -> bool {
        self.set.borrow().is_empty()
            && self.pending.borrow().is_empty()
            && self.ended.borrow().is_empty()
    }
}

/// What is at `path` for [`crate::policy::persistence::git_controlled`]: a directory (a
/// symlink to one counts: git follows it), nothing (`ENOENT`, `ENOTDIR`), or something
/// (anything else, a lookup that fails included: fail closed).
fn git_look(path: &[u8]) -> crate::policy::persistence::Found {
    use crate::policy::persistence::Found;
    match std::fs::metadata(std::ffi::OsStr::from_bytes(path)) {
        Ok(m) if m.is_dir() => Found::Dir,
        Ok(_) => Found::Other,
        Err(e) if matches!(e.raw_os_error(), Some(libc::ENOENT) | Some(libc::ENOTDIR)) => {
            // A dangling symlink is still a name git would look at.
            match std::fs::symlink_metadata(std::ffi::OsStr::from_bytes(path)) {
                Ok(_) => Found::Other,
                Err(_) => Found::Nothing,
            }
        }
        Err(_) => Found::Other,
    }
}

impl Provenance for Owned {
    /// By what is on disk at the time of the write: the nearest directory above `path`
    /// that git takes for a git directory decides (a `.git` renamed away and back, a bare
    /// repository, a common directory).
    fn git_controlled(&self, path: &[u8]) -> bool {
        crate::policy::persistence::git_controlled(path, &git_look)
    }

    fn owns(&self, path: &[u8]) -> bool {
        if self.is_empty() {
            return false;
        }
        self.settle();
        self.lstat(path)
            .is_ok_and(|key| self.set.borrow().contains_key(&key))
    }

    /// The path does not exist, and the nearest of its ancestors that does is a directory
    /// the run created (`DIR/a/b` with neither `a` nor `b` made: what learn also takes as
    /// the run's own). Opens are handed to the kernel symlink-free, so a symlink made there
    /// after the check cannot lead the call elsewhere.
    /// See: docs/real-world.md pip markupsafe (`pip-build-env-*/site/__pycache__/...`)
    fn absent_in_owned(&self, path: &[u8]) -> bool {
        let missing =
            |p: &[u8]| matches!(self.lstat(p), Err(e) if e == libc::ENOENT || e == libc::ENOTDIR);
        if self.is_empty() || !missing(path) {
            return false;
        }
        let mut cur = path;
        for _ in 0..64 {
            let Some(i) = cur.iter().rposition(|&b| b == b'/').filter(|&i| i > 0) else {
                return false;
            };
            cur = &cur[..i];
            if !missing(cur) {
                return self.owns(cur);
            }
        }
        false
    }
}

/// An owned object a delete is about to free ([`Owned::owned_at`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Gone {
    key: (u64, u64),
    /// [`Owned::seq`] when the delete was decided.
    seen: u64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{AccessSet, PathObj};
    use std::ffi::OsStr;

    /// What `answers_exists` relies on: a name reached through a symlinked directory does not
    /// count, whatever is there; a final symlink (even dangling) does.
    #[test]
    #[cfg_attr(
        target_arch = "aarch64",
        ignore = "the aarch64 unit tests run under qemu-user, which has no openat2"
    )]
    fn existence_is_seen_only_without_symlinks_on_the_way() {
        let d = std::env::temp_dir().join(format!("sbx-exists-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(d.join("real/x")).unwrap();
        std::os::unix::fs::symlink(d.join("real"), d.join("link")).unwrap();
        std::os::unix::fs::symlink("nowhere", d.join("real/dangling")).unwrap();
        let at = |p: &str| exists_without_symlinks(d.join(p).as_os_str().as_bytes());
        assert!(at("real/x"));
        assert!(at("real/dangling"));
        assert!(at("link"), "the final symlink itself");
        assert!(!at("real/absent"));
        assert!(
            std::fs::symlink_metadata(d.join("link/x")).is_ok(),
            "lstat follows the way"
        );
        assert!(!at("link/x"), "a symlink on the way");
        let look = |p: &str| look_without_symlinks(d.join(p).as_os_str().as_bytes());
        assert_eq!(look("link/x"), Err(libc::ELOOP));
        assert_eq!(look("real/absent"), Err(libc::ENOENT));
        assert_eq!(look("real/dangling/y"), Err(libc::ELOOP));
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_decision_looks_a_path_up_once_and_the_next_one_afresh() {
        let dir = tempfile::tempdir().unwrap();
        let made = dir.path().join("made");
        std::fs::create_dir(&made).unwrap();
        let mut owned = Owned::default();
        owned.add_path(made.as_os_str().as_bytes());
        let late = made.join("late");
        let late = late.as_os_str().as_bytes();
        owned.new_decision();
        assert_eq!(owned.lstat(late), Err(libc::ENOENT));
        assert!(owned.absent_in_owned(late));
        // Made during the decision: the decision keeps the answer it had.
        std::fs::write(OsStr::from_bytes(late), "x").unwrap();
        assert_eq!(owned.lstat(late), Err(libc::ENOENT));
        assert!(owned.absent_in_owned(late));
        // The next decision sees it.
        owned.new_decision();
        assert!(owned.lstat(late).is_ok());
        assert!(!owned.absent_in_owned(late));
        assert!(!owned.owns(late), "made outside the run's calls");
        assert!(owned.owns(made.as_os_str().as_bytes()));
    }

    #[test]
    fn a_delete_forgets_only_what_was_owned_when_it_was_decided() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("t.s");
        std::fs::write(&f, "x").unwrap();
        let path = f.as_os_str().as_bytes();
        let mut owned = Owned::default();
        owned.add_path(path);
        let gone = owned.owned_at(path).unwrap();
        // Another of the run's processes got the freed inode, and its create's exit was
        // handled before the delete's: the new object stays the run's.
        owned.add_path(path);
        owned.forget(gone);
        assert!(owned.owns(path));
        // A delete decided after that forgets it.
        let gone = owned.owned_at(path).unwrap();
        owned.forget(gone);
        assert!(!owned.owns(path));
    }

    fn target(access: AccessSet, path: &std::path::Path) -> Target {
        Target {
            access,
            object: Object::Path(PathObj {
                literal: vec![],
                abs: path.as_os_str().as_bytes().to_vec(),
                resolved: None,
            }),
        }
    }

    #[test]
    fn create_of_an_existing_name_is_a_write() {
        let dir = tempfile::tempdir().unwrap();
        let old = dir.path().join("old");
        std::fs::write(&old, "x").unwrap();
        let new = dir.path().join("new");
        let create = AccessSet::of(Access::Create).with(Access::Write);
        let mut ts = vec![target(create, &old), target(create, &new)];
        let made = settle_creates(&mut ts);
        assert_eq!(made, vec![new.as_os_str().as_bytes().to_vec()]);
        assert!(!ts[0].access.contains(Access::Create));
        assert!(ts[0].access.contains(Access::Write));
        assert!(ts[1].access.contains(Access::Create));
    }

    #[test]
    fn delete_of_an_absent_name_deletes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let old = dir.path().join("old");
        std::fs::write(&old, "x").unwrap();
        let gone = dir.path().join("conf4711.exe");
        let del = AccessSet::of(Access::Delete);
        let mut ts = vec![target(del, &old), target(del, &gone)];
        assert!(settle_creates(&mut ts).is_empty());
        assert_eq!(ts[0].access, del);
        assert!(ts[1].access.is_empty());
    }

    /// A missing path whose nearest existing ancestor the run made is the run's (pip's
    /// `pip-build-env-*/site/__pycache__/x.pyc` lookups); below a directory it did not make,
    /// or when the path exists, it is not.
    #[test]
    fn absent_paths_below_an_owned_directory() {
        use crate::policy::Provenance;
        let dir = tempfile::tempdir().unwrap();
        let made = dir.path().join("made");
        std::fs::create_dir(&made).unwrap();
        let other = dir.path().join("other");
        std::fs::create_dir(&other).unwrap();
        std::fs::write(made.join("f"), "x").unwrap();
        let mut owned = Owned::default();
        owned.add_path(made.as_os_str().as_bytes());
        owned.add_path(made.join("f").as_os_str().as_bytes());
        let b = |p: std::path::PathBuf| p.into_os_string().into_vec();
        use std::os::unix::ffi::OsStringExt;
        assert!(owned.absent_in_owned(&b(made.join("x"))));
        assert!(owned.absent_in_owned(&b(made.join("a/b/c.pyc"))));
        assert!(owned.absent_in_owned(&b(made.join("f/under-a-file"))));
        assert!(!owned.absent_in_owned(&b(made.join("f"))), "exists");
        assert!(!owned.absent_in_owned(&b(other.join("a/b"))));
        assert!(!owned.absent_in_owned(&b(dir.path().join("gone/a"))));
    }

    fn b(p: &std::path::Path) -> Vec<u8> {
        p.as_os_str().as_bytes().to_vec()
    }

    #[test]
    fn a_pending_create_is_settled_by_a_question_or_when_its_call_is_over() {
        let dir = tempfile::tempdir().unwrap();
        let (f, g) = (dir.path().join("f"), dir.path().join("g"));
        let mut owned = Owned::default();
        owned.begin(1, vec![b(&f)], vec![]);
        owned.begin(2, vec![b(&g)], vec![]);
        assert!(!owned.is_empty(), "pending calls count");
        std::fs::write(&f, "x").unwrap();
        // Asked before task 1 stops again: settled by the question.
        owned.new_decision();
        assert!(owned.owns(&b(&f)));
        assert_eq!(owned.len(), 1, "g is still pending");
        // Task 2's call ended without making g (it failed): a g made later is not the run's.
        owned.finish(2);
        std::fs::write(&g, "x").unwrap();
        owned.new_decision();
        assert!(!owned.owns(&b(&g)));
        assert!(owned.owns(&b(&f)));
        // A refused or restarted call makes nothing.
        let h = dir.path().join("h");
        owned.begin(3, vec![b(&h)], vec![]);
        owned.cancel(3);
        std::fs::write(&h, "x").unwrap();
        owned.new_decision();
        assert!(!owned.owns(&b(&h)));
    }

    /// A call over ([`Owned::end`]) is settled by [`Owned::finish_ended`], or by a question
    /// or a rename before: what it made is the run's, a name it did not make is not, and a
    /// rename's paths drop its names still absent, as for a pending call.
    #[test]
    fn an_ended_call_is_settled_after_the_resume_or_by_a_question_before() {
        let dir = tempfile::tempdir().unwrap();
        let [f, g, h, k] = ["f", "g", "h", "k"].map(|n| dir.path().join(n));
        let mut owned = Owned::default();
        owned.begin(1, vec![b(&f), b(&g)], vec![]);
        std::fs::write(&f, "x").unwrap();
        owned.end(1);
        // Task 1's next call makes h: what it ended is not lost with the new pending call.
        owned.begin(1, vec![b(&h)], vec![]);
        assert!(!owned.is_empty());
        owned.finish_ended();
        // g was not made by the call (it failed): one made later is not the run's.
        std::fs::write(&g, "x").unwrap();
        owned.new_decision();
        assert!(owned.owns(&b(&f)));
        assert!(!owned.owns(&b(&g)));
        assert!(!owned.owns(&b(&h)), "h is pending and absent");

        // Settled by a question before the resume.
        let mut owned = Owned::default();
        owned.begin(2, vec![b(&k)], vec![]);
        std::fs::write(&k, "x").unwrap();
        owned.end(2);
        owned.new_decision();
        assert!(owned.owns(&b(&k)), "asked before finish_ended");
        owned.finish_ended();
        owned.new_decision();
        assert!(owned.owns(&b(&k)));

        // A symlink of the run (as a rename or link) settles what is over first: on a
        // filesystem without birth times, a change counted before the settling would make a
        // directory the run made (`mkdir d; symlink x d/l`) not its own.
        let mut owned = Owned::default();
        let e = dir.path().join("e");
        owned.begin(5, vec![b(&e)], vec![]);
        std::fs::create_dir(&e).unwrap();
        owned.end(5);
        let before = owned.changes;
        owned.changed();
        assert!(owned.ended.borrow().is_empty(), "settled before the change");
        assert_eq!(owned.changes, before + 1);
        owned.new_decision();
        assert!(owned.owns(&b(&e)));

        // A rename over the directory of an ended name still absent drops it.
        let d = dir.path().join("d");
        std::fs::create_dir(&d).unwrap();
        let old = dir.path().join("old");
        std::fs::create_dir(&old).unwrap();
        std::fs::write(old.join("n"), "not the run's").unwrap();
        let mut owned = Owned::default();
        owned.begin(3, vec![b(&d.join("n"))], vec![]);
        owned.end(3);
        owned.place(4, vec![b(&old), b(&d)]);
        std::fs::remove_dir(&d).unwrap();
        std::fs::rename(&old, &d).unwrap();
        owned.finish(4);
        owned.finish_ended();
        owned.new_decision();
        assert!(!owned.owns(&b(&d.join("n"))));
    }

    /// Long enough for a file made before a stop to count as older than the call.
    fn older() {
        std::thread::sleep(std::time::Duration::from_millis(30));
    }

    /// The attack: a directory of old files renamed over the directory a pending create makes
    /// its name in, so that the name leads to an old file when the create is settled. Under
    /// the same spelling the rename's stop drops the name; under another one (a bind mount)
    /// the old file's birth time gives it away.
    #[test]
    fn a_rename_over_the_directory_of_a_pending_name_gains_nothing() {
        let attack = |place: bool, fresh: bool| {
            let dir = tempfile::tempdir().unwrap();
            let (d, old) = (dir.path().join("d"), dir.path().join("old"));
            std::fs::create_dir(&d).unwrap();
            std::fs::create_dir(&old).unwrap();
            if !fresh {
                std::fs::write(old.join("f"), "not the run's").unwrap();
                older();
            }
            let mut owned = Owned::default();
            owned.add_path(&b(&d));
            owned.begin(1, vec![b(&d.join("f"))], vec![]);
            if fresh {
                // The control: a file made after the stop, as the call would.
                std::fs::write(old.join("f"), "made now").unwrap();
            }
            // Task 2's rename stops before it runs (under the same spelling of the path).
            if place {
                owned.place(2, vec![b(&old), b(&d)]);
            }
            std::fs::rename(&old, &d).unwrap();
            owned.finish(2);
            // Task 1's create then finds f there (its O_CREAT open opened the old file).
            owned.finish(1);
            owned.new_decision();
            owned.owns(&b(&d.join("f")))
        };
        assert!(
            attack(false, true),
            "a file born after the stop is taken: the test can fail"
        );
        assert!(!attack(false, false), "older than the call");
        assert!(!attack(true, false));
        assert!(!attack(true, true), "dropped at the rename's stop");
    }

    /// Without birth times (NFS, some FUSE filesystems), only what no rename, link or symlink
    /// could have put there is taken.
    #[test]
    fn without_a_birth_time_any_rename_link_or_symlink_meanwhile_forbids_taking() {
        let now = std::time::SystemTime::now();
        let before = now - std::time::Duration::from_secs(1);
        assert!(takes(Some(now), Some(before), false));
        assert!(takes(Some(before), Some(before), false));
        assert!(!takes(Some(before), Some(now), true));
        assert!(takes(None, Some(now), true));
        assert!(!takes(None, Some(now), false));
        assert!(
            !takes(Some(now), None, false),
            "no clock: as without a birth time"
        );
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("f");
        let mut owned = Owned::default();
        owned.begin(1, vec![b(&f)], vec![]);
        owned.changed();
        assert!(owned.pending.borrow()[&1].changes != owned.changes);
        owned.place(2, vec![b(&dir.path().join("x"))]);
        owned.begin(3, vec![b(&dir.path().join("g"))], vec![]);
        assert!(owned.pending.borrow()[&3].busy, "a rename was running");
    }

    #[test]
    fn a_name_below_a_running_rename_is_not_pending() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().join("d");
        std::fs::create_dir(&d).unwrap();
        let mut owned = Owned::default();
        owned.place(2, vec![b(&d)]);
        owned.begin(1, vec![b(&d.join("f"))], vec![]);
        // The same task's own rename is over when it stops again (it cannot be running).
        owned.begin(2, vec![b(&d.join("g"))], vec![]);
        std::fs::write(d.join("f"), "x").unwrap();
        std::fs::write(d.join("g"), "x").unwrap();
        owned.finish(1);
        owned.finish(2);
        owned.new_decision();
        assert!(!owned.owns(&b(&d.join("f"))));
        assert!(owned.owns(&b(&d.join("g"))));
        // Once the rename's exit is seen, names there are pending again.
        owned.begin(3, vec![b(&d.join("h"))], vec![]);
        std::fs::write(d.join("h"), "x").unwrap();
        owned.finish(3);
        owned.new_decision();
        assert!(owned.owns(&b(&d.join("h"))));
        assert!(under(b"/a/b", b"/a") && under(b"/a", b"/a") && under(b"/a/b", b"/"));
        assert!(!under(b"/ab", b"/a"));
    }

    /// A symlink put in place of the directory of a pending name, pointing at a directory of
    /// old files: what it leads to is older than the call.
    #[test]
    fn a_symlink_above_a_pending_name_is_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let (d, old) = (dir.path().join("d"), dir.path().join("old"));
        std::fs::create_dir(&d).unwrap();
        std::fs::create_dir(&old).unwrap();
        std::fs::write(old.join("f"), "not the run's").unwrap();
        older();
        let mut owned = Owned::default();
        owned.begin(1, vec![b(&d.join("f"))], vec![]);
        std::fs::remove_dir(&d).unwrap();
        std::os::unix::fs::symlink(&old, &d).unwrap();
        // lstat would find the old file there.
        assert_eq!(
            std::fs::symlink_metadata(d.join("f")).unwrap().ino(),
            std::fs::metadata(old.join("f")).unwrap().ino()
        );
        owned.finish(1);
        owned.new_decision();
        assert!(!owned.owns(&b(&old.join("f"))));
        assert!(owned.is_empty());
    }

    #[test]
    fn a_pending_delete_forgets_once_the_name_is_gone() {
        let dir = tempfile::tempdir().unwrap();
        let (f, g) = (dir.path().join("f"), dir.path().join("g"));
        std::fs::write(&f, "x").unwrap();
        std::fs::write(&g, "x").unwrap();
        let mut owned = Owned::default();
        owned.add_path(&b(&f));
        owned.add_path(&b(&g));
        let gf = owned.owned_at(&b(&f)).unwrap();
        let gg = owned.owned_at(&b(&g)).unwrap();
        owned.begin(1, vec![], vec![(b(&f), gf)]);
        owned.begin(2, vec![], vec![(b(&g), gg)]);
        // Not run yet: a question leaves both owned.
        owned.new_decision();
        assert!(owned.owns(&b(&f)) && owned.owns(&b(&g)));
        assert_eq!(owned.len(), 2);
        // f's delete ran: the next question forgets it. g's failed: it stays owned.
        std::fs::remove_file(&f).unwrap();
        owned.settle();
        assert_eq!(owned.len(), 1);
        owned.finish(2);
        owned.new_decision();
        assert!(owned.owns(&b(&g)));
        assert!(owned.owned_at(&b(&g)).is_some());
    }

    #[test]
    fn ownership_follows_the_inode_not_the_name() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a");
        std::fs::write(&a, "x").unwrap();
        let mut owned = Owned::default();
        owned.add_path(a.as_os_str().as_bytes());
        let b = dir.path().join("b");
        std::fs::rename(&a, &b).unwrap();
        assert!(owned.owns(b.as_os_str().as_bytes()));
        assert!(!owned.owns(a.as_os_str().as_bytes()));
        // A symlink at an owned name's place is another object (the deleted file is
        // forgotten first: the file system may give its inode to the next new file).
        let other = dir.path().join("other");
        std::fs::write(&other, "secret").unwrap();
        let key = owned.owned_at(b.as_os_str().as_bytes()).unwrap();
        std::fs::remove_file(&b).unwrap();
        owned.forget(key);
        std::os::unix::fs::symlink(&other, &b).unwrap();
        assert!(!owned.owns(b.as_os_str().as_bytes()));
        assert!(!owned.owns(other.as_os_str().as_bytes()));
    }
}
