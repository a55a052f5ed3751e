//! The trace-reading CLI on bad input (garbage, wrong magic, newer version, cut traces, a
//! recorder killed mid-write), the profile commands' exit codes, and trace size per event.

use std::ffi::OsStr;
use std::path::Path;
use std::time::{Duration, Instant};

use crate::util::{Dir, Output, Sbx, assert_no_panic, record};

fn sbx_on(sub: &str, file: &Path) -> Output {
    let out = Sbx::new([OsStr::new(sub), file.as_os_str()]).run();
    assert_no_panic(&out);
    out
}

/// An sbx error: exit 125, exactly one stderr line, naming the file.
fn assert_error(out: &Output, file: &Path, what: &str) {
    assert_no_panic(out);
    assert_eq!(out.code, Some(125), "{what}: {out:?}");
    assert_eq!(out.stderr.lines().count(), 1, "{what}: {}", out.stderr);
    assert!(
        out.stderr.starts_with("sbx: error: "),
        "{what}: {}",
        out.stderr
    );
    let name = file.file_name().unwrap().to_str().unwrap();
    assert!(
        out.stderr.contains(name),
        "{what}: no file name: {}",
        out.stderr
    );
}

/// A real trace of a small run.
fn real_trace(d: &Dir) -> Vec<u8> {
    let (out, _, ev) = record(
        d.path(),
        &[
            "sh",
            "-c",
            "cat /etc/hostname >/dev/null; ls / >/dev/null; true",
        ],
    );
    out.assert_code(0);
    assert!(ev.len() > 20);
    std::fs::read(d.join("trace.bin")).unwrap()
}

/// Deterministic pseudo-random bytes (xorshift), so a failure reproduces.
fn noise(seed: u64, n: usize) -> Vec<u8> {
    let mut x = seed | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x.to_le_bytes()[3]
        })
        .collect()
}

#[test]
fn garbage_wrong_magic_and_newer_version_are_one_line_errors() {
    let d = Dir::new();
    let good = real_trace(&d);
    let mut cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("random.bin", noise(7, 4096), "bad magic"),
        ("empty.bin", vec![], "not an sbx trace"),
        (
            "magic.bin",
            [b"SBXTRACX".as_slice(), &good[8..]].concat(),
            "bad magic",
        ),
        ("short.bin", good[..5].to_vec(), "header is cut short"),
    ];
    let mut newer = good.clone();
    let next = sbx::trace::FORMAT_VERSION + 1;
    newer[8..12].copy_from_slice(&next.to_le_bytes());
    let want = format!("format version {next} is newer");
    cases.push(("newer.bin", newer, want.as_str()));
    let mut huge = good.clone();
    huge[8..12].copy_from_slice(&u32::MAX.to_le_bytes());
    cases.push(("huge-version.bin", huge, "is newer"));
    let mut zero = good.clone();
    zero[8..12].copy_from_slice(&0u32.to_le_bytes());
    cases.push(("zero-version.bin", zero, "version 0"));
    // Random bytes after a valid magic and version.
    cases.push((
        "noise-after-magic.bin",
        [&good[..12], &noise(11, 2048)].concat(),
        "byte ",
    ));
    for (name, bytes, msg) in &cases {
        let f = d.path().join(name);
        std::fs::write(&f, bytes).unwrap();
        for sub in ["show", "stats", "learn"] {
            let out = sbx_on(sub, &f);
            assert_error(&out, &f, &format!("{sub} {name}"));
            assert!(out.stderr.contains(msg), "{sub} {name}: {}", out.stderr);
            assert_eq!(out.stdout, "", "{sub} {name} printed output");
        }
    }
    // The committed fixture and a missing file.
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/traces/bad-magic.bin");
    assert_error(&sbx_on("show", &fixture), &fixture, "bad-magic.bin");
    let missing = d.join("no-such-trace.bin");
    assert_error(&sbx_on("show", &missing), &missing, "missing");
    assert_error(&sbx_on("learn", &missing), &missing, "missing");
}

#[test]
fn random_mutations_never_panic() {
    let d = Dir::new();
    let good = real_trace(&d);
    let f = d.join("mutant.bin");
    for seed in 1..40u64 {
        let mut b = good.clone();
        let r = noise(seed, 8);
        // Flip a few bytes past the magic+version.
        for k in 0..4 {
            let i = 12 + (usize::from(r[k]) * 251 + usize::from(r[k + 4]) * 13) % (b.len() - 12);
            b[i] ^= r[k] | 1;
        }
        std::fs::write(&f, &b).unwrap();
        let out = sbx_on("show", &f);
        match out.code {
            Some(0) => assert!(
                out.stderr.is_empty() || out.stderr.lines().count() == 1,
                "seed {seed}: {}",
                out.stderr
            ),
            Some(125) => assert_error(&out, &f, &format!("seed {seed}")),
            c => panic!("seed {seed}: exit {c:?}: {}", out.stderr),
        }
    }
}

#[test]
fn truncated_traces_read_to_the_last_whole_record() {
    let d = Dir::new();
    let good = real_trace(&d);
    let full = Sbx::new([
        OsStr::new("stats"),
        OsStr::new("--count"),
        d.join("trace.bin").as_os_str(),
    ])
    .run();
    full.assert_code(0);
    let total: usize = full.stdout.trim().parse().unwrap();
    let full_show = Sbx::new([OsStr::new("show"), d.join("trace.bin").as_os_str()]).run();
    full_show.assert_code(0);
    let f = d.join("cut.bin");
    let mut warned = 0;
    let mut last = 0;
    // Cut at many offsets past the header; events read never exceed the whole trace's, and
    // grow with the cut; the text printed is a prefix of the full text.
    let header_end = 200.min(good.len() / 4);
    let step = (good.len() - header_end) / 37;
    for cut in (header_end..good.len()).step_by(step.max(1)) {
        std::fs::write(&f, &good[..cut]).unwrap();
        let out = sbx_on("show", &f);
        if out.code == Some(125) && out.stderr.contains("header is cut short") {
            continue;
        }
        out.assert_code(0);
        assert!(
            full_show.stdout.starts_with(&out.stdout),
            "cut {cut}: not a prefix"
        );
        let n = out.stdout.lines().count();
        assert!(n >= last && n < total, "cut {cut}: {n} lines of {total}");
        last = n;
        match out.stderr.lines().count() {
            0 => {} // the cut fell on a record boundary
            1 => {
                warned += 1;
                assert!(out.stderr.starts_with("sbx: warning: "), "{}", out.stderr);
                assert!(out.stderr.contains("cut.bin"), "{}", out.stderr);
                assert!(out.stderr.contains("cut short at byte "), "{}", out.stderr);
            }
            _ => panic!("cut {cut}: more than one line:\n{}", out.stderr),
        }
        let count = sbx_on("stats", &f);
        count.assert_code(0);
        assert!(count.stderr.lines().count() <= 1, "{}", count.stderr);
        let learn = sbx_on("learn", &f);
        learn.assert_code(0);
    }
    assert!(warned > 10, "only {warned} cuts warned");
    // The committed fixture.
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/traces/truncated.bin");
    let out = sbx_on("show", &fixture);
    out.assert_code(0);
    assert!(!out.stdout.is_empty());
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
    assert!(out.stderr.contains("truncated.bin"));
    // A cut inside the header is an error, not a warning.
    std::fs::write(&f, &good[..20]).unwrap();
    let out = sbx_on("show", &f);
    assert_error(&out, &f, "cut in header");
    assert!(out.stderr.contains("header is cut short"), "{}", out.stderr);
}

#[test]
fn learn_warns_once_about_a_truncated_trace() {
    let d = Dir::new();
    let good = real_trace(&d);
    let f = d.join("cut.bin");
    std::fs::write(&f, &good[..good.len() - 3]).unwrap();
    let out = sbx_on("learn", &f);
    out.assert_code(0);
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
}

#[test]
fn learn_says_when_the_evidence_is_thin() {
    let d = Dir::new();
    let (out, _, _) = record(
        d.path(),
        &["sh", "-c", "cat /etc/hostname >/dev/null; exit 3"],
    );
    out.assert_code(3);
    let learned = sbx_on("learn", &d.join("trace.bin"));
    learned.assert_code(0);
    assert!(
        learned.stderr.contains("the recorded run failed (exit 3)"),
        "{}",
        learned.stderr
    );
    assert_eq!(learned.stderr.lines().count(), 1, "{}", learned.stderr);
    // A run that succeeded says nothing.
    let (out, _, _) = record(d.path(), &["sh", "-c", "cat /etc/hostname >/dev/null"]);
    out.assert_code(0);
    let learned = sbx_on("learn", &d.join("trace.bin"));
    assert!(learned.stderr.is_empty(), "{}", learned.stderr);
}

#[test]
fn a_failed_record_does_not_replace_an_earlier_trace_nor_learn_its_own_file() {
    let d = Dir::new();
    // The workload reads every file of its directory, the trace being written included.
    let (out, _, _) = record(d.path(), &["sh", "-c", "cat ./* >/dev/null 2>&1; true"]);
    out.assert_code(0);
    let first = std::fs::read(d.join("trace.bin")).unwrap();
    let learned = sbx_on("learn", &d.join("trace.bin"));
    learned.assert_code(0);
    assert!(!learned.stdout.contains("trace.bin"), "{}", learned.stdout);
    assert!(
        !learned.stdout.contains("sbx-partial"),
        "{}",
        learned.stdout
    );
    // A failed run leaves the earlier trace as it was, and its own beside it.
    let (out, _, _) = record(d.path(), &["sh", "-c", "exit 4"]);
    out.assert_code(4);
    assert_eq!(std::fs::read(d.join("trace.bin")).unwrap(), first);
    assert!(out.stderr.contains("not replaced"), "{}", out.stderr);
    assert!(d.join(".trace.bin.sbx-partial").exists());
}

#[test]
fn outputs_that_are_not_files_are_written_in_place() {
    // `sbx learn -o /dev/null` renamed its output over the device node: /dev/null became a
    // regular file holding the profile (found by tests/ecosystems.rs, which broke git).
    use std::os::unix::fs::FileTypeExt;
    let d = Dir::new();
    let (out, _, _) = record(d.path(), &["true"]);
    out.assert_code(0);
    let trace = d.join("trace.bin");
    // A symlink to a file: the file gets the text, the link stays a link.
    let target = d.join("real.profile");
    std::fs::write(&target, "").unwrap();
    let link = d.join("link.profile");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    Sbx::new([
        OsStr::new("learn"),
        trace.as_os_str(),
        OsStr::new("-o"),
        link.as_os_str(),
    ])
    .run()
    .assert_code(0);
    assert!(
        std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert!(
        std::fs::read_to_string(&target)
            .unwrap()
            .contains("learned by sbx")
    );
    // The device itself (a character device before and after).
    let null = Path::new("/dev/null");
    Sbx::new([
        OsStr::new("learn"),
        trace.as_os_str(),
        OsStr::new("-o"),
        null.as_os_str(),
    ])
    .run()
    .assert_code(0);
    let recorded = Sbx::new(["record", "-o", "/dev/null", "--", "true"]).run();
    recorded.assert_code(0);
    assert!(
        std::fs::symlink_metadata(null)
            .unwrap()
            .file_type()
            .is_char_device()
    );
}

#[test]
fn check_diff_profiles_and_syscalls_exit_codes() {
    let d = Dir::new();
    // check: an error is exit 1 with file:line:col.
    let bad = d.write(
        "bad.profile",
        "include base\nread /etc/passwd\nfrobnicate /x\n",
    );
    let out = sbx_on("check", &bad);
    out.assert_code(1);
    assert!(out.stderr.contains("bad.profile:3:1:"), "{}", out.stderr);
    // Every error in one pass, an unknown snippet among syntax errors included.
    let bad3 = d.write(
        "bad3.profile",
        "include base\nfrobnicate /x\ninclude nosuch\nread rel\n",
    );
    let out = sbx_on("check", &bad3);
    out.assert_code(1);
    for at in [
        "bad3.profile:2:1:",
        "bad3.profile:3:1: unknown snippet",
        "bad3.profile:4:6:",
    ] {
        assert!(out.stderr.contains(at), "{at}: {}", out.stderr);
    }
    let bad2 = d.write("bad2.profile", "read /etc/passwd\nread   relative/path\n");
    let out = sbx_on("check", &bad2);
    out.assert_code(1);
    assert!(out.stderr.contains("bad2.profile:2:8:"), "{}", out.stderr);
    let good = d.write(
        "good.profile",
        "include base\nread /etc/passwd\nwrite /tmp/**\n",
    );
    sbx_on("check", &good).assert_code(0);
    let missing = d.join("missing.profile");
    assert_error(&sbx_on("check", &missing), &missing, "check missing");

    // diff: 0 on equal, 1 with +/- lines on different.
    let same = d.write(
        "same.profile",
        "include base\nread /etc/passwd\nwrite /tmp/**\n",
    );
    let run_diff = |a: &Path, b: &Path| {
        let out = Sbx::new([
            OsStr::new("diff"),
            OsStr::new("--color=never"),
            a.as_os_str(),
            b.as_os_str(),
        ])
        .run();
        assert_no_panic(&out);
        out
    };
    let eq = run_diff(&good, &same);
    eq.assert_code(0);
    assert!(
        !eq.stdout
            .lines()
            .any(|l| l.starts_with('+') || l.starts_with('-'))
    );
    // Comments alone (provenance, a WARNING) do not make the profiles differ.
    let commented = d.write(
        "commented.profile",
        "# learned on another day\ninclude base\n# WARNING: a secret\nread /etc/passwd\nwrite /tmp/**\n",
    );
    let eq = run_diff(&good, &commented);
    eq.assert_code(0);
    assert!(eq.stdout.is_empty(), "{}", eq.stdout);
    assert!(eq.stderr.contains("only in comments"), "{}", eq.stderr);
    let other = d.write(
        "other.profile",
        "include base\nread /etc/hosts\nwrite /tmp/**\n",
    );
    // A binding is part of what a profile allows: `by` lists are checked and diffed.
    let unbound = d.write("unbound.profile", "include node\nread ${HOME}/.npmrc\n");
    let bound = d.write(
        "bound.profile",
        "include node\nread ${HOME}/.npmrc by npm\n",
    );
    sbx_on("check", &bound).assert_code(0);
    let undefined = d.write("undefined.profile", "read /etc/passwd by nosuch\n");
    let out = sbx_on("check", &undefined);
    out.assert_code(1);
    assert!(
        out.stderr
            .contains("undefined.profile:1:1: unknown program \"nosuch\""),
        "{}",
        out.stderr
    );
    let widened = run_diff(&bound, &unbound);
    widened.assert_code(1);
    assert!(
        widened
            .stdout
            .lines()
            .any(|l| l == "-read ${HOME}/.npmrc by npm")
            && widened.stdout.lines().any(|l| l == "+read ${HOME}/.npmrc"),
        "{}",
        widened.stdout
    );
    let ne = run_diff(&good, &other);
    ne.assert_code(1);
    let lines: Vec<&str> = ne.stdout.lines().collect();
    assert!(lines.contains(&"-read /etc/passwd"), "{}", ne.stdout);
    assert!(lines.contains(&"+read /etc/hosts"), "{}", ne.stdout);
    assert!(
        !lines
            .iter()
            .any(|l| l.contains("write /tmp/**") && !l.starts_with(' '))
    );

    // profiles: the shipped snippets.
    let out = Sbx::new(["profiles"]).run();
    out.assert_code(0);
    let names: Vec<&str> = out
        .stdout
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    for n in ["base", "node", "python", "shell", "git", "tmp"] {
        assert!(names.contains(&n), "{n} not listed: {}", out.stdout);
    }
    let node = Sbx::new(["profiles", "node"]).run();
    node.assert_code(0);
    assert!(
        node.stdout
            .lines()
            .any(|l| l.starts_with("read ") || l.starts_with("exec "))
    );
    let nope = Sbx::new(["profiles", "no-such-snippet"]).run();
    assert_no_panic(&nope);
    assert_ne!(nope.code, Some(0));

    // syscalls --stopped: the stopped ones, not the free ones.
    let out = Sbx::new(["syscalls", "--stopped"]).run();
    out.assert_code(0);
    let stopped: Vec<&str> = out.stdout.split_whitespace().collect();
    for s in ["openat", "execve", "unlinkat", "connect", "ptrace"] {
        assert!(stopped.contains(&s), "{s} not stopped");
    }
    for s in ["read", "write", "close", "mmap", "getpid"] {
        assert!(!stopped.contains(&s), "{s} is stopped");
    }
}

/// Run sbx with stdout a pipe whose read end is already closed: every write fails with EPIPE.
fn into_closed_pipe(args: &[&OsStr]) -> Output {
    let (r, w) = nix::unistd::pipe().unwrap();
    drop(r);
    let mut cmd = std::process::Command::new(crate::util::sbx_bin());
    cmd.args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::from(w))
        .stderr(std::process::Stdio::piped());
    let out = cmd.output().unwrap();
    use std::os::unix::process::ExitStatusExt;
    Output {
        code: out.status.code(),
        signal: out.status.signal(),
        stdout: String::new(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        elapsed: Duration::ZERO,
    }
}

#[test]
fn syscalls_into_a_closed_pipe_does_not_panic() {
    let out = into_closed_pipe(&[OsStr::new("syscalls")]);
    assert!(!out.stderr.contains("panicked"), "{}", out.stderr);
}

#[test]
fn show_into_a_closed_pipe_is_quiet() {
    let d = Dir::new();
    let (out, _, _) = record(d.path(), &["sh", "-c", "cat /etc/hostname >/dev/null"]);
    out.assert_code(0);
    let trace = d.join("trace.bin");
    for args in [
        &["show"][..],
        &["show", "--json"],
        &["stats"],
        &["stats", "--count"],
    ] {
        let mut a: Vec<&OsStr> = args.iter().map(OsStr::new).collect();
        a.push(trace.as_os_str());
        let out = into_closed_pipe(&a);
        assert!(!out.stderr.contains("panicked"), "{args:?}: {}", out.stderr);
        assert!(
            !out.stderr.contains("Broken pipe"),
            "{args:?}: {}",
            out.stderr
        );
        assert_eq!(out.code, Some(0), "{args:?}: {}", out.stderr);
    }
}

/// Whether a live process has `marker` in its command line.
fn processes_with(marker: &str) -> Vec<i32> {
    let mut v = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        if let Ok(cmd) = std::fs::read(e.path().join("cmdline"))
            && String::from_utf8_lossy(&cmd).contains(marker)
        {
            v.push(pid);
        }
    }
    v
}

#[test]
fn trace_of_a_sigkilled_recorder_reads_back() {
    let d = Dir::new();
    let marker = format!("sbx-kill-marker-{}", std::process::id());
    let script = format!(
        "i=0; while [ $i -lt 2000 ]; do cat /etc/hostname >/dev/null; i=$((i+1)); done; : {marker}"
    );
    let trace = d.join("t.bin");
    let mut child = std::process::Command::new(crate::util::sbx_bin())
        .args([
            OsStr::new("record"),
            OsStr::new("-o"),
            trace.as_os_str(),
            OsStr::new("--"),
        ])
        .args(["sh", "-c", &script])
        .current_dir(d.path())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(500));
    assert!(
        child.try_wait().unwrap().is_none(),
        "the workload finished too early"
    );
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(i32::try_from(child.id()).unwrap()),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    let st = child.wait().unwrap();
    assert!(!st.success());
    // The workload dies with its tracer (PTRACE_O_EXITKILL); give the kernel a moment.
    let start = Instant::now();
    let mut left = processes_with(&marker);
    while !left.is_empty() && start.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(50));
        left = processes_with(&marker);
    }
    for pid in &left {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(*pid),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
    assert!(left.is_empty(), "workload survived sbx: {left:?}");

    // The trace is written beside the output and renamed only when the run is done: the
    // killed recorder left it under its partial name, readable.
    assert!(!trace.exists());
    let trace = d.join(".t.bin.sbx-partial");
    let out = sbx_on("show", &trace);
    out.assert_code(0);
    let lines = out.stdout.lines().count();
    assert!(lines > 10, "only {lines} events before the kill");
    assert!(out.stdout.contains("\"/etc/hostname\""));
    assert!(out.stderr.lines().count() <= 1, "{}", out.stderr);
    if !out.stderr.is_empty() {
        assert!(out.stderr.starts_with("sbx: warning: "), "{}", out.stderr);
        assert!(
            out.stderr.contains("t.bin.sbx-partial: trace cut short"),
            "{}",
            out.stderr
        );
    }
    eprintln!(
        "killed recorder: {} bytes, {lines} events readable, warning: {}",
        std::fs::metadata(&trace).unwrap().len(),
        !out.stderr.is_empty()
    );
    let stats = sbx_on("stats", &trace);
    stats.assert_code(0);
    assert!(stats.stdout.contains(", no exit seen"), "{}", stats.stdout);
    sbx_on("learn", &trace).assert_code(0);
}

#[test]
fn trace_size_per_event() {
    let d = Dir::new();
    let (out, _, ev) = record(
        d.path(),
        &[
            "sh",
            "-c",
            "i=0; while [ $i -lt 200 ]; do cat /etc/hostname >/dev/null; ls -d /usr/lib >/dev/null; i=$((i+1)); done",
        ],
    );
    out.assert_code(0);
    let bytes = std::fs::metadata(d.join("trace.bin")).unwrap().len();
    let n = u64::try_from(ev.len()).unwrap();
    assert!(n > 10_000, "{n} events");
    let per = bytes as f64 / n as f64;
    eprintln!("trace size: {bytes} bytes for {n} events = {per:.1} bytes/event");
    // The format's stated ballpark is ~30 bytes/event; a regression to, say, uninterned paths
    // would be several times that.
    assert!(per < 60.0, "{per:.1} bytes/event");
}

/// CLI manners: version with the git revision, completions, a man page, -q.
#[test]
fn version_completions_man_and_quiet() {
    let v = crate::util::sbx(["--version"]);
    assert_eq!(v.code, Some(0));
    assert!(
        v.stdout.starts_with("sbx ") && v.stdout.contains("(git "),
        "{}",
        v.stdout
    );
    let c = crate::util::sbx(["completions", "bash"]);
    assert_eq!(c.code, Some(0));
    assert!(
        c.stdout.contains("_sbx()") && c.stdout.contains("enforce"),
        "{}",
        c.stdout
    );
    let m = crate::util::sbx(["man"]);
    assert_eq!(m.code, Some(0));
    assert!(m.stdout.contains(".TH sbx 1"), "{}", m.stdout);
    // One page per subcommand: every page sbx(1) points at exists.
    let md = crate::util::Dir::new();
    let out = crate::util::sbx([
        OsStr::new("man"),
        OsStr::new("--dir"),
        md.path().as_os_str(),
    ]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let top = std::fs::read_to_string(md.join("sbx.1")).unwrap();
    let mut pointed = 0;
    for part in top.split("sbx\\-").skip(1) {
        let Some((name, _)) = part.split_once("(1)") else {
            continue;
        };
        assert!(
            md.join(&format!("sbx-{name}.1")).exists(),
            "sbx.1 points at sbx-{name}(1), which was not written"
        );
        pointed += 1;
    }
    assert!(pointed >= 12, "{top}");
    let e = crate::util::sbx(["man", "enforce"]);
    assert_eq!(e.code, Some(0));
    assert!(e.stdout.contains(".TH sbx-enforce 1"), "{}", e.stdout);
    assert!(e.stdout.contains("\\-\\-sarif"), "{}", e.stdout);
    assert_eq!(
        std::fs::read_to_string(md.join("sbx-enforce.1")).unwrap(),
        e.stdout
    );
    let bad = crate::util::sbx(["man", "nosuch"]);
    assert_eq!(bad.code, Some(2));
    assert!(
        bad.stderr.contains("no subcommand \"nosuch\""),
        "{}",
        bad.stderr
    );
    // -q: the violation line stays, the diff goes.
    let d = crate::util::Dir::new();
    let p = d.write("p.profile", "include base\nexec /usr/bin/cat\n");
    d.write("secret.txt", "x\n");
    let run = |args: &[&str]| {
        let mut s = crate::util::Sbx::new(args).cwd(d.path());
        // cargo's LD_LIBRARY_PATH would make cat probe libraries in target/.
        s.cmd.env_remove("LD_LIBRARY_PATH");
        s.run()
    };
    let p = p.to_str().unwrap();
    let loud = run(&["enforce", p, "--", "/usr/bin/cat", "secret.txt"]);
    let quiet = run(&["-q", "enforce", p, "--", "/usr/bin/cat", "secret.txt"]);
    assert_eq!(loud.code, Some(124));
    assert_eq!(quiet.code, Some(124));
    assert!(
        loud.stderr.contains("+read ${CWD}/secret.txt"),
        "{}",
        loud.stderr
    );
    assert!(quiet.stderr.contains("sbx: violation:"), "{}", quiet.stderr);
    assert!(!quiet.stderr.contains("+read"), "{}", quiet.stderr);
}

/// The live status appears on a terminal (script(1) gives sbx one) and never when stderr is a
/// pipe; it goes into the terminal's title, so a partial line the workload printed (a
/// progress bar) is never erased: no `\r` + erase-line in the output, the partial text and
/// what follows it on the same line intact.
#[test]
fn status_line_only_on_a_terminal() {
    let d = crate::util::Dir::new();
    let trace = d.join("t.bin");
    let work = "printf partial-progress; i=0; while [ $i -lt 300 ]; do cat /etc/hostname >/dev/null; i=$((i+1)); done; echo -done";
    let piped = crate::util::Sbx::new([
        "record",
        "-o",
        trace.to_str().unwrap(),
        "--",
        "sh",
        "-c",
        work,
    ])
    .cwd(d.path())
    .run();
    assert_eq!(piped.code, Some(0));
    assert!(!piped.stderr.contains("processes,"), "{}", piped.stderr);
    if crate::util::bare("sh", ["-c", "command -v script"], d.path()).code != Some(0) {
        eprintln!("N/A: script(1) is not installed");
        return;
    }
    let line = format!(
        "{} record -o {} -- sh -c '{work}'",
        crate::util::sbx_bin(),
        trace.display()
    );
    let mut c = std::process::Command::new("script");
    c.args(["-qec", &line, "/dev/null"]).current_dir(d.path());
    let tty = crate::util::run_guarded(c, std::time::Duration::from_secs(60));
    assert_eq!(tty.code, Some(0), "{tty:?}");
    assert!(
        tty.stdout.contains("\x1b]2;sbx: ") && tty.stdout.contains("events,"),
        "{tty:?}"
    );
    assert!(
        !tty.stdout.contains("\x1b[K"),
        "the status erased a line: {tty:?}"
    );
    // The workload's partial line and its end, with only title sequences in between.
    let start = tty.stdout.find("partial-progress").expect("partial line");
    let rest = &tty.stdout[start + "partial-progress".len()..];
    let end = rest.find("-done").expect("the line's end");
    let between = &rest[..end];
    let mut left = between.to_string();
    while let Some(i) = left.find("\x1b]2;") {
        let j = left[i..].find('\x07').map_or(left.len(), |j| i + j + 1);
        left.replace_range(i..j, "");
    }
    let left = left.replace("\x1b[22;2t", "").replace("\x1b[23;2t", "");
    assert!(
        left.is_empty(),
        "between the partial line and its end: {between:?}"
    );
}

/// Usage errors found after parsing exit 2 as clap's do (docs/exit-codes.md): an unknown
/// snippet, a bad `--path` glob, a `--syscall` name no table knows (which would otherwise
/// match nothing, silently).
#[test]
fn usage_errors_after_parsing_exit_2() {
    let d = crate::util::Dir::new();
    let trace = d.join("t.bin");
    crate::util::Sbx::new(["record", "-o", trace.to_str().unwrap(), "--", "true"])
        .cwd(d.path())
        .run()
        .assert_code(0);
    for (args, says) in [
        (vec!["profiles", "NOSUCH"], "unknown snippet"),
        (
            vec!["show", "--path", "[", trace.to_str().unwrap()],
            "bad --path glob",
        ),
        (
            vec!["show", "--syscall", "nosuchcall", trace.to_str().unwrap()],
            "unknown syscall \"nosuchcall\"",
        ),
    ] {
        let out = crate::util::Sbx::new(&args).cwd(d.path()).run();
        assert_eq!(out.code, Some(2), "{args:?}: {out:?}");
        assert!(out.stderr.contains(says), "{args:?}: {}", out.stderr);
    }
    crate::util::Sbx::new(["show", "--syscall", "execve", trace.to_str().unwrap()])
        .cwd(d.path())
        .run()
        .assert_code(0);
}

/// `--color auto` (the default) follows the conventions through anstream: no colour into a
/// pipe, CLICOLOR_FORCE forces it, NO_COLOR wins over CLICOLOR_FORCE, `--color always` and
/// `never` are what they say.
#[test]
fn diff_colour_follows_clicolor_and_no_color() {
    let d = Dir::new();
    let a = d.write("a.profile", "read /a\n");
    let b = d.write("b.profile", "read /b\n");
    let run = |flag: &str, env: &[(&str, &str)]| {
        let mut s = Sbx::new([OsStr::new("diff")]);
        for k in ["NO_COLOR", "CLICOLOR", "CLICOLOR_FORCE"] {
            s.cmd.env_remove(k);
        }
        for (k, v) in env {
            s = s.env(k, v);
        }
        let mut args = vec![a.as_os_str(), b.as_os_str()];
        if !flag.is_empty() {
            args.insert(0, OsStr::new(flag));
        }
        let out = s.run_with(&args);
        out.assert_code(1);
        out.stdout.contains("\x1b[31m-read /a")
    };
    assert!(!run("", &[]), "colour into a pipe");
    assert!(run("", &[("CLICOLOR_FORCE", "1")]));
    assert!(!run("", &[("CLICOLOR_FORCE", "1"), ("NO_COLOR", "1")]));
    assert!(run("--color=always", &[("NO_COLOR", "1")]));
    assert!(!run("--color=never", &[("CLICOLOR_FORCE", "1")]));
}
