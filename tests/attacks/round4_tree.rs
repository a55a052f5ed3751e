//! Issue 39, items 1 and 2: attacks from inside the tree.
//!
//! - **The sharing model** (`src/sink/sharing.rs`): P clones C with `CLONE_VM`, C clones D the
//!   same way, C exits (or, the vfork form, C is a vfork child that execs): D still writes P's
//!   memory. A guard that put its checked copy of P's path on P's stack let D swap it
//!   (tests/fixtures/race_tree.c). Bare, D's flips of the path buffer get the secret read;
//!   under enforce, D writes only where sbx's stack copy would be, so any leak is the guard's.
//! - **Privilege inside the tree**: an install script (a shell below `core_parent`, which the
//!   profile binds `NPM_TOKEN` to) raises its parent's `RLIMIT_CORE` and sends it SIGSEGV,
//!   then reads the token out of the core file (tests/fixtures/core_parent.c,
//!   core_child.sh). Its benign twin crashes a child of its own.
//!
//! Each runs as root and, when the suite runs as root, as nobody; in kill and deny mode.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::util::{Dir, Output, fixture, run_guarded, sbx_bin};

const TOKEN: &str = "TOPSECRET_npm_token_4c6185c";
const LONG_OK: &str = "ok-with-a-long-name.txt";

/// Users to run as: root (or whoever runs the suite) and, as root, nobody.
fn users() -> Vec<bool> {
    if nix::unistd::geteuid().is_root() {
        vec![false, true]
    } else {
        vec![false]
    }
}

/// How the reports name the user a run is made as.
fn user_name(nobody: bool) -> String {
    match nobody {
        true => "nobody".into(),
        false if nix::unistd::geteuid().is_root() => "root".into(),
        false => format!("uid {}", nix::unistd::geteuid()),
    }
}

/// `args` in `dir`, as nobody when `nobody`, with `env` added.
fn run(dir: &Path, nobody: bool, args: &[String], env: &[(&str, &str)]) -> Output {
    let mut cmd = if nobody {
        let mut c = std::process::Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups"]);
        c.args(args);
        c
    } else {
        let mut c = std::process::Command::new(&args[0]);
        c.args(&args[1..]);
        c
    };
    cmd.current_dir(dir);
    for (k, v) in env {
        cmd.env(k, v);
    }
    run_guarded(cmd, Duration::from_secs(60))
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

fn p(path: &Path) -> String {
    path.to_string_lossy().into_owned()
}

/// A world-writable directory (nobody runs there too).
fn open_dir(path: PathBuf) -> PathBuf {
    std::fs::create_dir_all(&path).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o777)).unwrap();
    path
}

/// Record each of `runs` in `work`, learn one profile from the traces, append `extra`.
fn learn(
    d: &Dir,
    tag: &str,
    work: &Path,
    runs: &[Vec<String>],
    env: &[(&str, &str)],
    extra: &str,
) -> PathBuf {
    let mut traces = Vec::new();
    for (i, args) in runs.iter().enumerate() {
        let trace = d.join(&format!("{tag}-{i}.bin"));
        let mut a = strings(&[sbx_bin(), "record", "-o", &p(&trace), "--"]);
        a.extend(args.iter().cloned());
        let out = run(work, false, &a, env);
        assert_eq!(out.code, Some(0), "recording {args:?}: {}", out.stderr);
        traces.push(p(&trace));
    }
    let profile = d.join(&format!("{tag}.profile"));
    let mut a = strings(&[sbx_bin(), "learn"]);
    a.extend(traces);
    a.extend(strings(&["-o", &p(&profile)]));
    let out = run(d.path(), false, &a, &[]);
    assert_eq!(out.code, Some(0), "learn: {}", out.stderr);
    let mut text = std::fs::read_to_string(&profile).unwrap();
    text.push_str(extra);
    std::fs::write(&profile, text).unwrap();
    profile
}

fn enforce(profile: &Path, mode: &str, args: &[String]) -> Vec<String> {
    let mut a = strings(&[sbx_bin(), "enforce", "--mode", mode, &p(profile), "--"]);
    a.extend(args.iter().cloned());
    a
}

fn no_panic(out: &Output) {
    assert!(
        !out.stderr.contains("panicked"),
        "sbx panicked: {}",
        out.stderr
    );
}

/// Item 1: the transitive CLONE_VM race, and its vfork form.
#[test]
fn a_memory_sharer_left_by_a_gone_middle_process_cannot_swap_the_checked_path() {
    let _alone = crate::util::heavy_exclusive();
    let race = p(&fixture("race_tree"));
    let d = Dir::new();
    std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o711)).unwrap();
    for nobody in users() {
        let who = user_name(nobody);
        let root = open_dir(d.join(&who));
        let work = open_dir(root.join("work"));
        let secret_dir = open_dir(root.join("secret"));
        let (ok, ok2, secret) = (
            work.join(LONG_OK),
            work.join("ok2-with-a-long-name.txt"),
            secret_dir.join("secret.txt"),
        );
        for f in [&ok, &ok2] {
            std::fs::write(f, "fine\n").unwrap();
        }
        std::fs::write(&secret, "TOPSECRET\n").unwrap();
        for f in [&ok, &ok2, &secret] {
            std::fs::set_permissions(f, std::fs::Permissions::from_mode(0o644)).unwrap();
        }
        let args = |how: &str, target: &Path, n: &str, extra: &[&str]| {
            let mut a = strings(&[&race, how, &p(&ok), &p(target), n]);
            a.extend(strings(extra));
            a
        };
        // (a) Bare: D's flips of P's path buffer, after C is gone, get the secret read.
        let bare = (0..3)
            .map(|_| run(&work, nobody, &args("tree", &secret, "3000", &[]), &[]))
            .find(|o| o.stdout.contains("LEAKED"));
        let Some(bare) = bare else {
            println!("N/A ({who}): the race does not work here without sbx");
            continue;
        };
        println!("bare ({who}): {}", bare.stdout.lines().next().unwrap_or(""));
        // (b) The benign twins: a program with a thread and CLONE_VM helpers, and the vfork
        // form, between two allowed files; learned, then enforced.
        let benign = [
            args("treethreads", &ok2, "200", &[]),
            args("vforktree", &ok2, "200", &[]),
        ];
        let profile = learn(&d, &who, &work, &benign, &[], "");
        for b in &benign {
            let out = run(&work, nobody, &enforce(&profile, "kill", b), &[]);
            no_panic(&out);
            assert_eq!(
                out.code,
                Some(0),
                "benign twin {b:?} ({who}): {}",
                out.stderr
            );
            assert!(!out.stderr.contains("violation"), "{}", out.stderr);
        }
        // (c) D writes only where the stack copy would go: no leak, in either mode.
        for mode in ["kill", "deny"] {
            for how in ["tree", "vforktree"] {
                let out = run(
                    &work,
                    nobody,
                    &enforce(&profile, mode, &args(how, &secret, "3000", &["stack"])),
                    &[],
                );
                no_panic(&out);
                println!(
                    "{how} {mode} ({who}): exit {:?}: {}",
                    out.code,
                    out.stdout.trim().replace('\n', " / ")
                );
                assert!(
                    out.stdout.contains("flipper ran"),
                    "the race did not run: {out:?}"
                );
                assert!(
                    !out.stdout.contains("LEAKED") && !out.stdout.contains("TOPSECRET"),
                    "{how} in {mode} mode as {who}: the secret was read through the stack copy: {}",
                    out.stdout
                );
            }
        }
        // (d) Issue 40: the kernel fence under a ptrace layer the race defeats. With the race
        // guard off (`--unsafe-no-race-guard`: the ptrace layer checks the path it reads,
        // then the kernel opens what the flipper wrote), the race reads the secret without
        // the fence (the control) and nothing with it, in kill and deny mode.
        if sbx::tracer::landlock::abi().is_none_or(|a| a < 2) {
            println!("fence: no Landlock ABI 2 here; (d) skipped");
            continue;
        }
        let unguarded = |fence: &str, mode: &str, how: &str| {
            let mut a = strings(&[sbx_bin(), "enforce", "--mode", mode]);
            a.extend(strings(&[
                "--unsafe-no-race-guard",
                fence,
                &p(&profile),
                "--",
            ]));
            a.extend(args(how, &secret, "3000", &[]));
            run(&work, nobody, &a, &[])
        };
        let control = (0..3)
            .map(|_| unguarded("--no-fence", "deny", "tree"))
            .find(|o| o.stdout.contains("LEAKED"));
        let Some(control) = control else {
            println!("N/A ({who}): without the guard and the fence the race did not win here");
            continue;
        };
        no_panic(&control);
        println!(
            "no guard, no fence ({who}): {}",
            control.stdout.lines().next().unwrap_or("")
        );
        for mode in ["kill", "deny"] {
            for how in ["tree", "vforktree"] {
                let out = unguarded("--require-fence", mode, how);
                no_panic(&out);
                println!(
                    "{how} {mode}, no guard, fence on ({who}): exit {:?}: {}",
                    out.code,
                    out.stdout.trim().replace('\n', " / ")
                );
                // Kill mode ends the run when the check reads the flipped path (124).
                assert!(
                    out.stdout.contains("flipper ran") || (mode == "kill" && out.code == Some(124)),
                    "the race did not run: {out:?}"
                );
                assert!(
                    !out.stdout.contains("LEAKED") && !out.stdout.contains("TOPSECRET"),
                    "{how} {mode}, no guard, fence on ({who}): the secret was read: {}",
                    out.stdout
                );
            }
        }
    }
}

/// Item 2: an install script makes the program holding the token dump core.
#[test]
fn a_script_cannot_make_a_process_with_wider_rights_dump_core() {
    let _alone = crate::util::heavy_exclusive();
    let parent = p(&fixture("core_parent"));
    let script = p(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/core_child.sh"));
    let env = [("NPM_TOKEN", TOKEN)];
    let d = Dir::new();
    std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o711)).unwrap();
    let cores = |work: &Path| -> Vec<String> {
        std::fs::read_dir(work)
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with("core"))
            .filter(|e| {
                std::fs::read(e.path())
                    .is_ok_and(|b| b.windows(TOKEN.len()).any(|w| w == TOKEN.as_bytes()))
            })
            .map(|e| p(&e.path()))
            .collect()
    };
    for nobody in users() {
        let who = user_name(nobody);
        let root = open_dir(d.join(&who));
        let work = open_dir(root.join("work"));
        let args = |how: &str| strings(&[&parent, &script, how]);
        // (a) Bare: the script gets a core of its parent, and the token out of it.
        let bare = run(&work, nobody, &args("attack"), &env);
        if !bare.stdout.contains("LEAKED") {
            println!(
                "N/A ({who}): no core file without sbx here (core_pattern {:?}, or the hard limit): {}",
                std::fs::read_to_string("/proc/sys/kernel/core_pattern")
                    .unwrap_or_default()
                    .trim(),
                bare.stdout.trim().replace('\n', " / ")
            );
            continue;
        }
        println!(
            "bare ({who}): exit {:?}: {}",
            bare.code,
            bare.stdout.trim().replace('\n', " / ")
        );
        for f in cores(&work) {
            std::fs::remove_file(f).unwrap();
        }
        // (b) The benign twin: the script crashes a child of its own; it runs, the crash is
        // reported as without sbx (signal 11, 128+11 in the shell).
        let extra = format!(
            "\n# the program holding the token\nprogram parent {parent}\nenv NPM_TOKEN by parent\nread ${{CWD}}/**\n"
        );
        let profile = learn(&d, &who, &work, &[args("crash")], &env, &extra);
        let out = run(
            &work,
            nobody,
            &enforce(&profile, "kill", &args("crash")),
            &env,
        );
        no_panic(&out);
        assert_eq!(out.code, Some(0), "benign twin ({who}): {out:?}");
        assert!(out.stdout.contains("crashed: 139"), "{out:?}");
        assert!(out.stdout.contains("child exited 0"), "{out:?}");
        assert!(!out.stderr.contains("violation"), "{}", out.stderr);
        // (c) The attack: refused, no core, no token.
        for mode in ["kill", "deny"] {
            let out = run(
                &work,
                nobody,
                &enforce(&profile, mode, &args("attack")),
                &env,
            );
            no_panic(&out);
            // An orphaned script may still be looking for a core.
            std::thread::sleep(Duration::from_millis(500));
            let first = out
                .stderr
                .lines()
                .find(|l| l.starts_with("sbx: violation"))
                .unwrap_or("")
                .to_string();
            println!("{mode} ({who}): exit {:?}: {first}", out.code);
            assert_eq!(out.code, Some(124), "{mode} ({who}): {out:?}");
            assert!(
                out.stderr.contains("prlimit64(") && out.stderr.contains("-> pid"),
                "{mode} ({who}): the limit change was not refused: {}",
                out.stderr
            );
            if mode == "deny" {
                assert!(
                    out.stderr.contains("SIGSEGV) -> pid"),
                    "the signal was not refused: {}",
                    out.stderr
                );
            }
            assert!(
                !out.stdout.contains("LEAKED"),
                "{mode} ({who}): {}",
                out.stdout
            );
            let found = cores(&work);
            assert!(
                found.is_empty(),
                "{mode} ({who}): core files hold the token: {found:?}"
            );
        }
    }
}

/// The workload runs with RLIMIT_CORE 0 (hard) and may not raise it, even on itself as root
/// (`ulimit -c` is `prlimit64(0, RLIMIT_CORE, ...)`, which the filter stops); lowering it is
/// fine.
#[test]
fn the_workload_cannot_raise_its_core_limit() {
    let d = Dir::new();
    let sh = |script: &str| strings(&["/bin/sh", "-c", script]);
    let attack = sh("ulimit -c unlimited; echo raised=$?; ulimit -c 0; echo lowered=$?; ulimit -c");
    // Bare (as whoever runs the suite): raising works where the hard limit allows it.
    let bare = run(d.path(), false, &attack, &[]);
    if !bare.stdout.contains("raised=0") {
        println!(
            "N/A: the hard core limit is 0 here already: {}",
            bare.stdout.trim()
        );
        return;
    }
    // The benign twin lowers it, and runs under its learned profile.
    let benign = sh("ulimit -c 0; echo lowered=$?; ulimit -c");
    let profile = learn(
        &d,
        "limit",
        d.path(),
        std::slice::from_ref(&benign),
        &[],
        "",
    );
    let out = run(d.path(), false, &enforce(&profile, "kill", &benign), &[]);
    assert_eq!(out.code, Some(0), "benign twin: {out:?}");
    assert!(out.stdout.contains("lowered=0\n0\n"), "{}", out.stdout);
    for mode in ["kill", "deny"] {
        let out = run(d.path(), false, &enforce(&profile, mode, &attack), &[]);
        no_panic(&out);
        assert_eq!(out.code, Some(124), "{mode}: {out:?}");
        assert!(
            out.stderr
                .contains("prlimit64(RLIMIT_CORE, {unlimited, unlimited})"),
            "{mode}: {}",
            out.stderr
        );
        assert!(!out.stdout.contains("raised=0"), "{mode}: {}", out.stdout);
        if mode == "deny" {
            // The refusal leaves the limit at 0, which may be lowered to 0 again.
            assert!(out.stdout.contains("lowered=0\n0\n"), "{}", out.stdout);
        }
    }
}
