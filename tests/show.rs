//! `sbx show` and `sbx stats` on traces of real runs: the text lines, the filters, JSON Lines,
//! the summary; and a differential check of what sbx records against `strace -f`.

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::path::Path;

use serde_json::Value;

use crate::util::{Dir, Output, Sbx, assert_no_panic, bare, normalize_pids, record, show_json};

const SCRIPT: &str = "cat /etc/passwd >/dev/null; cat /nonexistent-sbx-show; true";

/// Record [`SCRIPT`]; returns the dir (holding `trace.bin`) and the uid the run had.
fn recorded() -> (Dir, u32) {
    let d = Dir::new();
    let (out, _, ev) = record(d.path(), &["sh", "-c", SCRIPT]);
    out.assert_code(0);
    assert!(!ev.is_empty());
    (d, nix::unistd::getuid().as_raw())
}

fn show(trace: &Path, extra: &[&str]) -> Output {
    let mut a: Vec<&OsStr> = vec![OsStr::new("show"), trace.as_os_str()];
    a.extend(extra.iter().map(OsStr::new));
    let out = Sbx::new(a).run();
    assert_no_panic(&out);
    out.assert_code(0);
    assert_eq!(out.stderr, "", "show wrote to stderr");
    out
}

/// The pid of the process that opened `path`, from the JSON output.
fn pid_of_open(events: &[Value], path: &str) -> i64 {
    events
        .iter()
        .find(|e| {
            e["syscall"] == "openat"
                && e["targets"]
                    .as_array()
                    .is_some_and(|t| t.iter().any(|t| t["literal"] == path))
        })
        .unwrap_or_else(|| panic!("no openat of {path}"))["pid"]
        .as_i64()
        .unwrap()
}

#[test]
fn text_lines_for_opens_errors_execs_and_exits() {
    let (d, uid) = recorded();
    let out = show(&d.join("trace.bin"), &[]);
    let text = normalize_pids(&out.stdout);
    let lines: Vec<&str> = text.lines().collect();
    let has = |l: &str| lines.contains(&l);
    // The first event is the leader's execve, under the program's comm (not sbx's, whose
    // spawn code the root ran until then): its pid is N1; the two cats are N2 and N3.
    assert!(lines[0].starts_with("sh[N1] execve("), "{text}");
    let ok = format!("cat[N2] openat(AT_FDCWD, \"/etc/passwd\", O_RDONLY) as {uid}/{uid} = 3");
    assert!(has(&ok), "missing `{ok}` in:\n{text}");
    let missing = format!(
        "cat[N3] openat(AT_FDCWD, \"/nonexistent-sbx-show\", O_RDONLY) as {uid}/{uid} = -1 ENOENT"
    );
    assert!(has(&missing), "missing `{missing}` in:\n{text}");
    // exec lines carry the path, argv and environment names (never values).
    let exec = lines
        .iter()
        .find(|l| l.starts_with("cat[N2] exec \""))
        .unwrap_or_else(|| panic!("no exec line for cat:\n{text}"));
    assert!(
        exec.contains("/cat\" [\"cat\", \"/etc/passwd\"] env=["),
        "{exec}"
    );
    assert!(exec.contains("PATH"), "{exec}");
    let path_value = std::env::var("PATH").unwrap();
    assert!(!exec.contains(&path_value), "env value leaked: {exec}");
    let sh_exec = format!("[\"sh\", \"-c\", \"{SCRIPT}\"]");
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("sh[N1] exec \"") && l.contains(&sh_exec)),
        "{text}"
    );
    // Spawns name the child; exits give the status.
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("sh[N1] spawn ") && l.ends_with(" -> N2")),
        "{text}"
    );
    for l in ["cat[N2] exit 0", "cat[N3] exit 1", "sh[N1] exit 0"] {
        assert!(has(l), "missing `{l}` in:\n{text}");
    }
    assert_eq!(lines.last(), Some(&"sh[N1] exit 0"));
    // One line per event.
    let count = Sbx::new([
        OsStr::new("stats"),
        OsStr::new("--count"),
        d.join("trace.bin").as_os_str(),
    ])
    .run();
    count.assert_code(0);
    assert_eq!(count.stdout.trim(), lines.len().to_string());
}

#[test]
fn normalizer_names_pids_stably() {
    let t = "a[10] spawn fork -> 11\nb[11/12] x(\"p\" -> \"/q\") = 3\nb[11] exit 0\n[x] -> 5a";
    assert_eq!(
        normalize_pids(t),
        "a[N1] spawn fork -> N2\nb[N2/N3] x(\"p\" -> \"/q\") = 3\nb[N2] exit 0\n[x] -> 5a"
    );
}

#[test]
fn filters_include_matches_and_exclude_the_rest() {
    let (d, _) = recorded();
    let trace = d.join("trace.bin");
    let (_, all) = show_json(&trace, &[]);
    let cat1 = pid_of_open(&all, "/etc/passwd");
    let cat2 = pid_of_open(&all, "/nonexistent-sbx-show");
    assert_ne!(cat1, cat2);

    // --pid: only that process, and everything it did.
    let by_pid = show(&trace, &["--pid", &cat1.to_string()]).stdout;
    assert!(by_pid.contains("\"/etc/passwd\""), "{by_pid}");
    assert!(!by_pid.contains("nonexistent"), "{by_pid}");
    assert!(
        by_pid.lines().all(
            |l| l.starts_with(&format!("cat[{cat1}]")) || l.starts_with(&format!("sh[{cat1}]"))
        ),
        "{by_pid}"
    );
    let expected = all.iter().filter(|e| e["pid"] == cat1).count();
    assert_eq!(by_pid.lines().count(), expected);
    // Several --pid values are a union.
    let both = show(
        &trace,
        &["--pid", &cat1.to_string(), "--pid", &cat2.to_string()],
    )
    .stdout;
    assert!(both.contains("/etc/passwd") && both.contains("nonexistent"));

    // --comm: cat, not sh.
    let by_comm = show(&trace, &["--comm", "cat"]).stdout;
    assert!(by_comm.contains("/etc/passwd") && by_comm.contains("nonexistent"));
    assert!(by_comm.lines().all(|l| l.starts_with("cat[")), "{by_comm}");
    assert_eq!(
        by_comm.lines().count(),
        all.iter().filter(|e| e["comm"] == "cat").count()
    );

    // --syscall: only those syscall events (no exec/spawn/exit lines).
    let by_sys = show(&trace, &["--syscall", "execve"]).stdout;
    assert!(!by_sys.is_empty());
    assert!(by_sys.lines().all(|l| l.contains("] execve(")), "{by_sys}");
    assert_eq!(
        by_sys.lines().count(),
        all.iter().filter(|e| e["kind"] == "exec").count(),
        "one execve syscall per successful exec"
    );
    assert!(!by_sys.contains("openat"));

    // --path GLOB: events touching a matching path.
    let by_path = show(&trace, &["--path", "/etc/**"]).stdout;
    assert!(by_path.contains("\"/etc/passwd\""), "{by_path}");
    assert!(!by_path.contains("nonexistent"), "{by_path}");
    assert!(!by_path.contains("/usr/lib/locale/"), "{by_path}");
    assert!(!by_path.contains(" exit ") && !by_path.contains(" spawn "));
    assert!(by_path.lines().all(|l| l.contains("\"/etc/")), "{by_path}");
    let (_, exact) = show_json(&trace, &["--path", "/nonexistent-sbx-*"]);
    assert_eq!(exact.len(), 1, "{exact:?}");
    assert_eq!(exact[0]["outcome"]["name"], "ENOENT");

    // Criteria combine with AND.
    let (_, and) = show_json(
        &trace,
        &[
            "--comm",
            "cat",
            "--syscall",
            "openat",
            "--path",
            "/etc/passwd",
        ],
    );
    assert_eq!(and.len(), 1, "{and:?}");
    let (_, none) = show_json(&trace, &["--comm", "sh", "--path", "/etc/passwd"]);
    assert!(none.is_empty(), "{none:?}");
}

#[test]
fn json_lines_have_the_documented_fields() {
    let (d, uid) = recorded();
    let trace = d.join("trace.bin");
    let (out, events) = show_json(&trace, &[]);
    out.assert_code(0);
    assert!(!events.is_empty());
    let mut kinds = BTreeMap::new();
    let mut last_time = 0;
    for e in &events {
        for f in [
            "time_ns", "pid", "tid", "ppid", "comm", "exe", "uid", "euid", "gid", "egid", "kind",
        ] {
            assert!(e.get(f).is_some(), "field {f} missing: {e}");
        }
        assert_eq!(e["uid"], uid);
        let t = e["time_ns"].as_u64().unwrap();
        assert!(t >= last_time, "time goes backwards: {e}");
        last_time = t;
        let kind = e["kind"].as_str().unwrap().to_string();
        let fields: &[&str] = match kind.as_str() {
            "syscall" => &["syscall", "nr", "args", "targets", "outcome"],
            "spawn" => &["child", "thread", "via"],
            "exec" => &["path", "argv", "env_names", "former_tid"],
            "exit" => &["process"],
            k => panic!("unknown kind {k}"),
        };
        for f in fields {
            assert!(e.get(*f).is_some(), "{kind} field {f} missing: {e}");
        }
        if kind == "syscall" {
            assert_eq!(e["args"].as_array().unwrap().len(), 6);
            for t in e["targets"].as_array().unwrap() {
                assert!(t["type"].is_string() && t["access"].is_array(), "{t}");
            }
        }
        if kind == "exit" {
            assert!(e.get("code").is_some() || e.get("signal").is_some(), "{e}");
        }
        *kinds.entry(kind).or_insert(0) += 1;
    }
    assert_eq!(kinds.len(), 4, "all four kinds: {kinds:?}");
    // The ENOENT probe, as JSON.
    let miss = events
        .iter()
        .find(|e| e["targets"][0]["literal"] == "/nonexistent-sbx-show")
        .unwrap();
    assert_eq!(miss["outcome"]["result"], "errno");
    assert_eq!(miss["outcome"]["errno"], 2);
    assert_eq!(miss["targets"][0]["access"][0], "read");
    let ok = events
        .iter()
        .find(|e| e["targets"][0]["literal"] == "/etc/passwd")
        .unwrap();
    assert_eq!(
        ok["outcome"],
        serde_json::json!({"result": "value", "value": 3})
    );
    let exec = events
        .iter()
        .find(|e| e["kind"] == "exec" && e["argv"][1] == "/etc/passwd")
        .unwrap();
    assert_eq!(exec["argv"][0], "cat");
    assert_eq!(exec["comm"], "cat");
    assert!(
        exec["env_names"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n == "PATH")
    );
    // stats --count is the number of JSON lines.
    let count = Sbx::new([
        OsStr::new("stats"),
        OsStr::new("--count"),
        trace.as_os_str(),
    ])
    .run();
    count.assert_code(0);
    assert_eq!(count.stdout, format!("{}\n", events.len()));
}

#[test]
fn stats_summarizes_tree_files_and_syscalls() {
    let (d, _) = recorded();
    let trace = d.join("trace.bin");
    let out = Sbx::new([OsStr::new("stats"), trace.as_os_str()]).run();
    assert_no_panic(&out);
    out.assert_code(0);
    let (_, events) = show_json(&trace, &[]);
    let text = out.stdout;
    assert!(text.starts_with("trace: sbx "), "{text}");
    assert!(
        text.contains(&format!("events: {} (", events.len())),
        "{text}"
    );
    for section in [
        "\nprocesses:\n",
        "\nfiles by directory:\n",
        "\nnetwork:\n",
        "\ngated syscalls:\n",
        "\nsyscalls:\n",
    ] {
        assert!(text.contains(section), "no {section:?} in:\n{text}");
    }
    // The tree: sh at depth 1, both cats below it with their argv and status.
    let cat1 = pid_of_open(&events, "/etc/passwd");
    let cat2 = pid_of_open(&events, "/nonexistent-sbx-show");
    let sh = events[0]["pid"].as_i64().unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let sh_line = lines
        .iter()
        .position(|l| l.starts_with(&format!("  {sh} sh ")))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(lines[sh_line].ends_with("exit 0"), "{}", lines[sh_line]);
    let c1 = format!("    {cat1} cat ");
    let c2 = format!("    {cat2} cat ");
    let l1 = lines
        .iter()
        .find(|l| l.starts_with(&c1))
        .unwrap_or_else(|| panic!("{text}"));
    let l2 = lines
        .iter()
        .find(|l| l.starts_with(&c2))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(l1.ends_with(": cat /etc/passwd, exit 0"), "{l1}");
    assert!(l2.ends_with("exit 1"), "{l2}");
    // Files by directory: /etc holds passwd; "/" the failed probe.
    let etc = lines
        .iter()
        .find(|l| l.starts_with("  /etc ("))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(etc.contains("read "), "{etc}");
    let root = lines
        .iter()
        .find(|l| l.starts_with("  / ("))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(root.contains("failed"), "{root}");
    // The syscall table counts openat and its failures, matching the JSON.
    let opens = events.iter().filter(|e| e["syscall"] == "openat").count();
    let failed = events
        .iter()
        .filter(|e| e["syscall"] == "openat" && e["outcome"]["result"] == "errno")
        .count();
    assert!(
        lines.contains(&format!("  openat {opens} ({failed} failed)").as_str()),
        "{text}"
    );
    assert!(text.contains("network:\n  (none)\n"), "{text}");
}

// ---------------------------------------------------------------------------------------
// Differential check against strace.

/// The syscalls compared: they all stop under `sbx record` (checked or gated) and take a
/// path, so each one strace sees must be in the trace, with the same path and result.
const COMPARED: &[&str] = &[
    "openat",
    "execve",
    "unlinkat",
    "unlink",
    "mkdir",
    "rmdir",
    "symlink",
    "symlinkat",
    "rename",
    "renameat2",
];

/// (syscall, accessed path as the workload wrote it, "ok" or the errno name).
type Call = (String, String, String);

/// The double-quoted strings of a strace argument list, unescaped enough for plain paths.
fn quoted(args: &str) -> Vec<String> {
    let mut v = Vec::new();
    let mut it = args.chars();
    while let Some(c) = it.next() {
        if c == '"' {
            let mut s = String::new();
            while let Some(c) = it.next() {
                match c {
                    '\\' => s.extend(it.next()),
                    '"' => break,
                    c => s.push(c),
                }
            }
            v.push(s);
        } else if c == '[' {
            // argv of execve: skip the bracketed list.
            let mut depth = 1;
            for c in it.by_ref() {
                match c {
                    '[' => depth += 1,
                    ']' => depth -= 1,
                    _ => {}
                }
                if depth == 0 {
                    break;
                }
            }
        }
    }
    v
}

/// The paths a call accesses, from all its path strings: symlink's first string is the
/// link's target text, which is not accessed.
fn accessed(name: &str, mut paths: Vec<String>) -> Vec<String> {
    if name.starts_with("symlink") && paths.len() > 1 {
        paths.remove(0);
    }
    if name == "execve" {
        paths.truncate(1);
    }
    paths
}

/// Parse `strace -f -o FILE` output, joining `<unfinished ...>`/`resumed>` halves.
fn parse_strace(text: &str) -> Vec<Call> {
    let mut pending: BTreeMap<String, String> = BTreeMap::new();
    let mut calls = Vec::new();
    for line in text.lines() {
        let Some((pid, rest)) = line.split_once(' ') else {
            continue;
        };
        let rest = rest.trim_start();
        let full = if let Some(head) = rest.strip_suffix(" <unfinished ...>") {
            pending.insert(pid.to_string(), head.to_string());
            continue;
        } else if let Some(tail) = rest.strip_prefix("<... ") {
            let Some((_, tail)) = tail.split_once(" resumed>") else {
                continue;
            };
            format!("{}{tail}", pending.remove(pid).unwrap_or_default())
        } else {
            rest.to_string()
        };
        let Some((name, args)) = full.split_once('(') else {
            continue; // +++ exited, --- SIGCHLD
        };
        if !COMPARED.contains(&name) {
            continue;
        }
        // strace pads short calls: `unlinkat(AT_FDCWD, "x", 0)        = 0`.
        let Some((args, result)) = args.rsplit_once(" = ") else {
            continue;
        };
        let Some(args) = args.trim_end().strip_suffix(')') else {
            continue;
        };
        let result = result.trim();
        let outcome = if result.starts_with("-1 ") {
            result.split_whitespace().nth(1).unwrap_or("?").to_string()
        } else if result.starts_with('?') {
            "?".to_string()
        } else {
            "ok".to_string()
        };
        for p in accessed(name, quoted(args)) {
            calls.push((name.to_string(), p, outcome.clone()));
        }
    }
    calls
}

/// The same triples from `sbx show --json`.
fn sbx_calls(events: &[Value]) -> Vec<Call> {
    let mut calls = Vec::new();
    for e in events {
        let Some(name) = e["syscall"].as_str() else {
            continue;
        };
        if !COMPARED.contains(&name) {
            continue;
        }
        let o = &e["outcome"];
        let outcome = match o["result"].as_str() {
            Some("value") => "ok".to_string(),
            Some("errno") => o["name"].as_str().unwrap_or("?").to_string(),
            _ => "?".to_string(),
        };
        let paths: Vec<String> = e["targets"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|t| t["type"] == "path")
            .map(|t| t["literal"].as_str().unwrap().to_string())
            .collect();
        for p in accessed(name, paths) {
            calls.push((name.to_string(), p, outcome.clone()));
        }
    }
    calls
}

fn multiset(calls: &[Call]) -> BTreeMap<&Call, usize> {
    let mut m = BTreeMap::new();
    for c in calls {
        *m.entry(c).or_insert(0) += 1;
    }
    m
}

#[test]
fn strace_parser_handles_unfinished_calls_and_symlinks() {
    let t = "10 execve(\"/bin/x\", [\"x\", \"a b\"], 0x1 /* 3 vars */) = 0\n\
             10 openat(AT_FDCWD, \"/e\", O_RDONLY <unfinished ...>\n\
             11 mkdir(\"d\", 0777)         = -1 EEXIST (File exists)\n\
             10 <... openat resumed>) = 3\n\
             11 symlinkat(\"tgt\", AT_FDCWD, \"lnk\") = 0\n\
             11 renameat2(AT_FDCWD, \"b\", AT_FDCWD, \"c\", RENAME_NOREPLACE) = 0\n\
             11 +++ exited with 0 +++\n";
    let c = |a: &str, b: &str, r: &str| (a.to_string(), b.to_string(), r.to_string());
    assert_eq!(
        parse_strace(t),
        vec![
            c("execve", "/bin/x", "ok"),
            c("mkdir", "d", "EEXIST"),
            c("openat", "/e", "ok"),
            c("symlinkat", "lnk", "ok"),
            c("renameat2", "b", "ok"),
            c("renameat2", "c", "ok"),
        ]
    );
}

/// pete's syscall-tracepoint idea: the same workload under `strace -f` and under `sbx
/// record` must show the same multiset of (syscall, path, success/errno) for the path
/// syscalls sbx stops on. Legitimate differences, handled above: strace prints execve
/// before the exec happens, sbx records an `execve` syscall event *and* an exec event (only
/// the syscall is compared); the first execve is made by strace's or sbx's own child (comm
/// differs, the call is the same); symlink's target text is not an accessed path (sbx does
/// not record it as one); strace truncates strings (so `-s 4096`).
#[test]
fn same_path_syscalls_as_strace() {
    if bare("strace", ["-V"], Path::new("/")).code != Some(0) {
        eprintln!("strace not installed: skipping");
        return;
    }
    let script = "cat /etc/hostname; ls /nonexistent; touch x; rm x; mkdir d; rmdir d; \
                  ln -s a b; mv b c; rm c; rm nothere; mkdir d; mkdir d; rmdir d; true";
    let d = Dir::new();
    let trace_list = COMPARED.join(",");
    let strace_dir = d.join("strace");
    let sbx_dir = d.join("sbx");
    std::fs::create_dir(&strace_dir).unwrap();
    std::fs::create_dir(&sbx_dir).unwrap();
    let st = bare(
        "strace",
        [
            "-f",
            "-s",
            "4096",
            "-e",
            &format!("trace={trace_list}"),
            "-o",
            d.join("strace.txt").to_str().unwrap(),
            "sh",
            "-c",
            script,
        ],
        &strace_dir,
    );
    st.assert_code(0);
    let (rec, _, _) = record(&sbx_dir, &["sh", "-c", script]);
    rec.assert_code(0);
    // Both runs did the same thing (same stderr from ls, rm, mkdir).
    assert_eq!(
        rec.stderr.lines().count(),
        st.stderr.lines().count(),
        "sbx:\n{}\nstrace:\n{}",
        rec.stderr,
        st.stderr
    );
    let strace = parse_strace(&std::fs::read_to_string(d.join("strace.txt")).unwrap());
    let (_, events) = show_json(&sbx_dir.join("trace.bin"), &[]);
    let sbx = sbx_calls(&events);
    // The workload's own calls are there, on both sides.
    let c = |a: &str, b: &str, r: &str| (a.to_string(), b.to_string(), r.to_string());
    for want in [
        c("openat", "/etc/hostname", "ok"),
        c("unlinkat", "x", "ok"),
        c("unlinkat", "nothere", "ENOENT"),
        c("mkdir", "d", "EEXIST"),
        c("rmdir", "d", "ok"),
        c("symlinkat", "b", "ok"),
        c("renameat2", "c", "ok"),
    ] {
        assert!(strace.contains(&want), "strace lacks {want:?}: {strace:?}");
        assert!(sbx.contains(&want), "sbx lacks {want:?}");
    }
    let (ms, mt) = (multiset(&sbx), multiset(&strace));
    let only_sbx: Vec<_> = ms.iter().filter(|(k, n)| mt.get(*k) != Some(n)).collect();
    let only_strace: Vec<_> = mt.iter().filter(|(k, n)| ms.get(*k) != Some(n)).collect();
    assert!(
        only_sbx.is_empty() && only_strace.is_empty(),
        "counts differ\nsbx: {only_sbx:?}\nstrace: {only_strace:?}"
    );
    eprintln!("strace and sbx agree on {} path syscalls", sbx.len());
}
