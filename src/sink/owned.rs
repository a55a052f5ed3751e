//! Provenance: what the running workload created is its own (docs/profile-format.md,
//! "Provenance").
//!
//! Both sinks first settle what a `Create` access means: [`settle_creates`] keeps `Create`
//! only for a name that does not exist when the call stops (the kernel will make it) and turns
//! it into `Write` otherwise, so the trace says what was really created and the policy can
//! tell a new name (`create`) from a change to an existing file (`write`).
//!
//! Enforce then remembers, by device and inode, every object the run made (an `O_CREAT` open
//! that created its file, `mkdir`, `mknod`, `symlink`), at the exit of the call that made it,
//! and answers the policy's [`Provenance`] question by looking the path up (`lstat`) and
//! asking whether the object found there is one of them. By inode, not by name: a rename
//! keeps ownership, and a name that now leads elsewhere (a symlink swapped in, a file renamed
//! over it by someone allowed to) gains nothing. The set is bounded ([`Owned::MAX`]); past it,
//! new objects are not remembered, which only makes later accesses need a rule (fail closed).
//! Known limit: an inode freed and reused by a file another program outside the workload
//! creates during the run would be taken for the workload's (docs/security.md).

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
/// (see [`Owned::forget`]).
#[derive(Debug, Default)]
pub struct Owned {
    set: HashMap<(u64, u64), u64>,
    /// How many objects were remembered so far.
    seq: u64,
    /// The bound was reached; said once.
    full: bool,
    warned: bool,
    /// `lstat` answers of the decision under way ([`Self::lstat`]): a probe of an absent
    /// path asks for the same path (and its ancestors) up to four times in one decision.
    looks: std::cell::RefCell<Vec<(Vec<u8>, Looked)>>,
}

/// What `lstat` of a path answered: its (device, inode), or the errno.
type Looked = Result<(u64, u64), i32>;

/// Answers remembered in one decision at most (a path and its ancestors).
const LOOKS_MAX: usize = 32;

impl Owned {
    /// At most this many objects are remembered (about 40 bytes each).
    pub const MAX: usize = 1 << 20;

    fn insert(&mut self, m: &std::fs::Metadata) {
        if self.set.len() >= Self::MAX {
            self.full = true;
            return;
        }
        self.seq += 1;
        self.set.insert((m.dev(), m.ino()), self.seq);
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
        if let Ok(m) = std::fs::symlink_metadata(std::ffi::OsStr::from_bytes(path)) {
            self.insert(&m);
        }
    }

    /// The file open as `fd` in process `pid` was made by the run.
    pub fn add_fd(&mut self, pid: i32, fd: i64) {
        if let Ok(m) = std::fs::metadata(format!("/proc/{pid}/fd/{fd}")) {
            self.insert(&m);
        }
    }

    /// The owned object at `path` (not following a final symlink), if it is one: what a
    /// delete of `path` will free (its inode may then be reused by anything).
    /// With the key, how many objects were remembered when this was asked: [`Self::forget`]
    /// takes both.
    pub fn owned_at(&self, path: &[u8]) -> Option<Gone> {
        if self.set.is_empty() {
            return None;
        }
        let m = std::fs::symlink_metadata(std::ffi::OsStr::from_bytes(path)).ok()?;
        let key = (m.dev(), m.ino());
        (self.set.contains_key(&key) && (m.is_dir() || m.nlink() <= 1)).then_some(Gone {
            key,
            seen: self.seq,
        })
    }

    /// The object of `gone` is gone (its delete succeeded): forget it, so a reuse of its inode
    /// is not the run's. Unless the run made a new object with that inode since the delete
    /// was decided: the inode was freed by the delete and taken at once by another of the
    /// run's processes, whose creating call's exit sbx handled before the delete's exit
    /// (two processes' stops are not handled in the order their calls ended).
    pub fn forget(&mut self, gone: Gone) {
        if self.set.get(&gone.key).is_some_and(|&n| n <= gone.seen) {
            self.set.remove(&gone.key);
        }
    }

    /// True once, the first time the bound is found reached.
    pub fn newly_full(&mut self) -> bool {
        let first = self.full && !self.warned;
        self.warned |= self.full;
        first
    }

    pub fn len(&self) -> usize {
        self.set.len()
    }

    pub fn is_empty(&self) -> bool {
        self.set.is_empty()
    }
}

impl Provenance for Owned {
    fn owns(&self, path: &[u8]) -> bool {
        !self.set.is_empty()
            && self
                .lstat(path)
                .is_ok_and(|key| self.set.contains_key(&key))
    }

    /// The path does not exist, and the nearest of its ancestors that does is a directory
    /// the run created (`DIR/a/b` with neither `a` nor `b` made: what learn also takes as
    /// the run's own). Opens are handed to the kernel symlink-free, so a symlink made there
    /// after the check cannot lead the call elsewhere.
    /// See: docs/real-world.md pip markupsafe (`pip-build-env-*/site/__pycache__/...`)
    fn absent_in_owned(&self, path: &[u8]) -> bool {
        let missing =
            |p: &[u8]| matches!(self.lstat(p), Err(e) if e == libc::ENOENT || e == libc::ENOTDIR);
        if self.set.is_empty() || !missing(path) {
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

/// A call that will create or delete owned objects, waiting for its exit.
#[derive(Debug, Default)]
pub struct Creating {
    /// The created file is the fd the call returns (open family).
    pub open: bool,
    /// Otherwise: the new names.
    pub paths: Vec<Vec<u8>>,
    /// Owned objects the call deletes (their last name).
    pub gone: Vec<Gone>,
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
