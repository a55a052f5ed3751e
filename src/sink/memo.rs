//! Read-only opens decided once (enforce): the open memo.
//!
//! A C build opens the same headers and libraries again and again, and every new program opens
//! `/etc/ld.so.cache` and `libc.so.6`; each open is decoded, resolved and decided from scratch
//! although nothing it depends on changed. The memo remembers, for an open that the policy
//! allowed without consulting anything that changes during a run, the checked path the kernel
//! was handed, so the same open is handed over again without being decoded or decided.
//!
//! What such a decision depends on, and how each input is kept the same:
//! - the path bytes as the workload wrote them, the call, its flags, and the `by` scope of the
//!   calling process: the key;
//! - what each component of the path resolves to: the symlink answers of [`LinkCache`], which
//!   enforce uses for these opens anyway (the kernel walks the checked path again with
//!   `RESOLVE_NO_SYMLINKS`, so a stale answer can only make the open fail, never reach an
//!   unchecked file). Each entry keeps the paths whose answers its resolution asked for; when
//!   the cache forgets a path (a rename, unlink, symlink or mount made by the tree), every
//!   entry that asked for it, or for a path below it, is forgotten too. Nothing is remembered
//!   while a call that may change symlinks runs;
//! - the process root: fixed by what the caller admits (a root no call can change);
//! - for a relative path, the cwd: part of the key, as the link cache remembers it for the
//!   thread (it forgets it at every chdir and with any rename or removal at or above it);
//! - the policy: fixed for the run. Decisions that asked what the run created (provenance) or
//!   whether a path exists (probe rules) are never remembered; neither are refusals.
//!
//! The caller decides which opens qualify (`EnforceSink`); this is the data structure.
//!
//! [`LinkCache`]: super::LinkCache

use std::collections::{HashMap, HashSet};

use crate::policy::Scope;

/// What besides the path bytes an open's decision is remembered for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct OpenKind {
    /// The syscall number (open or openat).
    pub nr: u64,
    /// The open flags as passed (the access decided on, O_NOFOLLOW, O_DIRECTORY...).
    pub flags: u64,
    /// The `by` lists the calling process's exec chain holds.
    pub scope: Scope,
}

/// Allowed opens: the checked, symlink-free path each was handed to the kernel as.
#[derive(Debug)]
pub struct OpenMemo {
    /// By the path as the workload wrote it (a relative one as `NUL cwd NUL path`).
    map: HashMap<Vec<u8>, Vec<(OpenKind, Vec<u8>)>>,
    /// Entries in `map`.
    len: usize,
    /// For each path whose symlink answer some entry's resolution asked for: the written
    /// paths of those entries.
    by_dep: HashMap<Vec<u8>, Vec<Vec<u8>>>,
    /// Every directory some key of `by_dep` lies below: only a change at one of them has
    /// dependencies below it to look for.
    dep_parents: HashSet<Vec<u8>>,
    /// Written paths listed in `by_dep`, all lists together. Lists are not pruned when an
    /// entry goes through another of its dependencies (a stale name there only makes a later
    /// change forget a name that is gone), so this, not `len`, bounds them.
    links: usize,
    /// [`Self::MAX_LINKS`] (smaller in tests).
    max_links: usize,
    /// Hashes of the keys [`Self::seen_before`] was asked about once: most opens of a run
    /// that reads each file once (an install) are never made again, and an entry costs a
    /// dozen allocations. A collision only makes an entry at a first sighting.
    seen: HashSet<u64>,
}

impl Default for OpenMemo {
    fn default() -> Self {
        OpenMemo {
            map: HashMap::new(),
            len: 0,
            by_dep: HashMap::new(),
            dep_parents: HashSet::new(),
            links: 0,
            max_links: Self::MAX_LINKS,
            seen: HashSet::new(),
        }
    }
}

impl OpenMemo {
    /// The most entries kept; the memo starts over when full.
    pub const MAX: usize = 65_536;
    /// The most written paths listed under dependencies; the memo starts over past it.
    pub const MAX_LINKS: usize = 16 * Self::MAX;

    /// The checked path an open of `path` as `kind` was handed over as.
    pub fn get(&self, path: &[u8], kind: OpenKind) -> Option<&[u8]> {
        self.map
            .get(path)?
            .iter()
            .find(|(k, _)| *k == kind)
            .map(|(_, checked)| checked.as_slice())
    }

    /// Whether `path` as `kind` was asked about before (and is now noted as seen): the
    /// caller remembers an open only at its second sighting.
    pub fn seen_before(&mut self, path: &[u8], kind: OpenKind) -> bool {
        use std::hash::{BuildHasher, Hash, Hasher};
        let mut h = self.seen.hasher().build_hasher();
        path.hash(&mut h);
        kind.hash(&mut h);
        let h = h.finish();
        if self.seen.remove(&h) {
            return true;
        }
        if self.seen.len() >= Self::MAX {
            self.seen.clear();
        }
        self.seen.insert(h);
        false
    }

    /// Remember that an open of `path` as `kind` was handed over as `checked`, decided on
    /// the symlink answers for `deps` (absolute paths).
    pub fn insert(&mut self, path: &[u8], kind: OpenKind, checked: &[u8], deps: &[Vec<u8>]) {
        if (self.len >= Self::MAX && self.get(path, kind).is_none())
            || self.links + deps.len() > self.max_links
        {
            self.clear();
        }
        for dep in deps {
            let users = self.by_dep.entry(dep.clone()).or_default();
            // The same name again (another flag set, a replacement) is listed once, as the
            // list's last name when it comes back to back: no scan of a long list.
            if users.last().is_none_or(|u| u != path) {
                users.push(path.to_vec());
                self.links += 1;
            }
            let mut dir = dep.as_slice();
            while let Some(cut) = dir.iter().rposition(|&b| b == b'/') {
                dir = &dir[..cut.max(1)];
                if !self.dep_parents.insert(dir.to_vec()) || dir == b"/" {
                    break;
                }
            }
        }
        let entries = self.map.entry(path.to_vec()).or_default();
        match entries.iter_mut().find(|(k, _)| *k == kind) {
            Some((_, c)) => *c = checked.to_vec(),
            None => {
                entries.push((kind, checked.to_vec()));
                self.len += 1;
            }
        }
    }

    /// The symlink answer for `path` and everything below it is forgotten: forget every
    /// entry whose resolution asked for one of them.
    pub fn forget_below(&mut self, path: &[u8]) {
        if path == b"/" {
            self.clear();
            return;
        }
        if self.map.is_empty() {
            // Only stale names left in the lists, if anything.
            if self.links > 0 {
                self.clear();
            }
            return;
        }
        let mut users = self.by_dep.remove(path).unwrap_or_default();
        if self.dep_parents.remove(path) {
            let below = |k: &[u8]| k.starts_with(path) && k.get(path.len()) == Some(&b'/');
            self.by_dep.retain(|k, u| {
                if below(k) {
                    users.append(u);
                    false
                } else {
                    true
                }
            });
            self.dep_parents.retain(|k| !below(k));
        }
        self.links -= users.len();
        for u in users {
            if let Some(entries) = self.map.remove(&u) {
                self.len -= entries.len();
            }
        }
    }

    /// Forget everything.
    pub fn clear(&mut self) {
        self.map.clear();
        self.by_dep.clear();
        self.dep_parents.clear();
        self.len = 0;
        self.links = 0;
    }

    /// Entries kept.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Nothing kept.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(flags: u64, scope: u64) -> OpenKind {
        OpenKind {
            nr: 257,
            flags,
            scope: Scope::with_held(scope),
        }
    }

    fn deps(paths: &[&str]) -> Vec<Vec<u8>> {
        paths.iter().map(|p| p.as_bytes().to_vec()).collect()
    }

    const LIBC_DEPS: &[&str] = &["/lib", "/usr", "/usr/lib", "/usr/lib/libc.so.6"];

    #[test]
    fn an_entry_answers_only_its_own_path_call_flags_and_scope() {
        let mut m = OpenMemo::default();
        let k = kind(0o2000000, 1);
        m.insert(
            b"/lib/libc.so.6",
            k,
            b"/usr/lib/libc.so.6",
            &deps(LIBC_DEPS),
        );
        assert_eq!(
            m.get(b"/lib/libc.so.6", k),
            Some(b"/usr/lib/libc.so.6".as_slice())
        );
        assert_eq!(m.get(b"/lib/libc.so.6", kind(0o2000000, 2)), None);
        assert_eq!(m.get(b"/lib/libc.so.6", kind(0o400000, 1)), None);
        let other_call = OpenKind { nr: 2, ..k };
        assert_eq!(m.get(b"/lib/libc.so.6", other_call), None);
        assert_eq!(m.get(b"/lib/libc.so.6/", k), None);
        assert_eq!(m.len(), 1);
    }

    #[test]
    fn a_change_where_the_resolution_looked_forgets_the_entry() {
        let k = kind(0, 0);
        let filled = || {
            let mut m = OpenMemo::default();
            m.insert(
                b"/lib/libc.so.6",
                k,
                b"/usr/lib/libc.so.6",
                &deps(LIBC_DEPS),
            );
            m.insert(
                b"/etc/ld.so.cache",
                k,
                b"/etc/ld.so.cache",
                &deps(&["/etc", "/etc/ld.so.cache"]),
            );
            m
        };
        // The symlink it went through, a directory on the way, the file itself, a directory
        // above a dependency, the root.
        for changed in ["/lib", "/usr", "/usr/lib", "/usr/lib/libc.so.6", "/"] {
            let mut m = filled();
            m.forget_below(changed.as_bytes());
            assert_eq!(m.get(b"/lib/libc.so.6", k), None, "{changed}");
            if changed != "/" {
                assert!(m.get(b"/etc/ld.so.cache", k).is_some(), "{changed}");
                assert_eq!(m.len(), 1);
            }
        }
        // Changes nowhere near: a temporary file, a sibling with a common prefix, a path
        // below the file (nothing there).
        for unrelated in [
            "/tmp/cc1.s",
            "/usr/lib64",
            "/li",
            "/usr/lib/libc.so.6x",
            "/usr/local",
        ] {
            let mut m = filled();
            m.forget_below(unrelated.as_bytes());
            assert!(m.get(b"/lib/libc.so.6", k).is_some(), "{unrelated}");
            assert_eq!(m.len(), 2, "{unrelated}");
        }
    }

    #[test]
    fn a_directory_above_dependencies_forgets_only_their_entries() {
        let k = kind(0, 0);
        let mut m = OpenMemo::default();
        m.insert(
            b"/src/a/x.h",
            k,
            b"/src/a/x.h",
            &deps(&["/src", "/src/a", "/src/a/x.h"]),
        );
        m.insert(
            b"/src/b/y.h",
            k,
            b"/src/b/y.h",
            &deps(&["/src", "/src/b", "/src/b/y.h"]),
        );
        m.forget_below(b"/src/a");
        assert_eq!(m.get(b"/src/a/x.h", k), None);
        assert!(m.get(b"/src/b/y.h", k).is_some());
        // A directory that is only a parent of dependencies (never asked about itself).
        let mut m = OpenMemo::default();
        m.insert(b"/d/e/f", k, b"/d/e/f", &deps(&["/d/e/f"]));
        m.forget_below(b"/d");
        assert!(m.is_empty());
    }

    #[test]
    fn names_listed_under_a_dependency_are_bounded() {
        // Temporary files read once and deleted: each entry goes, but `/tmp`'s list keeps
        // their names; the memo starts over before the lists pass MAX_LINKS.
        let k = kind(0, 0);
        let mut m = OpenMemo {
            max_links: 1000,
            ..OpenMemo::default()
        };
        for i in 0..1010 {
            let p = format!("/tmp/cc{i}.s");
            m.insert(p.as_bytes(), k, p.as_bytes(), &deps(&["/tmp", &p]));
            assert!(m.get(p.as_bytes(), k).is_some());
            m.forget_below(p.as_bytes());
            assert!(m.links <= 1000);
        }
        assert!(m.is_empty());
        assert!(m.links < 100, "started over once: {}", m.links);
        // The same name under two flag sets is listed once per dependency.
        let mut m = OpenMemo::default();
        m.insert(b"/a", kind(0, 0), b"/a", &deps(&["/a"]));
        m.insert(b"/a", kind(0o400000, 0), b"/a", &deps(&["/a"]));
        assert_eq!((m.len(), m.links), (2, 1));
        m.forget_below(b"/a");
        assert_eq!((m.len(), m.links), (0, 0));
    }

    #[test]
    fn it_starts_over_when_full_and_replaces_in_place() {
        let mut m = OpenMemo::default();
        let k = kind(0, 0);
        for i in 0..OpenMemo::MAX {
            m.insert(format!("/f{i}").as_bytes(), k, b"/x", &[]);
        }
        assert_eq!(m.len(), OpenMemo::MAX);
        m.insert(b"/f0", k, b"/y", &[]);
        assert_eq!(m.len(), OpenMemo::MAX, "a replacement adds nothing");
        assert_eq!(m.get(b"/f0", k), Some(b"/y".as_slice()));
        m.insert(b"/new", k, b"/new", &[]);
        assert_eq!(m.len(), 1);
        assert_eq!(m.get(b"/f1", k), None);
    }

    #[test]
    fn a_key_is_seen_before_at_its_second_sighting_only() {
        let mut m = OpenMemo::default();
        let (a, b) = (kind(0, 0), kind(0, 1));
        assert!(!m.seen_before(b"/f", a));
        assert!(!m.seen_before(b"/f", b), "another kind is another key");
        assert!(!m.seen_before(b"/g", a));
        assert!(m.seen_before(b"/f", a));
        // Noted again from scratch after it answered: an entry forgotten later is made again
        // at its second sighting after that.
        assert!(!m.seen_before(b"/f", a));
        assert!(m.seen_before(b"/f", a));
        assert!(m.seen_before(b"/f", b));
    }
}
