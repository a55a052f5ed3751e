//! Who can write a process's memory: the one sharing model the lazy race guard asks before
//! it puts its checked copy of an argument on a thread's own stack
//! (`EnforceSink::writes_alone`, docs/architecture.md "The sharing model").
//!
//! A pure state machine over the tree's spawn, exec and exit events and the calls that make
//! memory reachable from elsewhere; it never calls ptrace or reads `/proc` (the tracer's
//! `kcmp` answer and thread counts come in as arguments).
//!
//! A **memory space** is shared by a group of processes that only grows: a `clone(CLONE_VM)`
//! or vfork child joins its parent's group, and a member leaves only when it exec's (a new
//! space of its own) or exits. So with P cloning C with `CLONE_VM` and C cloning D the same
//! way, P and D still share after C is gone (the transitive case round 4 found: a model of
//! parent/child links lost it). A space is **exposed** once one of its members made memory
//! that something outside the group may write or change: a `MAP_SHARED` or droppable
//! mapping, a SysV segment, an AIO context or io_uring (reads landing later), a userfaultfd.
//! Exposure is inherited by a fork (the child's copy keeps the shared mappings) and ends only
//! at exec. sbx cannot see memory shared by other means than these calls (another process
//! writing a file both map is covered by `MAP_SHARED`); ptrace, `process_vm_writev` and
//! `/proc/PID/mem` writes are refused or turn the lazy guard off (`lazy_guard`).
//!
//! A vfork parent's vforking thread is suspended until its child execs or exits: it is
//! counted as no writer while it waits, if it has no other thread.
//!
//! Processes never seen in a shared or exposed space are stored nowhere (nor is a space left
//! with one unexposed member): fork and exec of a plain process cost a few map lookups.

use crate::tid::{TidMap, TidSet};

/// How a process was created, as far as memory goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Born {
    /// A separate copy of the parent's memory (fork, `clone` without `CLONE_VM`).
    Copy,
    /// The parent's memory (`clone(CLONE_VM)` without `CLONE_THREAD`).
    SharedVm,
    /// vfork (`CLONE_VFORK`): the parent's memory, the parent's thread suspended until the
    /// child execs or exits. Treated as sharing even for a `clone3` vfork without `CLONE_VM`
    /// (any doubt counts as shared).
    Vfork,
}

#[derive(Debug, Default)]
struct Space {
    /// The live processes using this memory (not yet exec'd).
    members: Vec<i32>,
    /// Something outside the members may write it (see the module documentation).
    exposed: bool,
    /// vfork parents in this space waiting for a child, once per child in flight.
    waiting: Vec<i32>,
}

/// The memory spaces of the tree. See the module documentation.
#[derive(Debug, Default)]
pub struct Sharing {
    space_of: TidMap<u64>,
    spaces:
        std::collections::HashMap<u64, Space, std::hash::BuildHasherDefault<crate::tid::TidHasher>>,
    /// vfork children (until their exec or exit) and their parents.
    vfork_parent: TidMap<i32>,
    next: u64,
}

impl Sharing {
    /// Process `child` was created by process `parent`.
    pub fn spawn(&mut self, parent: i32, child: i32, born: Born) {
        // A new process's number may be one an ended process had.
        self.leave(child);
        match born {
            Born::Copy => {
                let exposed = self.space(parent).is_some_and(|s| s.exposed);
                if exposed {
                    let id = self.new_space(child);
                    if let Some(s) = self.spaces.get_mut(&id) {
                        s.exposed = true;
                    }
                }
            }
            Born::SharedVm | Born::Vfork => {
                let id = self.space_id(parent);
                self.space_of.insert(child, id);
                if let Some(s) = self.spaces.get_mut(&id) {
                    s.members.push(child);
                    if born == Born::Vfork {
                        s.waiting.push(parent);
                    }
                }
                if born == Born::Vfork {
                    self.vfork_parent.insert(child, parent);
                }
            }
        }
    }

    /// Process `pid` exec'd: it has a new memory of its own, which nothing shares yet.
    pub fn exec(&mut self, pid: i32) {
        self.leave(pid);
    }

    /// Process `pid` is gone.
    pub fn exit(&mut self, pid: i32) {
        self.leave(pid);
    }

    /// Process `pid` made its memory writable from outside its group (a shared mapping, a
    /// SysV segment, AIO, io_uring, userfaultfd).
    pub fn expose(&mut self, pid: i32) {
        let id = self.space_id(pid);
        if let Some(s) = self.spaces.get_mut(&id) {
            s.exposed = true;
        }
    }

    /// Is process `pid` the only writer of its memory, given `threads(p)` (the live threads
    /// of process `p`)? One thread; an unexposed space whose other members are all vfork
    /// parents waiting, each with one thread.
    pub fn alone(&self, pid: i32, threads: impl Fn(i32) -> usize) -> bool {
        if threads(pid) != 1 {
            return false;
        }
        let Some(s) = self.space(pid) else {
            return true;
        };
        !s.exposed
            && s.members
                .iter()
                .all(|&m| m == pid || (s.waiting.contains(&m) && threads(m) <= 1))
    }

    /// The processes `pid` shares its memory with (tests, diagnostics).
    pub fn sharers(&self, pid: i32) -> TidSet {
        self.space(pid)
            .map(|s| s.members.iter().copied().filter(|&m| m != pid).collect())
            .unwrap_or_default()
    }

    fn space(&self, pid: i32) -> Option<&Space> {
        self.space_of.get(&pid).and_then(|id| self.spaces.get(id))
    }

    /// `pid`'s space, made (with `pid` alone in it) if it has none stored.
    fn space_id(&mut self, pid: i32) -> u64 {
        match self.space_of.get(&pid) {
            Some(&id) => id,
            None => self.new_space(pid),
        }
    }

    fn new_space(&mut self, pid: i32) -> u64 {
        let id = self.next;
        self.next += 1;
        self.spaces.insert(
            id,
            Space {
                members: vec![pid],
                ..Space::default()
            },
        );
        self.space_of.insert(pid, id);
        id
    }

    fn leave(&mut self, pid: i32) {
        // A vfork child leaving releases its parent.
        if let Some(p) = self.vfork_parent.remove(&pid)
            && let Some(id) = self.space_of.get(&p)
            && let Some(s) = self.spaces.get_mut(id)
            && let Some(i) = s.waiting.iter().position(|&w| w == p)
        {
            s.waiting.swap_remove(i);
        }
        let Some(id) = self.space_of.remove(&pid) else {
            return;
        };
        let Some(s) = self.spaces.get_mut(&id) else {
            return;
        };
        s.members.retain(|&m| m != pid);
        s.waiting.retain(|&w| w != pid);
        // A space with no member, or one unexposed member, is stored no longer.
        match s.members[..] {
            [] => {
                self.spaces.remove(&id);
            }
            [last] if !s.exposed => {
                self.spaces.remove(&id);
                self.space_of.remove(&last);
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(_: i32) -> usize {
        1
    }

    #[test]
    fn fork_and_exec_share_nothing_and_store_nothing() {
        let mut s = Sharing::default();
        s.spawn(1, 2, Born::Copy);
        assert!(s.alone(1, one) && s.alone(2, one));
        s.exec(2);
        s.exit(2);
        assert!(s.space_of.is_empty() && s.spaces.is_empty());
    }

    #[test]
    fn clone_vm_shares_both_ways_until_exec_or_exit() {
        let mut s = Sharing::default();
        s.spawn(1, 2, Born::SharedVm);
        assert!(!s.alone(1, one) && !s.alone(2, one));
        s.exec(2);
        assert!(s.alone(1, one) && s.alone(2, one));
        s.spawn(1, 3, Born::SharedVm);
        s.exit(1);
        assert!(s.alone(3, one));
        s.exit(3);
        assert!(s.spaces.is_empty());
    }

    /// P clones C with CLONE_VM, C clones D, C exits: P and D still share (round 4, item 1).
    #[test]
    fn the_group_is_transitive_and_survives_the_middle_member() {
        let (p, c, d) = (10, 11, 12);
        let mut s = Sharing::default();
        s.spawn(p, c, Born::SharedVm);
        s.spawn(c, d, Born::SharedVm);
        s.exit(c);
        assert!(!s.alone(p, one), "D can still write P's memory");
        assert!(!s.alone(d, one));
        assert_eq!(s.sharers(p).into_iter().collect::<Vec<_>>(), vec![d]);
        s.exec(d);
        assert!(s.alone(p, one) && s.alone(d, one));
    }

    /// P vforks C, C clones D with CLONE_VM, C execs: P is released and shares with D.
    #[test]
    fn a_vfork_child_is_alone_until_it_makes_a_sharer() {
        let (p, c, d) = (20, 21, 22);
        let mut s = Sharing::default();
        s.spawn(p, c, Born::Vfork);
        assert!(s.alone(c, one), "the parent waits");
        assert!(
            !s.alone(c, |t| if t == p { 2 } else { 1 }),
            "another thread of P runs"
        );
        s.spawn(c, d, Born::SharedVm);
        assert!(!s.alone(c, one) && !s.alone(d, one));
        s.exec(c);
        assert!(!s.alone(p, one), "P runs again, D shares its memory");
        assert!(!s.alone(d, one));
        s.exit(d);
        assert!(s.alone(p, one));
    }

    #[test]
    fn nested_vforks_wait_in_a_chain() {
        let mut s = Sharing::default();
        s.spawn(1, 2, Born::Vfork);
        s.spawn(2, 3, Born::Vfork);
        assert!(s.alone(3, one));
        s.exit(3);
        assert!(s.alone(2, one));
        s.exec(2);
        assert!(s.alone(1, one));
        assert!(s.spaces.is_empty() && s.vfork_parent.is_empty());
    }

    #[test]
    fn a_vfork_from_a_shared_space_is_not_alone() {
        let mut s = Sharing::default();
        s.spawn(1, 2, Born::SharedVm);
        s.spawn(1, 3, Born::Vfork);
        assert!(!s.alone(3, one), "2 is no waiting parent");
    }

    #[test]
    fn exposure_is_inherited_by_fork_and_clone_and_ends_at_exec() {
        let mut s = Sharing::default();
        s.expose(1);
        assert!(!s.alone(1, one));
        s.spawn(1, 2, Born::Copy);
        assert!(!s.alone(2, one), "a fork keeps the shared mappings");
        s.spawn(2, 3, Born::SharedVm);
        s.exec(2);
        assert!(!s.alone(3, one), "3 keeps the exposed memory");
        s.exec(1);
        assert!(s.alone(1, one) && s.alone(2, one));
    }

    #[test]
    fn threads_are_writers() {
        let s = Sharing::default();
        assert!(!s.alone(1, |_| 2));
        assert!(!s.alone(1, |_| 0), "an unknown process counts as shared");
    }

    #[test]
    fn a_reused_pid_starts_clean() {
        let mut s = Sharing::default();
        s.spawn(1, 2, Born::SharedVm);
        // 2's exit was missed; the number comes back as a fork of 5.
        s.spawn(5, 2, Born::Copy);
        assert!(s.alone(2, one) && s.alone(1, one));
    }
}
