//! Shared test helpers: a unique temp [`Dir`], the [`Sbx`] command builder with a hang guard,
//! C fixture compilation, trace reading, and the example workloads ([`workload`]).

#![allow(dead_code)]

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use sbx::event::Event;
use sbx::trace::{Header, TraceReader};

pub mod hostile;
pub mod workload;

/// The sbx binary built by cargo for this test run, or the one `SBX_TEST_BIN` names: how
/// the attack suite is run against an older revision's build, to show which attacks got
/// through before a fix (docs/security.md).
pub fn sbx_bin() -> &'static str {
    static BIN: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    BIN.get_or_init(|| {
        std::env::var("SBX_TEST_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_sbx").to_string())
    })
}

/// A unique temporary directory, removed on drop.
pub struct Dir {
    pub tmp: tempfile::TempDir,
}

impl Dir {
    pub fn new() -> Dir {
        Dir {
            tmp: tempfile::Builder::new()
                .prefix("sbx-test-")
                .tempdir()
                .unwrap(),
        }
    }
    pub fn path(&self) -> &Path {
        self.tmp.path()
    }
    pub fn join(&self, p: &str) -> PathBuf {
        self.tmp.path().join(p)
    }
    pub fn write(&self, p: &str, contents: &str) -> PathBuf {
        let path = self.join(p);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        std::fs::write(&path, contents).unwrap();
        path
    }
}

/// The output of a finished command.
#[derive(Debug)]
pub struct Output {
    pub code: Option<i32>,
    pub signal: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    pub elapsed: Duration,
}

impl Output {
    pub fn assert_code(&self, code: i32) -> &Self {
        assert_eq!(
            self.code,
            Some(code),
            "expected exit {code}\n--- stdout\n{}\n--- stderr\n{}",
            self.stdout,
            self.stderr
        );
        self
    }
}

/// Run `cmd` with a hang guard: after `timeout` the whole process group is killed and the
/// test fails.
pub fn run_guarded(mut cmd: Command, timeout: Duration) -> Output {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd.process_group(0);
    let start = Instant::now();
    let child = cmd.spawn().expect("spawn");
    let pid = child.id();
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let d2 = done.clone();
    let guard = std::thread::spawn(move || {
        while start.elapsed() < timeout {
            if d2.load(std::sync::atomic::Ordering::SeqCst) {
                return false;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{pid}")])
            .status();
        true
    });
    let out = child.wait_with_output().expect("wait");
    done.store(true, std::sync::atomic::Ordering::SeqCst);
    let hung = guard.join().unwrap();
    assert!(!hung, "command hung and was killed after {timeout:?}");
    Output {
        code: out.status.code(),
        signal: out.status.signal(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: without_nonroot_note(String::from_utf8_lossy(&out.stderr).into_owned()),
        elapsed: start.elapsed(),
    }
}

/// When the suite itself runs as a non-root user, every sbx run prints one note about
/// no_new_privs; the tests compare stderr line by line, so drop it there. As root the note
/// appears only where a test asks for it (sbx started through setpriv), and is kept.
fn without_nonroot_note(stderr: String) -> String {
    if nix::unistd::geteuid().is_root() {
        return stderr;
    }
    stderr
        .split_inclusive('\n')
        .filter(|l| !l.starts_with("sbx: note: running as a non-root user"))
        .collect()
}

/// A builder for an sbx invocation.
pub struct Sbx {
    pub cmd: Command,
    pub timeout: Duration,
}

impl Sbx {
    pub fn new<I, S>(args: I) -> Sbx
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let mut cmd = Command::new(sbx_bin());
        cmd.args(args);
        Sbx {
            cmd,
            timeout: Duration::from_secs(60),
        }
    }
    pub fn cwd(mut self, dir: &Path) -> Sbx {
        self.cmd.current_dir(dir);
        self
    }
    pub fn env(mut self, k: &str, v: impl AsRef<OsStr>) -> Sbx {
        self.cmd.env(k, v);
        self
    }
    /// Append more arguments, then run.
    pub fn run_with(mut self, args: &[&OsStr]) -> Output {
        self.cmd.args(args);
        self.run()
    }
    pub fn run(self) -> Output {
        run_guarded(self.cmd, self.timeout)
    }
}

/// Run a plain command (without sbx) with the hang guard.
pub fn bare<I, S>(prog: &str, args: I, dir: &Path) -> Output
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let mut cmd = Command::new(prog);
    cmd.args(args).current_dir(dir);
    run_guarded(cmd, Duration::from_secs(60))
}

static FIXTURE_LOCK: Mutex<()> = Mutex::new(());

/// Tests that load both cores for minutes (the ecosystem workloads) share this lock; the
/// attack suite, whose races are timing-sensitive (a thread must hit a window of a few
/// microseconds within N tries), takes it alone, so they never run at the same time.
static HEAVY: std::sync::RwLock<()> = std::sync::RwLock::new(());

/// Hold while running a heavy workload test (shared with other heavy tests).
pub fn heavy_shared() -> std::sync::RwLockReadGuard<'static, ()> {
    HEAVY.read().unwrap_or_else(|e| e.into_inner())
}

/// Hold while running timing-sensitive races: no heavy test runs meanwhile.
pub fn heavy_exclusive() -> std::sync::RwLockWriteGuard<'static, ()> {
    HEAVY.write().unwrap_or_else(|e| e.into_inner())
}

/// A command running `program` as `user` (`setpriv --reuid --regid --clear-groups`), or as
/// the suite's own user for `None`.
pub fn as_user(user: Option<u32>, program: impl AsRef<OsStr>) -> Command {
    match user {
        Some(uid) => {
            let mut c = Command::new("setpriv");
            c.arg(format!("--reuid={uid}"))
                .arg(format!("--regid={uid}"))
                .arg("--clear-groups")
                .arg(program);
            c
        }
        None => Command::new(program),
    }
}

/// Compile `tests/fixtures/NAME.c` once per test run; returns the binary's path.
pub fn fixture(name: &str) -> PathBuf {
    let _g = FIXTURE_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(format!("{name}.c"));
    let out_dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("fixtures");
    std::fs::create_dir_all(&out_dir).unwrap();
    let bin = out_dir.join(name);
    let fresh = bin.metadata().and_then(|b| b.modified()).ok()
        >= src.metadata().and_then(|s| s.modified()).ok();
    if !bin.exists() || !fresh {
        let st = Command::new("gcc")
            .args(["-O1", "-Wall", "-pthread", "-o"])
            .arg(&bin)
            .arg(&src)
            .status()
            .expect("gcc must be installed (see .ci/run)");
        assert!(st.success(), "compiling fixture {name} failed");
    }
    bin
}

/// Read a whole trace.
pub fn read_trace(path: &Path) -> (Header, Vec<Event>) {
    let f = std::io::BufReader::new(std::fs::File::open(path).unwrap());
    let mut r = TraceReader::new(f).unwrap();
    let header = r.header().clone();
    let events: Vec<Event> = r.by_ref().map(|e| e.unwrap()).collect();
    assert_eq!(r.truncated(), None, "trace unexpectedly truncated");
    (header, events)
}

/// Record `args` in `dir` into `dir/trace.bin`; returns the output and the events.
pub fn record(dir: &Path, args: &[&str]) -> (Output, Header, Vec<Event>) {
    let trace = dir.join("trace.bin");
    let mut a: Vec<&OsStr> = vec![
        OsStr::new("record"),
        OsStr::new("-o"),
        trace.as_os_str(),
        OsStr::new("--"),
    ];
    a.extend(args.iter().map(OsStr::new));
    let out = Sbx::new(a).cwd(dir).run();
    let (h, ev) = read_trace(&trace);
    (out, h, ev)
}

/// Lossy string of a byte path.
pub fn s(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Replace process and thread ids in `sbx show` text by stable names: `[1234]` → `[N1]`,
/// `[1234/1240]` → `[N1/N2]`, `-> 1241` (a spawned child) → `-> N3`. The same number gets the
/// same name everywhere, numbered in order of first appearance.
pub fn normalize_pids(text: &str) -> String {
    let mut names: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    let mut name = |num: &str| {
        let n = names.len() + 1;
        format!("N{}", *names.entry(num.to_string()).or_insert(n))
    };
    let digits = |s: &str| s.bytes().take_while(u8::is_ascii_digit).count();
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix('[') {
            let a = digits(after);
            if a > 0 {
                let tail = &after[a..];
                if let Some(t) = tail.strip_prefix(']') {
                    out.push_str(&format!("[{}]", name(&after[..a])));
                    rest = t;
                    continue;
                }
                if let Some(t) = tail.strip_prefix('/') {
                    let b = digits(t);
                    if b > 0 && t[b..].starts_with(']') {
                        let (p, q) = (name(&after[..a]), name(&t[..b]));
                        out.push_str(&format!("[{p}/{q}]"));
                        rest = &t[b + 1..];
                        continue;
                    }
                }
            }
        }
        if let Some(after) = rest.strip_prefix("-> ") {
            let a = digits(after);
            if a > 0 && !after[a..].starts_with(|c: char| c.is_alphanumeric()) {
                out.push_str(&format!("-> {}", name(&after[..a])));
                rest = &after[a..];
                continue;
            }
        }
        let c = rest.chars().next().unwrap_or(' ');
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    out
}

/// Run `sbx ARGS...` with the hang guard (a short form of `Sbx::new(args).run()`).
pub fn sbx<I, S>(args: I) -> Output
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    Sbx::new(args).run()
}

/// `sbx show --json TRACE EXTRA...`: every stdout line parsed as JSON (panics on a bad line).
pub fn show_json(trace: &Path, extra: &[&str]) -> (Output, Vec<serde_json::Value>) {
    let mut a: Vec<&OsStr> = vec![OsStr::new("show"), OsStr::new("--json"), trace.as_os_str()];
    a.extend(extra.iter().map(OsStr::new));
    let out = Sbx::new(a).run();
    let v = out
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("bad JSON line ({e}): {l}")))
        .collect();
    (out, v)
}

/// Assert the text says nothing about a Rust panic.
pub fn assert_no_panic(out: &Output) {
    assert!(
        !out.stderr.contains("panicked") && !out.stderr.contains("RUST_BACKTRACE"),
        "sbx panicked:\n{}",
        out.stderr
    );
    assert_ne!(out.code, Some(101), "exit 101 is a panic:\n{}", out.stderr);
}

/// Run `sbx record -o TRACE -- ARGS` in `cwd` with environment changes (`None` removes the
/// variable); returns the output and the events.
pub fn record_env(
    cwd: &Path,
    trace: &Path,
    args: &[&str],
    envs: &[(&str, Option<&OsStr>)],
) -> (Output, Header, Vec<Event>) {
    let mut a: Vec<&OsStr> = vec![
        OsStr::new("record"),
        OsStr::new("-o"),
        trace.as_os_str(),
        OsStr::new("--"),
    ];
    a.extend(args.iter().map(OsStr::new));
    let mut sbx = Sbx::new(a).cwd(cwd);
    for (k, v) in envs {
        match v {
            Some(v) => sbx = sbx.env(k, v),
            None => {
                sbx.cmd.env_remove(k);
            }
        }
    }
    sbx.timeout = Duration::from_secs(120);
    let out = sbx.run();
    let (h, ev) = read_trace(trace);
    (out, h, ev)
}

/// Run `sbx learn TRACES... -o OUT EXTRA...` (the real CLI path); returns the profile text.
pub fn learn_cli(traces: &[&Path], out: &Path, extra: &[&str]) -> String {
    let mut a: Vec<&OsStr> = vec![OsStr::new("learn")];
    a.extend(traces.iter().map(|t| t.as_os_str()));
    a.extend([OsStr::new("-o"), out.as_os_str()]);
    a.extend(extra.iter().map(OsStr::new));
    Sbx::new(a).run().assert_code(0);
    std::fs::read_to_string(out).unwrap()
}

/// The policy [`sbx::profile::vars::Env`] of a recorded run: its start directory, HOME and
/// TMPDIR as the trace header saw them.
pub fn env_of(h: &Header) -> sbx::profile::vars::Env {
    sbx::profile::vars::Env {
        cwd: s(&h.cwd),
        home: s(&h.home),
        tmpdir: s(&h.tmpdir),
        vars: Default::default(),
    }
}

/// [`env_of`] with the run's tool homes (`${CARGO_HOME}`...), inferred from its events as
/// learn and explain do.
pub fn env_of_run(h: &Header, events: &[sbx::event::Event]) -> sbx::profile::vars::Env {
    let mut homes = sbx::learn::homes::Homes::default();
    for ev in events {
        homes.observe(ev);
    }
    let mut env = env_of(h);
    homes.apply(&mut env.vars);
    env
}

/// Is a syscall gated (must be allowed by name)? From the native arch table, like learn.
pub fn is_gated(name: &str) -> bool {
    use sbx::arch::{Arch, Class};
    Arch::native()
        .by_name(name)
        .is_none_or(|d| matches!(d.class, Class::Gated | Class::Spawn))
}

/// Events that `CompiledPolicy::admits_event_with` refuses although enforce must not, because
/// of known gaps outside learn (reported to the lead; see tests/learn.rs
/// `known_gaps_are_still_there`). Returns which gap, or `None`.
///
/// - `proc-self`: decode rewrites `/proc/self/X` to `/proc/PID/X` in `abs` (with `resolved`
///   unset), while the policy treats `/proc/PID/X` as the same object as `/proc/self/X` only
///   when `abs` still says `/proc/self`: every node process's read of `/proc/self/maps` is
///   refused.
/// - `netlink`: glibc and libuv bind and send on AF_NETLINK (route) sockets to list interface
///   addresses; the profile format has no netlink rule and the policy refuses them.
pub fn known_gap(ev: &Event) -> Option<&'static str> {
    use sbx::event::{EventKind, Object, SockAddr};
    let EventKind::Syscall(sc) = &ev.kind else {
        return None;
    };
    for t in &sc.targets {
        match &t.object {
            Object::Path(p) => {
                let own = format!("/proc/{}/", ev.pid).into_bytes();
                if p.literal.starts_with(b"/proc/self/")
                    && p.abs.starts_with(&own)
                    && p.resolved.is_none()
                {
                    return Some("proc-self");
                }
            }
            Object::Socket(SockAddr::Other { family: 16, .. }) => return Some("netlink"),
            _ => {}
        }
    }
    None
}

/// Does enforce judge this event at all? Target-less syscall events are judged by name only
/// when the syscall is gated (socket() without an address and the setuid family are not).
pub fn is_judged(ev: &Event) -> bool {
    match &ev.kind {
        sbx::event::EventKind::Syscall(sc) => !sc.targets.is_empty() || is_gated(&sc.name),
        _ => true,
    }
}

/// Every event of `events` the policy does not admit, one line each (empty = all admitted).
/// With `skip_known`, events of a [`known_gap`] are left out.
pub fn not_admitted_with(
    policy: &sbx::policy::CompiledPolicy,
    events: &[Event],
    skip_known: bool,
) -> Vec<String> {
    let mut out = std::collections::BTreeSet::new();
    // What the run created so far: enforce's provenance, replayed by path.
    let mut owned = sbx::learn::own::Ownership::default();
    for ev in events {
        let judged = is_judged(ev) && !(skip_known && known_gap(ev).is_some());
        let admitted = !judged || admitted_if_absent(policy, ev, &owned);
        let refused = if admitted {
            Vec::new()
        } else {
            policy.admits_event_owned(ev, &is_gated, Some(&owned))
        };
        owned.replay(ev);
        for (verb, obj) in refused {
            let what = match &ev.kind {
                sbx::event::EventKind::Syscall(sc) => sc.name.clone(),
                sbx::event::EventKind::Exec(_) => "exec".to_string(),
                _ => String::new(),
            };
            if std::env::var_os("SBX_TEST_DEBUG").is_some() {
                eprintln!("not admitted: {ev:?}");
            }
            out.insert(format!(
                "{} {obj} ({what} by {})",
                verb.name(),
                s(&ev.proc.comm)
            ));
        }
    }
    out.into_iter().collect()
}

/// A syscall whose result the trace does not know (a failed execve is sometimes recorded with
/// `Outcome::Unknown`) is judged like enforce judges it before it runs: every target allowed,
/// or allowed only while absent (a `probe` rule) and absent on disk now.
fn admitted_if_absent(
    policy: &sbx::policy::CompiledPolicy,
    ev: &Event,
    owned: &sbx::learn::own::Ownership,
) -> bool {
    use sbx::event::{EventKind, Object, Outcome};
    use sbx::policy::Decision;
    let EventKind::Syscall(sc) = &ev.kind else {
        return false;
    };
    if sc.outcome != Outcome::Unknown || sc.targets.is_empty() || is_gated(&sc.name) {
        return false;
    }
    sc.targets
        .iter()
        .all(|t| match policy.decide_owned(t.access, &t.object, owned) {
            Decision::Allow => true,
            Decision::AllowIfAbsent => match &t.object {
                Object::Path(p) => {
                    let path = Path::new(std::ffi::OsStr::from_bytes(p.effective()));
                    path.symlink_metadata().is_err()
                }
                _ => false,
            },
            Decision::Deny { .. } => false,
        })
}

/// [`not_admitted_with`], leaving out the [`known_gap`]s.
pub fn not_admitted(policy: &sbx::policy::CompiledPolicy, events: &[Event]) -> Vec<String> {
    not_admitted_with(policy, events, true)
}
