//! Learn is safe by construction (issue 39): a property test over generated traces. Whatever
//! a recorded run creates, removes, writes and reads, the learned profile, compiled as
//! enforce compiles it, never admits writing or creating a persistence place or a hidden name
//! straight in HOME that the trace did not touch exactly, and its project secret rule still
//! denies every secret-looking top-level name the trace did not use exactly.

use proptest::prelude::*;

use crate::event::{Access, AccessSet, Event, EventKind, Object, Outcome, PathObj, Syscall};
use crate::event::{Creds, ProcInfo, Target};
use crate::learn::{LearnOptions, Learner};
use crate::policy::{CompiledPolicy, Decision};
use crate::trace::Header;

const CWD: &str = "/w/proj";
const HOME: &str = "/home/u";
const TMP: &str = "/tmp";

/// Persistence places (relative to HOME or CWD as written) a glob must never reach.
const PERSISTENCE: &[&str] = &[
    "H/.bashrc",
    "H/.bash_login",
    "H/.profile",
    "H/.zshenv",
    "H/.gitconfig",
    "H/.ssh/authorized_keys",
    "H/.local/bin/git",
    "H/.local/lib/python3.11/site-packages/zz_evil.pth",
    "H/.local/lib/python3.11/site-packages/sitecustomize.py",
    "H/.config/autostart/x.desktop",
    "H/.config/systemd/user/x.service",
    "H/.config/git/config",
    "H/.zz9",
    "C/.git/hooks/post-checkout",
    "C/.git/config",
    "C/.git/modules/lib/config",
    "C/.git/modules/lib/hooks/post-checkout",
    "C/dep/.git/hooks/post-checkout",
    "C/dep/.git/config",
    "C/dep/.git/commondir",
    "C/lib/.git",
    "C/.npmrc",
    "C/.envrc",
];

/// Secret-looking top-level names of the project.
const SECRETS: &[&str] = &[
    "deploy_token.txt",
    "server.pem",
    ".env.production",
    "app_secret.json",
    "id_rsa",
    "prod.key",
    ".netrc",
];

fn place(p: &str) -> String {
    if let Some(r) = p.strip_prefix("H/") {
        format!("{HOME}/{r}")
    } else if let Some(r) = p.strip_prefix("C/") {
        format!("{CWD}/{r}")
    } else if let Some(r) = p.strip_prefix("T/") {
        format!("{TMP}/{r}")
    } else {
        p.to_string()
    }
}

fn header() -> Header {
    Header {
        sbx_version: "0.1.0".into(),
        arch: crate::arch::Arch::X86_64,
        kernel: "6.18.0".into(),
        argv: vec![b"sh".to_vec()],
        cwd: CWD.into(),
        home: HOME.into(),
        tmpdir: TMP.into(),
        uid: 1000,
        gid: 1000,
        user: "u".into(),
        start_unix: 1_700_000_000,
        metadata: false,
    }
}

fn sys(name: &str, access: AccessSet, path: &str, outcome: Outcome) -> Event {
    Event {
        time_ns: 0,
        pid: 7,
        tid: 7,
        proc: ProcInfo {
            ppid: 1,
            comm: b"sh".as_slice().into(),
            exe: b"/bin/sh".as_slice().into(),
            creds: Creds {
                uid: 1000,
                euid: 1000,
                gid: 1000,
                egid: 1000,
            },
        },
        kind: EventKind::Syscall(Syscall {
            name: name.into(),
            nr: 0,
            args: [0; 6],
            targets: vec![Target {
                access,
                object: Object::Path(PathObj {
                    literal: path.as_bytes().to_vec(),
                    abs: path.as_bytes().to_vec(),
                    resolved: None,
                }),
            }],
            outcome,
            sock_type: None,
        }),
    }
}

/// One step of a generated run.
#[derive(Debug, Clone)]
enum Step {
    /// Make the file (new), maybe write it again, maybe remove it.
    File { path: String, keep: bool },
    /// Make a directory (new) and a file in it.
    Dir { path: String, file: String },
    /// Read an existing file.
    Read(String),
}

fn name() -> impl Strategy<Value = String> {
    prop_oneof![
        proptest::string::string_regex("[a-z0-9]{1,6}").unwrap(),
        proptest::string::string_regex("\\.[a-z0-9]{1,5}").unwrap(),
        prop::sample::select(vec![
            ".1",
            "x",
            "xtoken1",
            "xsecret1",
            "a1.pem",
            ".env.1",
            "token.go",
            "secrets.rs",
            "hooks",
            "config",
            ".git",
            "HEAD",
            "objects",
            "x.pth",
            "pre-commit.sample",
        ])
        .prop_map(str::to_string),
    ]
}

fn dir() -> impl Strategy<Value = String> {
    prop::sample::select(vec![
        "H",
        "H/.local",
        "H/.local/bin",
        "H/.local/lib/python3.11/site-packages",
        "H/.config",
        "H/.cache/tool",
        "C",
        "C/dep",
        "C/dep/.git",
        "C/dep/.git/hooks",
        "C/.git/modules/lib",
        "C/.git/modules/lib/hooks",
        "C/build",
        "T",
    ])
    .prop_map(str::to_string)
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        (dir(), name(), any::<bool>()).prop_map(|(d, n, keep)| Step::File {
            path: format!("{d}/{n}"),
            keep
        }),
        (dir(), name(), name()).prop_map(|(d, n, f)| Step::Dir {
            path: format!("{d}/{n}"),
            file: f
        }),
        (dir(), name()).prop_map(|(d, n)| Step::Read(format!("{d}/{n}"))),
    ]
}

/// The events of a run, and the paths it touched (absolute).
fn run(steps: &[Step]) -> (Vec<Event>, Vec<String>) {
    let rw = AccessSet::of(Access::Write);
    let create = AccessSet::of(Access::Create).with(Access::Write);
    let ok = Outcome::Value(3);
    let mut ev = vec![sys(
        "openat",
        AccessSet::of(Access::Read),
        &place("C/README"),
        ok,
    )];
    let mut touched = vec![place("C/README")];
    for s in steps {
        match s {
            Step::File { path, keep } => {
                let p = place(path);
                ev.push(sys("openat", create, &p, ok));
                ev.push(sys("openat", rw, &p, ok));
                if !keep {
                    ev.push(sys(
                        "unlink",
                        AccessSet::of(Access::Delete),
                        &p,
                        Outcome::Value(0),
                    ));
                }
                touched.push(p);
            }
            Step::Dir { path, file } => {
                let p = place(path);
                let f = format!("{p}/{file}");
                ev.push(sys(
                    "mkdir",
                    AccessSet::of(Access::Create),
                    &p,
                    Outcome::Value(0),
                ));
                ev.push(sys("openat", create, &f, ok));
                touched.push(p);
                touched.push(f);
            }
            Step::Read(path) => {
                let p = place(path);
                ev.push(sys("openat", AccessSet::of(Access::Read), &p, ok));
                touched.push(p);
            }
        }
    }
    (ev, touched)
}

fn policy_of(events: &[Event]) -> (CompiledPolicy, String) {
    let mut l = Learner::new(LearnOptions::default());
    l.begin_trace(&header());
    for e in events {
        l.observe(e);
    }
    let text = crate::profile::render::render(&l.finish());
    let env = crate::profile::vars::Env {
        cwd: CWD.into(),
        home: HOME.into(),
        tmpdir: TMP.into(),
        vars: Default::default(),
    };
    let pol = CompiledPolicy::load("learned", &text, &env).unwrap();
    (pol, text)
}

fn path_obj(p: &str) -> Object {
    Object::Path(PathObj {
        literal: p.as_bytes().to_vec(),
        abs: p.as_bytes().to_vec(),
        resolved: None,
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn learned_profiles_reach_no_persistence_and_keep_every_secret_name(
        steps in prop::collection::vec(step(), 1..12),
    ) {
        let (events, touched) = run(&steps);
        let (pol, text) = policy_of(&events);
        for p in PERSISTENCE.iter().map(|p| place(p)) {
            if touched.contains(&p) {
                continue;
            }
            for access in [AccessSet::of(Access::Create), AccessSet::of(Access::Write)] {
                prop_assert!(
                    pol.decide(access, &path_obj(&p)) != Decision::Allow,
                    "{p} ({:?}) admitted by\n{text}", access
                );
            }
        }
        // Where the project is an area, its secret rule still names every secret-looking
        // name the run did not use exactly.
        if text.contains("read ${CWD}/**") {
            for s in SECRETS {
                let p = format!("{CWD}/{s}");
                if touched.contains(&p) {
                    continue;
                }
                prop_assert!(
                    pol.decide(AccessSet::of(Access::Read), &path_obj(&p)) != Decision::Allow,
                    "{p} readable under\n{text}"
                );
            }
        }
    }
}
