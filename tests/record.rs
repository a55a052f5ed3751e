//! `sbx record` on real workloads: events present and correct, tracer robustness.

use sbx::event::{Access, Event, EventKind, ExitStatus, Object, Outcome, SpawnVia};

use crate::util::{Dir, Sbx, bare, fixture, record, s};

fn syscalls(ev: &[Event]) -> impl Iterator<Item = (&Event, &sbx::event::Syscall)> {
    ev.iter().filter_map(|e| match &e.kind {
        EventKind::Syscall(sc) => Some((e, sc)),
        _ => None,
    })
}

/// All (access, effective path, outcome) triples of path targets.
fn path_accesses(ev: &[Event]) -> Vec<(Access, String, Outcome, i32, i32)> {
    let mut v = Vec::new();
    for (e, sc) in syscalls(ev) {
        for t in &sc.targets {
            if let Object::Path(p) = &t.object {
                for a in t.access.iter() {
                    v.push((a, s(p.effective()), sc.outcome, e.pid, e.tid));
                }
            }
        }
    }
    v
}

fn execs(ev: &[Event]) -> Vec<(i32, String, Vec<String>)> {
    ev.iter()
        .filter_map(|e| match &e.kind {
            EventKind::Exec(x) => Some((e.pid, s(&x.path), x.argv.iter().map(|a| s(a)).collect())),
            _ => None,
        })
        .collect()
}

#[test]
fn records_opens_with_results_and_not_free_syscalls() {
    let d = Dir::new();
    d.write("in.txt", "hello\n");
    let (out, h, ev) = record(
        d.path(),
        &["sh", "-c", "cat in.txt > out.txt; cat missing.txt; true"],
    );
    out.assert_code(0);
    let cwd = std::fs::canonicalize(d.path()).unwrap();
    assert_eq!(s(&h.cwd), cwd.to_string_lossy());
    let acc = path_accesses(&ev);
    let in_path = cwd.join("in.txt").to_string_lossy().into_owned();
    let out_path = cwd.join("out.txt").to_string_lossy().into_owned();
    let missing = cwd.join("missing.txt").to_string_lossy().into_owned();
    assert!(
        acc.iter().any(|(a, p, o, ..)| *a == Access::Read
            && *p == in_path
            && matches!(o, Outcome::Value(v) if *v >= 0)),
        "read of in.txt missing: {acc:?}"
    );
    assert!(
        acc.iter()
            .any(|(a, p, ..)| *a == Access::Create && *p == out_path)
    );
    assert!(
        acc.iter()
            .any(|(a, p, ..)| *a == Access::Truncate && *p == out_path)
    );
    assert!(
        acc.iter()
            .any(|(a, p, o, ..)| *a == Access::Read && *p == missing && *o == Outcome::Errno(2)),
        "ENOENT probe of missing.txt not recorded"
    );
    // Free syscalls (read/write/close) never stop the workload, so they are not in the trace.
    for (_, sc) in syscalls(&ev) {
        assert!(
            !["read", "write", "close", "fstat", "mmap", "brk"].contains(&sc.name.as_str()),
            "{}",
            sc.name
        );
    }
    // Exec events carry argv and env names but no values.
    let ex = execs(&ev);
    assert!(
        ex.iter()
            .any(|(_, p, argv)| p.ends_with("/cat") && argv == &["cat", "in.txt"]),
        "{ex:?}"
    );
    for e in &ev {
        if let EventKind::Exec(x) = &e.kind {
            assert!(x.env_names.iter().all(|n| !n.contains(&b'=')));
        }
    }
}

/// `sendto` stops only with a destination address (design.md section 3): `send()` on a
/// connected socket runs in-kernel, an unconnected datagram with an address is recorded.
#[test]
fn sendto_without_an_address_is_not_stopped() {
    let d = Dir::new();
    let script = "import socket\n\
a, b = socket.socketpair()\n\
for i in range(200):\n    a.send(b'x')\n\
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n\
u.sendto(b'hello', ('127.0.0.1', 9))\n\
print('sent')\n";
    let (out, _, ev) = record(d.path(), &["python3", "-c", script]);
    out.assert_code(0);
    assert_eq!(out.stdout, "sent\n");
    let sends: Vec<String> = syscalls(&ev)
        .filter(|(_, sc)| sc.name == "sendto")
        .map(|(_, sc)| format!("{:?}", sc.targets))
        .collect();
    assert_eq!(sends.len(), 1, "{sends:?}");
    assert!(sends[0].contains("port: 9"), "{sends:?}");
}

#[test]
fn exit_status_is_the_workloads() {
    let d = Dir::new();
    let (out, _, ev) = record(d.path(), &["sh", "-c", "exit 7"]);
    out.assert_code(7);
    assert!(ev.iter().any(
        |e| matches!(&e.kind, EventKind::Exit(x) if x.status == ExitStatus::Code(7) && x.process)
    ));
    let (out, _, _) = record(d.path(), &["sh", "-c", "kill -9 $$"]);
    out.assert_code(128 + 9);
}

#[test]
fn command_not_found_and_not_executable() {
    let d = Dir::new();
    let out = Sbx::new(["record", "-o", "t.bin", "--", "no-such-command-xyz"])
        .cwd(d.path())
        .run();
    out.assert_code(127);
    assert!(
        out.stderr
            .contains("no-such-command-xyz: command not found"),
        "{}",
        out.stderr
    );
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
    let f = d.write("notexec.sh", "#!/bin/sh\necho hi\n");
    let out = Sbx::new(["record", "-o", "t.bin", "--"])
        .cwd(d.path())
        .run_with(&[f.as_os_str()]);
    out.assert_code(126);
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
}

#[test]
fn threads_opening_files_concurrently() {
    let d = Dir::new();
    let bin = fixture("threads_open");
    let dir = d.path().to_string_lossy().into_owned();
    let (out, _, ev) = record(d.path(), &[bin.to_str().unwrap(), &dir, "8", "25"]);
    out.assert_code(0);
    assert!(out.stdout.contains("threads done"));
    let acc = path_accesses(&ev);
    let cwd = std::fs::canonicalize(d.path()).unwrap();
    let mut tids = std::collections::BTreeSet::new();
    for t in 0..8 {
        for j in 0..25 {
            let p = cwd.join(format!("t{t}_{j}")).to_string_lossy().into_owned();
            let hit = acc.iter().find(|(a, q, o, ..)| {
                *a == Access::Create && *q == p && matches!(o, Outcome::Value(_))
            });
            let (_, _, _, pid, tid) = hit.unwrap_or_else(|| panic!("create of {p} not recorded"));
            assert_ne!(pid, tid, "opens come from worker threads");
            tids.insert(*tid);
        }
    }
    assert_eq!(tids.len(), 8, "one tid per worker thread");
    let threads = ev
        .iter()
        .filter(|e| matches!(&e.kind, EventKind::Spawn(sp) if sp.thread))
        .count();
    assert_eq!(threads, 8);
}

#[test]
fn exec_from_a_non_leader_thread() {
    let d = Dir::new();
    let bin = fixture("exec_thread");
    let (out, _, ev) = record(d.path(), &[bin.to_str().unwrap()]);
    out.assert_code(0);
    assert_eq!(out.stdout.trim(), "exec-from-thread");
    let ex: Vec<_> = ev
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Exec(x) if x.path.ends_with(b"/echo") => Some((e.pid, e.tid, x.former_tid)),
            _ => None,
        })
        .collect();
    assert_eq!(ex.len(), 1, "{ex:?}");
    let (pid, tid, former) = ex[0];
    assert_eq!(pid, tid, "after exec the thread has the leader's tid");
    assert!(
        former.is_some_and(|f| f != pid),
        "former tid recorded: {former:?}"
    );
}

#[test]
fn vfork_and_exec() {
    let d = Dir::new();
    let bin = fixture("vfork_exec");
    let (out, _, ev) = record(d.path(), &[bin.to_str().unwrap()]);
    out.assert_code(0);
    assert!(out.stdout.contains("vfork-child"));
    assert!(ev.iter().any(
        |e| matches!(&e.kind, EventKind::Spawn(sp) if sp.via == SpawnVia::Vfork && !sp.thread)
    ));
    assert!(execs(&ev).iter().any(|(_, p, _)| p.ends_with("/echo")));
}

/// sbx leaves a vfork parent stopped until its child execs or dies. Every way the child can
/// end the wait releases the parent, with the same outcome as without sbx: an exit without
/// exec, a failed exec, a death by signal, the parent killed meanwhile, and a CLONE_VFORK
/// thread that execs from outside the leader (the waiting leader is then replaced, and must
/// not be resumed as if it were still waiting: the program after the exec is traced whole).
#[test]
fn vfork_parent_waits_out_every_end_of_its_child() {
    let bin = fixture("vfork_exec");
    let bin = bin.to_str().unwrap();
    // (mode, exit code, stdout must contain)
    let cases: &[(&str, i32, &str)] = &[
        ("exit", 7, "child status 7"),
        ("enoent", 0, "vfork-child"),
        ("signal", 109, "child signal 9"),
        ("killparent", 137, "vfork-child"),
        ("thread", 0, "vfork-thread"),
    ];
    for &(mode, code, text) in cases {
        let d = Dir::new();
        // Without sbx first: the fixture does what the case says.
        let b = bare(bin, [mode], d.path());
        let b_code = b.code.or(b.signal.map(|s| 128 + s));
        assert_eq!(b_code, Some(code), "{mode} bare: {b:?}");
        assert!(b.stdout.contains(text), "{mode} bare: {}", b.stdout);
        let (out, _, ev) = record(d.path(), &[bin, mode]);
        out.assert_code(code);
        assert!(out.stdout.contains(text), "{mode}: {}", out.stdout);
        assert!(!out.stdout.contains("leader-after-thread"), "{mode}");
        let vforks = ev
            .iter()
            .filter(|e| matches!(&e.kind, EventKind::Spawn(sp) if sp.via == SpawnVia::Vfork))
            .count();
        assert_eq!(vforks, 1, "{mode}");
        if mode == "enoent" {
            assert!(
                syscalls(&ev).any(
                    |(_, sc)| sc.name == "execve" && sc.outcome == Outcome::Errno(libc::ENOENT)
                ),
                "the failed exec is recorded"
            );
        }
        if matches!(mode, "enoent" | "killparent" | "thread") {
            let (pid, _, _) = *execs(&ev)
                .iter()
                .find(|(_, p, _)| p.ends_with("/echo"))
                .unwrap_or_else(|| panic!("{mode}: echo exec'd"));
            // The new program's own checked calls still stop: its loader opens libc.
            assert!(
                path_accesses(&ev)
                    .iter()
                    .any(|(_, p, _, ev_pid, _)| *ev_pid == pid && p.ends_with("/libc.so.6")),
                "{mode}: echo's openat of libc recorded"
            );
        }
    }
}

#[test]
fn five_hundred_short_lived_processes() {
    let d = Dir::new();
    let (out, _, ev) = record(
        d.path(),
        &[
            "sh",
            "-c",
            "i=0; while [ $i -lt 500 ]; do /bin/true; i=$((i+1)); done; echo end",
        ],
    );
    out.assert_code(0);
    assert_eq!(out.stdout.trim(), "end");
    let n = execs(&ev)
        .iter()
        .filter(|(_, p, _)| p.ends_with("/true"))
        .count();
    assert_eq!(n, 500);
    let exits = ev
        .iter()
        .filter(|e| matches!(&e.kind, EventKind::Exit(x) if x.process))
        .count();
    assert_eq!(exits, 501, "every process exit is recorded");
}

#[test]
fn deep_process_tree_with_parent_links() {
    let d = Dir::new();
    let bin = fixture("deep_tree");
    let (out, _, ev) = record(d.path(), &[bin.to_str().unwrap(), "40"]);
    out.assert_code(0);
    assert!(d.join("leaf").exists());
    let spawns: Vec<(i32, i32)> = ev
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Spawn(sp) if !sp.thread => Some((e.pid, sp.child)),
            _ => None,
        })
        .collect();
    assert_eq!(spawns.len(), 40);
    // Each child's events name its parent.
    for (parent, child) in &spawns {
        if let Some(e) = ev.iter().find(|e| e.pid == *child) {
            assert_eq!(e.proc.ppid, *parent);
        }
    }
}

#[test]
fn background_child_outliving_the_main_process_is_traced_and_waited_for() {
    let d = Dir::new();
    let (out, _, ev) = record(
        d.path(),
        &["sh", "-c", "(sleep 0.3; echo late > late.txt) & exit 3"],
    );
    out.assert_code(3);
    assert!(
        d.join("late.txt").exists(),
        "sbx returned before the orphan finished"
    );
    let (root, orphan) = match ev.as_slice() {
        [first, ..] => (first.pid, {
            let create = syscalls(&ev).find(|(_, sc)| {
                sc.targets.iter().any(|t| {
                    t.access.contains(Access::Create)
                        && matches!(&t.object, Object::Path(p) if p.abs.ends_with(b"/late.txt"))
                })
            });
            create
                .map(|(e, _)| e)
                .expect("the orphan's create of late.txt")
        }),
        [] => panic!("empty trace"),
    };
    // The orphan was re-parented (its shell exited first), but the trace keeps the parent
    // that spawned it (docs/trace-format.md, "Process info"): the tree stays a tree.
    assert_ne!(orphan.pid, root);
    assert_eq!(orphan.proc.ppid, root, "ppid after re-parenting");
    let root_exit = ev
        .iter()
        .position(|e| e.pid == root && matches!(&e.kind, EventKind::Exit(x) if x.process));
    let orphan_event = ev.iter().position(|e| std::ptr::eq(e, orphan));
    assert!(
        root_exit < orphan_event,
        "the orphan's write comes after its parent's exit"
    );
    // Every process of the tree exited in the trace, and none is left behind, not even as
    // a zombie (the kernel's reaper takes the re-parented ones).
    let pids: std::collections::BTreeSet<i32> = ev.iter().map(|e| e.pid).collect();
    for pid in &pids {
        assert!(
            ev.iter()
                .any(|e| e.pid == *pid && matches!(&e.kind, EventKind::Exit(x) if x.process)),
            "no exit for {pid}"
        );
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    let left = loop {
        let left: Vec<String> = pids
            .iter()
            .filter_map(|p| std::fs::read_to_string(format!("/proc/{p}/stat")).ok())
            .collect();
        if left.is_empty() || std::time::Instant::now() > deadline {
            break left;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    assert!(left.is_empty(), "left behind: {left:?}");
}

#[test]
fn group_stop_and_job_control() {
    let d = Dir::new();
    let bin = fixture("stopper");
    // SIGSTOP and SIGTSTP: the child stays stopped (checked 300 ms later) until SIGCONT.
    let b = bare(bin.to_str().unwrap(), [""; 0], d.path());
    assert_eq!(b.stdout.trim(), "ok", "without sbx: {}", b.stdout);
    for m in ["after-stop", "after-tstp"] {
        std::fs::remove_file(d.join(m)).unwrap();
    }
    let (out, _, _) = record(d.path(), &[bin.to_str().unwrap()]);
    assert_eq!(out.stdout.trim(), "ok", "{}", out.stderr);
    out.assert_code(0);
    assert!(d.join("after-stop").exists() && d.join("after-tstp").exists());
}

#[test]
fn signals_are_delivered_unchanged() {
    let d = Dir::new();
    let bin = fixture("signals");
    let b = bare(bin.to_str().unwrap(), [""; 0], d.path());
    b.assert_code(42);
    let (out, _, _) = record(d.path(), &[bin.to_str().unwrap()]);
    assert_eq!(out.stdout, b.stdout);
    out.assert_code(42);
}

#[test]
fn clone_untraced_and_clone3_cannot_escape() {
    let d = Dir::new();
    let bin = fixture("untraced");
    // Without sbx both calls create untraced children.
    let b = bare(bin.to_str().unwrap(), [""; 0], d.path());
    assert_eq!(b.stdout.trim(), "clone_untraced=escaped clone3=created");
    let (out, _, _) = record(d.path(), &[bin.to_str().unwrap()]);
    out.assert_code(0);
    assert_eq!(out.stdout.trim(), "clone_untraced=EPERM clone3=ENOSYS");
}

#[test]
fn sigint_sigterm_sighup_to_sbx_are_forwarded_to_the_tree() {
    use nix::sys::signal::Signal;
    for sig in [Signal::SIGINT, Signal::SIGTERM, Signal::SIGHUP] {
        let d = Dir::new();
        let trace = d.join("t.bin");
        // A marker in the sleep's argument tells this run's sleep from any other. A tree of
        // sh, sh, sleep in the foreground, plus a background sleep except for SIGINT: a
        // non-interactive shell starts its `&` jobs with SIGINT ignored (POSIX), with or
        // without sbx, so that one would rightly outlive a forwarded SIGINT.
        let marker = format!("30.{}", sig as i32);
        let background = if sig == Signal::SIGINT {
            String::new()
        } else {
            format!("sleep {marker} & ")
        };
        let script = format!("{background}sh -c 'sleep {marker}; true'; wait");
        let mut child = std::process::Command::new(crate::util::sbx_bin())
            .args(["record", "-o"])
            .arg(&trace)
            .args(["--", "sh", "-c", &script])
            .current_dir(d.path())
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(500));
        let start = std::time::Instant::now();
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(i32::try_from(child.id()).unwrap()),
            sig,
        )
        .unwrap();
        let st = child.wait().unwrap();
        assert!(
            start.elapsed() < std::time::Duration::from_secs(10),
            "{sig}"
        );
        assert_eq!(st.code(), Some(128 + sig as i32), "{sig}");
        // No stray sleep left behind.
        let ps = bare("pgrep", ["-f", &format!("sleep {marker}")], d.path());
        assert!(
            ps.stdout.trim().is_empty(),
            "{sig}: stray processes: {}",
            ps.stdout
        );
    }
}

#[test]
fn aslr_and_personality_untouched() {
    let d = Dir::new();
    let stack = |out: &str| -> String {
        out.lines()
            .find(|l| l.contains("[stack]"))
            .unwrap_or("")
            .split('-')
            .next()
            .unwrap()
            .to_string()
    };
    let (o1, _, _) = record(d.path(), &["cat", "/proc/self/maps"]);
    let (o2, _, _) = record(d.path(), &["cat", "/proc/self/maps"]);
    assert_ne!(
        stack(&o1.stdout),
        stack(&o2.stdout),
        "stack address identical across runs: ASLR off?"
    );
    let pers = "import ctypes; print(ctypes.CDLL(None).personality(0xffffffff))";
    let b = bare("python3", ["-c", pers], d.path());
    let (o, _, _) = record(d.path(), &["python3", "-c", pers]);
    assert_eq!(o.stdout, b.stdout);
}

/// A setuid-root program as the workload's child: as root, sbx installs its filter without
/// no_new_privs, so the program still gains euid 0, and the trace shows "as 65534/0".
/// As a non-root user, sbx says once that setuid elevation is off (no_new_privs).
#[test]
fn setuid_programs_keep_working_under_root_and_are_reported() {
    if !nix::unistd::geteuid().is_root() {
        eprintln!("N/A: needs root to make a setuid-root fixture");
        return;
    }
    let d = Dir::new();
    std::fs::set_permissions(
        d.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    // A setuid-root copy of a tiny program that opens a file (a checked syscall) and prints
    // its real and effective uids.
    let src = d.write(
        "suid.c",
        "#include <fcntl.h>\n#include <stdio.h>\n#include <unistd.h>\nint main(void){int fd=open(\"/etc/hostname\",O_RDONLY);printf(\"%d %d %d\\n\",(int)getuid(),(int)geteuid(),fd>=0);return 0;}\n",
    );
    let bin = d.join("suid");
    let st = std::process::Command::new("gcc")
        .arg("-o")
        .arg(&bin)
        .arg(&src)
        .status()
        .unwrap();
    assert!(st.success());
    std::fs::set_permissions(&bin, std::os::unix::fs::PermissionsExt::from_mode(0o4755)).unwrap();
    let b = bin.to_str().unwrap();
    // Bare: a user process running it becomes euid 0.
    let bare_out = bare(
        "setpriv",
        ["--reuid=65534", "--regid=65534", "--clear-groups", b],
        d.path(),
    );
    assert_eq!(bare_out.stdout.trim(), "65534 0 1", "{bare_out:?}");
    let (out, _, ev) = record(
        d.path(),
        &[
            "setpriv",
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            b,
        ],
    );
    out.assert_code(0);
    assert_eq!(
        out.stdout.trim(),
        "65534 0 1",
        "setuid elevation must work under sbx as root"
    );
    assert!(!out.stderr.contains("no_new_privs"), "{}", out.stderr);
    let opened_as = ev.iter().find_map(|e| match &e.kind {
        EventKind::Syscall(sc)
            if sc.name == "openat"
                && sc
                    .targets
                    .iter()
                    .any(|t| matches!(&t.object, Object::Path(p) if p.abs == b"/etc/hostname")) =>
        {
            Some(e.proc.creds)
        }
        _ => None,
    });
    let c = opened_as.expect("open of /etc/hostname recorded");
    assert_eq!(
        (c.uid, c.euid),
        (65534, 0),
        "the trace shows the setuid transition"
    );
    // As a non-root user: the note, once, and no elevation.
    let nr_dir = d.join("nr");
    std::fs::create_dir(&nr_dir).unwrap();
    std::fs::set_permissions(&nr_dir, std::os::unix::fs::PermissionsExt::from_mode(0o777)).unwrap();
    let trace = nr_dir.join("nr.bin");
    let nr = bare(
        "setpriv",
        [
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            crate::util::sbx_bin(),
            "record",
            "-o",
            trace.to_str().unwrap(),
            "--",
            b,
        ],
        d.path(),
    );
    assert_eq!(nr.code, Some(0), "{nr:?}");
    assert_eq!(nr.stdout.trim(), "65534 65534 1");
    assert_eq!(
        nr.stderr.matches("no_new_privs").count(),
        1,
        "{}",
        nr.stderr
    );
}

/// sbx's own fds (trace file, pipes) are CLOEXEC: the workload sees exactly the fds it would
/// see without sbx.
#[test]
fn workload_inherits_exactly_the_fds_it_would_have_without_sbx() {
    let d = Dir::new();
    let list = "ls /proc/self/fd | sort -n | tr '\\n' ' '";
    let b = bare("sh", ["-c", list], d.path());
    let (out, _, _) = record(d.path(), &["sh", "-c", list]);
    out.assert_code(0);
    assert_eq!(out.stdout, b.stdout);
}

/// Gated and creds syscalls are recorded with their arguments decoded: namespace flag names,
/// chroot's path (absolute, as a target without access), personality flags, the ids of
/// setresuid, the ptrace request; as many arguments as each call takes. Learning turns them
/// into `syscall NAME` rules, not path rules.
#[test]
fn gated_and_creds_syscalls_recorded_decoded() {
    let d = Dir::new();
    std::fs::create_dir(d.join("jail")).unwrap();
    let jail = std::fs::canonicalize(d.join("jail")).unwrap();
    let jail = jail.to_str().unwrap();
    let bin = fixture("gated");
    let (out, _, ev) = record(d.path(), &[bin.to_str().unwrap(), "jail"]);
    out.assert_code(0);
    assert!(out.stdout.contains("ptrace=1\n"), "{}", out.stdout); // EPERM: sbx traces it
    let uid = nix::unistd::getuid().as_raw();

    // The chroot target: the literal "jail", made absolute, with no access.
    let (_, chroot) = syscalls(&ev)
        .find(|(_, sc)| sc.name == "chroot")
        .expect("chroot recorded");
    let [t] = chroot.targets.as_slice() else {
        panic!("chroot targets: {:?}", chroot.targets)
    };
    assert!(t.access.is_empty());
    let Object::Path(p) = &t.object else {
        panic!("{t:?}")
    };
    assert_eq!(
        (s(&p.literal), s(p.effective())),
        ("jail".into(), jail.into())
    );
    let want_chroot = if uid == 0 {
        Outcome::Value(0)
    } else {
        Outcome::Errno(1)
    };
    assert_eq!(chroot.outcome, want_chroot);

    let trace = d.join("trace.bin");
    let text = crate::util::sbx([std::ffi::OsStr::new("show"), trace.as_os_str()]);
    text.assert_code(0);
    let lines: Vec<&str> = text.stdout.lines().collect();
    let line = |start: &str| -> String {
        lines
            .iter()
            .find(|l| {
                l.split_once("] ")
                    .is_some_and(|(_, r)| r.starts_with(start))
            })
            .unwrap_or_else(|| panic!("no line starting {start:?} in\n{}", text.stdout))
            .to_string()
    };
    // The literal as passed, then the absolute path sbx resolved.
    let abs = r#""jail" -> ""#;
    for (start, want) in [
        (
            "unshare(",
            "unshare(CLONE_NEWNS|CLONE_NEWUSER) as ".to_string(),
        ),
        ("chroot(", format!("chroot({abs}{jail}\") as ")),
        (
            "personality(0xffffffff",
            "personality(0xffffffff (query)) as ".into(),
        ),
        (
            "personality(PER",
            "personality(PER_LINUX|ADDR_NO_RANDOMIZE) as ".into(),
        ),
        ("setresuid(", format!("setresuid({uid}, {uid}, -1) as ")),
        ("ptrace(", "ptrace(PTRACE_ATTACH, ".into()),
    ] {
        let l = line(start);
        assert!(l.contains(&want), "{l:?} lacks {want:?}");
    }
    // Four arguments, no trailing registers; EPERM: sbx already traces the child.
    let l = line("ptrace(");
    assert!(
        l.contains(", 0, 0) as ") && l.ends_with("= -1 EPERM"),
        "{l}"
    );

    // JSON: the same argument texts, the path as a target.
    let (o, v) = crate::util::show_json(&trace, &["--syscall", "chroot"]);
    o.assert_code(0);
    assert_eq!(v.len(), 1, "{v:?}");
    assert_eq!(
        v[0]["decoded_args"],
        serde_json::json!([format!("{abs}{jail}\"")])
    );
    assert_eq!(v[0]["targets"][0]["type"], "path");
    assert_eq!(v[0]["targets"][0]["abs"], jail);
    assert_eq!(v[0]["targets"][0]["access"], serde_json::json!([]));
    for (name, want) in [
        ("unshare", serde_json::json!(["CLONE_NEWNS|CLONE_NEWUSER"])),
        (
            "setresuid",
            serde_json::json!([uid.to_string(), uid.to_string(), "-1"]),
        ),
    ] {
        let (_, v) = crate::util::show_json(&trace, &["--syscall", name]);
        assert_eq!(v.len(), 1, "{name}: {v:?}");
        assert_eq!(v[0]["decoded_args"], want, "{name}");
    }
    let (_, v) = crate::util::show_json(&trace, &["--syscall", "ptrace"]);
    let args = &v[0]["decoded_args"];
    assert_eq!(args.as_array().map(Vec::len), Some(4), "{args}");
    assert_eq!(args[0], "PTRACE_ATTACH");

    // Learned as syscall rules; chroot's directory is no read or write rule.
    let profile = crate::util::learn_cli(&[&trace], &d.join("p.profile"), &[]);
    for name in ["unshare", "chroot", "personality", "ptrace"] {
        assert!(
            profile.contains(&format!("syscall {name}\n")),
            "{name}:\n{profile}"
        );
    }
    let rules: Vec<&str> = profile.lines().filter(|l| !l.starts_with('#')).collect();
    assert!(!rules.iter().any(|l| l.contains("jail")), "{profile}");
}

/// The root's first execve is shown under the program's comm and exe, not sbx's (the root is
/// sbx's spawn code until then), so `sbx show --comm PROG` finds it; a later exec stays under
/// the comm of the program that called it.
#[test]
fn root_execve_carries_the_programs_comm() {
    let d = Dir::new();
    let (out, _, ev) = record(d.path(), &["sh", "-c", "exec /bin/true"]);
    out.assert_code(0);
    let execves: Vec<(String, String)> = syscalls(&ev)
        .filter(|(_, sc)| sc.name == "execve")
        .map(|(e, _)| (s(&e.proc.comm), s(&e.proc.exe)))
        .collect();
    assert_eq!(execves.len(), 2, "{execves:?}");
    assert_eq!(execves[0].0, "sh");
    assert!(!execves[0].1.contains("sbx"), "{execves:?}");
    assert_eq!(execves[1].0, "sh");
    let trace = d.join("trace.bin");
    let (o, v) = crate::util::show_json(&trace, &["--comm", "sh", "--syscall", "execve"]);
    o.assert_code(0);
    assert_eq!(v.len(), 2, "{v:?}");
}

/// sbx names an exec'd program as the kernel does (the last component of the path it was
/// given, cut to 15 bytes) without reading `/proc/PID/comm`: each program prints the comm the
/// kernel gave it, and the trace's exec events must say the same, in order.
#[test]
fn exec_comm_is_the_kernels() {
    use std::os::unix::fs::{PermissionsExt, symlink};
    let d = Dir::new();
    symlink("/bin/cat", d.join("a-very-long-program-name")).unwrap();
    std::fs::create_dir(d.join("sub")).unwrap();
    symlink("/bin/cat", d.join("short")).unwrap();
    let script = d.write(
        "run-me.sh",
        "#!/bin/sh\nread c < /proc/$$/comm; echo \"$c\"\n",
    );
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut cmd = String::from(
        "./a-very-long-program-name /proc/self/comm; ./run-me.sh; ./sub/../short /proc/self/comm",
    );
    // fexecve: execveat(fd, "", AT_EMPTY_PATH), named after the fd or the file by the
    // kernel; sbx reads /proc for it.
    let python = std::path::Path::new("/usr/bin/python3").exists();
    if python {
        cmd.push_str(
            "; /usr/bin/python3 -c \"import os; fd = os.open('/bin/cat', os.O_RDONLY); \
             os.execve(fd, ['cat', '/proc/self/comm'], {})\"",
        );
    }
    let (out, _, ev) = record(d.path(), &["sh", "-c", &cmd]);
    out.assert_code(0);
    let printed: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(printed[..3], ["a-very-long-pro", "run-me.sh", "short"]);
    assert_eq!(printed.len(), if python { 4 } else { 3 }, "{printed:?}");
    let named: Vec<String> = ev
        .iter()
        .filter(|e| matches!(e.kind, EventKind::Exec(_)) && e.proc.ppid != 0)
        .map(|e| s(&e.proc.comm))
        .filter(|c| !c.starts_with("python3"))
        .collect();
    assert_eq!(named, printed, "exec events' comm against the kernel's");
}

/// sbx names the program an exec started without reading `/proc/PID/exe` when the kernel
/// runs the file itself: each program prints `/proc/self/exe` as the kernel has it, and the
/// trace's exec events must say the same, in order. Covered: a symlinked program (exe is the
/// target), `..` in the path, a copy in the test directory, a script (exe is its interpreter,
/// not the file named), the same file rewritten in place from program to script (same inode),
/// a program replaced by another file under its name, and fexecve (read from `/proc`).
#[test]
fn exec_exe_is_the_kernels() {
    use std::os::unix::fs::{PermissionsExt, symlink};
    let d = Dir::new();
    let readlink = std::fs::canonicalize("/bin/readlink").unwrap();
    symlink("/bin/readlink", d.join("rl")).unwrap();
    std::fs::create_dir(d.join("sub")).unwrap();
    std::fs::copy(&readlink, d.join("copy")).unwrap();
    let script = d.write("run-me.sh", "#!/bin/sh\nreadlink /proc/$$/exe\n");
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut cmd = String::from(
        "./rl /proc/self/exe; ./sub/../rl /proc/self/exe; ./copy /proc/self/exe; ./run-me.sh; \
         ./copy /proc/self/exe; printf '#!/bin/sh\\nreadlink /proc/$$/exe\\n' > copy; ./copy; \
         rm copy; cp run-me.sh copy; ./copy; rm copy; cp rl copy; ./copy /proc/self/exe",
    );
    let python = std::path::Path::new("/usr/bin/python3").exists();
    if python {
        cmd.push_str(
            "; /usr/bin/python3 -c \"import os; fd = os.open('/bin/readlink', os.O_RDONLY); \
             os.execve(fd, ['readlink', '/proc/self/exe'], {})\"",
        );
    }
    let (out, _, ev) = record(d.path(), &["sh", "-c", &cmd]);
    out.assert_code(0);
    let printed: Vec<&str> = out.stdout.lines().collect();
    let rl = readlink.to_str().unwrap();
    let sh = std::fs::canonicalize("/bin/sh").unwrap();
    let sh = sh.to_str().unwrap();
    let copy = std::fs::canonicalize(d.path()).unwrap().join("copy");
    let copy = copy.to_str().unwrap();
    let mut want = vec![rl, rl, copy, sh, copy, sh, sh, copy];
    if python {
        want.push(rl);
    }
    assert_eq!(printed, want, "what the programs saw");
    // In the trace each script's exec (its shell) is followed by that of the `readlink` it
    // runs, which printed the shell's exe, not its own.
    let mut events = vec![rl, rl, copy, sh, rl, copy, sh, rl, sh, rl, copy];
    if python {
        events.push(rl);
    }
    let named: Vec<String> = ev
        .iter()
        .filter(|e| matches!(e.kind, EventKind::Exec(_)) && e.proc.ppid != 0)
        .map(|e| s(&e.proc.exe))
        .filter(|e| !e.contains("python3") && !e.ends_with("/cp") && !e.ends_with("/rm"))
        .collect();
    assert_eq!(named, events, "exec events' exe against the kernel's");
    for e in &ev {
        if let EventKind::Exec(x) = &e.kind {
            assert_eq!(x.path, &*e.proc.exe, "the exec event's path is its exe");
        }
    }
}

/// A parent killed while it forks: its children's first stops may come with no fork event
/// after them (the dying parent skips it), and sbx must still let them run and return.
#[test]
fn parent_killed_while_forking_leaves_no_hang() {
    let d = Dir::new();
    for _ in 0..20 {
        let mut sbx = Sbx::new([
            "record",
            "-o",
            "trace.bin",
            "--",
            "sh",
            "-c",
            "(sleep 0.02; kill -9 $$) & while :; do /bin/true & done",
        ]);
        sbx.timeout = std::time::Duration::from_secs(20);
        let out = sbx.cwd(d.path()).run();
        out.assert_code(128 + 9);
    }
}

/// record remembers symlink lookups between stops; each change to a link (replaced, renamed,
/// moved with its directory) must show in the paths recorded after it. The files' contents
/// say which file each `cat` really opened.
#[test]
fn symlink_changes_show_in_later_paths() {
    let d = Dir::new();
    let script = "mkdir a b; echo A > a/f; echo B > b/f
        ln -s a l; cat l/f
        rm l; ln -s b l; cat l/f
        mv l m; ln -s a l; cat l/f; cat m/f
        mkdir d; ln -s ../a d/s; cat d/s/f
        mv d e; mkdir d; ln -s ../b d/s; cat d/s/f; cat e/s/f";
    let (out, _, ev) = record(d.path(), &["sh", "-c", script]);
    out.assert_code(0);
    let opened: Vec<String> = out.stdout.lines().map(str::to_string).collect();
    assert_eq!(opened, ["A", "B", "A", "B", "A", "B", "A"]);
    let root = std::fs::canonicalize(d.path()).unwrap();
    let want: Vec<String> = opened
        .iter()
        .map(|c| {
            root.join(c.to_lowercase())
                .join("f")
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    let got: Vec<String> = syscalls(&ev)
        .filter(|(e, sc)| &*e.proc.comm == b"cat" && sc.name == "openat")
        .flat_map(|(_, sc)| sc.targets.iter())
        .filter_map(|t| match &t.object {
            Object::Path(p)
                if [&b"l/f"[..], b"m/f", b"d/s/f", b"e/s/f"].contains(&&p.literal[..]) =>
            {
                Some(s(p.effective()))
            }
            _ => None,
        })
        .collect();
    assert_eq!(got, want);
}

/// `-v` says how many syscall stops the run made, by call, and what sbx's own CPU cost.
#[test]
fn verbose_summary_counts_stops_by_call_and_sbx_cpu() {
    let d = Dir::new();
    let trace = d.path().join("t.bin");
    let out = Sbx::new([
        "-v",
        "record",
        "-o",
        trace.to_str().unwrap(),
        "--",
        "sh",
        "-c",
        "cat /dev/null; cat /dev/null; cat /dev/null",
    ])
    .cwd(d.path())
    .run();
    out.assert_code(0);
    let line = out
        .stderr
        .lines()
        .find(|l| l.contains(" syscall stops"))
        .unwrap_or_else(|| panic!("no stops line:\n{}", out.stderr));
    // sh and three cats: four execs, each stopped.
    let execs: u64 = line
        .split("execve ")
        .nth(1)
        .and_then(|r| r.split([',', ')']).next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no execve count: {line}"));
    assert_eq!(execs, 4, "{line}");
    let total: u64 = line
        .strip_prefix("sbx: ")
        .and_then(|r| r.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no total: {line}"));
    assert!(total >= execs + 3, "the cats' opens too: {line}");
    assert!(line.contains("sbx's own CPU "), "{line}");
}
