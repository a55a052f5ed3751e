//! How good the evidence of one trace is (docs/learning.md, "Thin evidence"): a profile
//! learned from a run that failed, did nothing, or skipped work because a cache was warm is
//! likely incomplete, and `sbx learn` says so in one line per trace.
//!
//! Pure: a fold over events, no I/O.

use std::collections::BTreeSet;

use crate::event::{Access, Event, EventKind, ExitStatus, Object, Outcome};

/// What one trace shows about its own completeness.
#[derive(Debug, Default)]
pub struct Evidence {
    events: u64,
    /// The exit of the first process of the tree.
    root_exit: Option<ExitStatus>,
    /// pip installed a wheel from its cache that this run did not build.
    reused_wheel: bool,
    built_wheel: bool,
    /// The trace's HOME (where the stores of [`super::stores`] are looked for).
    home: Vec<u8>,
    /// Tool stores the run used: root -> what it is, and what the run wrote there and has not
    /// removed again (`None` once that is more than a probe of the store would write).
    stores: std::collections::BTreeMap<Vec<u8>, (&'static str, Option<Names>)>,
    /// The trace's start directory (where a build leaves its outputs).
    cwd: Vec<u8>,
    /// Build outputs of the project seen so far ([`BUILD_OUTPUTS`]), and the first one the
    /// run found in place instead of making it.
    outputs_seen: Names,
    found_output: Option<Vec<u8>>,
}

/// Names a build makes in the project on its first run in a clean checkout: autoconf's and
/// automake's (`config.status`, `.deps`), CMake's cache. Found in place (not made), they say
/// the run rebuilt an already built tree.
const BUILD_OUTPUTS: &[&[u8]] = &[
    b"config.status",
    b".deps",
    b".dirstamp",
    b"CMakeCache.txt",
    b"CMakeFiles",
];

const PIP_WHEELS: &[u8] = b"/.cache/pip/wheels/";

/// Paths, for the names a run wrote into a store.
type Names = BTreeSet<Vec<u8>>;

/// Names written into a store beyond which it was surely filled (no probe writes as many).
const FILLED: usize = 64;

/// A store's own bookkeeping, written on every run warm or cold (pnpm's SQLite index, locks):
/// no sign that the run filled the store.
fn bookkeeping(path: &[u8]) -> bool {
    const ENDS: &[&[u8]] = &[
        b".db",
        b".db-wal",
        b".db-shm",
        b".db-journal",
        b".sqlite",
        b".sqlite3",
        b"-wal",
        b"-shm",
        b"-journal",
        b".lock",
    ];
    ENDS.iter().any(|e| path.ends_with(e))
}

impl Evidence {
    /// The evidence of a trace recorded with this HOME.
    pub fn with_home(home: &[u8]) -> Evidence {
        Evidence {
            home: home.to_vec(),
            ..Evidence::default()
        }
    }

    /// The evidence of a trace recorded with this HOME, started in `cwd`.
    pub fn for_run(home: &[u8], cwd: &[u8]) -> Evidence {
        Evidence {
            cwd: cwd.to_vec(),
            ..Evidence::with_home(home)
        }
    }

    /// A successful access to `path`: is it the first one to a build output of the project,
    /// and was that output there already?
    fn output_use(&mut self, path: &[u8], access: crate::event::AccessSet) {
        if self.cwd.len() <= 1 || self.found_output.is_some() {
            return;
        }
        let Some(rel) = path.strip_prefix(self.cwd.as_slice()) else {
            return;
        };
        if rel.first() != Some(&b'/') {
            return;
        }
        let mut end = self.cwd.len();
        for seg in rel[1..].split(|&b| b == b'/') {
            end += 1 + seg.len();
            if BUILD_OUTPUTS.contains(&seg) {
                let output = path[..end].to_vec();
                let made = access.contains(Access::Create) && end == path.len();
                if self.outputs_seen.insert(output.clone()) && !made {
                    self.found_output = Some(output);
                }
                return;
            }
        }
    }

    pub fn observe(&mut self, ev: &Event) {
        self.events += 1;
        match &ev.kind {
            EventKind::Exit(x) if x.process && ev.proc.ppid == 0 && self.root_exit.is_none() => {
                self.root_exit = Some(x.status);
            }
            EventKind::Syscall(sc) if matches!(sc.outcome, Outcome::Value(_)) => {
                for (i, t) in sc.targets.iter().enumerate() {
                    let Object::Path(p) = &t.object else {
                        continue;
                    };
                    let path = p.effective();
                    self.output_use(path, t.access);
                    // The source of a hard link (pnpm linking a package's files out of its
                    // store) is read, not filled.
                    if i == 0 && sc.name.starts_with("link") {
                        self.store_use(path, crate::event::AccessSet::of(Access::Read));
                    } else {
                        self.store_use(path, t.access);
                    }
                    let in_cache = path.windows(PIP_WHEELS.len()).any(|w| w == PIP_WHEELS);
                    if !in_cache || !path.ends_with(b".whl") {
                        continue;
                    }
                    if t.access.contains(Access::Create) || t.access.contains(Access::Write) {
                        self.built_wheel = true;
                    } else if t.access.contains(Access::Read) {
                        self.reused_wheel = true;
                    }
                }
            }
            _ => {}
        }
    }

    /// A successful access to `path`: note the tool store it is in, if any.
    fn store_use(&mut self, path: &[u8], access: crate::event::AccessSet) {
        let Some((kind, len)) = super::stores::store_of(path, &self.home) else {
            return;
        };
        let wrote = [Access::Create, Access::Write]
            .into_iter()
            .any(|a| access.contains(a))
            && !bookkeeping(path);
        let removed = access.contains(Access::Delete) || access.contains(Access::Rename);
        let (_, kept) = self
            .stores
            .entry(path[..len].to_vec())
            .or_insert((kind.what, Some(BTreeSet::new())));
        // A name written and removed again (pnpm's `_tmp_PID_*` check that the store is
        // writable) did not fill the store; many names surely did.
        if let Some(set) = kept {
            if wrote {
                set.insert(path.to_vec());
            } else if removed {
                set.remove(path);
            }
            if set.len() > FILLED {
                *kept = None;
            }
        }
    }

    /// The run found a cache or the project's build outputs warm (what [`Self::warnings`]
    /// says of it): a cold run does more.
    pub fn warm(&self) -> bool {
        self.stores
            .values()
            .any(|(_, kept)| kept.as_ref().is_some_and(BTreeSet::is_empty))
            || self.found_output.is_some()
            || (self.reused_wheel && !self.built_wheel)
    }

    /// One line per reason to doubt the profile (empty when there is none).
    pub fn warnings(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.events == 0 {
            out.push(
                "the trace holds no events: the profile allows nothing the workload does".into(),
            );
        }
        match self.root_exit {
            Some(ExitStatus::Code(0)) | None => {}
            Some(ExitStatus::Code(c)) => out.push(format!(
                "the recorded run failed (exit {c}): what it did not get to is not in the profile"
            )),
            Some(ExitStatus::Signal(s)) => out.push(format!(
                "the recorded run was killed by signal {s}: what it did not get to is not in the profile"
            )),
        }
        for (root, (what, kept)) in &self.stores {
            if kept.as_ref().is_some_and(BTreeSet::is_empty) {
                out.push(format!(
                    "the run found {what} warm ({}) and wrote nothing there: a run with it cold fills it (downloads, builds), and steps this run skipped (network, compilers) are not in the profile; learn from a cold and a warm trace together (docs/learning.md)",
                    String::from_utf8_lossy(root)
                ));
            }
        }
        if let Some(found) = &self.found_output {
            out.push(format!(
                "the run found build outputs of an earlier run in the project ({}): a clean checkout makes them, which this profile does not cover; learn from a cold and a warm trace together (a clean checkout's and this one, docs/learning.md)",
                String::from_utf8_lossy(found)
            ));
        }
        if self.reused_wheel && !self.built_wheel {
            out.push(
                "pip installed a wheel it had built before (~/.cache/pip/wheels): a run with a cold cache builds it (compiler, build tools), which this profile does not cover; learn from a cold and a warm trace together (docs/learning.md)"
                    .into(),
            );
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{AccessSet, Exit, PathObj, ProcInfo, Syscall, Target};

    fn ev(ppid: i32, kind: EventKind) -> Event {
        Event {
            time_ns: 0,
            pid: 1,
            tid: 1,
            proc: ProcInfo {
                ppid,
                ..ProcInfo::default()
            },
            kind,
        }
    }

    fn open(access: AccessSet, path: &str) -> Event {
        ev(
            0,
            EventKind::Syscall(Syscall {
                name: "openat".into(),
                nr: 257,
                args: [0; 6],
                targets: vec![Target {
                    access,
                    object: Object::Path(PathObj {
                        literal: path.into(),
                        abs: path.into(),
                        resolved: None,
                    }),
                }],
                outcome: Outcome::Value(3),
                sock_type: None,
            }),
        )
    }

    fn exit(ppid: i32, status: ExitStatus) -> Event {
        ev(
            ppid,
            EventKind::Exit(Exit {
                status,
                process: true,
            }),
        )
    }

    #[test]
    fn thin_evidence_is_said() {
        assert_eq!(Evidence::default().warnings().len(), 1);
        let mut e = Evidence::default();
        e.observe(&exit(7, ExitStatus::Code(1)));
        e.observe(&exit(0, ExitStatus::Code(0)));
        assert!(
            e.warnings().is_empty(),
            "a child's failure is not the run's"
        );
        let mut e = Evidence::default();
        e.observe(&exit(0, ExitStatus::Signal(9)));
        assert!(e.warnings()[0].contains("signal 9"));
        let wheel = "/h/.cache/pip/wheels/f0/a9/x-1.0-cp311-linux_x86_64.whl";
        let mut e = Evidence::default();
        e.observe(&open(AccessSet::of(Access::Read), wheel));
        assert!(e.warnings()[0].contains("cold cache"));
        e.observe(&open(AccessSet::of(Access::Create), wheel));
        assert!(e.warnings().is_empty());
    }

    #[test]
    fn a_built_tree_is_said() {
        let ok = |e: &mut Evidence| e.observe(&exit(0, ExitStatus::Code(0)));
        // A clean checkout: configure makes config.status, make makes .deps.
        let mut e = Evidence::for_run(b"/h", b"/w/p");
        ok(&mut e);
        e.observe(&open(AccessSet::of(Access::Create), "/w/p/config.status"));
        e.observe(&open(AccessSet::of(Access::Create), "/w/p/src/.deps"));
        e.observe(&open(
            AccessSet::of(Access::Write),
            "/w/p/src/.deps/hello.Po",
        ));
        e.observe(&open(AccessSet::of(Access::Read), "/w/p/config.status"));
        assert!(e.warnings().is_empty(), "{:?}", e.warnings());
        // The same run in a built tree.
        let mut e = Evidence::for_run(b"/h", b"/w/p");
        ok(&mut e);
        e.observe(&open(
            AccessSet::of(Access::Write),
            "/w/p/src/.deps/hello.Po",
        ));
        let w = e.warnings();
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].contains("build outputs of an earlier run in the project (/w/p/src/.deps)"));
        // Outside the project: not the project's build.
        let mut e = Evidence::for_run(b"/h", b"/w/p");
        ok(&mut e);
        e.observe(&open(AccessSet::of(Access::Read), "/usr/lib/x/.deps/a"));
        assert!(e.warnings().is_empty());
    }

    #[test]
    fn a_store_found_warm_is_said_once() {
        let mut e = Evidence::with_home(b"/h");
        e.observe(&exit(0, ExitStatus::Code(0)));
        for f in ["a", "b"] {
            let p = format!("/h/.cache/uv/wheels-v5/{f}");
            e.observe(&open(AccessSet::of(Access::Read), &p));
        }
        let w = e.warnings();
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(
            w[0].contains("found a tool's cache warm (/h/.cache/uv)"),
            "{w:?}"
        );
        e.observe(&open(
            AccessSet::of(Access::Create),
            "/h/.cache/uv/wheels-v5/c",
        ));
        assert!(e.warnings().is_empty());
        // pnpm's index database is written on every run: not a fill.
        let mut e = Evidence::with_home(b"/h");
        e.observe(&exit(0, ExitStatus::Code(0)));
        let store = "/h/.local/share/pnpm/store/v11";
        e.observe(&open(
            AccessSet::of(Access::Read),
            &format!("{store}/files/00/ab"),
        ));
        e.observe(&open(
            AccessSet::of(Access::Write),
            &format!("{store}/index.db-wal"),
        ));
        assert_eq!(e.warnings().len(), 1);
        e.observe(&open(
            AccessSet::of(Access::Create),
            &format!("{store}/files/00/cd"),
        ));
        assert!(e.warnings().is_empty());
        // Outside HOME's stores nothing is said.
        let mut e = Evidence::with_home(b"/h");
        e.observe(&exit(0, ExitStatus::Code(0)));
        e.observe(&open(AccessSet::of(Access::Read), "/h/.config/x/y"));
        assert!(e.warnings().is_empty());
    }
}
