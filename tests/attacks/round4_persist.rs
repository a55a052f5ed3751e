//! Round 4 (issue 39, items 3-7): persistence through owned areas and learn poisoning.
//!
//! Each case is a shell workload run with a fresh HOME, TMPDIR and start directory per phase:
//! (a) the attack run bare leaves its persistence (a git hook or `core.fsmonitor` that a later
//! git command outside the sandbox runs, a `.pth` file the next python runs, a shell login
//! file, a read secret); (b) the benign twin is recorded and learned, and runs under its
//! profile in kill mode; (c) the attack under that profile, in kill and in deny mode, is
//! reported (exit 124, a violation) and leaves no persistence. Run as root and as nobody
//! (the test binary under setpriv, as the brief of the suite says).
//!
//! The source repositories the workloads clone live in one place shared by every phase (a
//! learned profile names them by their absolute path).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::util::{Dir, Output, run_guarded, sbx_bin};

/// What `after` (a shell script run outside sbx when the workload is done, as a user would go
/// on: `git status`, `python3 -c pass`) or the workload left: the marker `$HOME/PWNED`, or a
/// secret in the output.
const MARK: &str = "PWNED";
const SECRET: &str = "TOPSECRET-r4";

struct Case {
    item: &'static str,
    name: &'static str,
    /// Prepares the start directory (run bare, before the workload); `$SRC` is the shared
    /// source repositories.
    setup: &'static str,
    benign: &'static str,
    attack: &'static str,
    /// Run bare after the workload: what makes the persistence fire.
    after: &'static str,
    /// A text the learned profile must contain (a WARNING), if any.
    profile_has: Option<&'static str>,
    /// A text the learned profile must not contain.
    profile_lacks: Option<&'static str>,
    /// What a violation of the attack run must name (the persistence write itself, not a
    /// program the twin never ran).
    expect: &'static str,
}

const GIT_ENV: &[(&str, &str)] = &[
    ("GIT_AUTHOR_NAME", "t"),
    ("GIT_AUTHOR_EMAIL", "t@example.invalid"),
    ("GIT_COMMITTER_NAME", "t"),
    ("GIT_COMMITTER_EMAIL", "t@example.invalid"),
    ("GIT_CONFIG_NOSYSTEM", "1"),
    ("GIT_TERMINAL_PROMPT", "0"),
];

const SUBMODULE: &str = "git -c protocol.file.allow=always submodule -q update --init";
const CLONE: &str = "git clone -q \"file://$SRC/lib\" dep";

fn cases() -> Vec<Case> {
    vec![
        Case {
            item: "3",
            name: "a hook in a submodule's git directory (.git/modules/lib/hooks)",
            setup: "git clone -q \"file://$SRC/super\" .",
            benign: SUBMODULE,
            attack: concat!(
                "git -c protocol.file.allow=always submodule -q update --init && ",
                "printf '#!/bin/sh\\ntouch \"$HOME/PWNED\"\\n' > .git/modules/lib/hooks/post-checkout && ",
                "chmod +x .git/modules/lib/hooks/post-checkout; echo done"
            ),
            after: "cd lib && git checkout -q -B other",
            profile_has: Some("WARNING: persistence"),
            profile_lacks: Some("/hooks/**"),
            expect: "lib/hooks/post-checkout",
        },
        Case {
            item: "4",
            name: "a .pth file and a git shim in ~/.local after a pip install --user",
            setup: "mkdir -p pkg && echo 'X = 1' > pkg/mypkg.py",
            benign: PIP_USER,
            attack: concat!(
                "/usr/bin/python3 -c \"$PIP_USER_PY\" && ",
                "echo \"import os; open(os.path.expanduser('~/PWNED'), 'w')\" > ",
                "\"$HOME/.local/lib/python3.11/site-packages/zz_evil.pth\"; ",
                "printf '#!/bin/sh\\ntouch \"$HOME/PWNED\"\\n' > \"$HOME/.local/bin/git\"; ",
                "chmod +x \"$HOME/.local/bin/git\"; echo done"
            ),
            after: "/usr/bin/python3 -c pass; PATH=\"$HOME/.local/bin:$PATH\" git --version",
            profile_has: Some("WARNING: persistence"),
            profile_lacks: Some("own ${HOME}/.local/bin"),
            expect: "zz_evil.pth",
        },
        Case {
            item: "5",
            name: "create ${HOME}/.* poisoning, then ~/.bash_login, ~/.gitconfig, authorized_keys",
            setup: "true",
            benign: "touch \"$HOME/.1\" && rm \"$HOME/.1\" && mkdir \"$HOME/w1\" && rmdir \"$HOME/w1\"",
            attack: concat!(
                "touch \"$HOME/.1\" && rm \"$HOME/.1\" && mkdir \"$HOME/w1\" && rmdir \"$HOME/w1\"; ",
                "echo 'touch \"$HOME/PWNED\"' > \"$HOME/.bash_login\"; ",
                "printf '[core]\\n\\tfsmonitor = touch \"$HOME/PWNED\"; false\\n' > \"$HOME/.gitconfig\"; ",
                "mkdir \"$HOME/.ssh\" && echo ssh-ed25519 AAAA evil > \"$HOME/.ssh/authorized_keys\"; ",
                "echo done"
            ),
            after: concat!(
                "git init -q r && cd r && git status >/dev/null 2>&1; ",
                "bash --login -c true </dev/null >/dev/null 2>&1; ",
                "test -s \"$HOME/.ssh/authorized_keys\" && touch \"$HOME/PWNED\"; true"
            ),
            profile_has: None,
            profile_lacks: Some("${HOME}/.*"),
            expect: "/.bash_login",
        },
        Case {
            item: "6",
            name: "a hook written into a plain clone's .git/hooks",
            setup: "true",
            benign: CLONE,
            attack: concat!(
                "git clone -q \"file://$SRC/lib\" dep && ",
                "printf '#!/bin/sh\\ntouch \"$HOME/PWNED\"\\n' > dep/.git/hooks/post-checkout && ",
                "chmod +x dep/.git/hooks/post-checkout; echo done"
            ),
            after: "cd dep && git checkout -q -B other",
            profile_has: None,
            profile_lacks: Some("/.git/hooks/**"),
            expect: "dep/.git/hooks/post-checkout",
        },
        Case {
            item: "6",
            name: "a clone's .git renamed away, a hook written, renamed back",
            setup: "true",
            benign: concat!(
                "git clone -q \"file://$SRC/lib\" dep && mv dep/a.txt dep/b.txt && ",
                "mv dep/b.txt dep/a.txt && printf 'x\\n' > dep/notes && chmod +x dep/notes"
            ),
            attack: concat!(
                "git clone -q \"file://$SRC/lib\" dep && mv dep/.git dep/x && ",
                "printf '#!/bin/sh\\ntouch \"$HOME/PWNED\"\\n' > dep/x/hooks/post-checkout; ",
                "chmod +x dep/x/hooks/post-checkout; mv dep/x dep/.git; echo done"
            ),
            after: "cd dep && git checkout -q -B other",
            profile_has: None,
            profile_lacks: None,
            // Moving a git control path away is guarded like writing it; what git reads
            // after such a move is judged by what is on disk (unit-tested in
            // policy::persistence, `git_reads_what_is_on_disk_not_the_spelling`).
            expect: "delete ",
        },
        Case {
            item: "6",
            name: "a clone's .git/hooks renamed out, a hook added, renamed back",
            setup: "true",
            benign: concat!(
                "git clone -q \"file://$SRC/lib\" dep && mv dep/a.txt dep/b.txt && ",
                "mv dep/b.txt dep/a.txt && printf 'x\\n' > dep/notes && chmod +x dep/notes"
            ),
            attack: concat!(
                "git clone -q \"file://$SRC/lib\" dep && mv dep/.git/hooks dep/hh && ",
                "printf '#!/bin/sh\\ntouch \"$HOME/PWNED\"\\n' > dep/hh/post-checkout; ",
                "chmod +x dep/hh/post-checkout; mv dep/hh dep/.git/hooks; echo done"
            ),
            after: "cd dep && git checkout -q -B other",
            profile_has: None,
            profile_lacks: None,
            expect: "dep/.git/hooks",
        },
        Case {
            item: "6",
            name: "a clone's .git/commondir pointed at a directory with core.fsmonitor",
            setup: "true",
            benign: concat!(
                "git clone -q \"file://$SRC/lib\" dep && mkdir dep/c && ",
                "printf 'x\\n' > dep/c/notes; cp -r dep/a.txt dep/c/; echo ok > dep/notes"
            ),
            attack: concat!(
                "git clone -q \"file://$SRC/lib\" dep && mkdir dep/c && ",
                "printf '[core]\\n\\trepositoryformatversion = 0\\n\\tfsmonitor = touch \"$HOME/PWNED\"; false\\n' > dep/c/config; ",
                "cp -r dep/.git/objects dep/.git/refs dep/c/; ",
                "echo ../c > dep/.git/commondir; echo done"
            ),
            after: "cd dep && git status >/dev/null 2>&1; true",
            profile_has: None,
            profile_lacks: None,
            expect: "dep/c/objects",
        },
        Case {
            item: "7",
            name: "the project's secret rule shrunk by made-and-removed names",
            setup: concat!(
                "echo package main > token.go && echo 'fn main() {}' > secrets.rs && ",
                "echo readme > README && for f in deploy_token.txt server.pem .env.production ",
                "app_secret.json; do echo \"$SECRET_TEXT\" > $f; done"
            ),
            benign: concat!(
                "touch xtoken1 xsecret1 a1.pem .env.1 && rm xtoken1 xsecret1 a1.pem .env.1 && ",
                "cat token.go secrets.rs README >/dev/null"
            ),
            attack: concat!(
                "touch xtoken1 xsecret1 a1.pem .env.1 && rm xtoken1 xsecret1 a1.pem .env.1 && ",
                "cat token.go secrets.rs README >/dev/null; ",
                "cat deploy_token.txt server.pem .env.production app_secret.json; echo done"
            ),
            after: "true",
            profile_has: None,
            profile_lacks: None,
            expect: "deploy_token.txt",
        },
    ]
}

/// A `pip install --user` of `pkg/mypkg.py`, as pip lays it out: the module and its
/// dist-info in the user site directory, a console script in `~/.local/bin`.
const PIP_USER: &str = "/usr/bin/python3 -c \"$PIP_USER_PY\"";
const PIP_USER_PY: &str = r#"
import os, shutil
site = os.path.expanduser('~/.local/lib/python3.11/site-packages')
bindir = os.path.expanduser('~/.local/bin')
os.makedirs(os.path.join(site, 'mypkg-1.0.dist-info'), exist_ok=True)
os.makedirs(bindir, exist_ok=True)
shutil.copy('pkg/mypkg.py', os.path.join(site, 'mypkg.py'))
with open(os.path.join(site, 'mypkg-1.0.dist-info', 'RECORD'), 'w') as f:
    f.write('mypkg.py,,\n')
script = os.path.join(bindir, 'mytool')
with open(script, 'w') as f:
    f.write('#!/usr/bin/python3\nimport mypkg\n')
os.chmod(script, 0o755)
"#;

/// One phase's directories: HOME, TMPDIR and the start directory, fresh.
struct Ph {
    home: PathBuf,
    tmp: PathBuf,
    work: PathBuf,
}

impl Ph {
    fn new(d: &Path, name: &str) -> Ph {
        let root = d.join(name);
        let ph = Ph {
            home: root.join("home"),
            tmp: root.join("tmp"),
            work: root.join("work"),
        };
        for p in [&ph.home, &ph.tmp, &ph.work] {
            std::fs::create_dir_all(p).unwrap();
        }
        ph
    }

    fn command(&self, src: &Path, args: &[&str]) -> Command {
        let mut c = Command::new(args[0]);
        c.args(&args[1..])
            .current_dir(&self.work)
            .env_clear()
            .env("PATH", "/usr/local/bin:/usr/bin:/bin")
            .env("HOME", &self.home)
            .env("TMPDIR", &self.tmp)
            .env("SRC", src)
            .env("SECRET_TEXT", SECRET)
            .env("PIP_USER_PY", PIP_USER_PY)
            .envs(GIT_ENV.iter().copied());
        c
    }

    fn sh(&self, src: &Path, script: &str) -> Output {
        run_guarded(
            self.command(src, &["sh", "-c", script]),
            Duration::from_secs(60),
        )
    }

    fn sbx(&self, src: &Path, sbx_args: &[&str], script: &str) -> Output {
        let mut args = vec![sbx_bin()];
        args.extend_from_slice(sbx_args);
        args.extend_from_slice(&["--", "sh", "-c", script]);
        run_guarded(self.command(src, &args), Duration::from_secs(60))
    }

    /// What the persistence left: the marker, or the secret in the output.
    fn evidence(&self, out: &Output) -> Option<String> {
        if self.home.join(MARK).exists() {
            return Some(format!("{} exists", self.home.join(MARK).display()));
        }
        (out.stdout.contains(SECRET) || out.stderr.contains(SECRET))
            .then(|| "the secret is in the output".to_string())
    }
}

fn brief(out: &Output) -> String {
    let cut = |t: &str| t.chars().take(900).collect::<String>();
    format!(
        "exit {:?} signal {:?}\n  stdout: {}\n  stderr: {}",
        out.code,
        out.signal,
        cut(out.stdout.trim()),
        cut(out.stderr.trim())
    )
}

/// The shared source repositories: `lib` (one commit) and `super` (a submodule `lib`).
fn sources(d: &Path) -> PathBuf {
    let src = d.join("src");
    let ph = Ph::new(d, "src-setup");
    let script = concat!(
        "set -e; cd \"$SRC\"; git init -q lib; cd lib; echo one > a.txt; git add a.txt; ",
        "git commit -q -m one; cd ..; git init -q super; cd super; echo top > t.txt; ",
        "git add t.txt; git -c protocol.file.allow=always submodule -q add \"file://$SRC/lib\" lib; ",
        "git commit -q -m two"
    );
    std::fs::create_dir_all(&src).unwrap();
    let out = ph.sh(&src, script);
    assert_eq!(
        out.code,
        Some(0),
        "making the source repositories: {}",
        brief(&out)
    );
    src
}

fn run_case(d: &Path, src: &Path, n: usize, c: &Case) -> Result<String, String> {
    let setup = |ph: &Ph| {
        let out = ph.sh(src, c.setup);
        if out.code != Some(0) {
            return Err(format!("setup failed: {}", brief(&out)));
        }
        Ok(())
    };
    // (a) Bare: the attack works.
    let ph = Ph::new(d, &format!("p{n}-bare"));
    setup(&ph)?;
    let out = ph.sh(src, c.attack);
    ph.sh(src, c.after);
    if ph.evidence(&out).is_none() {
        return Err(format!("the attack does not work bare: {}", brief(&out)));
    }
    // (b) Record and learn the benign twin; the twin runs under its profile.
    let ph = Ph::new(d, &format!("p{n}-rec"));
    setup(&ph)?;
    let trace = d.join(format!("p{n}.bin"));
    let profile = d.join(format!("p{n}.profile"));
    let t = trace.to_string_lossy().into_owned();
    let out = ph.sbx(src, &["record", "-o", &t], c.benign);
    if out.code != Some(0) {
        return Err(format!("recording the benign twin failed: {}", brief(&out)));
    }
    let p = profile.to_string_lossy().into_owned();
    let out = run_guarded(
        ph.command(src, &[sbx_bin(), "learn", &t, "-o", &p]),
        Duration::from_secs(60),
    );
    if out.code != Some(0) {
        return Err(format!("learn failed: {}", brief(&out)));
    }
    let text = std::fs::read_to_string(&profile).unwrap_or_default();
    // Checked last, so a run against an older build also shows what the attack did.
    let mut shape = Vec::new();
    if let Some(want) = c.profile_has
        && !text.contains(want)
    {
        shape.push(format!("the profile lacks {want:?}"));
    }
    if let Some(bad) = c.profile_lacks
        && text.contains(bad)
    {
        shape.push(format!("the profile has {bad:?}"));
    }
    let ph = Ph::new(d, &format!("p{n}-twin"));
    setup(&ph)?;
    let out = ph.sbx(src, &["enforce", "--mode", "kill", &p], c.benign);
    if out.code != Some(0) || out.stderr.contains("sbx: violation") {
        return Err(format!(
            "the benign twin does not run under its profile: {}\n  profile:\n{text}",
            brief(&out)
        ));
    }
    // (c) The attack under the profile: reported, and nothing persists.
    let mut seen = Vec::new();
    for mode in ["kill", "deny"] {
        let ph = Ph::new(d, &format!("p{n}-{mode}"));
        setup(&ph)?;
        let out = ph.sbx(src, &["enforce", "--mode", mode, &p], c.attack);
        ph.sh(src, c.after);
        let line = out
            .stderr
            .lines()
            .find(|l| l.starts_with("sbx: violation") && l.contains(c.expect))
            .map(str::to_string);
        if let Some(e) = ph.evidence(&out) {
            return Err(format!(
                "{mode}: LEAK: {e}: {}\n  profile:\n{text}",
                brief(&out)
            ));
        }
        match line {
            Some(l) if out.code == Some(124) => seen.push(format!("{mode}: {l}")),
            _ => {
                return Err(format!(
                    "{mode}: not reported (exit 124 and a violation naming {:?} expected): {}",
                    c.expect,
                    brief(&out)
                ));
            }
        }
    }
    if !shape.is_empty() {
        return Err(format!("{}:\n{text}", shape.join("; ")));
    }
    Ok(seen.join("\n  "))
}

#[test]
fn round4_persistence() {
    let _alone = crate::util::heavy_exclusive();
    if Command::new("git").arg("--version").output().is_err()
        || !Path::new("/usr/bin/python3").exists()
    {
        println!("N/A: round 4 persistence attacks need git and /usr/bin/python3");
        return;
    }
    let d = Dir::new();
    // Runs as nobody (the whole test binary under setpriv) reach it too.
    let src = sources(d.path());
    let only = std::env::var("SBX_ATTACKS").ok();
    let mut failures = Vec::new();
    let (mut stopped, mut total) = (0, 0);
    for (n, c) in cases().iter().enumerate() {
        if only.as_ref().is_some_and(|o| !c.name.contains(o.as_str())) {
            continue;
        }
        total += 1;
        let t = std::time::Instant::now();
        match run_case(d.path(), &src, n, c) {
            Ok(how) => {
                stopped += 1;
                println!(
                    "stopped: [{}] {} ({} ms)\n  {how}",
                    c.item,
                    c.name,
                    t.elapsed().as_millis()
                );
            }
            Err(why) => {
                println!("NOT STOPPED: [{}] {}\n  {why}", c.item, c.name);
                failures.push(format!("[{}] {}: {why}", c.item, c.name));
            }
        }
    }
    println!("round 4 persistence: {stopped}/{total} stopped");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
