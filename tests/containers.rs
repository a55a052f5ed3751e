//! sbx where CI jobs run: the conditions of a container reproduced in the ordinary suite.
//!
//! `tests/fixtures/seccomp_deny.c` puts sbx under a seccomp filter that refuses calls the way a
//! container runtime's default profile does (Docker's and podman's refuse `pidfd_getfd`,
//! `process_vm_readv`/`writev` and `kcmp` without `CAP_SYS_PTRACE`); `setpriv` gives the user
//! (root, or nobody). Each case runs record -> learn -> enforce, or shows the precise error.

use std::ffi::OsStr;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use crate::util::{Dir, Output, fixture, run_guarded, sbx_bin};

/// The uids to run as: root and nobody when the suite runs as root, else the suite's own.
fn users() -> Vec<Option<u32>> {
    if nix::unistd::geteuid().is_root() {
        vec![None, Some(65534)]
    } else {
        vec![None]
    }
}

/// A directory every user of [`users`] can work in.
fn open_dir() -> Dir {
    let d = Dir::new();
    std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    d
}

/// `[setpriv ...] env HOME=dir [seccomp_deny SET --] PROGRAM ARGS` in `dir`.
fn run_as(
    user: Option<u32>,
    deny: Option<&str>,
    dir: &Path,
    program: &str,
    args: &[&str],
) -> Output {
    let mut cmd = crate::util::as_user(user, "env");
    cmd.arg(format!("HOME={}", dir.display()))
        .arg(format!("TMPDIR={}", dir.display()));
    if let Some(set) = deny {
        cmd.arg(fixture("seccomp_deny")).arg(set).arg("--");
    }
    cmd.arg(program)
        .args(args.iter().map(OsStr::new))
        .current_dir(dir);
    run_guarded(cmd, Duration::from_secs(60))
}

fn sbx_as(user: Option<u32>, deny: Option<&str>, dir: &Path, args: &[&str]) -> Output {
    run_as(user, deny, dir, sbx_bin(), args)
}

/// The one `sbx: error:` line of a run that failed as it should (exactly one, asserted).
fn one_error_line(out: &Output) -> &str {
    let errors: Vec<&str> = out
        .stderr
        .lines()
        .filter(|l| l.starts_with("sbx: error:"))
        .collect();
    assert_eq!(errors.len(), 1, "{}", out.stderr);
    errors[0]
}

fn who(user: Option<u32>) -> &'static str {
    if user.is_some() {
        "nobody"
    } else {
        "the suite's user"
    }
}

/// Docker's and podman's default seccomp profile without CAP_SYS_PTRACE: `pidfd_getfd` is
/// refused, and sbx cannot tell a socket's type or pin an fd without it. record and enforce
/// fail closed before the workload starts: exit 125 and one line naming the refused call and
/// the option that allows it, never a fake exec failure or a violation, and no trace.
#[test]
fn a_refused_pidfd_getfd_fails_closed_and_names_the_option() {
    for user in users() {
        let d = open_dir();
        d.write("p.profile", "include base\nread ${CWD}/**\n");
        let rec = sbx_as(
            user,
            Some("docker"),
            d.path(),
            &[
                "record",
                "-o",
                "t.bin",
                "--",
                "sh",
                "-c",
                "echo ran > ran.txt",
            ],
        );
        let enf = sbx_as(
            user,
            Some("docker"),
            d.path(),
            &[
                "enforce",
                "p.profile",
                "--",
                "sh",
                "-c",
                "echo ran > ran.txt",
            ],
        );
        for (what, out) in [("record", &rec), ("enforce", &enf)] {
            assert_eq!(out.code, Some(125), "{what} as {}: {out:?}", who(user));
            let error = one_error_line(out);
            assert!(
                error.contains("pidfd_getfd is refused") && error.contains("--cap-add SYS_PTRACE"),
                "{what}: {}",
                out.stderr
            );
            assert!(!out.stderr.contains("violation") && !out.stderr.contains("cannot execute"));
        }
        assert!(!d.join("ran.txt").exists(), "the workload must not start");
        assert!(
            !d.join("t.bin").exists(),
            "no trace of a run that never started"
        );
    }
}

/// Where `process_vm_readv`, `process_vm_writev` and `kcmp` are refused but `pidfd_getfd` is
/// not, sbx reads the workload's memory through `/proc/PID/mem` and guards every `CLONE_VM`
/// sharer: record -> learn -> enforce holds for a shell step with a threaded python, and the
/// secret read of the same step is still killed (first shown to work without sbx, under the
/// same filter).
#[test]
fn refused_memory_calls_fall_back_to_proc() {
    let step = "cat ok.txt; python3 -c 'import threading; t = threading.Thread(target=lambda: print(open(\"ok.txt\").read().strip())); t.start(); t.join()'";
    for user in users() {
        let d = open_dir();
        d.write("ok.txt", "fine\n");
        let secret = d.write("secret.txt", "TOPSECRET\n");
        std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o644)).unwrap();
        let attack = format!("cat ok.txt; cat {}", secret.display());

        let bare = run_as(user, Some("memcalls"), d.path(), "sh", &["-c", &attack]);
        bare.assert_code(0);
        assert!(bare.stdout.contains("TOPSECRET"), "the attack works bare");

        let rec = sbx_as(
            user,
            Some("memcalls"),
            d.path(),
            &["-v", "record", "-o", "t.bin", "--", "sh", "-c", step],
        );
        rec.assert_code(0);
        assert!(
            rec.stderr.contains("process_vm_readv refused") && rec.stderr.contains("/proc/PID/mem"),
            "-v names the fallback: {}",
            rec.stderr
        );
        let learn = Command::new(sbx_bin())
            .args(["learn", "t.bin", "-o", "p.profile"])
            .current_dir(d.path())
            .output()
            .unwrap();
        assert!(learn.status.success(), "{learn:?}");
        // The profile names the same paths whoever recorded it (CWD is the recording's).
        let text = std::fs::read_to_string(d.join("p.profile")).unwrap();
        assert!(text.contains("${CWD}/ok.txt"), "{text}");
        std::fs::set_permissions(d.join("p.profile"), std::fs::Permissions::from_mode(0o644))
            .unwrap();

        let ok = sbx_as(
            user,
            Some("memcalls"),
            d.path(),
            &["enforce", "p.profile", "--", "sh", "-c", step],
        );
        ok.assert_code(0);
        assert_eq!(ok.stdout, "fine\nfine\n", "as {}", who(user));

        let bad = sbx_as(
            user,
            Some("memcalls"),
            d.path(),
            &["enforce", "p.profile", "--", "sh", "-c", &attack],
        );
        bad.assert_code(124);
        assert!(!bad.stdout.contains("TOPSECRET"), "{bad:?}");
        assert!(
            bad.stderr.contains("sbx: violation:") && bad.stderr.contains("secret.txt"),
            "{}",
            bad.stderr
        );
    }
}

/// A feature sbx sets up before the workload's exec, refused by the kernel: one `sbx: error:`
/// line naming it and the option that allows it, exit 125, never a fake exec failure of the
/// command (126) and no trace left behind.
#[test]
fn refused_features_name_themselves() {
    let cases: [(&str, &str); 2] = [
        ("seccomp", "the kernel refused sbx's seccomp filter"),
        ("ptrace", "cannot trace the workload (PTRACE_SEIZE"),
    ];
    for (set, says) in cases {
        let d = open_dir();
        let out = sbx_as(
            None,
            Some(set),
            d.path(),
            &[
                "record",
                "-o",
                "t.bin",
                "--",
                "sh",
                "-c",
                "echo ran > ran.txt",
            ],
        );
        assert_eq!(out.code, Some(125), "{set}: {out:?}");
        let error = one_error_line(&out);
        assert!(error.contains(says), "{set}: {}", out.stderr);
        assert!(
            !out.stderr.contains("cannot execute"),
            "{set}: {}",
            out.stderr
        );
        assert!(!d.join("ran.txt").exists() && !d.join("t.bin").exists());
        let partials = std::fs::read_dir(d.path())
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .file_name()
                    .to_string_lossy()
                    .contains("sbx-partial")
            })
            .count();
        assert_eq!(partials, 0, "{set}: a partial trace was left");
    }
}

/// Root without CAP_SYS_ADMIN (a container's root: GitLab's Docker executor, GitHub
/// `container:` jobs, Kubernetes pods): sbx sets no_new_privs on the workload, as for a normal
/// user, and says so; record -> learn -> enforce holds, and the step's secret read is killed
/// (first shown to work without sbx). Before issue 41 every run ended "cannot execute" (126).
#[test]
fn root_without_cap_sys_admin_runs_with_no_new_privs() {
    if !nix::unistd::geteuid().is_root() {
        eprintln!("SKIPPED: needs root (the suite runs as root in CI)");
        return;
    }
    let d = open_dir();
    d.write("ok.txt", "fine\n");
    let secret = d.write("secret.txt", "TOPSECRET\n");
    let drop = |args: &[&str]| {
        let mut c = Command::new("setpriv");
        c.args(["--bounding-set=-sys_admin", "--inh-caps=-sys_admin", "--"])
            .arg(sbx_bin())
            .args(args)
            .current_dir(d.path())
            .env("HOME", d.path());
        run_guarded(c, Duration::from_secs(60))
    };
    let attack = format!("cat ok.txt; cat {}", secret.display());
    let mut bare = Command::new("setpriv");
    bare.args([
        "--bounding-set=-sys_admin",
        "--inh-caps=-sys_admin",
        "--",
        "sh",
        "-c",
    ])
    .arg(&attack)
    .current_dir(d.path());
    let bare = run_guarded(bare, Duration::from_secs(30));
    bare.assert_code(0);
    assert!(bare.stdout.contains("TOPSECRET"));

    let rec = drop(&[
        "-v",
        "record",
        "-o",
        "t.bin",
        "--",
        "sh",
        "-c",
        "cat ok.txt",
    ]);
    rec.assert_code(0);
    assert!(
        rec.stderr.contains("CAP_SYS_ADMIN no") && rec.stderr.contains("no_new_privs"),
        "{}",
        rec.stderr
    );
    drop(&["learn", "t.bin", "-o", "p.profile"]).assert_code(0);
    let ok = drop(&["enforce", "p.profile", "--", "sh", "-c", "cat ok.txt"]);
    ok.assert_code(0);
    assert_eq!(ok.stdout, "fine\n");
    for mode in ["kill", "deny"] {
        let bad = drop(&[
            "enforce",
            "--mode",
            mode,
            "p.profile",
            "--",
            "sh",
            "-c",
            &attack,
        ]);
        bad.assert_code(124);
        assert!(!bad.stdout.contains("TOPSECRET"), "{mode}: {bad:?}");
    }
}

/// Landlock refused by the profile sbx runs under: the run goes on under the ptrace checks,
/// `-v` names the refusal (not "absent"), and `--require-fence` fails closed with it.
#[test]
fn refused_landlock_is_named_and_require_fence_fails_closed() {
    let d = open_dir();
    d.write("ok.txt", "fine\n");
    let rec = sbx_as(
        None,
        None,
        d.path(),
        &["record", "-o", "t.bin", "--", "sh", "-c", "cat ok.txt"],
    );
    rec.assert_code(0);
    Command::new(sbx_bin())
        .args(["learn", "t.bin", "-o", "p.profile"])
        .current_dir(d.path())
        .output()
        .unwrap();
    let run = sbx_as(
        None,
        Some("landlock"),
        d.path(),
        &["-v", "enforce", "p.profile", "--", "sh", "-c", "cat ok.txt"],
    );
    run.assert_code(0);
    assert!(
        run.stderr
            .contains("Landlock is refused by the seccomp profile"),
        "{}",
        run.stderr
    );
    let strict = sbx_as(
        None,
        Some("landlock"),
        d.path(),
        &[
            "enforce",
            "--require-fence",
            "p.profile",
            "--",
            "sh",
            "-c",
            "cat ok.txt",
        ],
    );
    assert_eq!(strict.code, Some(125), "{strict:?}");
    let error = one_error_line(&strict);
    assert!(error.contains("Landlock is refused"), "{}", strict.stderr);
    assert!(strict.stdout.is_empty(), "the workload must not start");
}

/// A call the file permissions refuse is no fence disagreement: nobody's `cat` of a name under
/// a directory only root may search fails with EACCES, the profile allows it and the fence
/// may not grant it (the path is missing at the start); sbx checks the permissions with the
/// workload's credentials before it reports (the loader of a non-root workload probes
/// `LD_LIBRARY_PATH` entries under `/root` the same way).
#[test]
fn a_refusal_of_the_permissions_is_no_fence_disagreement() {
    if !nix::unistd::geteuid().is_root() || sbx::tracer::landlock::abi().is_none_or(|a| a < 2) {
        eprintln!("skipped: needs root (to make a directory nobody may not search) and the fence");
        return;
    }
    let d = open_dir();
    std::fs::create_dir(d.join("locked")).unwrap();
    std::fs::set_permissions(d.join("locked"), std::fs::Permissions::from_mode(0o700)).unwrap();
    d.write(
        "p.profile",
        "include base\ninclude shell\nread ${CWD}/locked/sub/**\n",
    );
    std::fs::set_permissions(d.join("p.profile"), std::fs::Permissions::from_mode(0o644)).unwrap();
    let step = "cat locked/sub/f; echo rc=$?";
    let bare = run_as(Some(65534), None, d.path(), "sh", &["-c", step]);
    assert!(bare.stderr.contains("Permission denied"), "{bare:?}");
    // (Without cargo's library path, which the hand-written profile does not allow.)
    let out = run_as(
        Some(65534),
        None,
        d.path(),
        "env",
        &[
            "-u",
            "LD_LIBRARY_PATH",
            sbx_bin(),
            "enforce",
            "--mode",
            "deny",
            "--require-fence",
            "p.profile",
            "--",
            "sh",
            "-c",
            step,
        ],
    );
    out.assert_code(0);
    assert!(out.stdout.contains("rc=1"), "{out:?}");
    assert!(out.stderr.contains("Permission denied"), "{out:?}");
    assert!(!out.stderr.contains("violation"), "{out:?}");
}
