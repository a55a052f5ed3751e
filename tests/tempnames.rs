//! Temp names of the REAL generators (issue 38 item 1, docs/learning.md section 4): Python's
//! `tempfile` (`mkdtemp`, `mkstemp`, `NamedTemporaryFile`), coreutils `mktemp` with and
//! without a template, Node's `fs.mkdtempSync`, a nanoid generator (Node's `crypto` with
//! nanoid's alphabet), the Rust `tempfile` crate's `Builder`, and Go's `os.MkdirTemp` when
//! `go` is installed. Each pool holds 10,064 names of one generator with one prefix and
//! suffix, made by the generator itself (one process per pool).
//!
//! Property: the profile learned (by the real learner, from a trace in which the run made the
//! name and threw it away, or, for nanoid, left it) from ONE name of the pool, chosen by
//! proptest among the first 64, admits creating each of the other 10,000 names in the same
//! place, and none of the sibling names a project or TMPDIR already has (`pytest.ini`,
//! `pytest-cache-files` without a suffix, `build-requirements.txt`, `package.json`...).

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use proptest::prelude::*;
use sbx::arch::Arch;
use sbx::event::{Access, AccessSet, Creds, Event, EventKind, Exec, Object, Outcome, PathObj};
use sbx::event::{ProcInfo, Syscall, Target};
use sbx::learn::{LearnOptions, Learner};
use sbx::policy::{CompiledPolicy, Decision};
use sbx::profile::vars::Env;
use sbx::trace::Header;

use crate::util::{Dir, run_guarded};

const CWD: &str = "/w/proj";
const TMP: &str = "/t/tmp";
/// Names learned from (proptest picks one) and names checked (all of them).
const SAMPLES: usize = 64;
const FRESH: usize = 10_000;

/// Where a pool's names are made, and how.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Place {
    Cwd,
    Tmp,
}

#[derive(Debug)]
struct Pool {
    label: String,
    place: Place,
    dir: bool,
    /// The run threw the name away (deleted it); else it left it (nanoid's runner).
    thrown: bool,
    /// The argv of the mktemp(1) process that made the names, if that made them.
    argv: Option<Vec<String>>,
    names: Vec<String>,
    siblings: Vec<&'static str>,
}

/// Names a project has that no pool's rule in the project may admit.
const PROJECT_SIBLINGS: &[&str] = &[
    "pytest.ini",
    "package.json",
    "setup.py",
    "Cargo.toml",
    "Makefile",
    "src",
];

/// Names in TMPDIR no pool's rule there may admit (`pwned-x`: tests/ecosystems.rs "tight").
const TMP_SIBLINGS: &[&str] = &["pwned-x", ".X11-unix", "ssh-agent"];

fn run_lines(mut cmd: Command, what: &str) -> Vec<String> {
    let out = run_guarded(
        {
            cmd.env_remove("TMPDIR");
            cmd
        },
        Duration::from_secs(300),
    );
    assert_eq!(out.code, Some(0), "{what}: {}", out.stderr);
    out.stdout.lines().map(str::to_string).collect()
}

/// Python's tempfile, one process for every pool: `LABEL\tNAME` lines.
fn python_pools(scratch: &Path) -> Vec<(String, Vec<String>)> {
    let n = SAMPLES + FRESH;
    let script = format!(
        r#"
import os, sys, tempfile
d = {dir:?}
def pool(label, make):
    for _ in range({n}):
        p = make()
        (os.rmdir if os.path.isdir(p) else os.unlink)(p)
        print(label + "\t" + os.path.basename(p))
def mkstemp(**kw):
    fd, p = tempfile.mkstemp(dir=d, **kw)
    os.close(fd)
    return p
def named(**kw):
    f = tempfile.NamedTemporaryFile(dir=d, delete=False, **kw)
    f.close()
    return f.name
pool("py-pytest", lambda: tempfile.mkdtemp(prefix="pytest-cache-files-", dir=d))
pool("py-build", lambda: named(prefix="build-requirements-", suffix=".txt"))
pool("py-default", lambda: mkstemp())
pool("py-pip", lambda: tempfile.mkdtemp(prefix="pip-build-env-", dir=d))
pool("py-record", lambda: named(prefix="RECORD", suffix=".tmp"))
pool("py-noprefix", lambda: mkstemp(prefix=""))
pool("py-custom", lambda: tempfile.mkdtemp(prefix="myproj_", suffix="-work", dir=d))
sys.stdout.flush()
"#,
        dir = scratch.display().to_string(),
    );
    let mut cmd = Command::new("python3");
    cmd.args(["-c", &script]);
    split_pools(run_lines(cmd, "python3"))
}

/// Node: `fs.mkdtempSync(PREFIX)` and nanoid's 21 characters from `crypto.randomBytes`.
fn node_pools(scratch: &Path) -> Vec<(String, Vec<String>)> {
    let n = SAMPLES + FRESH;
    let script = format!(
        r#"
const fs = require("fs"), path = require("path"), crypto = require("crypto");
const d = {dir:?};
const out = [];
for (const [label, prefix] of [["node-vitest", "vitest-"], ["node-foo", "foo_"]]) {{
  for (let i = 0; i < {n}; i++) {{
    const p = fs.mkdtempSync(path.join(d, prefix));
    fs.rmdirSync(p);
    out.push(label + "\t" + path.basename(p));
  }}
}}
// nanoid 5's default: 21 symbols of its URL-safe alphabet, one random byte each (& 63).
const alphabet = "useandom-26T198340PX75pxJACKVERYMINDBUSHWOLF_GQZbfghjklqvwyzrict";
for (let i = 0; i < {n}; i++) {{
  const bytes = crypto.randomBytes(21);
  let id = "";
  for (const b of bytes) id += alphabet[b & 63];
  out.push("nanoid\t" + id);
}}
process.stdout.write(out.join("\n") + "\n");
"#,
        dir = scratch.display().to_string(),
    );
    let mut cmd = Command::new("node");
    cmd.args(["-e", &script]);
    split_pools(run_lines(cmd, "node"))
}

/// coreutils `mktemp -u` (the same generator, without making the file) in a shell loop:
/// `(label, argv of one such mktemp, names)`.
fn mktemp_pool(
    scratch: &Path,
    label: &str,
    template: Option<&str>,
) -> (String, Vec<String>, Vec<String>) {
    let n = SAMPLES + FRESH;
    let t = template.unwrap_or("");
    let mut cmd = Command::new("bash");
    cmd.args([
        "-c",
        &format!("for ((i=0;i<{n};i++)); do mktemp -u -p \"$0\" {t}; done"),
        &scratch.display().to_string(),
    ]);
    let names = run_lines(cmd, "mktemp")
        .iter()
        .map(|p| p.rsplit('/').next().unwrap_or(p).to_string())
        .collect();
    let mut argv = vec!["mktemp".to_string(), "-p".into(), TMP.into()];
    argv.extend(template.map(str::to_string));
    (label.to_string(), argv, names)
}

/// The Rust `tempfile` crate's `Builder`, in this process.
fn rust_pools(scratch: &Path) -> Vec<(String, Vec<String>)> {
    let n = SAMPLES + FRESH;
    let make = |prefix: Option<&str>, suffix: &str| -> Vec<String> {
        (0..n)
            .map(|_| {
                let mut b = tempfile::Builder::new();
                if let Some(p) = prefix {
                    b.prefix(p);
                }
                let f = b.suffix(suffix).tempfile_in(scratch).expect("tempfile");
                let name = f.path().file_name().unwrap().to_string_lossy().into_owned();
                drop(f);
                name
            })
            .collect()
    };
    vec![
        ("rust-default".into(), make(None, "")),
        ("rust-cargo".into(), make(Some("target"), "")),
        ("rust-custom".into(), make(Some("sbx-"), ".json")),
    ]
}

/// Go's `os.MkdirTemp`, when `go` is installed.
fn go_pools(scratch: &Path) -> Vec<(String, Vec<String>)> {
    if Command::new("go").arg("version").output().is_err() {
        eprintln!("tempnames: go is not installed: Go's os.MkdirTemp names are not checked");
        return Vec::new();
    }
    let src = scratch.join("main.go");
    let n = SAMPLES + FRESH;
    std::fs::write(
        &src,
        format!(
            "package main\nimport (\"fmt\"; \"os\"; \"path/filepath\")\nfunc main() {{\n\
             for i := 0; i < {n}; i++ {{\n\
             p, err := os.MkdirTemp({dir:?}, \"go-build\")\nif err != nil {{ panic(err) }}\n\
             os.Remove(p)\nfmt.Println(\"go-build\\t\" + filepath.Base(p))\n\
             q, err := os.MkdirTemp({dir:?}, \"gotest-*-x\")\nif err != nil {{ panic(err) }}\n\
             os.Remove(q)\nfmt.Println(\"go-pattern\\t\" + filepath.Base(q))\n}}\n}}\n",
            dir = scratch.display().to_string()
        ),
    )
    .unwrap();
    let mut cmd = Command::new("go");
    cmd.arg("run").arg(&src);
    split_pools(run_lines(cmd, "go run"))
}

fn split_pools(lines: Vec<String>) -> Vec<(String, Vec<String>)> {
    let mut pools: Vec<(String, Vec<String>)> = Vec::new();
    for l in lines {
        let Some((label, name)) = l.split_once('\t') else {
            continue;
        };
        match pools.last_mut() {
            Some((last, names)) if last == label => names.push(name.to_string()),
            _ => pools.push((label.to_string(), vec![name.to_string()])),
        }
    }
    pools
}

/// Where each labelled pool lives and what it must not admit.
fn describe(label: &str, names: Vec<String>, argv: Option<Vec<String>>) -> Pool {
    let (place, dir, thrown, siblings): (Place, bool, bool, Vec<&'static str>) = match label {
        "py-pytest" => (
            Place::Cwd,
            true,
            true,
            vec!["pytest-cache-files", "pytest-cache-files-", ".pytest_cache"],
        ),
        "py-build" => (
            Place::Tmp,
            false,
            true,
            vec!["build-requirements.txt", "build-requirements-.txt"],
        ),
        "py-pip" => (
            Place::Tmp,
            true,
            true,
            vec!["pip-build-env", "pip-build-env-"],
        ),
        "py-record" => (Place::Cwd, false, true, vec!["RECORD", "RECORD.tmp"]),
        "py-custom" => (Place::Cwd, true, true, vec!["myproj_", "myproj-work"]),
        "py-default" | "py-noprefix" | "mktemp-sbx" | "mktemp-8x" | "mktemp-default" => {
            (Place::Tmp, false, true, vec!["tmp", "sbx."])
        }
        "node-vitest" => (Place::Tmp, true, true, vec!["vitest-", "vitest"]),
        "node-foo" => (Place::Cwd, true, true, vec!["foo_", "foo"]),
        "nanoid" => (Place::Tmp, true, false, vec!["node_modules", "README.md"]),
        "rust-default" => (Place::Tmp, false, true, vec![".tmp"]),
        "rust-cargo" => (Place::Cwd, true, true, vec!["target", "targets"]),
        "rust-custom" => (
            Place::Cwd,
            false,
            true,
            vec!["sbx.json", "sbx-settings.json", "sbx-abcdef.txt"],
        ),
        _ => (Place::Tmp, true, true, vec!["go-build"]),
    };
    let mut siblings = siblings;
    siblings.extend_from_slice(match place {
        Place::Cwd => PROJECT_SIBLINGS,
        Place::Tmp => TMP_SIBLINGS,
    });
    Pool {
        label: label.to_string(),
        place,
        dir,
        thrown,
        argv,
        names,
        siblings,
    }
}

fn all_pools() -> Vec<Pool> {
    let scratch = Dir::new();
    let dir = scratch.path();
    // One process per generator, side by side (mktemp forks once per name).
    let (labelled, mktemp) = std::thread::scope(|s| {
        let py = s.spawn(|| python_pools(dir));
        let node = s.spawn(|| node_pools(dir));
        let go = s.spawn(|| go_pools(dir));
        let mk: Vec<_> = [
            ("mktemp-sbx", Some("sbx.XXXXXX")),
            ("mktemp-8x", Some("XXXXXXXX")),
            ("mktemp-default", None),
        ]
        .into_iter()
        .map(|(label, t)| s.spawn(move || mktemp_pool(dir, label, t)))
        .collect();
        let mut labelled = rust_pools(dir);
        for h in [py, node, go] {
            labelled.extend(h.join().expect("generator thread"));
        }
        let mktemp: Vec<_> = mk.into_iter().map(|h| h.join().expect("mktemp")).collect();
        (labelled, mktemp)
    });
    let mut pools: Vec<Pool> = labelled
        .into_iter()
        .map(|(label, names)| describe(&label, names, None))
        .collect();
    for (label, argv, names) in mktemp {
        pools.push(describe(&label, names, Some(argv)));
    }
    for p in &pools {
        assert_eq!(p.names.len(), SAMPLES + FRESH, "{}", p.label);
    }
    pools
}

fn pools() -> &'static [Pool] {
    static POOLS: std::sync::OnceLock<Vec<Pool>> = std::sync::OnceLock::new();
    POOLS.get_or_init(all_pools)
}

fn header() -> Header {
    Header {
        sbx_version: "0.1.0".into(),
        arch: Arch::native(),
        kernel: "6.18.0".into(),
        argv: vec![b"run".to_vec()],
        cwd: CWD.as_bytes().to_vec(),
        home: b"/h/u".to_vec(),
        tmpdir: TMP.as_bytes().to_vec(),
        uid: 1000,
        gid: 1000,
        user: "u".into(),
        start_unix: 1_700_000_000,
        metadata: false,
    }
}

fn event(kind: EventKind) -> Event {
    Event {
        time_ns: 0,
        pid: 9,
        tid: 9,
        proc: ProcInfo {
            ppid: 1,
            comm: b"run".as_slice().into(),
            exe: b"/usr/bin/run".as_slice().into(),
            creds: Creds::default(),
        },
        kind,
    }
}

fn call(name: &str, access: Access, path: &str) -> Event {
    event(EventKind::Syscall(Syscall {
        name: name.into(),
        nr: 0,
        args: [0; 6],
        targets: vec![Target {
            access: AccessSet::of(access),
            object: path_obj(path),
        }],
        outcome: Outcome::Value(0),
        sock_type: None,
    }))
}

fn path_obj(path: &str) -> Object {
    Object::Path(PathObj {
        literal: path.as_bytes().to_vec(),
        abs: path.as_bytes().to_vec(),
        resolved: None,
    })
}

fn place_dir(place: Place) -> &'static str {
    match place {
        Place::Cwd => CWD,
        Place::Tmp => TMP,
    }
}

/// The profile learned from a trace in which the run made `name` (and threw it away).
fn learn_from(pool: &Pool, name: &str) -> String {
    let path = format!("{}/{name}", place_dir(pool.place));
    let mut l = Learner::new(LearnOptions::default());
    l.begin_trace(&header());
    if let Some(argv) = &pool.argv {
        l.observe(&event(EventKind::Exec(Exec {
            path: b"/usr/bin/mktemp".to_vec(),
            argv: argv.iter().map(|a| a.as_bytes().to_vec()).collect(),
            env_names: vec![],
            former_tid: None,
            program: None,
            thinned: Vec::new(),
        })));
    }
    if pool.dir {
        l.observe(&call("mkdir", Access::Create, &path));
        l.observe(&call("openat", Access::Create, &format!("{path}/inner")));
    } else {
        l.observe(&call("openat", Access::Create, &path));
    }
    if pool.thrown {
        l.observe(&call("unlinkat", Access::Delete, &path));
    }
    sbx::profile::render::render(&l.finish())
}

fn may_create(policy: &CompiledPolicy, place: Place, name: &str) -> bool {
    let path = format!("{}/{name}", place_dir(place));
    policy.decide(AccessSet::of(Access::Create), &path_obj(&path)) == Decision::Allow
}

/// Profiles already judged, by pool and text: most draws of a generator learn the same
/// profile, and 10,000 decisions per draw and pool would be slow in a debug build.
static JUDGED: std::sync::Mutex<Vec<(String, String)>> = std::sync::Mutex::new(Vec::new());

/// One pool's property: learned from `names[pick]`, every fresh name is admitted, no sibling.
fn check(pool: &Pool, pick: usize) -> Result<(), TestCaseError> {
    let name = &pool.names[pick];
    let text = learn_from(pool, name);
    let key = (pool.label.clone(), text.clone());
    if JUDGED.lock().unwrap().contains(&key) {
        return Ok(());
    }
    let env = Env {
        cwd: CWD.into(),
        home: "/h/u".into(),
        tmpdir: TMP.into(),
        vars: Default::default(),
    };
    let policy = CompiledPolicy::load("learned", &text, &env)
        .map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
    let refused: Vec<&String> = pool.names[SAMPLES..]
        .iter()
        .filter(|n| !may_create(&policy, pool.place, n))
        .take(5)
        .collect();
    prop_assert!(
        refused.is_empty(),
        "{}: learned from {name:?}, refused {refused:?}\n{text}",
        pool.label
    );
    for s in &pool.siblings {
        prop_assert!(
            !may_create(&policy, pool.place, s),
            "{}: learned from {name:?}, admits the sibling {s:?}\n{text}",
            pool.label
        );
    }
    JUDGED.lock().unwrap().push(key);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    /// Learned from one generated name, a pool's rule admits its 10,000 fresh names and no
    /// sibling. Every pool is checked in every case, each from the name proptest picks.
    #[test]
    fn a_name_learned_from_one_draw_admits_the_generators_next_names(pick in 0..SAMPLES) {
        for pool in pools() {
            check(pool, pick)?;
        }
    }
}

/// The pools exist and differ (a generator that printed one name 10,064 times, or nothing,
/// would make the property above pass for the wrong reason).
#[test]
fn the_generators_made_their_pools() {
    let labels: Vec<&str> = pools().iter().map(|p| p.label.as_str()).collect();
    for want in [
        "py-pytest",
        "py-build",
        "py-default",
        "py-pip",
        "py-record",
        "py-noprefix",
        "py-custom",
        "node-vitest",
        "node-foo",
        "nanoid",
        "mktemp-sbx",
        "mktemp-8x",
        "mktemp-default",
        "rust-default",
        "rust-cargo",
        "rust-custom",
    ] {
        assert!(labels.contains(&want), "{want} missing: {labels:?}");
    }
    for p in pools() {
        let distinct: std::collections::BTreeSet<&String> = p.names.iter().collect();
        assert!(
            distinct.len() > FRESH,
            "{}: {} distinct",
            p.label,
            distinct.len()
        );
    }
}

/// pytest 8's cache directory as pytest makes it (real Python `tempfile.mkdtemp`, filled,
/// renamed onto `.pytest_cache`): learn writes its shape, and enforce without that rule, in
/// every mode, proposes the same rule in its diff, never the literal name the run drew.
/// See: issue 38 item 1 (kill mode proposed `own ${CWD}/pytest-cache-files-ypoq47gn`).
#[test]
fn enforce_proposes_the_rule_learn_learned_for_pytests_cache_directory() {
    let d = Dir::new();
    d.write(
        "mk.py",
        "import os, shutil, tempfile\n\
         t = tempfile.mkdtemp(prefix='pytest-cache-files-', dir='.')\n\
         os.mkdir(os.path.join(t, 'v'))\n\
         open(os.path.join(t, 'v', 'nodeids'), 'w').write('[]')\n\
         shutil.rmtree('.pytest_cache', ignore_errors=True)\n\
         os.rename(t, '.pytest_cache')\n",
    );
    let run = ["/usr/bin/python3", "mk.py"];
    let mut rec = vec!["record", "-o", "trace.bin", "--"];
    rec.extend(run);
    crate::util::Sbx::new(rec)
        .cwd(d.path())
        .run()
        .assert_code(0);
    // The `python` snippet admits pytest's temp name itself (a run that found `.pytest_cache`
    // in place never shows it), so learn leaves it out; this test is about learn's own rule:
    // learned without includes, enforced with the snippet's other rules pasted in instead of
    // `include python`.
    crate::util::Sbx::new(["learn", "--no-includes", "trace.bin", "-o", "p.profile"])
        .cwd(d.path())
        .run()
        .assert_code(0);
    let learned = std::fs::read_to_string(d.join("p.profile")).unwrap();
    let rule = "create ${CWD}/pytest-cache-files-????????";
    assert!(learned.contains(rule), "{learned}");
    let snippet = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("profiles/python.profile"),
    )
    .unwrap();
    assert!(snippet.contains("create ${CWD}/**/pytest-cache-files-????????"));
    let without: String = learned
        .lines()
        .chain(
            snippet
                .lines()
                .filter(|l| !l.contains("pytest-cache-files")),
        )
        .filter(|l| *l != rule)
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(d.join("q.profile"), without).unwrap();
    for mode in ["kill", "deny", "audit"] {
        let mut a = vec!["enforce", "--mode", mode, "q.profile", "--"];
        a.extend(run);
        let mut s = crate::util::Sbx::new(a).cwd(d.path());
        s.cmd.env_remove("GITHUB_ACTIONS");
        let out = s.run();
        let added: Vec<&str> = out
            .stderr
            .lines()
            .filter(|l| l.starts_with('+') && !l.starts_with("+++"))
            .map(|l| &l[1..])
            // Comments (the rule that came closest) are not rules.
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .collect();
        assert_eq!(added, vec![rule], "{mode}\n{}", out.stderr);
    }
}
