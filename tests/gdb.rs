//! `sbx enforce --gdb` / `sbx record --gdb` with the real gdb in batch mode against
//! `tests/fixtures/gdb_prog.c` (compiled with `-g -O0`), under a hand-written profile. Each
//! session is sbx in one guarded process and `gdb -batch` in another; both must end within
//! the hang guard. Unix sockets in the test's own directory (no port races), one loopback
//! TCP run. Where it is cheap, as root and as nobody (setpriv).

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::util::{Dir, Output, run_guarded, sbx_bin};

const GUARD: Duration = Duration::from_secs(60);

/// The uids to run sbx as: root and nobody when the suite runs as root.
fn users() -> Vec<Option<u32>> {
    if nix::unistd::geteuid().is_root() {
        vec![None, Some(65534)]
    } else {
        vec![None]
    }
}

/// `tests/fixtures/gdb_prog.c` compiled with `-g -O0` once per test run (not with the other
/// fixtures' flags: gdb must see every local).
fn compiled() -> &'static Path {
    static BIN: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BIN.get_or_init(|| {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/gdb_prog.c");
        let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("fixtures");
        std::fs::create_dir_all(&out).unwrap();
        let bin = out.join("gdb_prog_g");
        let st = Command::new("gcc")
            .args(["-g", "-O0", "-pthread", "-o"])
            .arg(&bin)
            .arg(&src)
            .status()
            .expect("gcc must be installed (see .ci/run)");
        assert!(st.success(), "compiling gdb_prog failed");
        bin
    })
}

/// A directory nobody can work in, with the debuggee copied into it and a profile that
/// allows what its modes do (a violation is reading any other file).
fn setup() -> (Dir, PathBuf) {
    let d = Dir::new();
    std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let bin = d.join("gdb_prog");
    std::fs::copy(compiled(), &bin).unwrap();
    std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
    d.write(
        "p.profile",
        &format!(
            "include base\n\nexec {}\nexec /usr/bin/true\n",
            bin.display()
        ),
    );
    (d, bin)
}

/// `[setpriv ...] sbx ARGS` in `dir`.
fn sbx_cmd(user: Option<u32>, dir: &Path, args: &[&str]) -> Command {
    let mut c = crate::util::as_user(user, sbx_bin());
    // cargo test points the loader at its own directories: not the workload's business.
    c.args(args)
        .current_dir(dir)
        .env("HOME", dir)
        .env_remove("LD_LIBRARY_PATH");
    c
}

/// Is something listening on 127.0.0.1:`port` (`/proc/net/tcp`, state 0A)?
fn listening(port: u16) -> bool {
    let want = format!("0100007F:{port:04X} 00000000:0000 0A");
    std::fs::read_to_string("/proc/net/tcp").is_ok_and(|t| t.contains(&want))
}

/// Run sbx with `sbx_args` (which name `addr` for --gdb) in the background, wait for it to
/// listen, then `gdb -batch` with `cmds` on the debuggee. Returns (sbx, gdb).
fn session(
    user: Option<u32>,
    d: &Dir,
    bin: &Path,
    sbx_args: &[&str],
    addr: &str,
    cmds: &[&str],
) -> (Output, Output) {
    let sbx = sbx_cmd(user, d.path(), sbx_args);
    let background = std::thread::spawn(move || run_guarded(sbx, GUARD));
    let start = Instant::now();
    let ready = || match addr.strip_prefix("127.0.0.1:") {
        Some(port) => listening(port.parse().unwrap()),
        None => d.join(addr).exists(),
    };
    while !ready() && start.elapsed() < Duration::from_secs(20) && !background.is_finished() {
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut gdb = Command::new("gdb");
    gdb.args(["-nx", "-batch", "-ex"])
        .arg(format!("target extended-remote {addr}"));
    for c in cmds {
        gdb.arg("-ex").arg(c);
    }
    gdb.arg(bin).current_dir(d.path());
    let g = run_guarded(gdb, GUARD);
    let s = background.join().unwrap();
    // As nobody, sbx says so (the workload runs with no_new_privs).
    assert_eq!(
        user.is_some(),
        s.stderr.contains("running as a non-root user"),
        "{}",
        s.stderr
    );
    (s, g)
}

fn enforce_args<'a>(mode: &'a str, addr: &'a str, run: &[&'a str]) -> Vec<&'a str> {
    let mut a = vec!["enforce", "--mode", mode, "--gdb", addr, "p.profile", "--"];
    a.extend_from_slice(run);
    a
}

fn shown(s: &Output, g: &Output) -> String {
    format!(
        "--- gdb stdout\n{}\n--- gdb stderr\n{}\n--- sbx stderr\n{}",
        g.stdout, g.stderr, s.stderr
    )
}

/// A session on `gdb.sock` with a fresh [`setup`]: `sbx enforce --mode MODE --gdb gdb.sock
/// p.profile -- gdb_prog ARGS` and gdb running `cmds`. Returns (sbx, gdb, both shown).
fn enforced(
    user: Option<u32>,
    mode: &str,
    args: &[&str],
    cmds: &[&str],
) -> (Output, Output, String) {
    let (d, bin) = setup();
    let mut run = vec![bin.to_str().unwrap()];
    run.extend_from_slice(args);
    let (s, g) = session(
        user,
        &d,
        &bin,
        &enforce_args(mode, "gdb.sock", &run),
        "gdb.sock",
        cmds,
    );
    let all = shown(&s, &g);
    (s, g, all)
}

#[test]
fn break_on_a_function_and_print_a_local() {
    for user in users() {
        let (s, g, all) = enforced(
            user,
            "kill",
            &["exit"],
            &[
                "break compute",
                "continue",
                "next",
                "print local",
                "print/x $mxcsr",
                "set $xmm1.uint128 = 0x1234",
                "print/x $xmm1.uint128",
                "set var $rax = 77",
                "print $rax",
                "continue",
            ],
        );
        assert!(g.stdout.contains("Breakpoint 1, compute (n=3)"), "{all}");
        assert!(g.stdout.contains("$1 = 21"), "{all}");
        // Registers, general and SSE, read and written (x86_64: the default MXCSR).
        if cfg!(target_arch = "x86_64") {
            assert!(g.stdout.contains("$2 = 0x1f80"), "{all}");
            assert!(g.stdout.contains("$3 = 0x1234"), "{all}");
            assert!(g.stdout.contains("$4 = 77"), "{all}");
        }
        assert_eq!(s.code, Some(3), "user {user:?}\n{all}");
    }
}

#[test]
fn backtrace_at_a_crash() {
    for user in users() {
        let (s, g, all) = enforced(user, "kill", &["crash"], &["continue", "bt", "continue"]);
        assert!(g.stdout.contains("SIGSEGV"), "{all}");
        assert!(g.stdout.contains("#0  "), "{all}");
        assert!(g.stdout.contains("in crash_here (p=0x0)"), "{all}");
        assert!(g.stdout.contains("in main ("), "{all}");
        assert!(
            g.stdout.contains("Program terminated with signal SIGSEGV"),
            "{all}"
        );
        assert_eq!(s.code, Some(128 + 11), "{all}");
    }
}

#[test]
fn step_and_continue_to_the_workloads_exit_status() {
    for user in users() {
        let (s, g, all) = enforced(
            user,
            "kill",
            &["exit"],
            &[
                "break main",
                "continue",
                "next",
                "next",
                "step",
                "stepi",
                "continue",
            ],
        );
        assert!(g.stdout.contains("Breakpoint 1, main ("), "{all}");
        // `step` went into compute, where the program's line 12 is (`int local = n * 7;`).
        assert!(g.stdout.contains("compute (n=3) at "), "{all}");
        assert!(g.stdout.contains("exited with code 03"), "{all}");
        assert_eq!(s.code, Some(3), "user {user:?}\n{all}");
        assert!(s.stdout.contains("r=22"), "{all}");
    }
}

#[test]
fn two_threads_listed_and_a_breakpoint_hit_in_the_second() {
    for user in users() {
        let (s, g, all) = enforced(
            user,
            "kill",
            &["threads"],
            &["break worker", "continue", "info threads", "continue"],
        );
        assert!(
            g.stdout.contains("Thread 2 hit Breakpoint 1, worker ("),
            "{all}"
        );
        assert!(
            !g.stdout.contains("(gdb_prog (process "),
            "threads are no processes\n{all}"
        );
        let listed = g
            .stdout
            .lines()
            .filter(|l| {
                l.trim_start()
                    .trim_start_matches('*')
                    .trim_start()
                    .starts_with(['1', '2'])
                    && l.contains(" Thread ")
            })
            .count();
        assert_eq!(listed, 2, "{all}");
        assert!(g.stdout.contains("exited normally"), "{all}");
        assert_eq!(s.code, Some(0), "user {user:?}\n{all}");
    }
}

/// A signal is a stop gdb shows; continuing passes it on (the handler runs), as without gdb.
#[test]
fn a_signal_is_shown_and_passed_on() {
    let (s, g, all) = enforced(None, "kill", &["signal"], &["continue", "continue"]);
    assert!(
        g.stdout.contains("Program received signal SIGUSR1"),
        "{all}"
    );
    assert!(g.stdout.contains("exited normally"), "{all}");
    assert_eq!(s.code, Some(0), "{all}");
}

/// Four threads hit one breakpoint three times each while their opens are checked by the
/// sandbox: every hit is reported once, in some thread, and the program ends as without gdb.
#[test]
fn breakpoints_in_four_threads_between_sandbox_stops() {
    let (d, bin) = setup();
    let prog = bin.to_str().unwrap();
    let mut cmds = vec!["break hit"];
    cmds.extend(std::iter::repeat_n("continue", 13));
    let (s, g) = session(
        None,
        &d,
        &bin,
        &enforce_args("kill", "gdb.sock", &[prog, "many"]),
        "gdb.sock",
        &cmds,
    );
    let all = shown(&s, &g);
    assert_eq!(g.stdout.matches("Breakpoint 1, hit (").count(), 12, "{all}");
    assert!(g.stdout.contains("exited normally"), "{all}");
    assert!(s.stdout.contains("hits=12"), "{all}");
    assert_eq!(s.code, Some(0), "{all}");
}

/// `follow-fork-mode child`: gdb detaches the parent (which runs on under the sandbox) and
/// stops in the child, a process of its own (inferior 2), until it exits.
#[test]
fn a_fork_followed_by_the_child() {
    for user in users() {
        let (s, g, all) = enforced(
            user,
            "kill",
            &["fork"],
            &[
                "set follow-fork-mode child",
                "break child_fn",
                "continue",
                "next",
                "print in_child",
                "info inferiors",
                "continue",
            ],
        );
        assert!(g.stdout.contains("[New inferior 2 (process "), "{all}");
        assert!(
            g.stdout
                .contains("[Detaching after fork from parent process "),
            "{all}"
        );
        assert!(g.stdout.contains("Breakpoint 1, child_fn (n=7)"), "{all}");
        assert!(g.stdout.contains("$1 = 107"), "{all}");
        assert!(
            g.stdout.contains(") exited with code 07]")
                && g.stdout.contains("[Inferior 2 (process "),
            "{all}"
        );
        // The parent, detached, waited for the child and returned its status.
        assert_eq!(s.code, Some(7), "{all}");
    }
}

/// gdb's default (`follow-fork-mode parent`, `detach-on-fork on`): the child is detached
/// before it runs, without gdb's breakpoints (they would kill it with a SIGTRAP), and runs
/// under the sandbox alone.
#[test]
fn a_fork_child_is_detached_when_gdb_follows_the_parent() {
    for user in users() {
        let (s, g, all) = enforced(
            user,
            "kill",
            &["fork"],
            &["break child_fn", "continue", "continue"],
        );
        assert!(
            g.stdout
                .contains("[Detaching after fork from child process "),
            "{all}"
        );
        assert!(!g.stdout.contains("child_fn (n=7)"), "{all}");
        assert!(g.stdout.contains("[Inferior 1 (process "), "{all}");
        assert!(g.stdout.contains("exited with code 07]"), "{all}");
        assert_eq!(s.code, Some(7), "{all}");
    }
}

/// `detach-on-fork off`: gdb keeps both processes (two inferiors); with
/// `schedule-multiple on` both run, the child stops at the breakpoint, and each exit is
/// reported for its own process.
#[test]
fn detach_on_fork_off_keeps_both_processes() {
    for user in users() {
        let (s, g, all) = enforced(
            user,
            "kill",
            &["fork"],
            &[
                "set detach-on-fork off",
                "set schedule-multiple on",
                "break child_fn",
                "continue",
                "info inferiors",
                "continue",
                // As in a native session: the exited inferior stays the current one.
                "inferior 1",
                "continue",
            ],
        );
        assert!(g.stdout.contains("[New inferior 2 (process "), "{all}");
        assert!(!g.stdout.contains("[Detaching after fork"), "{all}");
        // Breakpoint 1 has a location in each process; the child's is hit.
        assert!(
            g.stdout
                .lines()
                .any(|l| l.starts_with("Thread 2.1 hit Breakpoint 1")
                    && l.contains("child_fn (n=7)")),
            "{all}"
        );
        // `info inferiors` lists both, each with its process.
        let listed = g
            .stdout
            .lines()
            .filter(|l| l.contains("process ") && l.contains("gdb_prog"))
            .count();
        assert!(listed >= 2, "{all}");
        assert!(
            g.stdout.contains("[Inferior 2 (process ")
                && g.stdout.contains("[Inferior 1 (process "),
            "{all}"
        );
        assert_eq!(g.stdout.matches("exited with code 07]").count(), 2, "{all}");
        assert_eq!(s.code, Some(7), "{all}");
    }
}

/// Two inferiors hitting the same breakpoint: after a stop in one, gdb steps it over the
/// breakpoint with requests that name no process (the stopped thread's is meant). Before sbx
/// took the stopped thread's process for them, the breakpoint was taken out of the other
/// process and the stepping one ran onto its own `int3` (SIGSEGV, found in review).
#[test]
fn a_breakpoint_hit_in_two_inferiors_is_stepped_over_in_each() {
    for user in users() {
        let (d, bin) = setup();
        // Which process reaches compute() first varies: the breakpoint continues by itself,
        // and the script goes on once the child has exited.
        d.write(
            "both.gdb",
            "set detach-on-fork off\nset schedule-multiple on\nbreak compute\ncommands\n\
             continue\nend\ncontinue\ninferior 1\ncontinue\n",
        );
        let prog = bin.to_str().unwrap();
        let (s, g) = session(
            user,
            &d,
            &bin,
            &enforce_args("kill", "gdb.sock", &[prog, "both"]),
            "gdb.sock",
            &["source both.gdb"],
        );
        let all = shown(&s, &g);
        // The child calls compute(1), the parent compute(2); gdb names the thread only
        // while it sees more than one ("Thread 2.1 hit Breakpoint 1.2, compute (n=1)", then
        // perhaps "Breakpoint 1, compute (n=2)").
        let hits = |n: &str| {
            g.stdout
                .lines()
                .filter(|l| l.contains("Breakpoint 1") && l.contains(n))
                .count()
        };
        assert_eq!(hits("compute (n=1)"), 1, "{all}");
        assert_eq!(hits("compute (n=2)"), 1, "{all}");
        assert!(!g.stdout.contains("received signal"), "{all}");
        assert!(!g.stderr.contains("Cannot remove breakpoints"), "{all}");
        assert!(g.stdout.contains("exited with code 010]"), "{all}");
        assert!(g.stdout.contains("exited with code 022]"), "{all}");
        assert_eq!(s.code, Some(18), "{all}");
    }
}

/// `kill inferiors N` kills that process alone while gdb sees another, the first process
/// included (the other runs on to its exit); only the last one gdb sees takes the tree.
#[test]
fn kill_inferiors_kills_that_process_alone() {
    let keep_both = [
        "set detach-on-fork off",
        "set schedule-multiple on",
        "break child_fn",
        "continue",
    ];
    // The child, at its breakpoint: the parent's waitpid sees it killed (status 0).
    let cmds = [
        &keep_both[..],
        &["kill inferiors 2", "inferior 1", "continue"],
    ]
    .concat();
    let (s, g, all) = enforced(None, "kill", &["fork"], &cmds);
    assert!(
        g.stdout.contains("hit Breakpoint 1.2, child_fn (n=7)"),
        "{all}"
    );
    assert!(g.stdout.contains("[Inferior 1 (process "), "{all}");
    assert!(g.stdout.contains("exited normally]"), "{all}");
    assert_eq!(s.code, Some(0), "{all}");
    // The first process: the child goes on to its exit, sbx reports the first one killed.
    let cmds = [
        &keep_both[..],
        &["kill inferiors 1", "inferior 2", "continue"],
    ]
    .concat();
    let (s, g, all) = enforced(None, "kill", &["fork"], &cmds);
    assert!(
        g.stdout.contains("hit Breakpoint 1.2, child_fn (n=7)"),
        "{all}"
    );
    assert!(
        g.stdout.contains("[Inferior 2 (process ") && g.stdout.contains("exited with code 07]"),
        "{all}"
    );
    assert!(!g.stderr.contains("Remote communication error"), "{all}");
    assert_eq!(s.code, Some(128 + 9), "{all}");
}

/// A vfork child followed by gdb (`follow-fork-mode child`): it stops at a breakpoint in the
/// memory it borrows from its parent, and its exec is followed (gdb names the new program);
/// the parent, detached once the child exec'd, returns the child's status.
#[test]
fn a_vfork_child_is_followed_through_its_exec() {
    for user in users() {
        let (s, g, all) = enforced(
            user,
            "kill",
            &["vfork"],
            &[
                "set follow-fork-mode child",
                "break before_exec",
                "continue",
                "print n",
                "continue",
                "continue",
            ],
        );
        assert!(
            g.stdout.contains("Breakpoint 1, before_exec (n=1)"),
            "{all}"
        );
        assert!(g.stdout.contains("$1 = 1"), "{all}");
        assert!(
            g.stdout.contains("is executing new program: /usr/bin/true"),
            "{all}"
        );
        assert!(g.stdout.contains("exited normally]"), "{all}");
        assert_eq!(s.code, Some(6), "{all}");
    }
}

/// gdb's default with a vfork: the child is detached (it never stops at the breakpoint in
/// the memory it shares with its parent), and the parent runs on to its exit once the child
/// has exec'd (gdb is told, and puts its breakpoints back).
#[test]
fn a_vfork_child_is_detached_when_gdb_follows_the_parent() {
    for user in users() {
        let (s, g, all) = enforced(
            user,
            "kill",
            &["vfork"],
            &[
                "break before_exec",
                "break vfork_exec",
                "continue",
                "break waitpid",
                "continue",
                "continue",
            ],
        );
        assert!(
            g.stdout.contains("Breakpoint 2, vfork_exec (nap=0)"),
            "{all}"
        );
        assert!(
            g.stdout
                .contains("[Detaching after vfork from child process "),
            "{all}"
        );
        assert!(!g.stdout.contains("before_exec (n=1)"), "{all}");
        // A breakpoint set after the vfork is hit in the parent: gdb's breakpoints are back
        // in its memory once the child is done with it.
        assert!(g.stdout.contains("Breakpoint 3, "), "{all}");
        assert!(g.stdout.contains("exited with code 06]"), "{all}");
        assert_eq!(s.code, Some(6), "{all}");
    }
}

/// A program that execs (itself, in another mode) is followed into the new program: gdb
/// re-sets its breakpoint there and stops in it.
#[test]
fn an_exec_is_followed_into_the_new_program() {
    for user in users() {
        let (s, g, all) = enforced(
            user,
            "kill",
            &["exec"],
            &["break compute", "continue", "print n", "continue"],
        );
        assert!(g.stdout.contains("is executing new program: "), "{all}");
        assert!(g.stdout.contains("Breakpoint 1, compute (n=3)"), "{all}");
        assert!(g.stdout.contains("$1 = 3"), "{all}");
        assert!(g.stdout.contains("exited with code 03]"), "{all}");
        assert_eq!(s.code, Some(3), "{all}");
    }
}

#[test]
fn a_violation_in_kill_mode_ends_the_session_with_the_line() {
    for user in users() {
        let (s, g, all) = enforced(
            user,
            "kill",
            &["violate", "/etc/hostname"],
            &["continue", "bt", "continue"],
        );
        // sbx's line, as gdb printed it from the console packet (gdb writes the target's
        // console output to its stderr).
        assert!(
            g.stderr
                .lines()
                .any(|l| l.starts_with("sbx: violation: ") && l.contains("read /etc/hostname")),
            "{all}"
        );
        assert!(g.stdout.contains("Program received signal SIGSYS"), "{all}");
        assert!(g.stdout.contains("in main ("), "{all}");
        assert!(
            g.stdout.contains("Program terminated with signal SIGKILL"),
            "{all}"
        );
        assert_eq!(s.code, Some(124), "{all}");
        assert!(
            !s.stdout.contains("fd="),
            "the workload ran on after the kill\n{all}"
        );
    }
}

#[test]
fn a_violation_in_deny_mode_goes_on_to_the_exit() {
    for user in users() {
        let (s, g, all) = enforced(
            user,
            "deny",
            &["violate", "/etc/hostname"],
            &["continue", "continue"],
        );
        assert!(g.stderr.contains("sbx: violation: "), "{all}");
        assert!(g.stdout.contains("Program received signal SIGSYS"), "{all}");
        assert!(g.stdout.contains("exited with code 04"), "{all}");
        // The denied open failed, and the program went on.
        assert!(s.stdout.contains("fd=-1"), "{all}");
        assert_eq!(s.code, Some(124), "{all}");
    }
}

#[test]
fn a_non_loopback_address_is_refused() {
    let (d, bin) = setup();
    let prog = bin.to_str().unwrap();
    for addr in ["0.0.0.0:2345", "192.0.2.1:2345", "localhost:2345"] {
        for cmd in [
            enforce_args("kill", addr, &[prog, "exit"]),
            vec!["record", "-o", "t.bin", "--gdb", addr, "--", prog, "exit"],
        ] {
            let o = run_guarded(sbx_cmd(None, d.path(), &cmd), GUARD);
            assert_eq!(o.code, Some(2), "{addr}: {}", o.stderr);
            assert_eq!(o.stderr.lines().count(), 1, "{addr}: {}", o.stderr);
            assert!(o.stderr.contains("--gdb"), "{}", o.stderr);
            assert!(!o.stdout.contains("r="), "the workload ran");
        }
        assert!(!d.join("t.bin").exists(), "record created its trace");
    }
}

#[test]
fn record_with_gdb_over_loopback_tcp() {
    for user in users() {
        let (d, bin) = setup();
        let prog = bin.to_str().unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let addr = format!("127.0.0.1:{port}");
        let (s, g) = session(
            user,
            &d,
            &bin,
            &["record", "-o", "t.bin", "--gdb", &addr, "--", prog, "exit"],
            &addr,
            &["break compute", "continue", "print n", "continue"],
        );
        let all = shown(&s, &g);
        assert!(g.stdout.contains("Breakpoint 1, compute (n=3)"), "{all}");
        assert!(g.stdout.contains("$1 = 3"), "{all}");
        assert_eq!(s.code, Some(3), "{all}");
        let show = run_guarded(sbx_cmd(None, d.path(), &["show", "t.bin"]), GUARD);
        assert!(show.stdout.contains("exit 3"), "{}", show.stdout);
    }
}

/// A CI step as CI runs it, `bash -c '...'`: gdb starts in bash, follows the fork into the
/// child and its exec into the program, and stops there at a breakpoint set pending before;
/// bash (detached) runs the rest of the step under the sandbox.
#[test]
fn a_program_started_by_the_steps_shell_is_reached_through_fork_and_exec() {
    for user in users() {
        let (d, bin) = setup();
        let prog = bin.to_str().unwrap();
        d.write(
            "sh.profile",
            &format!(
                // bash asks nscd who its user is when the environment does not say (CI's
                // clean one).
                "include shell\n\nconnect unix /{{var/,}}run/nscd/socket\nexec {prog}\n"
            ),
        );
        let step = format!("{prog} exit; {prog} exit; echo step-done");
        let (s, g) = session(
            user,
            &d,
            Path::new("/usr/bin/bash"),
            &[
                "enforce",
                "--gdb",
                "gdb.sock",
                "sh.profile",
                "--",
                "bash",
                "-c",
                &step,
            ],
            "gdb.sock",
            &[
                "set follow-fork-mode child",
                "set breakpoint pending on",
                "break compute",
                "continue",
                "print n",
                "continue",
            ],
        );
        let all = shown(&s, &g);
        assert!(g.stdout.contains("is executing new program: "), "{all}");
        assert!(
            g.stdout.contains("hit Breakpoint 1, compute (n=3)"),
            "{all}"
        );
        assert!(g.stdout.contains("$1 = 3"), "{all}");
        assert!(g.stdout.contains("exited with code 03]"), "{all}");
        // The program gdb followed and the one after it both ran; bash ended the step.
        assert_eq!(s.stdout.matches("r=22").count(), 2, "{all}");
        assert!(s.stdout.contains("step-done"), "{all}");
        assert_eq!(s.code, Some(0), "{all}");
    }
}

/// The workload connecting to gdb's own port: the socket is sbx's and closed once gdb is in,
/// and the connect is judged by the profile like any other (no rule allows it: a violation,
/// shown to gdb, in deny mode a refused call).
#[test]
fn the_workload_connecting_to_gdbs_port_is_judged_by_the_profile() {
    let (d, bin) = setup();
    let prog = bin.to_str().unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let addr = format!("127.0.0.1:{port}");
    let port = port.to_string();
    let (s, g) = session(
        None,
        &d,
        &bin,
        &enforce_args("deny", &addr, &[prog, "connect", &port]),
        &addr,
        &["continue", "continue"],
    );
    let all = shown(&s, &g);
    assert!(
        g.stderr
            .lines()
            .any(|l| l.starts_with("sbx: violation: ") && l.contains("connect")),
        "{all}"
    );
    assert!(g.stdout.contains("Program received signal SIGSYS"), "{all}");
    assert!(g.stdout.contains("exited with code 010]"), "{all}");
    // Refused by the sandbox (EACCES/EPERM), not let through to the closed socket.
    assert!(
        s.stdout.contains("connect=-1 errno=13") || s.stdout.contains("connect=-1 errno=1"),
        "{all}"
    );
    assert_eq!(s.code, Some(124), "{all}");
}

/// The state letters of the processes whose command line is `argv` (`/proc/PID/stat`).
fn states_of(argv: &[&str]) -> Vec<char> {
    let want: Vec<u8> = argv
        .iter()
        .flat_map(|a| [a.as_bytes(), b"\0"].concat())
        .collect();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter(|e| std::fs::read(e.path().join("cmdline")).ok().as_deref() == Some(&want[..]))
        .filter_map(|e| {
            let stat = std::fs::read_to_string(e.path().join("stat")).ok()?;
            stat.rsplit(") ").next()?.chars().next()
        })
        .collect()
}

/// A kill-mode session of `gdb_prog ARGS` in which gdb gets a Ctrl-C (SIGINT to gdb) once
/// `ready` says the program is where the test wants it. Returns (sbx, gdb, both shown,
/// whether the socket took a second connection meanwhile).
fn interrupted(
    args: &[&str],
    cmds: &[&str],
    ready: &dyn Fn(&str) -> bool,
) -> (Output, Output, String, bool) {
    let (d, bin) = setup();
    let prog = bin.to_str().unwrap();
    let run = [&[prog][..], args].concat();
    let sbx = sbx_cmd(None, d.path(), &enforce_args("kill", "gdb.sock", &run));
    let background = std::thread::spawn(move || run_guarded(sbx, GUARD));
    let start = Instant::now();
    while !d.join("gdb.sock").exists() && start.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut gdb = Command::new("gdb");
    gdb.args(["-nx", "-batch", "-ex", "target extended-remote gdb.sock"]);
    for c in cmds {
        gdb.args(["-ex", c]);
    }
    gdb.arg(&bin)
        .current_dir(d.path())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    std::os::unix::process::CommandExt::process_group(&mut gdb, 0);
    let child = gdb.spawn().unwrap();
    let gdb_pid = nix::unistd::Pid::from_raw(i32::try_from(child.id()).unwrap());
    while !ready(prog) && start.elapsed() < GUARD / 2 {
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(300));
    // One connection is taken: the socket is gone once gdb is in (nothing, the workload
    // included, can connect later).
    let socket_left = std::os::unix::net::UnixStream::connect(d.join("gdb.sock")).is_ok();
    nix::sys::signal::kill(gdb_pid, nix::sys::signal::Signal::SIGINT).unwrap();
    let killer = std::thread::spawn(move || {
        std::thread::sleep(GUARD);
        let _ = nix::sys::signal::killpg(gdb_pid, nix::sys::signal::Signal::SIGKILL);
    });
    let out = child.wait_with_output().unwrap();
    drop(killer);
    let s = background.join().unwrap();
    let g = Output {
        code: out.status.code(),
        signal: None,
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        elapsed: start.elapsed(),
    };
    let all = shown(&s, &g);
    (s, g, all, socket_left)
}

/// gdb's Ctrl-C (SIGINT to gdb while the program runs): gdb interrupts it, shows where it
/// is, writes its memory (`set var`) and lets it run to its exit.
#[test]
fn ctrl_c_interrupts_and_memory_writes_take() {
    let (s, g, all, socket_left) = interrupted(
        &["spin"],
        &["continue", "bt", "set var stop_spinning = 1", "continue"],
        // Once the program spins (running, no longer in a stop for gdb).
        &|prog| states_of(&[prog, "spin"]) == ['R'],
    );
    assert!(g.stdout.contains("Program received signal SIGINT"), "{all}");
    assert!(g.stdout.contains("in main ("), "{all}");
    assert!(g.stdout.contains("exited with code 05"), "{all}");
    assert_eq!(s.code, Some(5), "{all}");
    assert!(!socket_left, "the socket took a second connection");
}

/// Ctrl-C while the only thread gdb sees is a vfork parent waiting in the kernel for its
/// (detached, sleeping) child: the stop is reported once the parent can stop, after the
/// child's exec; before, gdb was told of a thread whose registers could not be read.
#[test]
fn ctrl_c_while_a_vfork_parent_waits_is_reported_once_it_can_stop() {
    let (s, g, all, _) = interrupted(
        &["vfork", "sleep"],
        &["continue", "bt", "continue"],
        // Parent and vfork child (same command line until the exec), the child asleep.
        &|prog| states_of(&[prog, "vfork", "sleep"]).len() == 2,
    );
    assert!(
        g.stdout
            .contains("[Detaching after vfork from child process "),
        "{all}"
    );
    assert!(g.stdout.contains("Program received signal SIGINT"), "{all}");
    assert!(g.stdout.contains("in main ("), "{all}");
    assert!(!g.stderr.contains("Could not read registers"), "{all}");
    assert!(g.stdout.contains("exited with code 06]"), "{all}");
    assert_eq!(s.code, Some(6), "{all}");
}

/// `detach` lets the workload run on under the sandbox (breakpoints gone); quitting gdb while
/// the program is alive kills the tree, as for a program gdb started itself.
#[test]
fn detach_runs_on_and_quitting_kills() {
    let (d, bin) = setup();
    let prog = bin.to_str().unwrap();
    let args = enforce_args("kill", "gdb.sock", &[prog, "exit"]);
    let (s, g) = session(
        None,
        &d,
        &bin,
        &args,
        "gdb.sock",
        &["break compute", "continue", "detach"],
    );
    let all = shown(&s, &g);
    assert!(g.stdout.contains("Breakpoint 1, compute (n=3)"), "{all}");
    assert!(g.stdout.contains("detached"), "{all}");
    assert!(s.stdout.contains("r=22"), "{all}");
    assert_eq!(s.code, Some(3), "{all}");
    // Another socket: the first may still be on disk (the kernel fence keeps sbx from
    // removing it), and gdb must not find it before sbx listens.
    let args = enforce_args("kill", "gdb2.sock", &[prog, "exit"]);
    let (s, g) = session(None, &d, &bin, &args, "gdb2.sock", &["break compute"]);
    let all = shown(&s, &g);
    assert!(!s.stdout.contains("r=22"), "{all}");
    assert_eq!(s.code, Some(128 + 9), "{all}");
}
