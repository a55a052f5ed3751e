//! Unit tests for the learner: a simulated `npm install` run (node reading many files under
//! node_modules, mkdtemp dirs, /proc/<pid>/stat, ENOENT probes, exec of node and sh, a read of
//! ~/.npmrc) learned and checked for stability, portability, tightness and determinism.

use super::*;
use crate::arch::Arch;
use crate::event::{Access, AccessSet, Creds, Exec, ProcInfo, Spawn, SpawnVia, Target};
use globset::GlobMatcher;

/// Where a run happens.
#[derive(Clone)]
struct Env {
    cwd: &'static str,
    home: &'static str,
    tmpdir: &'static str,
    uid: u32,
}

const ENV_A: Env = Env {
    cwd: "/work/A/proj",
    home: "/home/alice",
    tmpdir: "/tmp",
    uid: 1000,
};
const ENV_B: Env = Env {
    cwd: "/srv/ci/build-7/checkout",
    home: "/home/runner",
    tmpdir: "/var/tmp/ci",
    uid: 1001,
};

fn header(env: &Env) -> Header {
    Header {
        sbx_version: "0.1.0".into(),
        arch: Arch::X86_64,
        kernel: "6.18.0".into(),
        argv: vec![b"npm".to_vec(), b"install".to_vec()],
        cwd: env.cwd.as_bytes().to_vec(),
        home: env.home.as_bytes().to_vec(),
        tmpdir: env.tmpdir.as_bytes().to_vec(),
        uid: env.uid,
        gid: env.uid,
        user: "u".into(),
        start_unix: 1_700_000_000,
        metadata: false,
    }
}

fn proc_info() -> ProcInfo {
    ProcInfo {
        ppid: 1,
        comm: b"node".as_slice().into(),
        exe: b"/usr/bin/node".as_slice().into(),
        creds: Creds {
            uid: 1000,
            euid: 1000,
            gid: 1000,
            egid: 1000,
        },
    }
}

fn event(pid: i32, kind: EventKind) -> Event {
    Event {
        time_ns: 0,
        pid,
        tid: pid,
        proc: proc_info(),
        kind,
    }
}

fn path_target(access: &[Access], path: &str) -> Target {
    Target {
        access: access.iter().copied().collect(),
        object: Object::Path(PathObj {
            literal: path.as_bytes().to_vec(),
            abs: path.as_bytes().to_vec(),
            resolved: None,
        }),
    }
}

fn sys(pid: i32, name: &str, targets: Vec<Target>, outcome: Outcome) -> Event {
    event(
        pid,
        EventKind::Syscall(Syscall {
            name: name.into(),
            nr: 0,
            args: [0; 6],
            targets,
            outcome,
            sock_type: None,
        }),
    )
}

/// A DNS query for `name` and its answer `ip` (what record writes for getaddrinfo).
fn resolve(pid: i32, name: &str, ip: [u8; 4]) -> [Event; 2] {
    [
        sys(
            pid,
            "sendmmsg",
            vec![Target {
                access: AccessSet::of(Access::Resolve),
                object: Object::DnsName(name.into()),
            }],
            Outcome::Value(1),
        ),
        event(
            pid,
            EventKind::Resolved(crate::event::Resolved {
                name: name.into(),
                addrs: vec![std::net::IpAddr::from(ip)],
                source: crate::event::ResolveSource::Dns(SockAddr::Inet {
                    addr: [127, 0, 0, 53],
                    port: 53,
                }),
            }),
        ),
    ]
}

fn open(pid: i32, access: &[Access], path: &str, outcome: Outcome) -> Event {
    sys(pid, "openat", vec![path_target(access, path)], outcome)
}

fn exec(pid: i32, path: &str) -> Event {
    event(
        pid,
        EventKind::Exec(Exec {
            path: path.as_bytes().to_vec(),
            argv: vec![path.as_bytes().to_vec()],
            env_names: vec![],
            former_tid: None,
            program: None,
            thinned: Vec::new(),
        }),
    )
}

/// An exec event whose program identity (an interpreter's script) is `program`.
fn exec_prog(pid: i32, path: &str, program: Option<&str>) -> Event {
    event(
        pid,
        EventKind::Exec(Exec {
            path: path.as_bytes().to_vec(),
            argv: vec![path.as_bytes().to_vec()],
            env_names: vec![],
            former_tid: None,
            program: program.map(|p| p.as_bytes().to_vec()),
            thinned: Vec::new(),
        }),
    )
}

/// `parent` forked `child` (a process, not a thread).
fn spawn(parent: i32, child: i32) -> Event {
    event(
        parent,
        EventKind::Spawn(crate::event::Spawn {
            child,
            thread: false,
            via: crate::event::SpawnVia::Fork,
        }),
    )
}

fn connect(pid: i32, addr: SockAddr) -> Event {
    sys(
        pid,
        "connect",
        vec![Target {
            access: AccessSet::of(Access::Connect),
            object: Object::Socket(addr),
        }],
        Outcome::Value(0),
    )
}

/// A tiny deterministic random generator (xorshift) for temp names.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn alnum(&mut self, n: usize) -> String {
        const A: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
        (0..n)
            .map(|_| A[(self.next() % 62) as usize] as char)
            .collect()
    }
}

/// The run's events and the (verb, concrete path, accessor pid) it needs.
struct Run {
    header: Header,
    events: Vec<Event>,
    needs: Vec<(Verb, String, i32)>,
}

fn npm_run(env: &Env, pid: i32, seed: u64) -> Run {
    let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let mut events = Vec::new();
    let mut needs = Vec::new();
    let cwd = env.cwd;
    let home = env.home;
    let tmp = env.tmpdir;
    let worker = pid + 3;
    let ok = |events: &mut Vec<Event>,
              needs: &mut Vec<(Verb, String, i32)>,
              p: i32,
              acc: &[Access],
              verb: Verb,
              path: String| {
        events.push(open(p, acc, &path, Outcome::Value(3)));
        needs.push((verb, path, p));
    };
    events.push(event(
        pid,
        EventKind::Spawn(Spawn {
            child: pid,
            thread: false,
            via: SpawnVia::Fork,
        }),
    ));
    events.push(exec(pid, "/usr/bin/node"));
    ok(
        &mut events,
        &mut needs,
        pid,
        &[Access::Read],
        Verb::Read,
        "/usr/lib/x86_64-linux-gnu/libc.so.6".into(),
    );
    ok(
        &mut events,
        &mut needs,
        pid,
        &[Access::Read],
        Verb::Read,
        "/etc/passwd".into(),
    );
    ok(
        &mut events,
        &mut needs,
        pid,
        &[Access::Read],
        Verb::Read,
        format!("{cwd}/package.json"),
    );
    ok(
        &mut events,
        &mut needs,
        pid,
        &[Access::Read],
        Verb::Read,
        format!("/proc/{pid}/stat"),
    );
    ok(
        &mut events,
        &mut needs,
        worker,
        &[Access::Read],
        Verb::Read,
        format!("/proc/{worker}/stat"),
    );
    for i in 0..20 {
        for f in ["package.json", "index.js", "lib/util.js"] {
            ok(
                &mut events,
                &mut needs,
                worker,
                &[Access::Read],
                Verb::Read,
                format!("{cwd}/node_modules/pkg{i}/{f}"),
            );
        }
        // node's module resolution: nested node_modules that do not exist.
        let probe = format!(
            "{cwd}/node_modules/pkg{i}/node_modules/dep{}/package.json",
            i % 3
        );
        events.push(open(
            worker,
            &[Access::Read],
            &probe,
            Outcome::Errno(ENOENT),
        ));
        needs.push((Verb::Probe, probe, worker));
    }
    let parent_probe = format!("{cwd}/node_modules/pkg1/index.js/package.json");
    events.push(open(
        worker,
        &[Access::Read],
        &parent_probe,
        Outcome::Errno(ENOTDIR),
    ));
    needs.push((Verb::Probe, parent_probe, worker));
    ok(
        &mut events,
        &mut needs,
        pid,
        &[Access::Write, Access::Create, Access::Truncate],
        Verb::Write,
        format!("{cwd}/node_modules/.package-lock.json"),
    );
    // write-file-atomic: temp file next to the target, then rename.
    let atomic = format!(
        "{cwd}/package-lock.json.{}",
        1_000_000_000 + rng.next() % 1_000_000_000
    );
    ok(
        &mut events,
        &mut needs,
        pid,
        &[Access::Write, Access::Create],
        Verb::Write,
        atomic.clone(),
    );
    events.push(sys(
        pid,
        "rename",
        vec![
            path_target(&[Access::Rename], &atomic),
            path_target(&[Access::Create], &format!("{cwd}/package-lock.json")),
        ],
        Outcome::Value(0),
    ));
    needs.push((Verb::Delete, atomic, pid));
    needs.push((Verb::Write, format!("{cwd}/package-lock.json"), pid));
    // mkdtemp dirs with random suffixes.
    for _ in 0..3 {
        let d = format!("{tmp}/npm-{pid}-{}", rng.alnum(6));
        events.push(sys(
            pid,
            "mkdir",
            vec![path_target(&[Access::Create], &d)],
            Outcome::Value(0),
        ));
        needs.push((Verb::Write, d.clone(), pid));
        ok(
            &mut events,
            &mut needs,
            pid,
            &[Access::Write, Access::Create],
            Verb::Write,
            format!("{d}/package.tgz"),
        );
        ok(
            &mut events,
            &mut needs,
            pid,
            &[Access::Read],
            Verb::Read,
            format!("{d}/package.tgz"),
        );
    }
    // npm cache and log.
    for i in 0..4 {
        ok(
            &mut events,
            &mut needs,
            worker,
            &[Access::Read],
            Verb::Read,
            format!(
                "{home}/.npm/_cacache/index-v5/{:02x}/{:02x}/{:064x}",
                i * 7,
                i * 13,
                i + 1
            ),
        );
    }
    let ts = 1_700_000_000 + rng.next() % 100_000;
    ok(
        &mut events,
        &mut needs,
        pid,
        &[Access::Write, Access::Create],
        Verb::Write,
        format!("{home}/.npm/_logs/{ts}-debug-0.log"),
    );
    // The secret the workload really reads.
    ok(
        &mut events,
        &mut needs,
        pid,
        &[Access::Read],
        Verb::Read,
        format!("{home}/.npmrc"),
    );
    // A lifecycle script.
    let sh = pid + 10;
    events.push(exec(sh, "/bin/sh"));
    needs.push((Verb::Exec, "/bin/sh".into(), sh));
    needs.push((Verb::Exec, "/usr/bin/node".into(), pid));
    // The registry through a CDN: another address on every run, the same name.
    let cdn = [104, 16, (seed % 200) as u8, 35];
    events.extend(resolve(pid, "registry.npmjs.org", cdn));
    events.push(connect(
        pid,
        SockAddr::Inet {
            addr: cdn,
            port: 443,
        },
    ));
    events.push(connect(
        pid,
        SockAddr::Inet {
            addr: [127, 0, 0, 53],
            port: 53,
        },
    ));
    events.push(connect(
        pid,
        SockAddr::Unix(format!("/run/user/{}/bus", env.uid).into_bytes()),
    ));
    events.push(sys(pid, "ptrace", vec![], Outcome::Errno(1)));
    events.push(sys(pid, "openat", vec![], Outcome::Errno(14)));
    Run {
        header: header(env),
        events,
        needs,
    }
}

fn learn_runs(runs: &[&Run], opts: LearnOptions) -> Profile {
    let mut l = Learner::new(opts);
    for r in runs {
        l.begin_trace(&r.header);
        for e in &r.events {
            // These synthetic runs mark every O_CREAT open `create`, as version-4 traces did
            // (the name may have existed): they test learning by name. Ownership (version 5,
            // `create` only for new names) is tested in learn/own.rs and on real runs.
            let mut e = e.clone();
            crate::trace::reader::create_as_write(&mut e);
            l.observe(&e);
        }
    }
    l.finish()
}

fn learn(run: &Run) -> Profile {
    learn_runs(&[run], LearnOptions::default())
}

/// Local canonical text (the real renderer lives in profile::render).
fn text(p: &Profile) -> String {
    let mut s = String::new();
    for h in &p.header {
        s.push_str(&format!("# {h}\n"));
    }
    for i in &p.includes {
        s.push_str(&format!("include {}\n", i.name));
    }
    for r in &p.rules {
        for c in &r.comments {
            s.push_str(&format!("# {c}\n"));
        }
        let pat = match &r.pattern {
            Pattern::Path(p) => p.clone(),
            Pattern::Net { proto, addr } => net_text(*proto, addr),
            Pattern::Syscall(n) | Pattern::Host(n) => n.clone(),
            Pattern::Program { name, path } => format!("{name} {path}"),
            Pattern::Env(n) => n.clone(),
        };
        let eff = if r.effect == Effect::Deny {
            "deny "
        } else {
            ""
        };
        s.push_str(&format!("{eff}{} {pat}\n", r.verb.name()));
    }
    s
}

fn expand(pat: &str, env: &Env) -> String {
    pat.replace("${CWD}", env.cwd)
        .replace("${HOME}", env.home)
        .replace("${TMPDIR}", env.tmpdir)
        .replace("${UID}", &env.uid.to_string())
}

fn matcher(pat: &str, env: &Env) -> GlobMatcher {
    crate::profile::parse::glob_builder(&expand(pat, env))
        .build()
        .map(|g| g.compile_matcher())
        .unwrap_or_else(|e| panic!("bad glob {pat:?}: {e}"))
}

/// Does the profile admit `verb` on `path` by `pid` (the policy's /proc/<own pid> == self)?
fn admits(p: &Profile, env: &Env, verb: Verb, path: &str, pid: i32) -> bool {
    let own = format!("/proc/{pid}/");
    let alt = path.strip_prefix(&own).map(|r| format!("/proc/self/{r}"));
    let matches = |g: &str| {
        let m = matcher(g, env);
        m.is_match(path) || alt.as_deref().is_some_and(|a| m.is_match(a))
    };
    p.rules.iter().any(|r| {
        let Pattern::Path(g) = &r.pattern else {
            return false;
        };
        // An area (`own`) holds every file verb but exec, on itself and below.
        let area = r.verb == Verb::Own && verb != Verb::Exec;
        r.effect == Effect::Allow
            && (r.verb == verb || area)
            && (matches(g) || (area && matches(&format!("{g}/**"))))
    })
}

fn path_rules(p: &Profile, verb: Verb) -> Vec<String> {
    p.rules
        .iter()
        .filter(|r| r.verb == verb)
        .filter_map(|r| match &r.pattern {
            Pattern::Path(g) => Some(g.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn learns_expected_npm_rules() {
    let p = learn(&npm_run(&ENV_A, 4000, 1));
    let t = text(&p);
    for want in [
        "read ${CWD}/node_modules/**\n",
        "read /proc/self/stat\n",
        "write ${CWD}/node_modules/.package-lock.json\n",
        "write ${CWD}/package-lock.json.*\n",
        "delete ${CWD}/package-lock.json.*\n",
        "write ${TMPDIR}/npm-*/package.tgz\n",
        "read ${TMPDIR}/npm-*/package.tgz\n",
        // npm's cache is its store, owned whole (learn/stores.rs).
        "own ${HOME}/.npm\n",
        "probe ${CWD}/node_modules/**\n",
        "exec /usr/bin/node\n",
        "exec /bin/sh\n",
        "connect tcp registry.npmjs.org:443\n",
        "connect tcp 127.0.0.53:53\n",
        "connect udp 127.0.0.53:53\n",
        "connect unix /run/user/${UID}/bus\n",
        "syscall ptrace\n",
    ] {
        assert!(t.contains(want), "missing {want:?} in\n{t}");
    }
    // The secret read: exact, with a WARNING comment right above.
    let npmrc = p
        .rules
        .iter()
        .find(|r| r.pattern == Pattern::Path("${HOME}/.npmrc".into()))
        .expect("npmrc rule");
    assert_eq!(npmrc.verb, Verb::Read);
    assert!(
        npmrc.comments.iter().any(|c| c.starts_with("WARNING")),
        "{t}"
    );
    // Probes are not read rights; target-less openat is not a gated syscall.
    assert!(!t.contains("read ${CWD}/node_modules/pkg1/node_modules"));
    assert!(!t.contains("syscall openat"));
    assert!(p.header[0].starts_with("learned by sbx ") && p.header[0].ends_with("from 1 trace(s)"));
    assert!(p.header.iter().any(|h| h == "command: npm install"));
}

#[test]
fn stability_run1_admits_run2() {
    let run1 = npm_run(&ENV_A, 4000, 1);
    let run2 = npm_run(&ENV_A, 31337, 2);
    let p = learn(&run1);
    for (verb, path, pid) in &run2.needs {
        assert!(
            admits(&p, &ENV_A, *verb, path, *pid),
            "{} {path} not admitted:\n{}",
            verb.name(),
            text(&p)
        );
    }
    // And the test can fail: a run-2 path in an unknown place is refused.
    assert!(!admits(&p, &ENV_A, Verb::Write, "/tmp/other-dir/x", 31337));
}

#[test]
fn portability_dir_and_home_a_admit_b() {
    let p = learn(&npm_run(&ENV_A, 4000, 1));
    let run_b = npm_run(&ENV_B, 2222, 3);
    for (verb, path, pid) in &run_b.needs {
        assert!(
            admits(&p, &ENV_B, *verb, path, *pid),
            "{} {path} not admitted:\n{}",
            verb.name(),
            text(&p)
        );
    }
    // No concrete directory of run A leaks into the profile.
    let t = text(&p);
    assert!(!t.contains("/work/A") && !t.contains("/home/alice"), "{t}");
}

#[test]
fn tightness_secrets_outside_writes_and_new_programs_refused() {
    let p = learn(&npm_run(&ENV_A, 4000, 1));
    let e = &ENV_A;
    let h = e.home;
    let c = e.cwd;
    let refused: &[(Verb, String)] = &[
        (Verb::Read, format!("{h}/.ssh/id_rsa")),
        (Verb::Read, format!("{h}/.aws/credentials")),
        (Verb::Read, format!("{h}/.config/gh/hosts.yml")),
        (Verb::Read, "/etc/shadow".into()),
        (Verb::Write, format!("{h}/.bashrc")),
        (Verb::Write, format!("{h}/.npmrc")),
        (Verb::Write, "/etc/passwd".into()),
        (Verb::Write, "/usr/bin/node".into()),
        (Verb::Write, format!("{c}/../evil.js")),
        (Verb::Write, "/work/A/evil.js".into()),
        (Verb::Write, format!("{c}/node_modules/pkg1/index.js")),
        (Verb::Exec, "/usr/bin/curl".into()),
        (Verb::Exec, format!("{c}/node_modules/.bin/evil")),
        (
            Verb::Write,
            format!("{c}/node_modules/pkg1/node_modules/dep1/package.json"),
        ),
    ];
    for (verb, path) in refused {
        assert!(
            !admits(&p, e, *verb, path, 4000),
            "{} {path} admitted:\n{}",
            verb.name(),
            text(&p)
        );
    }
    // No glob rule covers a secret place.
    for r in &p.rules {
        if let Pattern::Path(g) = &r.pattern
            && g.contains('*')
        {
            for place in generalize::HOME_SECRET_PLACES {
                assert!(
                    !generalize::covers(g, &format!("${{HOME}}/{place}")),
                    "{g} covers {place}"
                );
            }
        }
    }
}

#[test]
fn home_equal_to_cwd_never_gives_cwd_glob_over_ssh() {
    let env = Env {
        cwd: "/home/bob",
        home: "/home/bob",
        tmpdir: "/tmp",
        uid: 1000,
    };
    let mut events = Vec::new();
    for i in 0..30 {
        events.push(open(
            7,
            &[Access::Read],
            &format!("/home/bob/f{i}"),
            Outcome::Value(3),
        ));
    }
    events.push(open(
        7,
        &[Access::Read],
        "/home/bob/.ssh/id_ed25519",
        Outcome::Value(3),
    ));
    let run = Run {
        header: header(&env),
        events,
        needs: vec![],
    };
    let p = learn(&run);
    assert!(
        !admits(&p, &env, Verb::Read, "/home/bob/.ssh/id_rsa", 7),
        "{}",
        text(&p)
    );
    assert!(
        !admits(&p, &env, Verb::Read, "/home/bob/.aws/credentials", 7),
        "{}",
        text(&p)
    );
    assert!(admits(&p, &env, Verb::Read, "/home/bob/f3", 7));
    let key = p
        .rules
        .iter()
        .find(|r| matches!(&r.pattern, Pattern::Path(g) if g.ends_with("id_ed25519")));
    assert!(
        key.is_some_and(|r| r.comments.iter().any(|c| c.starts_with("WARNING"))),
        "{}",
        text(&p)
    );
}

#[test]
fn determinism_same_events_and_any_order() {
    let run = npm_run(&ENV_A, 4000, 1);
    let a = learn(&run);
    let b = learn(&run);
    assert_eq!(a, b);
    let mut shuffled = npm_run(&ENV_A, 4000, 1);
    let mut rng = Rng(99);
    for i in (1..shuffled.events.len()).rev() {
        let j = usize::try_from(rng.next() % (i as u64 + 1)).unwrap_or(0);
        shuffled.events.swap(i, j);
    }
    assert_ne!(shuffled.events, run.events);
    assert_eq!(learn(&shuffled), a);
    // Several traces: order of traces does not matter either.
    let r2 = npm_run(&ENV_B, 2222, 3);
    assert_eq!(
        learn_runs(&[&run, &r2], LearnOptions::default()),
        learn_runs(&[&r2, &run], LearnOptions::default())
    );
    // Rules are sorted.
    let keys: Vec<_> = a
        .rules
        .iter()
        .map(|r| (r.effect, r.verb, r.pattern.clone()))
        .collect();
    let mut sorted = keys.clone();
    sorted.sort();
    assert_eq!(keys, sorted);
}

#[test]
fn two_traces_with_different_dirs_merge() {
    let p = learn_runs(
        &[&npm_run(&ENV_A, 4000, 1), &npm_run(&ENV_B, 2222, 3)],
        LearnOptions::default(),
    );
    assert!(p.header[0].ends_with("from 2 trace(s)"));
    let reads = path_rules(&p, Verb::Read);
    assert_eq!(
        reads
            .iter()
            .filter(|r| *r == "${CWD}/node_modules/**")
            .count(),
        1
    );
    assert!(!text(&p).contains("/srv/ci"), "{}", text(&p));
}

#[test]
fn threshold_controls_collapse() {
    let run = npm_run(&ENV_A, 4000, 1);
    let high = learn_runs(
        &[&run],
        LearnOptions {
            dir_threshold: 100,
            ..LearnOptions::default()
        },
    );
    let reads = path_rules(&high, Verb::Read);
    assert!(!reads.contains(&"${CWD}/node_modules/**".to_string()));
    assert!(reads.contains(&"${CWD}/node_modules/pkg3/lib/util.js".to_string()));
    // Writes never collapse beyond the written area.
    let low = learn_runs(
        &[&run],
        LearnOptions {
            dir_threshold: 2,
            ..LearnOptions::default()
        },
    );
    assert!(
        !admits(&low, &ENV_A, Verb::Write, "/work/A/proj/src/x.js", 1),
        "{}",
        text(&low)
    );
    assert!(!path_rules(&low, Verb::Exec).iter().any(|g| g.contains('*')));
}

#[test]
fn already_allowed_rules_are_left_out() {
    let run = npm_run(&ENV_A, 4000, 1);
    let opts = LearnOptions {
        already_allowed: Some(Box::new(|verb, text| {
            verb == Verb::Read && (text.starts_with("/usr/lib/") || text == "/etc/passwd")
        })),
        includes: vec!["base".into(), "node".into()],
        ..LearnOptions::default()
    };
    let p = learn_runs(&[&run], opts);
    let reads = path_rules(&p, Verb::Read);
    assert!(
        !reads
            .iter()
            .any(|r| r.starts_with("/usr/lib/") || r == "/etc/passwd"),
        "{reads:?}"
    );
    // `read /proc/self/stat` is in the base include itself: left out as well (include
    // coverage); the project's own files are not.
    assert!(!reads.contains(&"/proc/self/stat".to_string()), "{reads:?}");
    assert!(
        reads.contains(&"${CWD}/package.json".to_string()),
        "{reads:?}"
    );
    let names: Vec<&str> = p.includes.iter().map(|i| i.name.as_str()).collect();
    assert_eq!(names, ["base", "node"]);
}

// See: tests/learn.rs npm-demo: `include node` allows `${HOME}/.npm/**`, yet every cache
// path was repeated in the learned profile (the hook only judges literal patterns).
#[test]
fn rules_the_includes_cover_are_left_out_globs_and_vars_too() {
    let run = npm_run(&ENV_A, 4000, 1);
    let learn = |includes: Vec<String>| {
        learn_runs(
            &[&run],
            LearnOptions {
                includes,
                ..LearnOptions::default()
            },
        )
    };
    let without = learn(vec![]);
    let with = learn(vec!["node".into(), "tmp".into()]);
    let render = |p: &Profile| crate::profile::render::render(p);
    // Without includes the profile has rules under ${TMPDIR} and /usr/lib (globs too).
    let all = render(&without);
    assert!(all.contains("${TMPDIR}/"), "{all}");
    assert!(all.contains("\nread /usr/lib/"), "{all}");
    // With node (which includes base) and tmp, those are covered and left out ...
    let text = render(&with);
    for covered in [
        "${TMPDIR}/",
        "read /usr/lib/",
        "read /etc/passwd",
        "read /proc/self/stat",
    ] {
        assert!(!text.contains(covered), "{covered} not left out:\n{text}");
    }
    // ... while the project's own files stay.
    for kept in ["read ${CWD}/package.json", "write ${CWD}/package-lock.json"] {
        assert!(text.contains(kept), "{kept} missing:\n{text}");
    }
}

#[test]
fn base_profile_rules_are_kept_and_widened() {
    let base = Profile {
        header: vec!["old".into()],
        includes: vec![Include {
            name: "shell".into(),
            span: Span::default(),
        }],
        rules: vec![
            Rule {
                by: Vec::new(),
                effect: Effect::Allow,
                verb: Verb::Read,
                pattern: Pattern::Path("/opt/tool/config".into()),
                comments: vec!["needed by the tool".into()],
                span: Span::default(),
            },
            Rule {
                by: Vec::new(),
                effect: Effect::Deny,
                verb: Verb::Read,
                pattern: Pattern::Path("${CWD}/.env".into()),
                comments: vec![],
                span: Span::default(),
            },
            Rule {
                by: Vec::new(),
                effect: Effect::Allow,
                verb: Verb::Read,
                pattern: Pattern::Path("/usr/lib/x86_64-linux-gnu/libc.so.*".into()),
                comments: vec![],
                span: Span::default(),
            },
            Rule {
                by: Vec::new(),
                effect: Effect::Allow,
                verb: Verb::Read,
                pattern: Pattern::Path("${CWD}/node_modules/pkg1/index.js".into()),
                comments: vec![],
                span: Span::default(),
            },
        ],
    };
    let run = npm_run(&ENV_A, 4000, 1);
    let p = learn_runs(
        &[&run],
        LearnOptions {
            base: Some(base),
            // The includes allow /usr/lib: base rules are kept anyway, new ones not added.
            already_allowed: Some(Box::new(|_, t| {
                t.starts_with("/usr/lib/") || t == "/etc/passwd"
            })),
            ..LearnOptions::default()
        },
    );
    let t = text(&p);
    assert!(
        t.contains("# needed by the tool\nread /opt/tool/config\n"),
        "{t}"
    );
    assert!(t.contains("deny read ${CWD}/.env\n"), "{t}");
    assert!(
        t.contains("read /usr/lib/x86_64-linux-gnu/libc.so.*\n"),
        "{t}"
    );
    assert!(!t.contains("read /etc/passwd\n"), "{t}");
    // The base's exact rule is absorbed by the widened node_modules/**.
    assert!(
        !t.contains("read ${CWD}/node_modules/pkg1/index.js\n"),
        "{t}"
    );
    assert!(t.contains("read ${CWD}/node_modules/**\n"), "{t}");
    assert!(p.header.iter().any(|h| h == "widened from a base profile"));
    assert!(p.includes.iter().any(|i| i.name == "shell"));
}

/// A base with secret files kept exact (with their WARNING) among many siblings: widening it
/// with an unrelated trace keeps them exact, keeps the warning, and does not collapse their
/// directory into `dir/**`.
/// See: the review of issue 3 (`read ${HOME}/.config/tool/**` was learned over `my_token`).
#[test]
fn base_secret_rules_stay_exact_and_block_collapsing() {
    let rule = |path: &str, comments: Vec<String>| Rule {
        by: Vec::new(),
        effect: Effect::Allow,
        verb: Verb::Read,
        pattern: Pattern::Path(path.into()),
        comments,
        span: Span::default(),
    };
    let warn = |p: &str| {
        vec![format!(
            "WARNING: the traced run used a secret place (read {p})"
        )]
    };
    let mut rules = vec![
        rule(
            "${HOME}/.config/tool/my_token",
            warn("${HOME}/.config/tool/my_token"),
        ),
        rule(
            "${HOME}/.config/tool/cert.pem",
            warn("${HOME}/.config/tool/cert.pem"),
        ),
    ];
    for i in 0..10 {
        rules.push(rule(
            &format!("${{HOME}}/.config/tool/file{i}.conf"),
            vec![],
        ));
    }
    let base = Profile {
        header: vec![],
        includes: vec![],
        rules,
    };
    let run = npm_run(&ENV_A, 4000, 1);
    let p = learn_runs(
        &[&run],
        LearnOptions {
            base: Some(base),
            ..LearnOptions::default()
        },
    );
    let t = text(&p);
    assert!(!t.contains("${HOME}/.config/tool/**"), "{t}");
    assert!(!t.contains("${HOME}/.config/tool/*\n"), "{t}");
    for secret in ["my_token", "cert.pem"] {
        let line = format!("read ${{HOME}}/.config/tool/{secret}\n");
        let at = t
            .find(&line)
            .unwrap_or_else(|| panic!("{line} missing:\n{t}"));
        let above = t[..at].lines().last().unwrap_or("");
        assert!(above.starts_with("# WARNING"), "{above}\n{t}");
    }
    assert!(
        !admits(
            &p,
            &ENV_A,
            Verb::Read,
            "/home/alice/.config/tool/other_token",
            4000
        ),
        "{t}"
    );
}

#[test]
fn verb_mapping_table() {
    let s = |a: &[Access]| a.iter().copied().collect::<AccessSet>();
    let cases: &[(&[Access], bool, &[Verb])] = &[
        (&[Access::Read], false, &[Verb::Read]),
        // A new name (version 5: `create` only where nothing existed): nothing to read or
        // overwrite, only the name to make.
        (
            &[Access::Write, Access::Create, Access::Truncate],
            false,
            &[Verb::Create],
        ),
        (&[Access::Write, Access::Truncate], false, &[Verb::Write]),
        (&[Access::Chmod], false, &[Verb::Write]),
        (&[Access::Chown], false, &[Verb::Write]),
        (&[Access::Symlink], false, &[Verb::Write]),
        (&[Access::Delete], false, &[Verb::Delete]),
        (&[Access::Rename], false, &[Verb::Delete]),
        (&[Access::Link], false, &[Verb::Read, Verb::Write]),
        (&[Access::Exec], false, &[Verb::Exec]),
        (&[Access::Stat], false, &[]),
        (&[Access::Stat], true, &[Verb::Stat]),
        (&[Access::Chdir], true, &[Verb::Stat]),
        (&[Access::Connect], false, &[Verb::Connect]),
        (&[Access::Bind], false, &[Verb::Bind]),
        (&[Access::Listen], false, &[Verb::Bind]),
        (&[Access::Send], false, &[Verb::Send]),
        (
            &[Access::Read, Access::Write],
            false,
            &[Verb::Read, Verb::Write],
        ),
    ];
    for (acc, meta, want) in cases {
        assert_eq!(verbs_of(s(acc), *meta), *want, "{acc:?} metadata={meta}");
    }
}

fn one(events: Vec<Event>, metadata: bool) -> Profile {
    let mut h = header(&ENV_A);
    h.metadata = metadata;
    learn(&Run {
        header: h,
        events,
        needs: vec![],
    })
}

#[test]
fn names_in_a_removed_cwd_that_failed_are_not_learned() {
    let rel = |literal: &str, abs: &str| Target {
        access: [Access::Write, Access::Create].into_iter().collect(),
        object: Object::Path(PathObj {
            literal: literal.as_bytes().to_vec(),
            abs: abs.as_bytes().to_vec(),
            resolved: None,
        }),
    };
    let p = one(
        vec![
            sys(
                5,
                "openat",
                vec![rel("bar", "/work/A/proj/wQx3 (deleted)/bar")],
                Outcome::Errno(ENOENT),
            ),
            // The same shape that worked (a directory really named so) is learned.
            sys(
                5,
                "openat",
                vec![rel("baz", "/work/A/proj/v (deleted)/baz")],
                Outcome::Value(3),
            ),
            sys(
                5,
                "openat",
                vec![rel("../out", "/work/A/proj/out")],
                Outcome::Errno(ENOENT),
            ),
        ],
        false,
    );
    let t = text(&p);
    assert!(!t.contains("wQx3"), "{t}");
    assert!(t.contains("v (deleted)/baz"), "{t}");
    assert!(t.contains("${CWD}/out\n"), "{t}");
}

#[test]
fn failures_probe_and_attempts() {
    let p = one(
        vec![
            open(5, &[Access::Read], "/etc/denied", Outcome::Errno(13)),
            open(
                5,
                &[Access::Write, Access::Create],
                "/work/A/proj/missing/x",
                Outcome::Errno(ENOENT),
            ),
            sys(
                5,
                "execve",
                vec![path_target(&[Access::Exec], "/usr/local/bin/npx")],
                Outcome::Errno(ENOENT),
            ),
            open(5, &[Access::Read], "/etc/killed", Outcome::Killed),
            open(5, &[Access::Stat], "/etc/statted", Outcome::Value(0)),
        ],
        false,
    );
    let t = text(&p);
    assert!(t.contains("read /etc/denied\n"), "{t}");
    assert!(t.contains("write ${CWD}/missing/x\n"), "{t}");
    assert!(!t.contains("probe ${CWD}/missing"), "{t}");
    // A missing exec is a PATH search: any directory (docs/real-world.md npm).
    assert!(
        t.contains("probe /**/npx\n") && !t.contains("exec /usr/local"),
        "{t}"
    );
    assert!(t.contains("read /etc/killed\n"), "{t}");
    assert!(!t.contains("statted"), "{t}");
    let p = one(
        vec![open(
            5,
            &[Access::Stat],
            "/etc/statted",
            Outcome::Errno(ENOENT),
        )],
        true,
    );
    assert!(text(&p).contains("stat /etc/statted\n"), "{}", text(&p));
}

#[test]
fn symlinked_paths_learn_both_names_and_link_needs_read_write() {
    let target = Target {
        access: AccessSet::of(Access::Read),
        object: Object::Path(PathObj {
            literal: b"lib".to_vec(),
            abs: b"/usr/lib64/ld.so".to_vec(),
            resolved: Some(b"/usr/lib/ld-2.36.so".to_vec()),
        }),
    };
    let p = one(
        vec![
            sys(5, "openat", vec![target], Outcome::Value(3)),
            sys(
                5,
                "link",
                vec![
                    path_target(&[Access::Link], "/work/A/proj/a"),
                    path_target(&[Access::Create], "/work/A/proj/b"),
                ],
                Outcome::Value(0),
            ),
        ],
        false,
    );
    let t = text(&p);
    assert!(
        t.contains("read /usr/lib64/ld.so\n") && t.contains("read /usr/lib/ld-2.36.so\n"),
        "{t}"
    );
    assert!(
        t.contains("read ${CWD}/a\n") && t.contains("write ${CWD}/a\n"),
        "{t}"
    );
    assert!(t.contains("write ${CWD}/b\n"), "{t}");
}

/// Record does not stop a `send()` on a connected socket, so a trace may hold a DNS answer
/// without its query: with `answers_are_queries` (what `sbx learn` sets) the answered name is
/// learned as asked; enforce's diff (every query seen) does not do that.
#[test]
fn answered_names_count_as_asked_for_record_traces() {
    let answer_only = |name: &str| {
        let [_query, answer] = resolve(5, name, [9, 9, 9, 9]);
        answer
    };
    let run = Run {
        header: header(&ENV_A),
        events: vec![answer_only("telemetry.example")],
        needs: vec![],
    };
    let with = learn_runs(
        &[&run],
        LearnOptions {
            answers_are_queries: true,
            ..LearnOptions::default()
        },
    );
    assert!(
        text(&with).contains("resolve telemetry.example\n"),
        "{}",
        text(&with)
    );
    let without = learn_runs(&[&run], LearnOptions::default());
    assert!(!text(&without).contains("resolve "), "{}", text(&without));
}

#[test]
fn peers_are_learned_by_the_name_they_resolved_from() {
    let inet = |addr: [u8; 4], port| SockAddr::Inet { addr, port };
    let mut events: Vec<Event> = Vec::new();
    // Name server traffic: a name server of this machine becomes ${NAMESERVERS}.
    events.push(connect(5, inet([10, 0, 0, 53], 53)));
    events.extend(resolve(5, "registry.npmjs.org", [104, 16, 1, 35]));
    events.push(connect(5, inet([104, 16, 1, 35], 443)));
    // Asked but never connected to: `resolve NAME`.
    events.extend(resolve(5, "telemetry.example", [9, 9, 9, 9]));
    // A name for a loopback address: loopback stays exact.
    events.extend(resolve(5, "dev.local.test", [127, 0, 0, 1]));
    events.push(connect(5, inet([127, 0, 0, 1], 8080)));
    // A payload to port 53 that was no DNS query cannot become a rule.
    events.push(sys(
        5,
        "sendto",
        vec![Target {
            access: AccessSet::of(Access::Resolve),
            object: Object::DnsName(crate::dns::MALFORMED.into()),
        }],
        Outcome::Value(3),
    ));
    // Never resolved: exact.
    events.push(connect(5, inet([140, 82, 121, 4], 443)));
    let p = learn_runs(
        &[&Run {
            header: header(&ENV_A),
            events,
            needs: vec![],
        }],
        LearnOptions {
            nameservers: vec!["10.0.0.53".parse().unwrap()],
            ..LearnOptions::default()
        },
    );
    let t = text(&p);
    for want in [
        "connect tcp ${NAMESERVERS}:53\n",
        "connect udp ${NAMESERVERS}:53\n",
        "connect tcp registry.npmjs.org:443\n",
        "resolve telemetry.example\n",
        "resolve dev.local.test\n",
        "connect tcp 127.0.0.1:8080\n",
        "connect tcp 140.82.121.4:443\n",
    ] {
        assert!(t.contains(want), "missing {want:?}:\n{t}");
    }
    // Implied by the named connect rule; no address of a named peer; nothing malformed.
    assert!(!t.contains("resolve registry.npmjs.org"), "{t}");
    assert!(!t.contains("104.16") && !t.contains("malformed"), "{t}");
    // The profile parses, and the compiled policy admits the run's connect by name but not
    // an address no allowed name resolved to.
    let rendered = crate::profile::render::render(&p);
    let mut env = crate::profile::vars::Env::default();
    env.vars.insert("NAMESERVERS".into(), "10.0.0.53".into());
    let pol = crate::policy::CompiledPolicy::load("t", &rendered, &env).unwrap();
    let cdn = inet([104, 16, 200, 7], 443);
    let names = ["registry.npmjs.org".to_string()];
    let named = pol.decide_net_named(Verb::Connect, Some(Proto::Tcp), &cdn, &names);
    assert_eq!(named, crate::policy::Decision::Allow);
    let unnamed = pol.decide_net_named(Verb::Connect, Some(Proto::Tcp), &cdn, &[]);
    assert!(matches!(unnamed, crate::policy::Decision::Deny { .. }));
    assert_eq!(
        pol.decide_resolve("registry.npmjs.org"),
        crate::policy::Decision::Allow
    );
    assert!(matches!(
        pol.decide_resolve("evil.example"),
        crate::policy::Decision::Deny { .. }
    ));
    let ns = inet([10, 0, 0, 53], 53);
    assert_eq!(
        pol.decide_net(Verb::Connect, Proto::Udp, &ns),
        crate::policy::Decision::Allow
    );
}

#[test]
fn network_rules() {
    let v6 = |s: &str| {
        s.parse::<Ipv6Addr>()
            .map(|a| a.octets())
            .unwrap_or_default()
    };
    let send = |addr| {
        sys(
            5,
            "sendto",
            vec![Target {
                access: AccessSet::of(Access::Send),
                object: Object::Socket(addr),
            }],
            Outcome::Value(9),
        )
    };
    let bind = |addr| {
        sys(
            5,
            "bind",
            vec![Target {
                access: AccessSet::of(Access::Bind),
                object: Object::Socket(addr),
            }],
            Outcome::Value(0),
        )
    };
    let p = one(
        vec![
            connect(
                5,
                SockAddr::Inet {
                    addr: [127, 0, 0, 1],
                    port: 8080,
                },
            ),
            connect(
                5,
                SockAddr::Inet {
                    addr: [140, 82, 121, 4],
                    port: 443,
                },
            ),
            connect(
                5,
                SockAddr::Inet {
                    addr: [151, 101, 1, 1],
                    port: 443,
                },
            ),
            connect(
                5,
                SockAddr::Inet6 {
                    addr: v6("::1"),
                    port: 9229,
                    scope_id: 0,
                },
            ),
            connect(
                5,
                SockAddr::Inet6 {
                    addr: v6("2606:4700::1"),
                    port: 80,
                    scope_id: 0,
                },
            ),
            connect(5, SockAddr::UnixAbstract(b"/tmp/.X11-unix/X0".to_vec())),
            connect(5, SockAddr::UnixUnnamed),
            send(SockAddr::Inet {
                addr: [8, 8, 8, 8],
                port: 53,
            }),
            bind(SockAddr::Inet {
                addr: [0, 0, 0, 0],
                port: 3000,
            }),
        ],
        false,
    );
    let t = text(&p);
    // Peers never resolved stay exact; loopback too.
    for want in [
        "connect tcp 127.0.0.1:8080\n",
        "connect tcp 140.82.121.4:443\n",
        "connect tcp 151.101.1.1:443\n",
        "connect tcp [::1]:9229\n",
        "connect tcp [2606:4700::1]:80\n",
        "connect unix @/tmp/.X11-unix/X0\n",
        "send udp 8.8.8.8:53\n",
        "bind tcp 0.0.0.0:3000\n",
    ] {
        assert!(t.contains(want), "missing {want:?}:\n{t}");
    }
    assert!(!t.contains('*'), "no wildcard host without a name: {t}");
}

#[test]
fn gated_hook_decides_targetless_syscalls() {
    let events = vec![
        sys(5, "io_uring_setup", vec![], Outcome::Value(3)),
        sys(5, "weird", vec![], Outcome::Value(0)),
    ];
    let mut h = header(&ENV_A);
    h.metadata = false;
    let opts = LearnOptions {
        is_gated: Some(Box::new(|n| n.starts_with("io_uring"))),
        ..LearnOptions::default()
    };
    let p = learn_runs(
        &[&Run {
            header: h,
            events,
            needs: vec![],
        }],
        opts,
    );
    let t = text(&p);
    assert!(
        t.contains("syscall io_uring_setup\n") && !t.contains("weird"),
        "{t}"
    );
}

#[test]
fn debug_impls_do_not_print_closures() {
    let o = LearnOptions {
        already_allowed: Some(Box::new(|_, _| true)),
        ..LearnOptions::default()
    };
    let d = format!("{o:?}");
    assert!(d.contains("dir_threshold: 8") && d.contains("<fn>"), "{d}");
    assert!(format!("{:?}", Learner::new(o)).contains("Learner"));
}

/// A synthetic stream: `n` events over a bounded set of concrete objects, with pids and temp
/// names that change all the time (they generalize to the same globs).
fn stream(n: usize) -> (Profile, usize) {
    let mut l = Learner::new(LearnOptions::default());
    l.begin_trace(&header(&ENV_A));
    let mut rng = Rng(7);
    let mut max_paths = 0;
    for i in 0..n {
        let pid = 1000 + (rng.next() % 30000) as i32;
        let ev = match i % 5 {
            0 => open(
                pid,
                &[Access::Read],
                &format!("/work/A/proj/node_modules/p{}/index.js", i % 500),
                Outcome::Value(3),
            ),
            1 => open(
                pid,
                &[Access::Read],
                &format!("/proc/{pid}/stat"),
                Outcome::Value(3),
            ),
            2 => open(
                pid,
                &[Access::Write, Access::Create],
                &format!("/tmp/npm-{pid}-{}/x", rng.alnum(6)),
                Outcome::Value(3),
            ),
            3 => open(
                pid,
                &[Access::Read],
                &format!(
                    "/work/A/proj/node_modules/p{}/node_modules/q/package.json",
                    i % 700
                ),
                Outcome::Errno(ENOENT),
            ),
            _ => exec(pid, "/usr/bin/node"),
        };
        let mut ev = ev;
        crate::trace::reader::create_as_write(&mut ev);
        l.observe(&ev);
        if i % 1000 == 0 {
            max_paths = max_paths.max(l.paths.values().map(BTreeSet::len).sum::<usize>());
        }
    }
    (l.finish(), max_paths)
}

#[test]
fn streams_100k_events_in_bounded_state() {
    let (p, max_paths) = stream(100_000);
    // Bounded by distinct generalized paths (500 + 700 + a few), not by events.
    assert!(max_paths <= 1300, "{max_paths}");
    let t = text(&p);
    assert!(
        t.contains("read ${CWD}/node_modules/**\n") && t.contains("write ${TMPDIR}/npm-*/x\n"),
        "{t}"
    );
    assert!(p.rules.len() < 20, "{t}");
}

#[test]
#[ignore = "heavy: 1,000,000 events"]
fn streams_1m_events_in_bounded_state() {
    let (p, max_paths) = stream(1_000_000);
    assert!(max_paths <= 1300, "{max_paths}");
    assert!(p.rules.len() < 20);
}

#[test]
fn project_files_under_home_are_not_secrets_but_ssh_is() {
    let env = Env {
        cwd: "/home/carol/proj",
        home: "/home/carol",
        tmpdir: "/tmp",
        uid: 1000,
    };
    let events = vec![
        open(
            7,
            &[Access::Read],
            "/home/carol/proj/node_modules/js-tokens/index.js",
            Outcome::Value(3),
        ),
        open(
            7,
            &[Access::Read],
            "/home/carol/api_token.txt",
            Outcome::Value(3),
        ),
    ];
    let p = learn(&Run {
        header: header(&env),
        events,
        needs: vec![],
    });
    let t = text(&p);
    assert!(
        t.contains("\nread ${CWD}/node_modules/js-tokens/index.js\n"),
        "{t}"
    );
    assert!(
        !t.contains("WARNING: the traced run used a secret place (read ${CWD}"),
        "{t}"
    );
    assert!(
        t.contains("secret place (read ${HOME}/api_token.txt)"),
        "{t}"
    );
}

/// A Rust build reads crate sources from the cargo registry, among them `syn/src/token.rs`:
/// a program file, not a credential, so the directory still collapses and nothing is flagged.
/// A credential file of the same tool (`~/.cargo/credentials.toml`) still is.
#[test]
fn package_tree_names_are_not_secrets() {
    let env = Env {
        cwd: "/home/carol/proj",
        home: "/home/carol",
        tmpdir: "/tmp",
        uid: 1000,
    };
    let src = "/home/carol/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/syn-3.0.10/src";
    let mut events: Vec<_> = [
        "attr", "bigint", "buffer", "data", "derive", "error", "expr", "file", "lit", "token",
    ]
    .iter()
    .map(|f| {
        open(
            7,
            &[Access::Read],
            &format!("{src}/{f}.rs"),
            Outcome::Value(3),
        )
    })
    .collect();
    events.push(open(
        7,
        &[Access::Read],
        "/home/carol/.cargo/credentials.toml",
        Outcome::Value(3),
    ));
    let p = learn(&Run {
        header: header(&env),
        events,
        needs: vec![],
    });
    let t = text(&p);
    // The registry is cargo's store (learn/stores.rs): read by everything, whole.
    assert!(t.contains("\nread ${HOME}/.cargo/registry/**\n"), "{t}");
    assert!(!t.contains("token.rs"), "{t}");
    assert!(
        t.contains("secret place (read ${HOME}/.cargo/credentials.toml)"),
        "{t}"
    );
    assert_eq!(t.matches("WARNING").count(), 1, "{t}");
}

/// Real workloads (docs/real-world.md): the second run, in another directory with another HOME,
/// TMPDIR and PATH, is admitted; secrets stay out.
#[test]
fn real_world_searches_and_temp_names_are_portable() {
    let env_a = ENV_A;
    let env_b = Env {
        cwd: "/srv/ci/b/proj",
        home: "/home/runner",
        tmpdir: "/var/tmp/ci",
        uid: 1001,
    };
    let run = |env: &Env, pyname: &str, arname: &str, rmeta: &str, session: &str| {
        let c = env.cwd;
        let parent = c.rsplit_once('/').map_or("", |(p, _)| p);
        let tmp = env.tmpdir;
        vec![
            // See: docs/real-world.md npm: `env node` tries every PATH directory.
            sys(
                5,
                "execve",
                vec![path_target(
                    &[Access::Exec],
                    &format!("{}/.cargo/bin/node", env.home),
                )],
                Outcome::Errno(ENOENT),
            ),
            sys(
                5,
                "execve",
                vec![path_target(&[Access::Exec], "/usr/bin/node")],
                Outcome::Value(0),
            ),
            // See: docs/real-world.md pip, cargo: rustup and cargo search upwards.
            open(
                5,
                &[Access::Read],
                &format!("{parent}/rust-toolchain"),
                Outcome::Errno(ENOENT),
            ),
            open(
                5,
                &[Access::Read],
                &format!("{parent}/.cargo/config"),
                Outcome::Errno(ENOENT),
            ),
            // See: docs/real-world.md pip: Python tempfile names.
            open(
                5,
                &[Access::Write, Access::Create],
                &format!("{tmp}/{pyname}"),
                Outcome::Value(3),
            ),
            open(
                5,
                &[Access::Write, Access::Create],
                &format!("{c}/v/pip-23.0.1.dist-info/RECORD{pyname}.tmp"),
                Outcome::Value(3),
            ),
            // See: docs/real-world.md make: ar's stXXXXXX.
            open(
                5,
                &[Access::Write, Access::Create],
                &format!("{c}/st{arname}"),
                Outcome::Value(3),
            ),
            // See: docs/real-world.md cargo: rustc's scratch dirs, incremental sessions.
            open(
                5,
                &[Access::Write, Access::Create],
                &format!("{c}/target/debug/build/serde-1/rmeta{rmeta}/full.rmeta"),
                Outcome::Value(3),
            ),
            open(
                5,
                &[Access::Write, Access::Create],
                &format!("{c}/target/debug/incremental/x-1/{session}/query-cache.bin"),
                Outcome::Value(3),
            ),
        ]
    };
    let p = one(
        run(
            &env_a,
            "iycvas80",
            "tvsX9E",
            "Xw6P34",
            "s-hopqcpacoy-0fta2or-working",
        ),
        false,
    );
    let t = text(&p);
    // Run 2: another PATH entry, another depth, other random names.
    let checks: &[(Verb, String)] = &[
        (Verb::Probe, "/opt/hostedtoolcache/node/bin/node".into()),
        (Verb::Probe, "/srv/ci/rust-toolchain".into()),
        (Verb::Probe, "/srv/ci/b/.cargo/config".into()),
        (Verb::Write, "/var/tmp/ci/ln_kptje".into()),
        (
            Verb::Write,
            format!("{}/v/pip-23.0.1.dist-info/RECORD43c0zj7b.tmp", env_b.cwd),
        ),
        (Verb::Write, format!("{}/stKa5yVH", env_b.cwd)),
        (
            Verb::Write,
            format!(
                "{}/target/debug/build/serde-1/rmetavduP2l/full.rmeta",
                env_b.cwd
            ),
        ),
        (
            Verb::Write,
            format!(
                "{}/target/debug/incremental/x-1/s-hopqcwj07o-1abcdef/query-cache.bin",
                env_b.cwd
            ),
        ),
    ];
    for (verb, path) in checks {
        assert!(admits(&p, &env_b, *verb, path, 9), "{verb:?} {path}\n{t}");
    }
    // Tight: names, not everything.
    let refused: &[(Verb, String)] = &[
        (Verb::Write, "/var/tmp/ci/notes.txt".into()),
        (Verb::Write, format!("{}/strings", env_b.cwd)),
        (
            Verb::Write,
            format!("{}/v/pip-23.0.1.dist-info/RECORD", env_b.cwd),
        ),
        (Verb::Read, "/home/runner/.ssh/id_rsa".into()),
        (Verb::Exec, "/opt/hostedtoolcache/node/bin/node".into()),
    ];
    for (verb, path) in refused {
        assert!(!admits(&p, &env_b, *verb, path, 9), "{verb:?} {path}\n{t}");
    }
}

/// Gated calls carry their decoded arguments (chroot's directory, mount's type) as targets
/// without access: they are learned as `syscall NAME`, never as path rules, with or without
/// the arch-table hook.
#[test]
fn gated_arguments_are_not_path_rules() {
    let none = AccessSet::EMPTY;
    let jail = Target {
        access: none,
        object: Object::Path(PathObj {
            literal: b"jail".to_vec(),
            abs: b"/srv/jail".to_vec(),
            resolved: None,
        }),
    };
    let fstype = Target {
        access: none,
        object: Object::Text(b"proc".to_vec()),
    };
    for hook in [false, true] {
        let events = vec![
            sys(5, "chroot", vec![jail.clone()], Outcome::Errno(1)),
            sys(
                5,
                "mount",
                vec![fstype.clone(), jail.clone()],
                Outcome::Value(0),
            ),
        ];
        let opts = LearnOptions {
            is_gated: hook.then(|| -> GatedFn { Box::new(|n| n == "chroot" || n == "mount") }),
            ..LearnOptions::default()
        };
        let p = learn_runs(
            &[&Run {
                header: header(&ENV_A),
                events,
                needs: vec![],
            }],
            opts,
        );
        let t = text(&p);
        assert!(
            t.contains("syscall chroot\n") && t.contains("syscall mount\n"),
            "hook {hook}: {t}"
        );
        assert!(
            !t.contains("/srv/jail") && !t.contains("proc"),
            "hook {hook}: {t}"
        );
    }
}

/// What a shipped snippet alone admits, for [`include_worth_trying`]: a glob is sampled by
/// replacing `*` and `?` with letters (enough for the literal and `cc*.s`-style rules here).
fn snippet_covers(name: &str, env: &Env) -> impl Fn(Verb, &str) -> bool {
    let prof = Profile {
        header: vec![],
        includes: vec![Include {
            name: name.into(),
            span: Span::default(),
        }],
        rules: vec![],
    };
    let resolved = crate::profile::snippets::resolve(&prof, "<test>").unwrap();
    let venv = crate::profile::vars::Env {
        cwd: env.cwd.into(),
        home: env.home.into(),
        tmpdir: env.tmpdir.into(),
        vars: Default::default(),
    };
    // As `sbx learn` does: a snippet that does not compile in this environment (`tmp` with
    // TMPDIR at or above HOME) covers nothing.
    let policy = crate::policy::CompiledPolicy::compile(&resolved, &venv).ok();
    let tmpdir = env.tmpdir;
    move |verb, pattern| {
        let Some(policy) = &policy else {
            return false;
        };
        let access = match verb {
            Verb::Read => Access::Read,
            Verb::Write => Access::Write,
            Verb::Delete => Access::Delete,
            _ => return false,
        };
        let path = pattern
            .replace("${TMPDIR}", tmpdir)
            .replace(['*', '?'], "x");
        let obj = Object::Path(PathObj {
            literal: vec![],
            abs: path.into_bytes(),
            resolved: None,
        });
        policy.decide(AccessSet::of(access), &obj) == crate::policy::Decision::Allow
    }
}

fn rules_of(text: &str) -> Profile {
    crate::profile::parse::parse_str("<test>", text).unwrap()
}

/// `include ssl` is tried when the workload read what the snippet covers (npm and pip read
/// the CA bundle and openssl.cnf), never for a write there or for other reads.
/// See: docs/real-world.md ("What changed in learn")
#[test]
fn ssl_include_is_tried_when_the_trust_store_was_read() {
    let h = header(&ENV_A);
    let ssl = snippet_covers("ssl", &ENV_A);
    for (text, want) in [
        ("read /etc/ssl/certs/ca-certificates.crt\n", true),
        ("read /etc/passwd\nread /etc/ssl/openssl.cnf\n", true),
        ("read /etc/passwd\n", false),
        ("write /etc/ssl/openssl.cnf\n", false),
        ("read /etc/ssl/private/server.key\n", false),
    ] {
        assert_eq!(
            include_worth_trying("ssl", &rules_of(text), &h, &ssl),
            want,
            "{text}"
        );
    }
}

/// `include tmp` is tried when the workload wrote under `${TMPDIR}` (gcc's `cc*.s`, pip's
/// `pip-*`), only where TMPDIR is private: not `/`, HOME, the start directory or an ancestor of
/// either (`${TMPDIR}/**` would then cover the home or the project).
/// See: docs/real-world.md ("What changed in learn")
#[test]
fn tmp_include_is_tried_only_for_writes_under_a_private_tmpdir() {
    let wrote = rules_of("write ${TMPDIR}/cc*.s\nread ${TMPDIR}/cc*.s\n");
    let read_only = rules_of("read ${TMPDIR}/cc*.s\n");
    let cases = [
        (ENV_A, &wrote, true),
        (ENV_B, &wrote, true),
        (ENV_A, &read_only, false),
        // TMPDIR below HOME is private.
        (
            Env {
                tmpdir: "/home/alice/tmp",
                ..ENV_A
            },
            &wrote,
            true,
        ),
        (
            Env {
                tmpdir: "/",
                ..ENV_A
            },
            &wrote,
            false,
        ),
        (
            Env {
                tmpdir: "/home/alice/",
                ..ENV_A
            },
            &wrote,
            false,
        ),
        (
            Env {
                tmpdir: "/home",
                ..ENV_A
            },
            &wrote,
            false,
        ),
        (
            Env {
                cwd: "/tmp/build-7/src",
                ..ENV_A
            },
            &wrote,
            false,
        ),
        (
            Env {
                tmpdir: "/work/A/proj",
                ..ENV_A
            },
            &wrote,
            false,
        ),
    ];
    for (env, prof, want) in cases {
        let tmp = snippet_covers("tmp", &env);
        assert_eq!(
            include_worth_trying("tmp", prof, &header(&env), &tmp),
            want,
            "tmpdir {} cwd {} home {}",
            env.tmpdir,
            env.cwd,
            env.home
        );
    }
    assert!(!include_worth_trying(
        "node",
        &wrote,
        &header(&ENV_A),
        &|_, _| true
    ));
}

/// A git clone of a local repository reads every loose ref of the source, one file per branch,
/// and its object directories: a branch or commit created there after learning, or `git gc`
/// writing `packed-refs`, was a violation on the next clone. Loose refs, their reflogs and the
/// object store become `.git/refs/**`, `.git/logs/refs/**`, `.git/objects/**`; a missing
/// `packed-refs` is also `read`; nothing else of the repository is widened.
/// See: docs/real-world.md git (the source repository changed after learning)
#[test]
fn git_repository_history_admits_new_branches_commits_and_gc() {
    let read = |path: &str| open(5, &[Access::Read], path, Outcome::Value(3));
    let events = vec![
        read("/work/main/.git/refs/heads/main"),
        read("/work/main/.git/refs/tags"),
        read("/work/main/.git/config"),
        read("/work/main/.git/objects/4b/825dc642cb6eb9a060e54bf8d69288fbee4904"),
        open(
            5,
            &[Access::Read],
            "/work/main/.git/packed-refs",
            Outcome::Errno(ENOENT),
        ),
        open(
            5,
            &[Access::Write, Access::Create],
            &format!("{}/dst/.git/logs/refs/heads/main", ENV_A.cwd),
            Outcome::Value(3),
        ),
    ];
    let p = one(events, false);
    let t = text(&p);
    assert!(t.contains("read /work/main/.git/refs/**\n"), "{t}");
    assert!(t.contains("read /work/main/.git/objects/**\n"), "{t}");
    assert!(t.contains("write ${CWD}/dst/.git/logs/refs/**\n"), "{t}");
    for (verb, path) in [
        (Verb::Read, "/work/main/.git/refs/heads/walkcache"),
        (Verb::Read, "/work/main/.git/refs/heads/feature/x"),
        (Verb::Read, "/work/main/.git/refs/tags/v1.0"),
        (Verb::Read, "/work/main/.git/packed-refs"),
        (Verb::Read, "/work/main/.git/objects/pack/pack-1.idx"),
        (Verb::Write, "/srv/ci/b/proj/dst/.git/logs/refs/heads/dev"),
    ] {
        let env = if verb == Verb::Write {
            &ENV_B_PROJ
        } else {
            &ENV_A
        };
        assert!(admits(&p, env, verb, path, 9), "{verb:?} {path}\n{t}");
    }
    for (verb, path) in [
        (Verb::Read, "/work/main/.git/logs/HEAD"),
        (Verb::Read, "/work/main/.git/hooks/pre-commit"),
        (Verb::Write, "/work/main/.git/objects/4b/x"),
        (Verb::Write, "/work/main/.git/refs/heads/main"),
        (Verb::Read, "/work/main/refs/heads/main"),
    ] {
        assert!(!admits(&p, &ENV_A, verb, path, 9), "{verb:?} {path}\n{t}");
    }
}

const ENV_B_PROJ: Env = Env {
    cwd: "/srv/ci/b/proj",
    home: "/home/runner",
    tmpdir: "/var/tmp/ci",
    uid: 1001,
};

/// The socket type recorded with a call decides tcp or udp; without it (a trace of a raw
/// socket, or an fd gone before sbx asked) connect means tcp, and DNS both.
#[test]
fn socket_type_decides_the_protocol() {
    let typed = |port: u16, ty: Option<i32>| {
        let mut e = connect(
            5,
            SockAddr::Inet {
                addr: [127, 0, 0, 1],
                port,
            },
        );
        if let EventKind::Syscall(s) = &mut e.kind {
            s.sock_type = ty;
        }
        e
    };
    let t = text(&one(
        vec![
            typed(8125, Some(2)),
            typed(8080, Some(1)),
            typed(9000, None),
            typed(53, Some(2)),
        ],
        false,
    ));
    for want in [
        "connect udp 127.0.0.1:8125\n",
        "connect tcp 127.0.0.1:8080\n",
        "connect tcp 127.0.0.1:9000\n",
        "connect udp 127.0.0.1:53\n",
    ] {
        assert!(t.contains(want), "missing {want:?}:\n{t}");
    }
    for unwanted in [
        "tcp 127.0.0.1:8125",
        "udp 127.0.0.1:8080",
        "udp 127.0.0.1:9000",
        "tcp 127.0.0.1:53",
    ] {
        assert!(!t.contains(unwanted), "{unwanted:?} learned:\n{t}");
    }
}

/// prctl(PR_SET_SECCOMP) is allowed under enforce only by `syscall seccomp`: learned from the
/// option word (its low 32 bits, as the kernel reads it); other prctl options learn nothing.
#[test]
fn prctl_set_seccomp_learns_syscall_seccomp() {
    let prctl = |option: u64| {
        let mut ev = sys(5, "prctl", vec![], Outcome::Value(0));
        if let EventKind::Syscall(sc) = &mut ev.kind {
            sc.args[0] = option;
        }
        ev
    };
    let learned = |events: Vec<Event>| {
        text(&learn_runs(
            &[&Run {
                header: header(&ENV_A),
                events,
                needs: vec![],
            }],
            LearnOptions {
                is_gated: Some(Box::new(|n| n == "seccomp")),
                ..LearnOptions::default()
            },
        ))
    };
    let t = learned(vec![prctl(22 | 1 << 32)]);
    assert!(t.contains("syscall seccomp\n"), "{t}");
    let t = learned(vec![prctl(15)]); // PR_SET_NAME
    assert!(!t.contains("syscall"), "{t}");
}

#[test]
fn project_files_are_one_area_without_their_secret_looking_names() {
    let cwd = ENV_A.cwd;
    let run = Run {
        header: header(&ENV_A),
        events: vec![
            open(
                1,
                &[Access::Read],
                &format!("{cwd}/src/main.c"),
                Outcome::Value(3),
            ),
            open(
                1,
                &[Access::Read],
                &format!("{cwd}/Makefile"),
                Outcome::Value(3),
            ),
            // The project's own .npmrc was read: the deny rule must not cover it.
            open(
                1,
                &[Access::Read],
                &format!("{cwd}/.npmrc"),
                Outcome::Value(3),
            ),
        ],
        needs: vec![],
    };
    let opts = LearnOptions {
        project_area: true,
        ..LearnOptions::default()
    };
    let t = text(&learn_runs(&[&run], opts));
    assert!(t.contains("\nread ${CWD}/**\n"), "{t}");
    assert!(!t.contains("read ${CWD}/src/main.c"), "{t}");
    let deny = t
        .lines()
        .find(|l| l.starts_with("deny read ${CWD}/{"))
        .unwrap_or_else(|| panic!("{t}"));
    assert!(deny.contains(".env,") && deny.contains("*.pem"), "{deny}");
    assert!(!deny.contains(".npmrc"), "{deny}");
    // Where the run starts at HOME, the project would hold ~/.ssh: no area.
    let mut home_run = Run {
        header: header(&ENV_A),
        events: run.events.clone(),
        needs: vec![],
    };
    home_run.header.home = home_run.header.cwd.clone();
    let opts = LearnOptions {
        project_area: true,
        ..LearnOptions::default()
    };
    let t = text(&learn_runs(&[&home_run], opts));
    assert!(!t.contains("${CWD}/**"), "{t}");
}

#[test]
fn new_names_in_tmpdir_never_collapse_to_all_of_it() {
    // Version-5 events: `create` is a new name. Twenty temp directories with other prefixes
    // in TMPDIR, and a cache tree with many new entries below HOME.
    let mut l = Learner::new(LearnOptions::default());
    l.begin_trace(&header(&ENV_A));
    let mut rng = Rng(7);
    for i in 0..20 {
        let dir = format!("/tmp/w{i}x-{}", rng.alnum(8));
        let mut ev = open(1, &[Access::Create], &dir, Outcome::Value(0));
        if let EventKind::Syscall(sc) = &mut ev.kind {
            sc.name = "mkdir".into();
        }
        l.observe(&ev);
        // Not a tool store of the XDG layout (`.cache/TOOL`, owned whole: learn/stores.rs).
        let cache = format!("/home/alice/.tool/cache/objects/{i:02x}/{}", rng.alnum(12));
        l.observe(&open(
            1,
            &[Access::Write, Access::Create],
            &cache,
            Outcome::Value(3),
        ));
    }
    let t = text(&l.finish());
    assert!(!t.contains("create ${TMPDIR}/**"), "{t}");
    assert!(t.contains("create ${HOME}/.tool/cache/objects/**"), "{t}");
}

/// Rights bound to programs (docs/learning.md 7b): npm's secret and its peer are learned
/// `by` the programs on the chains that used them; a `--base` binding is united with new
/// users, under a WARNING; `scope: false` learns them global.
#[test]
fn secrets_and_peers_are_bound_to_the_programs_that_used_them() {
    let npm_cli = "/usr/lib/node_modules/npm/bin/npm-cli.js";
    let connect = |pid: i32, addr: [u8; 4], port: u16| {
        let mut e = sys(
            pid,
            "connect",
            vec![Target {
                access: AccessSet::of(Access::Connect),
                object: Object::Socket(SockAddr::Inet { addr, port }),
            }],
            Outcome::Value(0),
        );
        if let EventKind::Syscall(s) = &mut e.kind {
            s.sock_type = Some(1);
        }
        e
    };
    let npmrc = format!("{}/.npmrc", ENV_A.home);
    let run = |script_reads: bool| Run {
        header: header(&ENV_A),
        events: vec![
            exec_prog(100, "/usr/bin/env", Some(npm_cli)),
            exec_prog(100, "/usr/bin/node", Some(npm_cli)),
            open(100, &[Access::Read], &npmrc, Outcome::Value(3)),
            connect(100, [104, 16, 1, 35], 443),
            spawn(100, 101),
            exec_prog(101, "/usr/bin/dash", None),
            spawn(101, 102),
            exec_prog(
                102,
                "/usr/bin/node",
                Some("/work/A/proj/node_modules/x/install.js"),
            ),
            open(
                102,
                &[Access::Read],
                if script_reads { &npmrc } else { "/etc/hosts" },
                Outcome::Value(3),
            ),
            // The run's own server: not bound.
            sys(
                102,
                "bind",
                vec![Target {
                    access: AccessSet::of(Access::Bind),
                    object: Object::Socket(SockAddr::Inet {
                        addr: [127, 0, 0, 1],
                        port: 4000,
                    }),
                }],
                Outcome::Value(0),
            ),
            connect(102, [127, 0, 0, 1], 4000),
            // A loopback service the run did not serve: bound like any peer.
            connect(102, [127, 0, 0, 1], 5432),
        ],
        needs: vec![],
    };
    let scoped = LearnOptions {
        scope: true,
        ..LearnOptions::default()
    };
    let p = learn_runs(&[&run(false)], scoped);
    let t = crate::profile::render::render(&p);
    assert!(t.contains("read ${HOME}/.npmrc by npm\n"), "{t}");
    assert!(t.contains("connect tcp 104.16.1.35:443 by npm\n"), "{t}");
    assert!(t.contains("connect tcp 127.0.0.1:4000\n"), "{t}");
    assert!(
        t.contains("connect tcp 127.0.0.1:5432 by dash,install.js,npm\n"),
        "{t}"
    );
    assert!(
        t.contains("program install.js ${CWD}/node_modules/x/install.js\n"),
        "{t}"
    );
    // `npm` comes from the node snippet, which defines it: no program line unless it is
    // not included.
    assert!(
        t.contains("program npm /usr/{,local/}lib/node_modules/npm/bin/npm-cli.js"),
        "{t}"
    );
    // The profile compiles: every name of a `by` list is defined.
    compiled_at_a(&p);

    // --base: the binding is kept; a new user widens it, with a WARNING.
    let base = p.clone();
    let p2 = learn_runs(
        &[&run(true)],
        LearnOptions {
            scope: true,
            base: Some(base.clone()),
            ..LearnOptions::default()
        },
    );
    let t2 = crate::profile::render::render(&p2);
    assert!(
        t2.contains(
            "# WARNING: widens a right bound to npm to dash, install.js: review who asked for it\nread ${HOME}/.npmrc by dash,install.js,npm\n"
        ),
        "{t2}"
    );
    // The same base with the old run changes nothing.
    let p3 = learn_runs(
        &[&run(false)],
        LearnOptions {
            scope: true,
            base: Some(base),
            ..LearnOptions::default()
        },
    );
    let rules = |t: &str| -> String { t.lines().filter(|l| !l.starts_with("# ")).collect() };
    assert_eq!(
        rules(&crate::profile::render::render(&p3)),
        rules(&t),
        "learning is stable"
    );

    // Without scoping: global rules, no program lines.
    let p4 = learn_runs(&[&run(false)], LearnOptions::default());
    let t4 = crate::profile::render::render(&p4);
    assert!(
        !t4.lines()
            .any(|l| !l.starts_with('#') && (l.contains(" by ") || l.starts_with("program "))),
        "{t4}"
    );
}

/// Profile `p` resolved and compiled for a run at site A.
fn compiled_at_a(p: &Profile) -> crate::policy::CompiledPolicy {
    let env = crate::profile::vars::Env {
        cwd: ENV_A.cwd.into(),
        home: ENV_A.home.into(),
        tmpdir: ENV_A.tmpdir.into(),
        vars: Default::default(),
    };
    let resolved = crate::profile::snippets::resolve(p, "learned").expect("resolves");
    crate::policy::CompiledPolicy::compile(&resolved, &env).expect("compiles")
}

/// A CI step runs through a shell (`bash -c 'npm ci'`, `bash -c 'make'` whose recipe runs
/// cargo): the launchers above the first program are not bound, the shell an install script
/// runs below npm is; and the learned profile, compiled, gives the recorded chains their
/// rights and not the install script (docs/learning.md 7b, issue 38).
#[test]
fn rights_are_bound_without_the_launchers_above_them() {
    let npm_cli = "/usr/lib/node_modules/npm/bin/npm-cli.js";
    let cargo = "/opt/rust/.rustup/toolchains/stable/bin/cargo";
    let npmrc = format!("{}/.npmrc", ENV_A.home);
    let reg = format!("{}/.cargo/registry/cache/x.crate", ENV_A.home);
    let script = "/work/A/proj/node_modules/x/install.js";
    let run = Run {
        header: header(&ENV_A),
        events: vec![
            exec_prog(100, "/usr/bin/bash", None),
            spawn(100, 101),
            exec_prog(101, "/usr/bin/node", Some(npm_cli)),
            open(101, &[Access::Read], &npmrc, Outcome::Value(3)),
            spawn(101, 102),
            exec_prog(102, "/usr/bin/dash", None),
            spawn(102, 103),
            exec_prog(103, "/usr/bin/node", Some(script)),
            open(103, &[Access::Read], "/etc/hosts", Outcome::Value(3)),
            spawn(100, 110),
            exec_prog(110, "/usr/bin/make", None),
            spawn(110, 111),
            exec_prog(111, "/usr/bin/dash", None),
            exec_prog(111, cargo, None),
            open(111, &[Access::Write], &reg, Outcome::Value(3)),
        ],
        needs: vec![],
    };
    let opts = LearnOptions {
        scope: true,
        ..LearnOptions::default()
    };
    let p = learn_runs(&[&run], opts);
    let t = crate::profile::render::render(&p);
    assert!(t.contains("read ${HOME}/.npmrc by npm\n"), "{t}");
    assert!(t.contains("own ${HOME}/.cargo/registry by cargo\n"), "{t}");
    // Learned without includes: the launchers the bindings rely on are written out.
    assert!(
        t.contains("\nlauncher /{,usr/,usr/local/}bin/{sh,bash,dash"),
        "{t}"
    );

    let policy = compiled_at_a(&p);
    let chain = |programs: &[&str]| {
        programs.iter().fold(crate::policy::Scope::ROOT, |s, prog| {
            s.exec(
                policy.program_mask(prog.as_bytes()),
                policy.is_launcher(prog.as_bytes()),
            )
        })
    };
    let allows = |access: Access, programs: &[&str], path: &str| {
        let obj = Object::Path(PathObj {
            literal: path.as_bytes().to_vec(),
            abs: path.as_bytes().to_vec(),
            resolved: None,
        });
        policy.decide_in(chain(programs), AccessSet::of(access), &obj, None)
            == crate::policy::Decision::Allow
    };
    let reads = |programs: &[&str], path: &str| allows(Access::Read, programs, path);
    let writes = |programs: &[&str], path: &str| allows(Access::Write, programs, path);
    assert!(reads(&["/usr/bin/bash", npm_cli], &npmrc));
    assert!(reads(&["/usr/bin/bash", "/usr/bin/env", npm_cli], &npmrc));
    assert!(!reads(&["/usr/bin/bash"], &npmrc), "the shell itself");
    assert!(
        !reads(&["/usr/bin/bash", npm_cli, "/usr/bin/dash", script], &npmrc),
        "the install script"
    );
    assert!(
        !reads(
            &["/usr/bin/bash", npm_cli, "/usr/bin/dash", npm_cli],
            &npmrc
        ),
        "npm run by the install script"
    );
    assert!(writes(
        &["/usr/bin/bash", "/usr/bin/make", "/usr/bin/dash", cargo],
        &reg
    ));
    assert!(!writes(
        &["/usr/bin/bash", npm_cli, "/usr/bin/dash", cargo],
        &reg
    ));
}

/// Writes into a shared tool cache (cargo's registry) are bound to the programs that made
/// them; reads stay global (every compiler reads the sources).
#[test]
fn tool_cache_writes_are_bound_to_their_writers() {
    let reg = format!("{}/.cargo/registry/src/index-1/serde-1.0.0", ENV_A.home);
    let run = |script_writes: bool| Run {
        header: header(&ENV_A),
        events: vec![
            exec_prog(200, "/opt/rust/.cargo/bin/rustup", None),
            exec_prog(200, "/opt/rust/.rustup/toolchains/stable/bin/cargo", None),
            open(
                200,
                &[Access::Write],
                &format!("{reg}/src/lib.rs"),
                Outcome::Value(3),
            ),
            open(
                200,
                &[Access::Write],
                &format!("{reg}/Cargo.toml"),
                Outcome::Value(3),
            ),
            spawn(200, 201),
            exec_prog(
                201,
                "/work/A/proj/target/debug/build/x-1/build-script-build",
                None,
            ),
            open(
                201,
                &[Access::Read],
                &format!("{reg}/src/lib.rs"),
                Outcome::Value(3),
            ),
            open(
                201,
                &[if script_writes {
                    Access::Write
                } else {
                    Access::Read
                }],
                &format!("{reg}/src/de.rs"),
                Outcome::Value(3),
            ),
        ],
        needs: vec![],
    };
    let scoped = || LearnOptions {
        scope: true,
        ..LearnOptions::default()
    };
    let rules_under_cache = |t: &str| -> Vec<String> {
        t.lines()
            .filter(|l| {
                !l.starts_with('#') && l.contains("/.cargo/registry") && !l.starts_with("read ")
            })
            .map(str::to_string)
            .collect()
    };
    let t = crate::profile::render::render(&learn_runs(&[&run(false)], scoped()));
    let w = rules_under_cache(&t);
    assert!(!w.is_empty(), "{t}");
    assert!(w.iter().all(|l| l.ends_with(" by cargo")), "{t}");
    assert!(
        t.lines().any(|l| l.starts_with("read ")
            && l.contains("/.cargo/registry")
            && !l.contains(" by ")),
        "{t}"
    );
    // A build script that wrote there too joins the list (the reviewer sees who).
    let t = crate::profile::render::render(&learn_runs(&[&run(true)], scoped()));
    let w = rules_under_cache(&t);
    assert!(
        w.iter()
            .all(|l| l.ends_with(" by build-script-build,cargo")),
        "{t}"
    );
}

/// A write to a file that runs later outside the sandbox (a shell startup file, a git hook,
/// a crontab) is learned exactly, with a WARNING, as a read of a secret place is; an ordinary
/// write beside it is not flagged.
#[test]
fn persistence_writes_are_kept_exact_with_a_warning() {
    let env = Env {
        cwd: "/home/carol/proj",
        home: "/home/carol",
        tmpdir: "/tmp",
        uid: 1000,
    };
    let events = vec![
        open(
            7,
            &[Access::Write],
            "/home/carol/.bashrc",
            Outcome::Value(3),
        ),
        open(
            7,
            &[Access::Create, Access::Write],
            "/home/carol/proj/.git/hooks/post-checkout",
            Outcome::Value(3),
        ),
        open(
            7,
            &[Access::Write],
            "/home/carol/proj/out.txt",
            Outcome::Value(3),
        ),
    ];
    let p = learn(&Run {
        header: header(&env),
        events,
        needs: vec![],
    });
    let t = text(&p);
    assert!(t.contains("\nwrite ${HOME}/.bashrc\n"), "{t}");
    assert!(
        t.contains("WARNING: persistence: the traced run wrote ${HOME}/.bashrc"),
        "{t}"
    );
    assert!(
        t.contains("WARNING: persistence: the traced run wrote ${CWD}/.git/hooks/post-checkout"),
        "{t}"
    );
    assert!(!t.contains("wrote ${CWD}/out.txt"), "{t}");
    assert!(generalize::is_persistence_place(
        "${HOME}/.config/autostart/x.desktop"
    ));
    assert!(generalize::is_persistence_place(
        "/var/spool/cron/crontabs/root"
    ));
    assert!(!generalize::is_persistence_place("${HOME}/.bashrc.d-not"));
    assert!(!generalize::is_persistence_place("${CWD}/src/profile.rs"));
    assert!(!generalize::is_persistence_place(
        "${CWD}/.git/hooks/pre-commit.sample"
    ));
}

/// A checkout's parents, listed (module resolvers and git walk up to `/`) and `mkdir -p`'d
/// (EEXIST: the name was there), in format-5 events: `read ${CWD_ANCESTORS}` and nothing of
/// the recording's own parents, no `write` of any of them; a file in a parent stays exact.
/// See: issue 38 item 3 (esbuild, vite, cmake's `mkdir -p` in another checkout)
fn ancestors_run(env: &Env, metadata: bool, reads: bool) -> (Profile, String) {
    let cwd = env.cwd;
    let mut events = Vec::new();
    let mut dirs: Vec<String> = crate::profile::vars::ancestors_of(cwd)
        .into_iter()
        .map(String::from)
        .collect();
    dirs.push(cwd.to_string());
    for d in &dirs {
        if reads {
            events.push(open(1, &[Access::Read], d, Outcome::Value(3)));
        }
        if d != "/" {
            // `mkdir -p $PWD/build`: every existing component answers EEXIST.
            events.push(sys(
                1,
                "mkdir",
                vec![path_target(&[Access::Write], d)],
                Outcome::Errno(17),
            ));
        }
    }
    let parent = &dirs[dirs.len() - 2];
    events.push(open(
        1,
        &[Access::Read],
        &format!("{parent}/settings.json"),
        Outcome::Value(3),
    ));
    events.push(sys(
        1,
        "mkdir",
        vec![path_target(&[Access::Create], &format!("{cwd}/build"))],
        Outcome::Value(0),
    ));
    let mut h = header(env);
    h.metadata = metadata;
    let mut l = Learner::new(LearnOptions::default());
    l.begin_trace(&h);
    for e in &events {
        l.observe(e);
    }
    let p = l.finish();
    let t = text(&p);
    (p, t)
}

#[test]
fn parents_of_the_start_directory_are_learned_as_its_ancestors() {
    let (p, t) = ancestors_run(&ENV_B, false, true);
    assert!(t.contains("\nread ${CWD_ANCESTORS}\n"), "{t}");
    assert!(t.contains("\nread /srv/ci/build-7/settings.json\n"), "{t}");
    assert!(t.contains("\nown ${CWD}/build\n"), "{t}");
    for r in &p.rules {
        let Pattern::Path(g) = &r.pattern else {
            continue;
        };
        // No parent of the recording's checkout by name, and nothing written but the output.
        assert!(
            !g.starts_with("/srv") || g.ends_with("settings.json"),
            "{}",
            crate::profile::render::render_rule(r)
        );
        assert!(
            !matches!(r.verb, Verb::Write | Verb::Create | Verb::Delete),
            "{}",
            crate::profile::render::render_rule(r)
        );
    }
    // The profile holds in another checkout at another depth, with HOME among the parents;
    // it admits neither the old parents nor a file of a new one.
    let env = crate::profile::vars::Env {
        cwd: "/home/alice/w/x/y/proj".into(),
        home: "/home/alice".into(),
        tmpdir: "/tmp".into(),
        vars: BTreeMap::new(),
    };
    let pol = crate::policy::CompiledPolicy::load("t", &crate::profile::render::render(&p), &env)
        .unwrap();
    let read = |abs: &str| {
        let obj = Object::Path(PathObj {
            literal: vec![],
            abs: abs.as_bytes().to_vec(),
            resolved: None,
        });
        pol.decide(AccessSet::of(Access::Read), &obj) == crate::policy::Decision::Allow
    };
    for dir in [
        "/",
        "/home",
        "/home/alice",
        "/home/alice/w/x",
        "/home/alice/w/x/y",
    ] {
        assert!(read(dir), "{dir}");
    }
    for other in [
        "/srv",
        "/srv/ci",
        "/home/alice/.ssh",
        "/home/alice/.ssh/id_rsa",
        "/home/alice/w/x/y/secret.txt",
        "/home/alice/w/x/y/other",
    ] {
        assert!(!read(other), "{other}");
    }
}

/// With `--metadata`, a mkdir that found its name is a look: `stat`, never `write`. With
/// `..` in the path as written enforce lets the kernel answer, and decides the write the
/// trace says: learn keeps it.
#[test]
fn mkdir_of_an_existing_name_is_a_look() {
    let (_, t) = ancestors_run(&ENV_B, true, false);
    assert!(t.contains("\nstat ${CWD_ANCESTORS}\nstat ${CWD}\n"), "{t}");
    assert!(!t.contains("\nwrite ") && !t.contains("/srv/ci\n"), "{t}");
    // Without --metadata it is nothing at all.
    let (_, t) = ancestors_run(&ENV_B, false, false);
    assert!(!t.contains("ANCESTORS") && !t.contains("\nwrite "), "{t}");
    let mut l = Learner::new(LearnOptions::default());
    l.begin_trace(&header(&ENV_B));
    let mut up = path_target(&[Access::Write], "/srv/ci/build-7");
    if let Object::Path(p) = &mut up.object {
        p.literal = b"../build-7".to_vec();
    }
    l.observe(&sys(1, "mkdir", vec![up], Outcome::Errno(17)));
    // A refused mkdir (enforce's outcome) of a name that existed is still its write.
    l.observe(&sys(
        1,
        "mkdirat",
        vec![path_target(&[Access::Write], "/srv/ci/build-7/checkout/x")],
        Outcome::Killed,
    ));
    let t = text(&l.finish());
    assert!(t.contains("\nwrite /srv/ci/build-7\n"), "{t}");
    assert!(t.contains("\nwrite ${CWD}/x\n"), "{t}");
}

/// HOME among the parents is listed as one of them, not as `${HOME}`; files below it keep
/// their rules (a secret one exact, with its WARNING).
#[test]
fn home_among_the_parents_is_one_of_them() {
    let env = Env {
        cwd: "/home/runner/work/proj/proj",
        home: "/home/runner",
        tmpdir: "/tmp",
        uid: 1001,
    };
    let (p, t) = ancestors_run(&env, false, true);
    assert!(t.contains("\nread ${CWD_ANCESTORS}\n"), "{t}");
    assert!(!t.contains("read ${HOME}\n"), "{t}");
    assert!(
        t.contains("\nread ${HOME}/work/proj/settings.json\n"),
        "{t}"
    );
    let mut l = Learner::new(LearnOptions::default());
    l.begin_trace(&header(&env));
    l.observe(&open(1, &[Access::Read], "/home/runner", Outcome::Value(3)));
    l.observe(&open(
        1,
        &[Access::Read],
        "/home/runner/.ssh/id_rsa",
        Outcome::Value(3),
    ));
    let t2 = text(&l.finish());
    assert!(t2.contains("\nread ${HOME}/.ssh/id_rsa\n"), "{t2}");
    assert!(t2.contains("WARNING"), "{t2}");
    assert!(p.rules.iter().all(|r| r.verb != Verb::Write), "{t}");
}

/// PATH searches are one rule: `probe /**/{cc,gcc,...}`, admitting what the single ones did;
/// learning the profile again from itself (`--base`) keeps it.
#[test]
fn path_searches_are_one_rule() {
    let run = Run {
        header: header(&ENV_A),
        events: ["cc", "gcc", "make", "c[1]"]
            .iter()
            .map(|n| {
                open(
                    1,
                    &[Access::Exec],
                    &format!("/usr/local/sbin/{n}"),
                    Outcome::Errno(2),
                )
            })
            .collect(),
        needs: vec![],
    };
    let p = learn(&run);
    let t = text(&p);
    assert!(t.contains("\nprobe /**/{cc,gcc,make}\n"), "{t}");
    assert!(t.contains("\nprobe /**/c\\[1\\]\n"), "{t}");
    let pol = compiled_at_a(&p);
    for (path, admitted) in [("/opt/x/bin/gcc", true), ("/opt/x/bin/gccx", false)] {
        let obj = Object::Path(PathObj {
            literal: path.into(),
            abs: path.into(),
            resolved: None,
        });
        let d = pol.decide_in(
            crate::policy::Scope::ROOT,
            AccessSet::of(Access::Exec),
            &obj,
            None,
        );
        assert_eq!(
            d == crate::policy::Decision::AllowIfAbsent,
            admitted,
            "{path}: {d:?}"
        );
    }
    let again = learn_runs(
        &[&run],
        LearnOptions {
            base: Some(p.clone()),
            ..LearnOptions::default()
        },
    );
    let rules = |t: &str| -> Vec<String> {
        t.lines()
            .filter(|l| !l.starts_with('#'))
            .map(str::to_string)
            .collect()
    };
    assert_eq!(rules(&text(&again)), rules(&t));
}
