//! The realistic workloads of `examples/` (the offline npm install of `examples/npm-demo` and
//! the C build of `examples/make-demo`), run in private [`Site`]s: used by the learn-quality
//! tests (tests/learn.rs) and the end-to-end example tests (tests/examples.rs).

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use sbx::event::Event;
use sbx::trace::Header;

use super::{Output, record_env};

pub fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// One place a workload runs in: its start directory, HOME and TMPDIR, all private.
pub struct Site {
    pub work: PathBuf,
    pub home: PathBuf,
    pub tmp: PathBuf,
    /// `HOME/.npm`: npm's cache for runs in this site.
    pub npm_cache: PathBuf,
}

impl Site {
    /// A fresh site under `root/name` (wiped if it exists), with secrets planted in HOME.
    pub fn new(root: &Path, name: &str) -> Site {
        let base = root.join(name);
        if base.exists() {
            std::fs::remove_dir_all(&base).unwrap();
        }
        let site = Site {
            work: base.join("work"),
            home: base.join("home"),
            tmp: base.join("tmp"),
            npm_cache: base.join("home/.npm"),
        };
        std::fs::create_dir_all(&site.home).unwrap();
        std::fs::create_dir_all(&site.tmp).unwrap();
        for (p, body) in [
            (
                ".ssh/id_rsa",
                "-----BEGIN OPENSSH PRIVATE KEY-----\nsbx-test\n",
            ),
            (
                ".aws/credentials",
                "[default]\naws_secret_access_key = sbx-test\n",
            ),
            (".bashrc", "# sbx test\n"),
        ] {
            let f = site.home.join(p);
            std::fs::create_dir_all(f.parent().unwrap()).unwrap();
            std::fs::write(f, body).unwrap();
        }
        site
    }

    /// HOME and TMPDIR of this site; cargo's LD_LIBRARY_PATH (target/debug/...) removed, so
    /// the runs look like runs outside the test harness.
    pub fn envs(&self) -> Vec<(&'static str, Option<&OsStr>)> {
        vec![
            ("HOME", Some(self.home.as_os_str())),
            ("TMPDIR", Some(self.tmp.as_os_str())),
            ("LD_LIBRARY_PATH", None),
        ]
    }

    /// The directory holding `work`, `home` and `tmp`.
    pub fn base(&self) -> &Path {
        self.work.parent().unwrap()
    }
}

/// A workload: how to prepare a site, what to run, and how to tell it worked.
#[derive(Clone, Copy, Debug)]
pub enum Workload {
    /// `npm install` of examples/npm-demo (or the compromised variant).
    Npm { compromised: bool },
    /// `make check` of examples/make-demo.
    Make,
}

impl Workload {
    pub fn prepare(self, root: &Path, site: &Site) {
        match self {
            Workload::Npm { compromised } => {
                let src = repo().join(if compromised {
                    "examples/npm-demo-compromised"
                } else {
                    "examples/npm-demo"
                });
                let pack_cache = root.join("pack-cache");
                let mut cmd = std::process::Command::new("sh");
                cmd.arg(repo().join("examples/npm-demo/prepare.sh"))
                    .arg(&site.work)
                    .arg(&src)
                    .env("npm_config_cache", &pack_cache)
                    .current_dir(root);
                super::run_guarded(cmd, std::time::Duration::from_secs(120)).assert_code(0);
            }
            Workload::Make => {
                copy_tree(&repo().join("examples/make-demo"), &site.work);
            }
        }
    }

    pub fn command(self) -> &'static [&'static str] {
        match self {
            Workload::Npm { .. } => &[
                "npm",
                "install",
                "--offline",
                "--no-audit",
                "--no-fund",
                "--update-notifier=false",
            ],
            Workload::Make => &["make", "check"],
        }
    }

    /// The environment changes of a run in `site`: [`Site::envs`], and for npm the cache
    /// inside this site's HOME, whatever the caller's environment says.
    pub fn envs(self, site: &Site) -> Vec<(&'static str, Option<&OsStr>)> {
        let mut envs = site.envs();
        if let Workload::Npm { .. } = self {
            envs.push(("npm_config_cache", Some(site.npm_cache.as_os_str())));
        }
        envs
    }

    /// Record one run in `site` (prepared fresh) into `trace`; checks that it worked.
    pub fn record(self, root: &Path, site: &Site, trace: &Path) -> (Header, Vec<Event>) {
        self.prepare(root, site);
        let (out, h, ev) = record_env(&site.work, trace, self.command(), &self.envs(site));
        out.assert_code(0);
        self.check(site, &out);
        (h, ev)
    }

    /// Check that a finished run in `site` did its work (`out` is shown on failure).
    pub fn check(self, site: &Site, out: &Output) {
        match self {
            Workload::Npm { .. } => {
                let stamp = site.work.join("node_modules/demo-util/stamp.txt");
                let text = std::fs::read_to_string(&stamp).unwrap_or_default();
                assert!(
                    text.ends_with(" ok\n"),
                    "install scripts did not run: {out:?}"
                );
                let cfg = site.work.join("node_modules/demo-native/build/config.json");
                assert!(cfg.exists(), "demo-native's build output is missing");
                // mkdtemp's scratch directory was used and removed.
                assert_eq!(std::fs::read_dir(&site.tmp).unwrap().count(), 0);
            }
            Workload::Make => {
                let res = std::fs::read_to_string(site.work.join("build/check.out"));
                let res = res.unwrap_or_default();
                assert!(res.contains("sum=55"), "{res}\n{out:?}");
            }
        }
    }
}

pub fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let name = e.file_name();
        if name == "build" {
            continue;
        }
        let (src, dst) = (e.path(), to.join(&name));
        if e.file_type().unwrap().is_dir() {
            copy_tree(&src, &dst);
        } else {
            std::fs::copy(&src, &dst).unwrap();
        }
    }
}
