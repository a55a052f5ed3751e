//! The syscall ABI under enforce: the race guard re-points argument registers (an open
//! becomes `openat2` of the checked path, a path call goes through a held directory), and
//! the kernel preserves every register but the return value's, so code that keeps a value
//! in an argument register across an inline `syscall` (musl, glibc's inline wrappers) must
//! find it unchanged. sbx puts the caller's registers back at the call's exit.

use std::os::unix::fs::PermissionsExt;
use std::process::Command;
use std::time::Duration;

use crate::util::{Dir, Sbx, fixture, run_guarded, sbx_bin};

#[test]
fn argument_registers_survive_a_guarded_call() {
    let bin = fixture("regs_kept");
    let d = Dir::new();
    std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    d.write("f.txt", "hi\n");
    std::fs::create_dir(d.join("d")).unwrap();
    std::fs::set_permissions(d.join("d"), std::fs::Permissions::from_mode(0o777)).unwrap();
    let args = [bin.to_str().unwrap(), "f.txt", "d"];
    // Bare: every register kept.
    let mut bare = Command::new(&bin);
    bare.args(&args[1..]).current_dir(d.path());
    let out = run_guarded(bare, Duration::from_secs(30));
    out.assert_code(0);
    assert_eq!(out.stdout.matches(": kept").count(), 3, "{}", out.stdout);

    let mut rec = vec!["record", "-o", "t.bin", "--"];
    rec.extend(args);
    Sbx::new(rec).cwd(d.path()).run().assert_code(0);
    Sbx::new(["learn", "t.bin", "-o", "p.profile"])
        .cwd(d.path())
        .run()
        .assert_code(0);
    std::fs::set_permissions(d.join("p.profile"), std::fs::Permissions::from_mode(0o644)).unwrap();
    let users: &[Option<u32>] = if nix::unistd::geteuid().is_root() {
        &[None, Some(65534)]
    } else {
        &[None]
    };
    for &user in users {
        for mode in ["kill", "deny"] {
            let mut cmd = crate::util::as_user(user, sbx_bin());
            cmd.args(["enforce", "--mode", mode, "p.profile", "--"])
                .args(args)
                .current_dir(d.path());
            let out = run_guarded(cmd, Duration::from_secs(60));
            assert_eq!(
                out.code,
                Some(0),
                "{mode}, uid {user:?}: {}{}",
                out.stdout,
                out.stderr
            );
            assert_eq!(out.stdout.matches(": kept").count(), 3, "{}", out.stdout);
        }
    }
}
