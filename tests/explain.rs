//! `sbx explain` on REAL recorded runs: the offline npm install of `examples/npm-demo`
//! (install scripts spawning node and sh), the C build of `examples/make-demo` (make, gcc),
//! an offline `pip install` of a local package (setup.py in a child python), an offline
//! `cargo build` of a crate with a path dependency started by `bash -c` (cargo, rustc, cc),
//! plus a small shell run whose counts are known.
//!
//! - every rule of the learned profile is explained (used, with examples that are objects of
//!   the trace as `sbx show` prints them, or listed unused); the event total is `sbx stats
//!   --count`, and a rule's count is what `sbx show --path` finds for a literal path;
//! - property: on every event of those traces, the explanation's checks agree with
//!   `admits_event_in` (the decision enforce uses, with the run's provenance and exec
//!   chains), every allowed check names the rule (or provenance) that allowed it, and the
//!   `--check` library function agrees with `decide_in` on every path target, for the
//!   learned profile and for one with half its own rules removed (so refusals are checked
//!   too);
//! - `--check` exit codes from the CLI;
//! - `sbx learn --annotate` is byte-identical across runs, `sbx diff` sees no rule change,
//!   and the annotated profile decides every event exactly like the plain one.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use sbx::event::{AccessSet, Event, EventKind, Object, Outcome};
use sbx::explain::{Explainer, Question, check};
use sbx::policy::{CompiledPolicy, Decision, Scope, Verdict, verbs_of};

use crate::util::workload::{Site, Workload};
use crate::util::{Dir, Sbx, env_of_run, is_gated, learn_cli, record, s};

fn sbx_out(args: &[&OsStr]) -> crate::util::Output {
    Sbx::new(args).run()
}

fn explain_json(profile: &Path, traces: &[&Path]) -> serde_json::Value {
    let mut a: Vec<&OsStr> = vec![OsStr::new("explain"), profile.as_os_str()];
    a.extend(traces.iter().map(|t| t.as_os_str()));
    a.extend([OsStr::new("--format"), OsStr::new("json")]);
    let out = sbx_out(&a);
    out.assert_code(0);
    serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", out.stdout))
}

/// Every object string `sbx show --json` prints for the events of `trace` touching `glob`.
fn shown(trace: &Path, glob: Option<&str>) -> (usize, String) {
    let mut extra = vec![];
    if let Some(g) = glob {
        extra = vec!["--path", g];
    }
    let (out, lines) = crate::util::show_json(trace, &extra);
    out.assert_code(0);
    (lines.len(), out.stdout)
}

/// The own rules of a learned profile (not comments, includes, program or launcher lines).
fn own_rules(text: &str) -> Vec<String> {
    let p = sbx::profile::parse::parse_str("p", text).expect("parses");
    p.rules
        .iter()
        .filter(|r| {
            !matches!(r.pattern, sbx::profile::Pattern::Program { .. })
                && r.verb != sbx::profile::Verb::Launcher
        })
        .map(sbx::profile::render::render_rule)
        .collect()
}

/// The checks of every event of `events` agree with `admits_event_in`; allowed checks name
/// what allowed them; `check` agrees with `decide_in` on path targets. Returns (events
/// judged, events refused, path questions asked).
fn agree(policy: &CompiledPolicy, events: &[Event]) -> (usize, usize, usize) {
    let mut ex = Explainer::new(policy, Box::new(is_gated));
    ex.begin_run("t");
    let (mut judged, mut refused, mut asked) = (0, 0, 0);
    for ev in events {
        if let EventKind::Syscall(sc) = &ev.kind {
            // Enforce decides a target only with an access left (sink::decide), and a call
            // by name only when it is gated.
            let enforce_judges =
                is_gated(&sc.name) || sc.targets.iter().any(|t| !t.access.is_empty());
            assert_eq!(ex.judged(ev), enforce_judges, "{ev:?}");
        }
        if ex.judged(ev) {
            judged += 1;
            let scope = ex.scope(ev.pid);
            let checks = ex.checks(policy, ev);
            let enforce = policy.admits_event_in(ev, &is_gated, Some(ex.provenance()), scope);
            let not_allowed: Vec<(String, String)> = checks
                .iter()
                .filter(|c| c.verdict != Verdict::Allow)
                .map(|c| (c.verb.name().to_string(), c.object.clone()))
                .collect();
            let enforce: Vec<(String, String)> = enforce
                .into_iter()
                .map(|(v, o)| (v.name().to_string(), o))
                .collect();
            assert_eq!(
                not_allowed, enforce,
                "explain and enforce disagree on {ev:?}"
            );
            if !enforce.is_empty() {
                refused += 1;
            }
            for c in &checks {
                match c.verdict {
                    Verdict::Allow if c.verb.name() != "exec" || !c.why.rules.is_empty() => {
                        assert!(
                            !c.why.rules.is_empty() || c.why.provenance,
                            "allowed without a rule: {c:?} in {ev:?}"
                        );
                    }
                    Verdict::DenyRule | Verdict::AllowIfAbsent => {
                        assert_eq!(c.why.rules.len(), 1, "{c:?}");
                    }
                    _ => {}
                }
            }
            asked += questions_agree(policy, ev, scope);
        }
        ex.observe(policy, ev);
    }
    (judged, refused, asked)
}

/// `check` (what `--check` answers) agrees with `decide_in` for each verb of each path
/// target, and with `decide_net_named_in` (what enforce asks of a connect, bind or send) for
/// each socket target, without provenance (a question is asked outside a run).
fn questions_agree(policy: &CompiledPolicy, ev: &Event, scope: Scope) -> usize {
    let EventKind::Syscall(sc) = &ev.kind else {
        return 0;
    };
    let mut n = 0;
    for t in &sc.targets {
        if let Object::Socket(addr) = &t.object {
            n += peer_questions_agree(policy, sc, t.access, addr);
            continue;
        }
        let Object::Path(p) = &t.object else {
            continue;
        };
        if !p.abs.starts_with(b"/") || p.resolved.is_some() {
            continue;
        }
        for verb in verbs_of(t.access) {
            let object = Object::Path(sbx::event::PathObj {
                literal: p.abs.clone(),
                abs: p.abs.clone(),
                resolved: None,
            });
            let missing = sc.outcome == Outcome::Errno(2);
            let mut q = Question::new(verb, object.clone());
            q.missing = missing;
            let answer = check(policy, &q).expect("answer");
            let access = sbx::event::AccessSet::of(access_of(verb));
            if missing {
                // decide_in does not know the call failed: compared at the event level.
                continue;
            }
            let plain = policy.decide_in(Scope::NONE, access, &object, None);
            assert_eq!(answer.decision, plain, "{verb:?} {}", s(&p.abs));
            // With the chain of the process that asked.
            let (decided, _) = policy.explain_in(scope, access, &object, false, None);
            let plain = policy.decide_in(scope, access, &object, None);
            assert_eq!(decided, plain, "{verb:?} {} in {scope:?}", s(&p.abs));
            n += 1;
        }
    }
    n
}

/// [`questions_agree`] for one socket target: the protocol from the socket's type, as
/// enforce takes it; no names (a question by address).
fn peer_questions_agree(
    policy: &CompiledPolicy,
    sc: &sbx::event::Syscall,
    access: AccessSet,
    addr: &sbx::event::SockAddr,
) -> usize {
    use sbx::event::SockAddr;
    use sbx::profile::{Proto, Verb};
    let proto = match addr {
        SockAddr::Inet { .. } | SockAddr::Inet6 { .. } => match sc.sock_type {
            Some(1) => Some(Proto::Tcp),
            Some(2) => Some(Proto::Udp),
            _ => return 0,
        },
        SockAddr::Unix(_) | SockAddr::UnixAbstract(_) => Some(Proto::Unix),
        _ => return 0,
    };
    let mut n = 0;
    for verb in verbs_of(access) {
        if !matches!(verb, Verb::Connect | Verb::Bind | Verb::Send) {
            continue;
        }
        let mut q = Question::new(verb, Object::Socket(addr.clone()));
        q.proto = proto;
        let answer = check(policy, &q).expect("answer");
        let plain = policy.decide_net_named_in(Scope::NONE, verb, proto, addr, &[]);
        assert_eq!(answer.decision, plain, "{verb:?} {addr:?}");
        n += 1;
    }
    n
}

fn access_of(verb: sbx::profile::Verb) -> sbx::event::Access {
    use sbx::event::Access;
    use sbx::profile::Verb;
    match verb {
        Verb::Read => Access::Read,
        Verb::Write => Access::Write,
        Verb::Create => Access::Create,
        Verb::Delete => Access::Delete,
        Verb::Exec => Access::Exec,
        _ => Access::Stat,
    }
}

/// The profile with every other own rule removed (lines of rules only).
fn halved(text: &str) -> String {
    let mut n = 0;
    text.lines()
        .filter(|l| {
            let rule = !l.is_empty()
                && !l.starts_with('#')
                && !l.starts_with("include ")
                && !l.starts_with("program ")
                && !l.starts_with("launcher ");
            if rule {
                n += 1;
                return n % 2 == 0;
            }
            true
        })
        .map(|l| format!("{l}\n"))
        .collect()
}

/// The checks of one workload (`runs` recorded runs in fresh sites).
fn explained_workload(w: Workload, runs: usize) {
    let _g = crate::util::heavy_shared();
    let d = Dir::new();
    let root = d.path();
    let mut traces: Vec<PathBuf> = Vec::new();
    let mut recorded = Vec::new();
    for i in 0..runs {
        let site = Site::new(root, "a");
        let t = root.join(format!("run{i}.bin"));
        recorded.push(w.record(root, &site, &t));
        traces.push(t);
    }
    explained_runs(&format!("{w:?}"), root, &traces, &recorded);
}

/// The checks of recorded runs (`traces`, read into `recorded`); `root` holds the profile.
fn explained_runs(
    w: &str,
    root: &Path,
    traces: &[PathBuf],
    recorded: &[(sbx::trace::Header, Vec<Event>)],
) {
    let runs = traces.len();
    let refs: Vec<&Path> = traces.iter().map(PathBuf::as_path).collect();
    let profile = root.join("p.profile");
    let text = learn_cli(&refs, &profile, &[]);
    let e = explain_json(&profile, &refs);

    // Totals: every event of every run, as `sbx stats --count` counts them.
    let mut total = 0u64;
    for t in traces {
        let out = sbx_out(&[OsStr::new("stats"), OsStr::new("--count"), t.as_os_str()]);
        total += out.stdout.trim().parse::<u64>().expect("a count");
    }
    assert_eq!(e["events"].as_u64(), Some(total));
    assert_eq!(e["runs"].as_array().map(Vec::len), Some(runs));
    // A learned profile admits its own runs.
    assert_eq!(e["refused_events"].as_u64(), Some(0), "{e:#}");

    // Every own rule is there, in profile order; a used one shows examples the runs saw.
    let rules = e["rules"].as_array().expect("rules");
    let own: Vec<&serde_json::Value> = rules.iter().filter(|r| r["snippet"] == false).collect();
    let texts: Vec<String> = own
        .iter()
        .map(|r| r["rule"].as_str().unwrap_or("").to_string())
        .collect();
    assert_eq!(texts, own_rules(&text));
    let (_, all_shown) = shown(&traces[0], None);
    let all_shown: String = traces[1..]
        .iter()
        .map(|t| shown(t, None).1)
        .fold(all_shown, |a, b| a + &b);
    let mut used = 0;
    for r in rules {
        let events = r["events"].as_u64().unwrap_or(0);
        let runs_used = usize::try_from(r["runs"].as_u64().unwrap_or(0)).unwrap_or(usize::MAX);
        assert!(runs_used <= runs);
        assert_eq!(events == 0, runs_used == 0, "{r}");
        if events == 0 {
            continue;
        }
        used += 1;
        for ex in r["examples"].as_array().expect("examples") {
            let ex = ex.as_str().unwrap_or("").trim_matches('"');
            // Paths (sockets and netlink are written in profile syntax, not show's).
            if !ex.starts_with('/') {
                continue;
            }
            assert!(
                all_shown.contains(ex),
                "example {ex} of {r} is no object of the runs"
            );
        }
    }
    eprintln!(
        "{w}: {} rules ({} own), {used} used, {total} events over {runs} run(s)",
        rules.len(),
        own.len()
    );
    assert!(used > 0);

    // Property: explanation == enforce's decision on every event, for the learned profile
    // and for half of it.
    let half = halved(&text);
    for (name, body) in [("learned", text.as_str()), ("halved", half.as_str())] {
        let (mut judged, mut refused, mut asked) = (0, 0, 0);
        for (h, events) in recorded {
            let policy =
                CompiledPolicy::load("p.profile", body, &env_of_run(h, events)).expect("loads");
            let (j, r, a) = agree(&policy, events);
            judged += j;
            refused += r;
            asked += a;
        }
        eprintln!("{w} {name}: {judged} events judged, {refused} refused, {asked} questions");
        if name == "halved" {
            assert!(refused > 0, "half the rules removed and nothing refused");
        } else {
            assert_eq!(refused, 0);
        }
        assert!(asked > 0);
    }
}

#[test]
fn npm_install_with_install_scripts_is_explained() {
    explained_workload(Workload::Npm { compromised: false }, 1);
}

/// Python importing a local module: the first run writes `__pycache__`, the second reads it.
#[test]
fn python_with_a_local_module_is_explained_over_two_runs() {
    let d = Dir::new();
    let work = d.join("work");
    let home = d.join("home");
    let tmp = d.join("tmp");
    for p in [&work, &home, &tmp] {
        std::fs::create_dir_all(p).unwrap();
    }
    std::fs::write(work.join("helper.py"), "def double(x):\n    return 2 * x\n").unwrap();
    std::fs::write(
        work.join("main.py"),
        "import helper, json, tempfile\nwith open('out.json', 'w') as f:\n    json.dump(helper.double(21), f)\nwith tempfile.NamedTemporaryFile() as t:\n    t.write(b'x')\n",
    )
    .unwrap();
    let envs = [
        ("HOME", Some(home.as_os_str())),
        ("TMPDIR", Some(tmp.as_os_str())),
        ("LD_LIBRARY_PATH", None),
    ];
    let mut traces = Vec::new();
    let mut recorded = Vec::new();
    for i in 0..2 {
        let t = d.join(&format!("py{i}.bin"));
        let (out, h, ev) =
            crate::util::record_env(&work, &t, &["/usr/bin/python3", "main.py"], &envs);
        out.assert_code(0);
        recorded.push((h, ev));
        traces.push(t);
    }
    assert_eq!(
        std::fs::read_to_string(work.join("out.json")).unwrap(),
        "42"
    );
    explained_runs("python3", d.path(), &traces, &recorded);
}

/// A site for a real tool run: `work`, a HOME with the tools' caches, a TMPDIR.
fn site(d: &Dir) -> (PathBuf, PathBuf, PathBuf) {
    let (work, home, tmp) = (d.join("work"), d.join("home"), d.join("tmp"));
    for p in [&work, &home.join(".cache/pip"), &tmp] {
        std::fs::create_dir_all(p).unwrap();
    }
    (work, home, tmp)
}

/// `pip install` of a local package, offline (Debian's pip and setuptools, no index, no
/// build isolation): setup.py runs in a child python.
#[test]
fn pip_install_of_a_local_package_is_explained() {
    let _g = crate::util::heavy_shared();
    let d = Dir::new();
    let (work, home, tmp) = site(&d);
    d.write(
        "work/pkg/setup.py",
        "from setuptools import setup\nsetup(name='explpkg', version='1.0', py_modules=['explpkg'])\n",
    );
    d.write("work/pkg/explpkg.py", "X = 1\n");
    let envs = [
        ("HOME", Some(home.as_os_str())),
        ("TMPDIR", Some(tmp.as_os_str())),
        ("LD_LIBRARY_PATH", None),
    ];
    let t = d.join("pip.bin");
    let (out, h, ev) = crate::util::record_env(
        &work,
        &t,
        &[
            "/usr/bin/python3",
            "-m",
            "pip",
            "install",
            "--break-system-packages",
            "--no-index",
            "--no-cache-dir",
            "--no-build-isolation",
            "--no-deps",
            "--disable-pip-version-check",
            "--target",
            "out",
            "./pkg",
        ],
        &envs,
    );
    out.assert_code(0);
    assert!(work.join("out/explpkg.py").exists(), "{}", out.stderr);
    explained_runs("pip", d.path(), &[t], &[(h, ev)]);
}

/// The machine's rustup home (cargo's proxy finds the toolchain whatever HOME is).
fn rustup_home() -> Option<String> {
    if let Ok(h) = std::env::var("RUSTUP_HOME") {
        return Some(h);
    }
    let out = std::process::Command::new("rustup")
        .args(["show", "home"])
        .output()
        .ok()?;
    let h = String::from_utf8_lossy(&out.stdout).trim().to_string();
    (out.status.success() && !h.is_empty()).then_some(h)
}

/// `cargo build --offline` of a binary with a path dependency, started by `bash -c` (as a CI
/// step): cargo, rustc and the linker, with cargo's own areas in CARGO_HOME and target/.
#[test]
fn cargo_build_of_a_local_crate_is_explained() {
    let _g = crate::util::heavy_shared();
    let d = Dir::new();
    let (work, home, tmp) = site(&d);
    d.write(
        "work/Cargo.toml",
        "[package]\nname = \"app\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\ndep = { path = \"dep\" }\n",
    );
    d.write(
        "work/src/main.rs",
        "fn main() {\n    println!(\"{}\", dep::double(21));\n}\n",
    );
    d.write(
        "work/dep/Cargo.toml",
        "[package]\nname = \"dep\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
    );
    d.write(
        "work/dep/src/lib.rs",
        "pub fn double(x: u32) -> u32 {\n    2 * x\n}\n",
    );
    let cargo_home = home.join(".cargo");
    // rustup's toolchains are often in root's HOME, which other users cannot enter.
    let rustup = match rustup_home() {
        Some(r) if std::fs::read_dir(Path::new(&r).join("toolchains")).is_ok() => r,
        _ if !nix::unistd::geteuid().is_root() => {
            eprintln!(
                "SKIPPED cargo_build_of_a_local_crate_is_explained: no rustup toolchain this user can run (the suite runs as root in CI)"
            );
            return;
        }
        other => {
            panic!("rustup's toolchains are not readable ({other:?}): cargo is run through rustup")
        }
    };
    let toolchain = std::env::var_os("RUSTUP_TOOLCHAIN");
    let envs = [
        ("HOME", Some(home.as_os_str())),
        ("TMPDIR", Some(tmp.as_os_str())),
        ("CARGO_HOME", Some(cargo_home.as_os_str())),
        ("RUSTUP_HOME", Some(OsStr::new(&rustup))),
        ("RUSTUP_TOOLCHAIN", toolchain.as_deref()),
        ("CARGO_TARGET_DIR", None),
        ("LD_LIBRARY_PATH", None),
    ];
    let t = d.join("cargo.bin");
    let (out, h, ev) = crate::util::record_env(
        &work,
        &t,
        &[
            "bash",
            "-c",
            "cargo build --offline -q && ./target/debug/app",
        ],
        &envs,
    );
    out.assert_code(0);
    assert_eq!(out.stdout.trim(), "42", "{}", out.stderr);
    explained_runs("cargo", d.path(), &[t], &[(h, ev)]);
}

#[test]
fn make_build_is_explained_over_two_runs() {
    explained_workload(Workload::Make, 2);
}

/// A run whose counts are known: `cat` reads `f` three times, `g` once.
#[test]
fn counts_match_sbx_show_and_check_answers_from_the_cli() {
    let d = Dir::new();
    d.write("f", "x\n");
    d.write("g", "y\n");
    let (out, _, _) = record(d.path(), &["sh", "-c", "cat f; cat f; cat f g"]);
    out.assert_code(0);
    let trace = d.join("trace.bin");
    let profile = d.write(
        "p.profile",
        "include base\ninclude shell\nread ${CWD}/f\nread ${CWD}/**\nread /etc/**\nwrite /srv/**\n",
    );
    let e = explain_json(&profile, &[&trace]);
    let rule = |text: &str| {
        e["rules"]
            .as_array()
            .and_then(|rs| rs.iter().find(|r| r["rule"] == text))
            .unwrap_or_else(|| panic!("{text} in {e:#}"))
            .clone()
    };
    let f = d.join("f");
    let f = f.to_str().expect("utf-8");
    let (n, _) = shown(&trace, Some(f));
    assert_eq!(n, 3);
    assert_eq!(rule("read ${CWD}/f")["events"].as_u64(), Some(3));
    assert_eq!(rule("read ${CWD}/f")["examples"][0].as_str(), Some(f));
    // sh is dash here: chains name the programs that ran.
    let chain = rule("read ${CWD}/f")["chains"][0][0].clone();
    assert!(
        chain.as_str().is_some_and(|c| c.starts_with("cat <- ")),
        "{chain}"
    );
    // `g` goes to the next matching rule; the rule nothing used is unused.
    assert_eq!(rule("read ${CWD}/**")["events"].as_u64(), Some(1));
    assert_eq!(rule("write /srv/**")["events"].as_u64(), Some(0));
    let text = sbx_out(&[
        OsStr::new("explain"),
        profile.as_os_str(),
        trace.as_os_str(),
    ]);
    text.assert_code(0);
    assert!(
        text.stdout.contains("1/1 runs; 3 events; by cat <- "),
        "{}",
        text.stdout
    );
    assert!(text.stdout.contains("p.profile:6  write /srv/**"));

    // --check from the CLI: exit 0 allowed, 1 refused, 3 only while missing, 2 bad question.
    let ask = |args: &[&str]| {
        let mut a: Vec<&OsStr> = vec![OsStr::new("explain"), profile.as_os_str()];
        a.push(OsStr::new("--check"));
        a.extend(args.iter().map(OsStr::new));
        Sbx::new(a).cwd(d.path()).run()
    };
    let o = ask(&["read", f]);
    o.assert_code(0);
    assert!(
        o.stdout.contains("p.profile:3: read ${CWD}/f"),
        "{}",
        o.stdout
    );
    let o = ask(&["write", f]);
    o.assert_code(1);
    assert!(o.stdout.contains("no rule allows it"), "{}", o.stdout);
    assert!(
        o.stdout
            .contains("during a run: admitted if the run created")
    );
    ask(&["read", "relative/path"]).assert_code(2);
    ask(&["read", f, "--chain", "nosuch"]).assert_code(2);
    let o = ask(&["read", "/usr/local/bin/nonexistent-tool"]);
    assert!(matches!(o.code, Some(1) | Some(3)), "{o:?}");
    let o = ask(&["read", "/etc/hostname", "--format", "json"]);
    o.assert_code(0);
    let v: serde_json::Value = serde_json::from_str(&o.stdout).expect("json");
    assert_eq!(v["decision"], "allow");
    assert_eq!(v["checks"][0]["rules"][0]["line"], 5);
}

/// `--annotate` evidence is deterministic, changes no rule, and decides like the plain
/// profile on every event of the runs.
#[test]
fn annotated_profiles_are_stable_and_enforce_like_plain_ones() {
    let d = Dir::new();
    d.write("in.txt", "x\n");
    let script = "cat in.txt > out.txt; mkdir -p build; echo y > build/o; ls /etc > /dev/null";
    let mut traces = Vec::new();
    let mut recorded = Vec::new();
    for i in 0..2 {
        let t = d.join(&format!("t{i}.bin"));
        let (out, h, ev) = crate::util::record_env(d.path(), &t, &["sh", "-c", script], &[]);
        out.assert_code(0);
        recorded.push((h, ev));
        traces.push(t);
    }
    let refs: Vec<&Path> = traces.iter().map(PathBuf::as_path).collect();
    let plain = learn_cli(&refs, &d.join("plain.profile"), &[]);
    let a1 = learn_cli(&refs, &d.join("a1.profile"), &["--annotate"]);
    let a2 = learn_cli(&refs, &d.join("a2.profile"), &["--annotate"]);
    assert_eq!(
        a1, a2,
        "annotations differ between two learns of the same traces"
    );
    assert!(a1.contains("# 2/2 runs; "), "{a1}");
    assert!(a1.lines().count() > plain.lines().count());
    // Learned again on top of itself: last time's evidence is replaced, not repeated.
    let base = d.join("a1.profile");
    let base = base.to_str().expect("utf-8");
    let a3 = learn_cli(
        &refs,
        &d.join("a3.profile"),
        &["--annotate", "--base", base],
    );
    let evidence = |t: &str| {
        t.lines()
            .filter(|l| sbx::explain::is_annotation(l.trim_start_matches("# ")))
            .count()
    };
    assert_eq!(evidence(&a3), evidence(&a1), "{a3}");
    // Every rule of a1 is kept: each says which line of the base it comes from.
    let from_base = a3.lines().filter(|l| l.contains("; from base ")).count();
    assert_eq!(from_base, evidence(&a1), "{a3}");
    assert!(a3.contains(&format!("; from base {base}:")), "{a3}");
    let diff = sbx_out(&[
        OsStr::new("diff"),
        d.join("plain.profile").as_os_str(),
        d.join("a1.profile").as_os_str(),
    ]);
    diff.assert_code(0);
    // Checked from the run's directory (the tests may run with HOME above it).
    Sbx::new([OsStr::new("check"), d.join("a1.profile").as_os_str()])
        .cwd(d.path())
        .run()
        .assert_code(0);
    for (h, events) in &recorded {
        let p = CompiledPolicy::load("plain", &plain, &env_of_run(h, events)).expect("plain");
        let a = CompiledPolicy::load("annotated", &a1, &env_of_run(h, events)).expect("annotated");
        for ev in events {
            assert_eq!(
                p.admits_event_with(ev, &is_gated),
                a.admits_event_with(ev, &is_gated)
            );
            if let EventKind::Syscall(sc) = &ev.kind {
                for t in &sc.targets {
                    for v in verbs_of(t.access) {
                        let acc = AccessSet::of(access_of(v));
                        let (x, y) = (p.decide(acc, &t.object), a.decide(acc, &t.object));
                        assert_eq!(matches!(x, Decision::Allow), matches!(y, Decision::Allow));
                    }
                }
            }
        }
    }
}

/// A violation's report and job summary name the rule that came closest.
#[test]
fn violations_name_the_closest_rule() {
    let d = Dir::new();
    d.write("f", "x\n");
    d.write("g", "y\n");
    let profile = d.write(
        "p.profile",
        "include base\ninclude shell\nread ${CWD}/f\nconnect tcp 10.0.0.1:443\n",
    );
    let report = d.join("r.json");
    let mut enforce = Sbx::new([
        OsStr::new("enforce"),
        OsStr::new("--report"),
        report.as_os_str(),
        profile.as_os_str(),
        OsStr::new("--"),
        OsStr::new("cat"),
        OsStr::new("g"),
    ])
    .cwd(d.path());
    // cargo's library path would be the first thing cat reads.
    enforce.cmd.env_remove("LD_LIBRARY_PATH");
    let out = enforce.run();
    out.assert_code(124);
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).expect("report")).expect("json");
    let v = &r["violations"][0];
    assert_eq!(v["verb"], "read", "{r:#}");
    let closest = v["closest"][0].as_str().unwrap_or("");
    assert!(
        closest.contains("p.profile:3: read ${CWD}/f names another file of "),
        "{r:#}"
    );
    assert!(
        out.stderr.contains("sbx: closest rule to read "),
        "{}",
        out.stderr
    );
    // The proposed diff says it above the rule it adds.
    let diff = r["diff"].as_str().unwrap_or("");
    let lines: Vec<&str> = diff.lines().collect();
    let at = lines
        .iter()
        .position(|l| *l == "+read ${CWD}/g")
        .unwrap_or_else(|| panic!("{diff}"));
    assert!(
        at > 0
            && lines[at - 1].starts_with("+# closest to read ")
            && lines[at - 1].contains("p.profile:3: read ${CWD}/f names another file of "),
        "{diff}"
    );
    let summary = Sbx::new([
        OsStr::new("report"),
        OsStr::new("--format"),
        OsStr::new("summary"),
        report.as_os_str(),
    ])
    .run();
    summary.assert_code(0);
    assert!(summary.stdout.contains("closest: `"), "{}", summary.stdout);

    // A refused peer in deny mode (nothing leaves the machine: the connect is refused
    // before it is made): the same host on another port is closest, in the report and the
    // diff.
    let report = d.join("r2.json");
    let mut enforce = Sbx::new([
        OsStr::new("enforce"),
        OsStr::new("--mode"),
        OsStr::new("deny"),
        OsStr::new("--report"),
        report.as_os_str(),
        profile.as_os_str(),
        OsStr::new("--"),
        OsStr::new("bash"),
        OsStr::new("-c"),
        OsStr::new("echo > /dev/tcp/10.0.0.1/80; cat f"),
    ])
    .cwd(d.path());
    enforce.cmd.env_remove("LD_LIBRARY_PATH");
    let out = enforce.run();
    out.assert_code(124);
    assert_eq!(out.stdout, "x\n", "{}", out.stderr);
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).expect("report")).expect("json");
    // (bash may ask nscd first, where it runs: another violation.)
    let v = r["violations"]
        .as_array()
        .and_then(|all| all.iter().find(|v| v["object"] == "tcp 10.0.0.1:80"))
        .unwrap_or_else(|| panic!("the refused connect is reported: {r:#}"));
    assert_eq!(v["verb"].as_str(), Some("connect"), "{r:#}");
    let near = format!(
        "{}:4: connect tcp 10.0.0.1:443 names this host, on port 443, not 80",
        profile.display()
    );
    assert_eq!(v["closest"][0].as_str(), Some(near.as_str()), "{r:#}");
    let diff = r["diff"].as_str().unwrap_or("");
    assert!(
        diff.contains(&format!(
            "+# closest to connect tcp 10.0.0.1:80: {near}\n+connect tcp 10.0.0.1:80\n"
        )),
        "{diff}"
    );
}

/// The decision table of `--check`, one hand-written case per check, each with its exit code
/// (0 allowed, 1 refused, 3 allowed only while the path is missing, 2 a bad question) and the
/// reason and rule line it must print. HOME is `/h` (not a real place: nothing is looked up).
#[test]
fn check_answers_each_check_of_the_decision_table() {
    let d = Dir::new();
    d.write(
        "p.profile",
        "include ssl
program npm /usr/lib/node_modules/npm/bin/npm-cli.js
launcher /usr/bin/bash
read /etc/**
read /etc/passwd
own ${HOME}/.cache/x
deny read ${HOME}/.cache/x/secret
write ${HOME}/.npm/** by npm
probe /opt/**
write ${HOME}/.config/**
write ${HOME}/.config/autostart/ok.desktop
connect tcp 10.0.0.1:443
connect tcp registry.npmjs.org:443
connect udp 10.0.0.53:53
connect unix /run/x.sock
resolve example.org
syscall ptrace
deny syscall mount
send netlink route
",
    );
    // (arguments after --check, exit code, text the answer must hold)
    let cases: &[(&[&str], i32, &[&str])] = &[
        // The first matching allow rule, in profile order (line 4 before line 5).
        (
            &["read", "/etc/passwd"],
            0,
            &[
                "allowed by the first matching rule",
                "p.profile:4: read /etc/**",
            ],
        ),
        // A wider verb implies the asked one: stat by read, create by own.
        (&["stat", "/etc/hosts"], 0, &["p.profile:4: read /etc/**"]),
        (
            &["create", "/h/.cache/x/new"],
            0,
            &["p.profile:6: own ${HOME}/.cache/x"],
        ),
        // No rule.
        (&["exec", "/srv/tool"], 1, &["refused: no rule allows it"]),
        // A deny carve-out wins over the area, and says which allow rule it beats.
        (
            &["read", "/h/.cache/x/secret"],
            1,
            &[
                "a deny rule wins over every allow rule",
                "p.profile:7: deny read ${HOME}/.cache/x/secret",
                "(over p.profile:6: own ${HOME}/.cache/x)",
            ],
        ),
        // A secret place a snippet denies.
        (
            &["read", "/etc/ssl/private/server.key"],
            1,
            &[
                "ssl.profile:17: deny read /etc/ssl/private/**",
                "(over p.profile:4: read /etc/**)",
            ],
        ),
        // A `by` list: not held without a chain, held by npm, by npm under the launcher
        // bash, not by npm under sh (no launcher: sh is the chain's first program) nor by
        // sh under npm.
        (
            &["write", "/h/.npm/_cacache/x"],
            1,
            &["p.profile:8: write ${HOME}/.npm/** by npm (held only by the chains of its programs"],
        ),
        (
            &["write", "/h/.npm/_cacache/x", "--chain", "npm"],
            0,
            &["p.profile:8: write ${HOME}/.npm/** by npm"],
        ),
        (
            &[
                "write",
                "/h/.npm/_cacache/x",
                "--chain",
                "npm <- /usr/bin/bash",
            ],
            0,
            &["p.profile:8: write ${HOME}/.npm/** by npm"],
        ),
        (
            &["write", "/h/.npm/_cacache/x", "--chain", "npm <- /bin/sh"],
            1,
            &["not held: the chain runs a program outside its list"],
        ),
        (
            &["write", "/h/.npm/_cacache/x", "--chain", "/bin/sh <- npm"],
            1,
            &["not held: the chain runs a program outside its list"],
        ),
        // A persistence place: an area and a glob do not write it, a rule naming it does.
        (
            &["write", "/h/.cache/x/.git/config"],
            1,
            &["p.profile:6: own ${HOME}/.cache/x (matches, but a persistence place"],
        ),
        (
            &["write", "/h/.config/autostart/evil.desktop"],
            1,
            &[
                "p.profile:10: write ${HOME}/.config/** (matches, but a persistence place",
                "closest: p.profile:11: write ${HOME}/.config/autostart/ok.desktop names another file of /h/.config/autostart/",
            ],
        ),
        (
            &["write", "/h/.config/autostart/ok.desktop"],
            0,
            &["p.profile:11: write ${HOME}/.config/autostart/ok.desktop"],
        ),
        // A probe: only while the path is missing (exit 3), then allowed; never a write.
        (
            &["read", "/opt/tool"],
            3,
            &[
                "allowed only while the path is missing",
                "p.profile:9: probe /opt/**",
            ],
        ),
        (
            &["read", "/opt/tool", "--missing"],
            0,
            &["allowed: the call failed with ENOENT, and a probe rule"],
        ),
        (&["write", "/opt/tool"], 1, &["no rule allows it"]),
        // Provenance: refused by the rules, admitted during a run that made it; never exec.
        (
            &["write", "/srv/out.txt"],
            1,
            &["during a run: admitted if the run created this object itself"],
        ),
        // The network by address and port, by protocol, by host name (no DNS asked).
        (
            &["connect", "tcp", "10.0.0.1:443"],
            0,
            &["p.profile:12: connect tcp 10.0.0.1:443"],
        ),
        (
            &["connect", "tcp", "10.0.0.1:80"],
            1,
            &[
                "closest: p.profile:12: connect tcp 10.0.0.1:443 names this host, on port 443, not 80",
            ],
        ),
        (
            &["connect", "udp", "10.0.0.1:443"],
            1,
            &["no rule allows it"],
        ),
        (
            &["connect", "10.0.0.53:53"],
            0,
            &["p.profile:14: connect udp 10.0.0.53:53"],
        ),
        (
            &["connect", "registry.npmjs.org:443"],
            0,
            &[
                "connect registry.npmjs.org:443: allowed by the first matching rule",
                "p.profile:13: connect tcp registry.npmjs.org:443",
            ],
        ),
        (
            &["connect", "tcp", "registry.npmjs.org:80"],
            1,
            &[
                "closest: p.profile:13: connect tcp registry.npmjs.org:443 names this host, on port 443, not 80",
            ],
        ),
        (
            &["connect", "evil.example:443"],
            1,
            &[
                "closest: p.profile:12: connect tcp 10.0.0.1:443 allows port 443 on another host, 10.0.0.1",
                "closest: p.profile:13: connect tcp registry.npmjs.org:443 allows port 443 on another host, registry.npmjs.org",
            ],
        ),
        // An address is not matched by name rules unless the run resolved the name to it.
        (
            &["connect", "tcp", "104.16.0.1:443"],
            1,
            &["host rules match an address only when the run resolved their name to it"],
        ),
        (
            &["connect", "unix", "/run/x.sock"],
            0,
            &["p.profile:15: connect unix /run/x.sock"],
        ),
        (
            &["send", "netlink", "route"],
            0,
            &["p.profile:19: send netlink route"],
        ),
        (&["send", "netlink", "audit"], 1, &["no rule allows it"]),
        // Names: a resolve rule, or a tcp rule naming the host.
        (
            &["resolve", "Example.ORG"],
            0,
            &["p.profile:16: resolve example.org"],
        ),
        (
            &["resolve", "registry.npmjs.org"],
            0,
            &["p.profile:13: connect tcp registry.npmjs.org:443"],
        ),
        (&["resolve", "evil.example"], 1, &["no rule allows it"]),
        // Gated syscalls: a syscall rule, a deny rule, none.
        (&["syscall", "ptrace"], 0, &["p.profile:17: syscall ptrace"]),
        (
            &["syscall", "mount"],
            1,
            &[
                "a deny rule wins over every allow rule",
                "p.profile:18: deny syscall mount",
            ],
        ),
        (&["syscall", "bpf"], 1, &["no rule allows it"]),
        // Bad questions.
        (&["read", "etc/passwd"], 2, &[]),
        (&["connect", "tcp", "no port"], 2, &[]),
        (&["write", "/h/.npm/x", "--chain", "nosuch"], 2, &[]),
    ];
    let mut failures = Vec::new();
    for (args, code, wanted) in cases {
        // Named as given: the rules' locations read `p.profile:LINE`.
        let mut a: Vec<&OsStr> = vec![
            OsStr::new("explain"),
            OsStr::new("p.profile"),
            OsStr::new("--check"),
        ];
        a.extend(args.iter().map(OsStr::new));
        let out = Sbx::new(a).cwd(d.path()).env("HOME", "/h").run();
        let missing: Vec<&&str> = wanted
            .iter()
            .filter(|w| !out.stdout.contains(**w))
            .collect();
        if out.code != Some(*code) || !missing.is_empty() {
            failures.push(format!(
                "--check {}: exit {:?} (want {code}), missing {missing:?}\n{}{}",
                args.join(" "),
                out.code,
                out.stdout,
                out.stderr
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // --check before the profile.
    let out = Sbx::new(["explain", "--check", "read", "/etc/passwd", "p.profile"])
        .cwd(d.path())
        .env("HOME", "/h")
        .run();
    out.assert_code(0);
    assert!(
        out.stdout.contains("p.profile:4: read /etc/**"),
        "{}",
        out.stdout
    );
}

/// With several runs, a rule used by only some says why or which (`1/3 runs: cold cache
/// only` when only the runs that found no earlier build output used it, else the traces by
/// name); with `--base`, the rules the base profile holds say so.
#[test]
fn partial_runs_say_why_and_base_rules_say_where_they_come_from() {
    let d = Dir::new();
    d.write("in.txt", "x\n");
    // The first run configures (writes config.status, a build output), the next ones find
    // it in place: learn calls them warm.
    let script =
        "if [ -e config.status ]; then cat config.status; else cat in.txt > config.status; fi";
    let mut traces = Vec::new();
    for i in 0..3 {
        let t = d.join(&format!("t{i}.bin"));
        let (out, _, _) = crate::util::record_env(d.path(), &t, &["sh", "-c", script], &[]);
        out.assert_code(0);
        traces.push(t);
    }
    // The third run's learn warning is what explain calls warm.
    let learn = Sbx::new([
        OsStr::new("learn"),
        traces[2].as_os_str(),
        OsStr::new("-o"),
        d.join("l.profile").as_os_str(),
    ])
    .run();
    learn.assert_code(0);
    assert!(
        learn
            .stderr
            .contains("found build outputs of an earlier run"),
        "{}",
        learn.stderr
    );
    let base = d.write("base.profile", "# reviewed\nread ${CWD}/in.txt\n");
    let profile = d.write(
        "p.profile",
        "include base\ninclude shell\nread ${CWD}/in.txt\nread ${CWD}/config.status\ncreate ${CWD}/config.status\nread /srv/never\n",
    );
    let mut a: Vec<&OsStr> = vec![OsStr::new("explain"), profile.as_os_str()];
    a.extend(traces.iter().map(|t| t.as_os_str()));
    a.extend([
        OsStr::new("--base"),
        base.as_os_str(),
        OsStr::new("--format"),
        OsStr::new("json"),
    ]);
    let out = Sbx::new(a).run();
    out.assert_code(0);
    let e: serde_json::Value = serde_json::from_str(&out.stdout).expect("json");
    assert_eq!(e["warm"], serde_json::json!([false, true, true]), "{e:#}");
    let rule = |text: &str| {
        e["rules"]
            .as_array()
            .and_then(|rs| rs.iter().find(|r| r["rule"] == text))
            .unwrap_or_else(|| panic!("{text} in {e:#}"))
            .clone()
    };
    let cold = rule("read ${CWD}/in.txt");
    assert_eq!(cold["runs_text"], "1/3 runs: cold cache only", "{cold:#}");
    let base_at = format!("{}:2", base.display());
    assert_eq!(cold["from_base"].as_str(), Some(base_at.as_str()));
    assert!(
        cold["evidence"].as_str().is_some_and(
            |t| t.starts_with(&format!("1/3 runs: cold cache only; from base {base_at}; "))
        ),
        "{cold:#}"
    );
    let warm = rule("read ${CWD}/config.status");
    assert_eq!(warm["runs_text"], "2/3 runs: in t1.bin, t2.bin", "{warm:#}");
    assert_eq!(warm["from_base"], serde_json::Value::Null);
    assert_eq!(
        rule("create ${CWD}/config.status")["runs_text"],
        "1/3 runs: cold cache only"
    );
    assert_eq!(rule("read /srv/never")["runs_text"], "0/3 runs");
}
