//! The kernel fence alone (issue 40): with the ptrace checks switched off
//! (`SBX_TEST_NO_PTRACE_CHECKS=1`, honoured by debug builds only), the Landlock rights sbx
//! derives from a learned profile refuse, in the kernel (EACCES), what the ptrace layer
//! exists to stop: reading a secret in HOME (`~/.ssh/id_rsa`), writing outside the write
//! roots (`~/.bashrc`), and running a program outside the exec roots (`/usr/bin/base64`).
//! Each workload (make, `pip install` of a local package, `npm install` of a local package
//! with a postinstall script, all offline) is learned, each attack is first shown to work
//! without sbx, then refused by the fence where the learned profile lets the fence express
//! it (all three for each of them), and otherwise named by `-v` as
//! unfenced or granted (and why: docs/security.md); the benign twin (the same step without the attack)
//! passes under the fence with the checks off, and `--require-fence` fails closed where the
//! fence is not in force.

use std::ffi::OsStr;
use std::path::Path;

use crate::util::{Dir, Output, Sbx, learn_cli, run_guarded};

/// The three attacks as shell code (make's recipe runs it) and what each prints when it
/// works; the workloads in other languages print the same markers.
const SH_ATTACK: &str = "read -r l < \"$HOME/.ssh/id_rsa\" && echo \"LEAK $l\"; \
                         echo pwned >> \"$HOME/.bashrc\" && echo WROTE; \
                         /usr/bin/base64 /dev/null && echo RAN; true";

const JS_ATTACK: &str = r#"
const fs = require('fs'), cp = require('child_process'), home = process.env.HOME;
if (process.env.SBX_ATTACK) {
  try { console.log('LEAK ' + fs.readFileSync(home + '/.ssh/id_rsa', 'utf8').trim()); }
  catch (e) { console.log('read: ' + e.code); }
  try { fs.appendFileSync(home + '/.bashrc', 'pwned\n'); console.log('WROTE'); }
  catch (e) { console.log('write: ' + e.code); }
  const r = cp.spawnSync('/usr/bin/base64', ['/dev/null']);
  console.log(r.error ? 'exec: ' + r.error.code : 'RAN');
}
"#;

const PY_ATTACK: &str = r#"
import os, subprocess, sys
from setuptools import setup
if os.environ.get("SBX_ATTACK"):
    home = os.environ["HOME"]
    try:
        print("LEAK " + open(home + "/.ssh/id_rsa").read().strip(), file=sys.stderr)
    except OSError as e:
        print("read: %s" % e.strerror, file=sys.stderr)
    try:
        open(home + "/.bashrc", "a").write("pwned\n")
        print("WROTE", file=sys.stderr)
    except OSError as e:
        print("write: %s" % e.strerror, file=sys.stderr)
    try:
        subprocess.run(["/usr/bin/base64", "/dev/null"], check=True)
        print("RAN", file=sys.stderr)
    except OSError as e:
        print("exec: %s" % e.strerror, file=sys.stderr)
setup(name="fencepkg", version="1.0", py_modules=["fencepkg"])
"#;

/// One workload: how to lay out its work tree, and its command.
struct Workload {
    name: &'static str,
    /// The attacks (`read`, `write`, `exec`) the fence alone refuses for this workload's
    /// learned profile; the others it must name as unfenced in `-v`.
    fenced: &'static [&'static str],
    prep: fn(&Path),
    argv: &'static [&'static str],
}

fn make_prep(w: &Path) {
    std::fs::write(
        w.join("m.c"),
        "#include <stdio.h>\nint main(void){puts(\"built\");return 0;}\n",
    )
    .unwrap();
    std::fs::write(
        w.join("Makefile"),
        "all: m\n\t./m\n\t@if [ -n \"$$SBX_ATTACK\" ]; then eval \"$$SBX_ATTACK\"; fi\n\
         m: m.c\n\tcc -o m m.c\n",
    )
    .unwrap();
    let _ = std::fs::remove_file(w.join("m"));
}

fn pip_prep(w: &Path) {
    let pkg = w.join("pkg");
    std::fs::create_dir_all(&pkg).unwrap();
    std::fs::write(pkg.join("setup.py"), PY_ATTACK).unwrap();
    std::fs::write(pkg.join("fencepkg.py"), "X = 1\n").unwrap();
    let _ = std::fs::remove_dir_all(w.join("out"));
    let _ = std::fs::remove_dir_all(pkg.join("build"));
    let _ = std::fs::remove_dir_all(pkg.join("fencepkg.egg-info"));
}

fn npm_prep(w: &Path) {
    let pkg = w.join("pkg");
    std::fs::create_dir_all(&pkg).unwrap();
    std::fs::write(
        pkg.join("package.json"),
        r#"{"name":"fencepkg","version":"1.0.0","scripts":{"postinstall":"node attack.js"}}"#,
    )
    .unwrap();
    std::fs::write(pkg.join("attack.js"), JS_ATTACK).unwrap();
    std::fs::write(
        w.join("package.json"),
        r#"{"name":"app","version":"1.0.0","dependencies":{"fencepkg":"file:pkg"}}"#,
    )
    .unwrap();
    let _ = std::fs::remove_dir_all(w.join("node_modules"));
    let _ = std::fs::remove_file(w.join("package-lock.json"));
}

const MAKE: Workload = Workload {
    name: "make",
    fenced: &["read", "write", "exec"],
    prep: make_prep,
    argv: &["make", "-s"],
};

const PIP: Workload = Workload {
    name: "pip",
    // The shipped `python` snippet's pyenv rules are rooted in `${PYENV_ROOT}`, so the fence
    // attaches them (they reached `/` as `/**/.pyenv/**`, leaving reads and execs unfenced).
    fenced: &["read", "write", "exec"],
    prep: pip_prep,
    // Debian's python3 (with setuptools and wheel), reachable by every user.
    argv: &[
        "/usr/bin/python3",
        "-m",
        "pip",
        "install",
        "--break-system-packages",
        "-v",
        "--no-index",
        "--no-cache-dir",
        "--no-build-isolation",
        "--no-deps",
        "--disable-pip-version-check",
        "--target",
        "out",
        "./pkg",
    ],
};

const NPM: Workload = Workload {
    name: "npm",
    // The `node` snippet's `own ${HOME}/.npm` holds its own rights where it exists (a warm
    // runner): HOME's rc files and ~/.ssh stay fenced. On a fresh HOME its rights move up to
    // HOME, and reads and writes there are the ptrace layer's (docs/security.md).
    fenced: &["read", "write", "exec"],
    prep: npm_prep,
    argv: &[
        "npm",
        "install",
        "--offline",
        "--no-audit",
        "--no-fund",
        "--foreground-scripts",
        "--install-links",
    ],
};

/// A site: HOME with a secret and a shell rc, and a work tree.
struct Site {
    dir: Dir,
}

impl Site {
    fn new(w: &Workload) -> Site {
        let dir = Dir::new();
        dir.write("home/.ssh/id_rsa", "s3cret-key\n");
        dir.write("home/.bashrc", "# rc\n");
        // Not the system's /tmp: the test's HOME lies under it, and a profile's TMPDIR area
        // is writable under the fence.
        std::fs::create_dir_all(dir.join("tmp")).unwrap();
        std::fs::create_dir_all(dir.join("work")).unwrap();
        (w.prep)(&dir.join("work"));
        Site { dir }
    }
    fn home(&self) -> std::path::PathBuf {
        self.dir.join("home")
    }
    fn work(&self) -> std::path::PathBuf {
        self.dir.join("work")
    }
    fn bashrc(&self) -> String {
        std::fs::read_to_string(self.home().join(".bashrc")).unwrap()
    }
    /// Run the workload, under `sbx` (its arguments up to `--`) or bare; with the attack
    /// switched on or not, and with the ptrace checks off or not.
    fn run(&self, w: &Workload, sbx: Option<&[&OsStr]>, attack: bool, checks_off: bool) -> Output {
        let mut cmd = match sbx {
            Some(args) => {
                let mut c = std::process::Command::new(crate::util::sbx_bin());
                c.args(args).arg("--").args(w.argv);
                c
            }
            None => {
                let mut c = std::process::Command::new(w.argv[0]);
                c.args(&w.argv[1..]);
                c
            }
        };
        cmd.current_dir(self.work())
            .env("HOME", self.home())
            .env("TMPDIR", self.dir.join("tmp"))
            // The system's tools only (a rustup on PATH makes setuptools look for rustc).
            .env("PATH", "/usr/bin:/bin")
            .env_remove("LD_LIBRARY_PATH")
            .env_remove("GITHUB_ACTIONS")
            .env_remove("npm_config_cache")
            // Offline: npm's once-a-day check for a newer npm would go to the registry.
            .env("npm_config_update_notifier", "false");
        if attack {
            cmd.env("SBX_ATTACK", SH_ATTACK);
        } else {
            cmd.env_remove("SBX_ATTACK");
        }
        if checks_off {
            cmd.env("SBX_TEST_NO_PTRACE_CHECKS", "1");
        } else {
            cmd.env_remove("SBX_TEST_NO_PTRACE_CHECKS");
        }
        run_guarded(cmd, std::time::Duration::from_secs(240))
    }
    /// Record the benign step and learn its profile.
    fn learn(&self, w: &Workload) -> std::path::PathBuf {
        let trace = self.dir.join("t.bin");
        let rec = [OsStr::new("record"), OsStr::new("-o"), trace.as_os_str()];
        let out = self.run(w, Some(&rec), false, false);
        out.assert_code(0);
        let profile = self.dir.join("p.profile");
        learn_cli(&[&trace], &profile, &[]);
        profile
    }
}

/// Does the fence exist on this kernel (Landlock ABI 2, file rights)?
fn fence_available() -> bool {
    sbx::tracer::landlock::abi().is_some_and(|a| a >= 2)
}

fn attack_is_refused_by_the_fence_alone(w: &Workload) {
    if !fence_available() {
        eprintln!("skipped: no Landlock ABI 2 (the fence needs it)");
        return;
    }
    let _g = crate::util::heavy_shared();
    let site = Site::new(w);
    // Without sbx every attack works.
    let bare = site.run(w, None, true, false);
    let all = format!("{}{}", bare.stdout, bare.stderr);
    assert!(
        all.contains("LEAK s3cret-key"),
        "{}: bare read: {bare:?}",
        w.name
    );
    assert!(all.contains("WROTE"), "{}: bare write: {bare:?}", w.name);
    assert!(all.contains("RAN"), "{}: bare exec: {bare:?}", w.name);
    assert!(site.bashrc().contains("pwned"));
    std::fs::write(site.home().join(".bashrc"), "# rc\n").unwrap();
    (w.prep)(&site.work());

    // A fresh HOME for the recording and for the enforced run, as on a new CI runner: the
    // tools' stores are missing (sbx makes a missing store before the fence, so its rights
    // do not move up to HOME).
    let fresh_home = || {
        for store in [".npm", ".cache"] {
            let _ = std::fs::remove_dir_all(site.home().join(store));
        }
    };
    fresh_home();
    let profile = site.learn(w);
    (w.prep)(&site.work());
    fresh_home();
    let enforce = [
        OsStr::new("-v"),
        OsStr::new("enforce"),
        OsStr::new("--mode"),
        OsStr::new("deny"),
        OsStr::new("--require-fence"),
        profile.as_os_str(),
    ];
    // The ptrace layer blocks nothing: what is refused, the kernel refused.
    let checks_off = |attack: bool| site.run(w, Some(&enforce), attack, true);
    // The benign twin: the learned step passes under the fence alone.
    let benign = checks_off(false);
    assert_eq!(
        benign.code,
        Some(0),
        "{}: benign under the fence: {benign:?}",
        w.name
    );
    assert!(
        benign.stderr.contains("SBX_TEST_NO_PTRACE_CHECKS")
            && benign.stderr.contains("; fence: files ("),
        "{}: {benign:?}",
        w.name
    );
    // npm's cache, missing on the fresh HOME, was made so that it holds its own rights.
    if w.name == "npm" {
        let made = format!(
            "sbx: fence: made the missing store {}",
            site.home().join(".npm").display()
        );
        assert!(benign.stderr.contains(&made), "{}", benign.stderr);
    }
    (w.prep)(&site.work());
    let out = checks_off(true);
    let all = format!("{}{}", out.stdout, out.stderr);
    let stopped = |what: &str| match what {
        "read" => !all.contains("s3cret"),
        "write" => !all.contains("WROTE") && !site.bashrc().contains("pwned"),
        _ => !all.contains("RAN"),
    };
    for what in ["read", "write", "exec"] {
        if w.fenced.contains(&what) {
            assert!(stopped(what), "{}: {what} got through: {out:?}", w.name);
        } else {
            // Then -v says why: the right is unfenced, or HOME is a root that grants it.
            let right = match what {
                "exec" => "execute",
                "read" => "read_file",
                _ => "write_file",
            };
            let home = format!("sbx: fence: {}: ", site.home().display());
            let said = out.stderr.lines().any(|l| {
                (l.starts_with("sbx: in-kernel layer: ")
                    && l.contains("unfenced: filesystem rights reaching /")
                    && l.contains(right))
                    || (l.starts_with(&home) && l.contains(right))
            });
            assert!(
                said,
                "{}: {what} is neither fenced nor said unfenced: {}",
                w.name, out.stderr
            );
        }
    }
    // Each refusal is the kernel's EACCES (the ptrace layer only reported them).
    let denied = all.matches("Permission denied").count() + all.matches("EACCES").count();
    assert!(
        denied >= w.fenced.len(),
        "{}: {denied} refusals seen: {out:?}",
        w.name
    );
}

#[test]
fn make_attacks_are_refused_by_the_fence_alone() {
    attack_is_refused_by_the_fence_alone(&MAKE);
}

#[test]
fn pip_attacks_are_refused_by_the_fence_alone() {
    attack_is_refused_by_the_fence_alone(&PIP);
}

#[test]
fn npm_install_script_attacks_are_refused_by_the_fence_alone() {
    attack_is_refused_by_the_fence_alone(&NPM);
}

/// `--require-fence` fails closed (exit 125, one line) where the fence cannot be in force:
/// here `--mode ask`, which never sets it; where the kernel has it, a plain run with the flag
/// passes.
#[test]
fn require_fence_fails_closed_where_the_fence_is_not_set() {
    let d = Dir::new();
    let p = d.write("p.profile", "include shell\n");
    let out = Sbx::new([
        OsStr::new("enforce"),
        OsStr::new("--require-fence"),
        p.as_os_str(),
        OsStr::new("--"),
        OsStr::new("true"),
    ])
    .cwd(d.path())
    .env("LD_LIBRARY_PATH", "")
    .run();
    if fence_available() {
        out.assert_code(0);
    } else {
        out.assert_code(125);
    }
    let out = Sbx::new([
        OsStr::new("enforce"),
        OsStr::new("--require-fence"),
        OsStr::new("--mode"),
        OsStr::new("audit"),
        p.as_os_str(),
        OsStr::new("--"),
        OsStr::new("true"),
    ])
    .cwd(d.path())
    .run();
    out.assert_code(125);
    assert_eq!(out.stderr.lines().count(), 1, "{out:?}");
    assert!(out.stderr.contains("--require-fence"), "{out:?}");
}

/// A refusal by the fence of a call the ptrace layer allowed is a disagreement between the
/// two layers, reported as such (issue 40), never silent. Provoked with the fence's one
/// documented narrowing: a glob in the last segment grants the names it matches when the
/// fence is set, so a name another process adds later is refused by the kernel while the
/// profile allows it. Without the fence the same run reads it.
#[test]
fn a_fence_refusal_of_an_allowed_call_is_reported_as_a_disagreement() {
    if !fence_available() {
        eprintln!("skipped: no Landlock ABI 2 (the fence needs it)");
        return;
    }
    let d = Dir::new();
    d.write("work/d/data1", "one\n");
    std::fs::create_dir_all(d.join("tmp")).unwrap();
    let p = d.write(
        "p.profile",
        "include base\ninclude shell\nread ${CWD}/d/data*\n",
    );
    let late = d.join("work/d/data2");
    for fence in ["--no-fence", "--require-fence"] {
        let _ = std::fs::remove_file(&late);
        // Another process, outside the run, adds a name the rule matches after the start.
        let writer = {
            let late = late.clone();
            std::thread::spawn(move || {
                std::thread::sleep(std::time::Duration::from_millis(700));
                std::fs::write(late, "two\n").unwrap();
            })
        };
        let out = Sbx::new([
            OsStr::new("enforce"),
            OsStr::new("--mode"),
            OsStr::new("deny"),
            OsStr::new(fence),
            p.as_os_str(),
            OsStr::new("--"),
            OsStr::new("sh"),
            OsStr::new("-c"),
            OsStr::new("cat d/data1; sleep 2; cat d/data2"),
        ])
        .cwd(&d.join("work"))
        .env("TMPDIR", d.join("tmp"))
        .env("LD_LIBRARY_PATH", "")
        .run();
        writer.join().unwrap();
        assert!(out.stdout.contains("one"), "{fence}: {out:?}");
        if fence == "--no-fence" {
            assert!(out.stdout.contains("two"), "{fence}: {out:?}");
            assert!(!out.stderr.contains("violation"), "{fence}: {out:?}");
        } else {
            assert!(!out.stdout.contains("two"), "{fence}: {out:?}");
            let line = out
                .stderr
                .lines()
                .find(|l| l.starts_with("sbx: violation:") && l.contains("d/data2"))
                .unwrap_or_else(|| panic!("not reported: {out:?}"));
            assert!(
                line.contains("the kernel fence refused what the profile allows"),
                "{line}"
            );
        }
    }
}
