//! Learned profiles across ecosystems: real workload classes, each built offline at test time
//! from the sources under `tests/eco/` (tests/eco/README.md), recorded with `sbx record` in
//! one site, learned with `sbx learn`, then enforced in KILL mode in the scenarios below. Every
//! run has its own project directory, HOME (with planted secrets) and TMPDIR ([`Site`]), a
//! cleared environment (PATH, HOME, TMPDIR and the class's own variables only) and a hang
//! guard.
//!
//! Two rows of classes (one `#[test]` each, so they run in parallel):
//! - `ci::*`, what CI runs: the current releases of the package managers, which `.ci/run`
//!   installs into the build directory (`.ci/eco-tools.sh`: pip, pytest and uv in a venv; npm,
//!   pnpm and yarn from the npm registry; found in `$SBX_ECO_TOOLS`, else
//!   `CARGO_TARGET_DIR/eco-tools`), first on PATH, and every step run the way a CI runner runs
//!   it, through `bash -c '<step>'` (recorded and enforced alike);
//! - `system::*`, the machine's own tools (Debian's python3, pytest 7 and pip 23; PATH's npm,
//!   stable cargo, gcc, git), each step run as it was before the `ci` row existed: its argv
//!   directly, or `sh -c` (GitLab's launcher) for a shell line.
//!
//! Workloads:
//! - `npm`: `npm install --offline` of five local tarballs whose install scripts use a mkdtemp
//!   directory under TMPDIR, write a build directory, spawn `sh -c`, write a file atomically
//!   (random name, then rename), run preinstall + install, and load a dependency;
//! - `pnpm`, `yarn` (ci): `pnpm install --offline`, `yarn install --offline` (classic yarn 1)
//!   of the same tarballs (pnpm's store in HOME/.local/share/pnpm, yarn's cache in
//!   HOME/.cache/yarn);
//! - `pytest`: `pytest -q` (ci: pytest 9 from the venv; system: `/usr/bin/python3 -m pytest
//!   -q`) of three tests (`.pytest_cache`, `__pycache__`, `tmp_path` under TMPDIR);
//! - `cargo`: `cargo build --offline` of a binary depending on two crates of a cargo
//!   `local-registry` (one with a build script), unpacked into `CARGO_HOME` (= HOME/.cargo):
//!   cold in S1, S2 and S4, recorded warm in S3;
//! - `autoconf`: `./configure && make` of a C project whose configure is autoconf's output;
//! - `git`: `rm -rf clone && git clone origin clone && git -C clone gc` of a local repository;
//! - `pip`: a venv and `pip install --no-index --find-links vendor ecopkg` of a local sdist
//!   with a C extension (pip's wheel cache in HOME/.cache/pip). ci: `python -m venv`, activate,
//!   upgrade pip from the wheelhouse, install with build isolation (setuptools and wheel from
//!   the wheelhouse); system: Debian's pip 23, `--no-build-isolation` with Debian's wheel;
//! - `uv` (ci): `uv venv` and `uv pip install --offline --no-index --find-links vendor ecopkg`
//!   (uv's cache in HOME/.cache/uv).
//!
//! Scenarios, each expecting the workload's own exit status (0) under enforce in kill mode:
//! - S1: the same directory again, with what the recorded run left behind (outputs, caches);
//! - S2: a fresh site at another depth (`x/y/z`): fresh HOME and TMPDIR, cold caches;
//! - S3: a profile recorded with WARM caches (a bare run first in that site, then the project
//!   is set up again, TMPDIR emptied and the run recorded; HOME and its caches kept: npm's
//!   cache, pnpm's store, yarn's and uv's caches, CARGO_HOME's registry, pip's wheel cache),
//!   enforced in a fresh, cold site;
//! - S4: three fresh sites in a row;
//! - S5: a small legitimate change, in a fresh site at the recorded paths: a new test file
//!   (pytest), a new module (cargo), a new header included by a changed source (autoconf), one
//!   more commit in the source repository (git), a patch release of one package (npm, pnpm,
//!   yarn: hpkg-d 1.0.1), a new release of the sdist with one more module (pip, uv: 1.1).
//!
//! Tightness: the learned profile, compiled for the S2 site, must deny reading
//! `~/.ssh/id_rsa` and `~/.aws/credentials`, writing and creating `~/.bashrc`, executing
//! programs the run never ran, writing and creating `${TMPDIR}/pwned-x` and writing
//! `/etc/passwd`. The recorded run must not have reached the network (the tests run offline).
//!
//! Each class prints one summary line with its tools' versions (`eco: ci pytest [bash -c;
//! pytest 9.2.0] profile 31 lines, 15 rules; S1 ok; ...`); on failure the violations, sbx's
//! `--report` JSON and the learned profile are printed. Environment knobs:
//! `SBX_ECO_SCENARIOS=S1,S3` runs only these scenarios (tightness always runs);
//! `SBX_ECO_AUDIT=1` sets a failed scenario up again and reruns it in audit mode to list every
//! violation, not only the first; `SBX_ECO_KEEP=1` keeps the test directory.
//!
//! A missing tool (npm, pytest for /usr/bin/python3, cargo, gcc, make, git, venv, wheel,
//! Python.h, the current releases) fails the test with a message: .ci/run installs them.

use std::collections::BTreeSet;
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use sbx::event::{Access, AccessSet, EventKind, Object, PathObj, SockAddr};
use sbx::policy::{CompiledPolicy, Decision};
use sbx::profile::vars::Env;

use crate::util::workload::Site;
use crate::util::{Dir, Output, Sbx, learn_cli, read_trace, run_guarded, s, sbx_bin};

/// Hang guard of one workload run (cold builds on two busy cores).
const RUN_TIMEOUT: Duration = Duration::from_secs(240);

/// The fixture sources.
fn eco_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/eco")
}

/// The workload of a class.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Eco {
    Npm,
    Pnpm,
    Yarn,
    Pytest,
    Cargo,
    Autoconf,
    Git,
    Pip,
    Uv,
}

/// Which tools run the workload, and how the step is started.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Row {
    /// The current releases `.ci/run` installs ([`Tools`]), each step through `bash -c`.
    Ci,
    /// The machine's tools, the step run directly or through `sh -c`.
    System,
}

/// One test: a workload in a row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Class {
    eco: Eco,
    row: Row,
}

/// The project version a site is set up with: as recorded, or with S5's small change.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Variant {
    Base,
    Changed,
}

const SCENARIOS: [&str; 5] = ["S1", "S2", "S3", "S4", "S5"];

/// `SBX_ECO_SCENARIOS` (comma-separated), or all scenarios.
fn wanted(scenario: &str) -> bool {
    match std::env::var("SBX_ECO_SCENARIOS") {
        Ok(list) if !list.trim().is_empty() => list
            .split(',')
            .any(|x| x.trim().eq_ignore_ascii_case(scenario)),
        _ => true,
    }
}

fn flag(name: &str) -> bool {
    std::env::var_os(name).is_some_and(|v| !v.is_empty() && v != "0")
}

/// RUSTUP_HOME of this machine (`rustup show home`), so that cargo's rustup proxy finds the
/// toolchain whatever HOME is; `None` without rustup.
fn rustup_home() -> Option<OsString> {
    static HOME: OnceLock<Option<OsString>> = OnceLock::new();
    HOME.get_or_init(|| {
        if let Some(h) = std::env::var_os("RUSTUP_HOME") {
            return Some(h);
        }
        which("rustup", &std::env::var_os("PATH").unwrap_or_default())?;
        let mut cmd = Command::new("rustup");
        cmd.args(["show", "home"]);
        let out = run_guarded(cmd, Duration::from_secs(60));
        let home = out.stdout.trim().to_string();
        (out.code == Some(0) && !home.is_empty()).then(|| home.into())
    })
    .clone()
}

/// Where `prog` is: itself if it holds a `/` and exists, else the first match on `path`.
fn which(prog: &str, path: &OsStr) -> Option<PathBuf> {
    if prog.contains('/') {
        return Path::new(prog).exists().then(|| prog.into());
    }
    std::env::split_paths(path)
        .map(|d| d.join(prog))
        .find(|p| p.is_file())
}

/// The current releases of the package managers, as `.ci/eco-tools.sh` installs them.
struct Tools {
    /// The directories the `ci` row puts first on PATH.
    bin: Vec<PathBuf>,
    /// pip, setuptools and wheel (and their dependencies) as wheel files.
    wheels: Vec<PathBuf>,
}

/// The installed current releases; panics naming `.ci/run` when they are missing.
fn tools() -> &'static Tools {
    static TOOLS: OnceLock<Result<Tools, String>> = OnceLock::new();
    let found = TOOLS.get_or_init(|| {
        let dir = match std::env::var_os("SBX_ECO_TOOLS") {
            Some(d) if !d.is_empty() => PathBuf::from(d),
            // CARGO_TARGET_TMPDIR is CARGO_TARGET_DIR/tmp.
            _ => Path::new(env!("CARGO_TARGET_TMPDIR"))
                .parent()
                .unwrap()
                .join("eco-tools"),
        };
        let venv = dir.join("venv/bin");
        let npm = dir.join("npm/node_modules/.bin");
        let mut missing: Vec<String> = [
            venv.join("python"),
            venv.join("pytest"),
            venv.join("uv"),
            npm.join("npm"),
            npm.join("pnpm"),
            npm.join("yarn"),
            dir.join("versions.txt"),
        ]
        .iter()
        .filter(|p| !p.exists())
        .map(|p| p.display().to_string())
        .collect();
        let wheels: Vec<PathBuf> = std::fs::read_dir(dir.join("wheels"))
            .map(|d| {
                d.map(|e| e.unwrap().path())
                    .filter(|p| p.extension() == Some(OsStr::new("whl")))
                    .collect()
            })
            .unwrap_or_default();
        let has = |name: &str| {
            wheels
                .iter()
                .any(|w| w.file_name().unwrap().to_string_lossy().starts_with(name))
        };
        for name in ["pip", "setuptools", "wheel"] {
            if !has(&format!("{name}-")) {
                missing.push(format!("{}/{name}-*.whl", dir.join("wheels").display()));
            }
        }
        if !missing.is_empty() {
            return Err(format!(
                "the current releases of pip, pytest, uv, npm, pnpm and yarn are not installed \
                 in {} (missing: {}); `.ci/run` installs them (`bash .ci/eco-tools.sh` alone \
                 does, with the network; SBX_ECO_TOOLS=DIR points elsewhere)",
                dir.display(),
                missing.join(", "),
            ));
        }
        Ok(Tools {
            bin: vec![venv, npm],
            wheels,
        })
    });
    match found {
        Ok(t) => t,
        Err(e) => panic!("eco ci: {e}"),
    }
}

/// A copy of a site's paths (the site itself is not touched).
fn same_site(site: &Site) -> Site {
    Site {
        work: site.work.clone(),
        home: site.home.clone(),
        tmp: site.tmp.clone(),
        npm_cache: site.npm_cache.clone(),
    }
}

/// Copy a directory tree (permissions kept; symlinks are not expected in the fixtures).
fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap_or_else(|e| panic!("{}: {e}", from.display())) {
        let e = e.unwrap();
        let (src, dst) = (e.path(), to.join(e.file_name()));
        if e.file_type().unwrap().is_dir() {
            copy_dir(&src, &dst);
        } else {
            std::fs::copy(&src, &dst).unwrap_or_else(|e| panic!("{}: {e}", src.display()));
        }
    }
}

/// Replace `from` by `to` in a text file; the text must contain `from`.
fn edit(file: &Path, from: &str, to: &str) {
    let text = std::fs::read_to_string(file).unwrap();
    assert!(text.contains(from), "{}: no {from:?}", file.display());
    std::fs::write(file, text.replace(from, to)).unwrap();
}

/// Run `argv` in `cwd` with exactly `envs` as its environment, under the hang guard.
fn run_env(argv: &[&OsStr], cwd: &Path, envs: &[(OsString, OsString)]) -> Output {
    let mut cmd = Command::new(argv[0]);
    cmd.args(&argv[1..])
        .current_dir(cwd)
        .env_clear()
        .envs(envs.iter().map(|(k, v)| (k, v)));
    run_guarded(cmd, RUN_TIMEOUT)
}

fn os(v: &[&str]) -> Vec<OsString> {
    v.iter().map(OsString::from).collect()
}

fn refs(v: &[OsString]) -> Vec<&OsStr> {
    v.iter().map(OsString::as_os_str).collect()
}

/// Panic unless `out` exited 0; `what` says which step, with both outputs.
fn must_succeed(out: &Output, what: &str) {
    assert_eq!(
        out.code,
        Some(0),
        "{what} failed ({:?} / signal {:?})\n--- stdout\n{}\n--- stderr\n{}",
        out.code,
        out.signal,
        out.stdout,
        out.stderr
    );
}

/// The last `n` lines of a text.
fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// Lines and rules (allow/deny lines: not blank, not a comment, not an include) of a profile.
fn profile_size(text: &str) -> (usize, usize) {
    let rules = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#') && !l.starts_with("include "))
        .count();
    (text.lines().count(), rules)
}

/// Files built once per class test from the fixture sources (outside every site).
#[derive(Default)]
struct Artifacts {
    /// npm, pnpm, yarn: the five tarballs as recorded, and with hpkg-d 1.0.1 (S5).
    npm: [PathBuf; 2],
    /// cargo: a local registry (index/ and .crate files).
    registry: PathBuf,
    /// pip, uv: the sdist as recorded (1.0), and the next release (1.1, S5).
    sdist: [PathBuf; 2],
}

/// The step `bash -c` runs in the `ci` row; for pip and uv, `vendor/` also holds the wheels
/// of pip, setuptools and wheel (a wheelhouse: offline, with build isolation).
fn ci_step(eco: Eco) -> &'static str {
    match eco {
        Eco::Npm => "npm install --offline --no-audit --no-fund --update-notifier=false",
        Eco::Pnpm => "pnpm install --offline",
        Eco::Yarn => "yarn install --offline --non-interactive",
        Eco::Pytest => "pytest -q",
        Eco::Cargo => "cargo build --offline",
        Eco::Autoconf => "./configure && make",
        Eco::Git => "rm -rf clone && git clone -q origin clone && git -C clone gc -q",
        // GitHub's starter workflow for Python upgrades pip first; the venv is created by the
        // job's python (the venv of the current releases, first on PATH), whose ensurepip
        // brings Debian's pip 23: the upgrade installs the current one.
        Eco::Pip => {
            "python -m venv venv && . venv/bin/activate && \
             python -m pip install -q --no-index --find-links vendor --upgrade pip && \
             pip install -q --no-index --find-links vendor ecopkg"
        }
        // Debian's interpreter by path: it has Python.h (python3-dev) for the C extension,
        // and uv would otherwise pick whichever python3 comes first on PATH.
        Eco::Uv => {
            "uv venv -q --allow-existing --python /usr/bin/python3 && \
             uv pip install -q --offline --no-index --find-links vendor ecopkg"
        }
    }
}

impl Eco {
    fn name(self) -> &'static str {
        match self {
            Eco::Npm => "npm",
            Eco::Pnpm => "pnpm",
            Eco::Yarn => "yarn",
            Eco::Pytest => "pytest",
            Eco::Cargo => "cargo",
            Eco::Autoconf => "autoconf",
            Eco::Git => "git",
            Eco::Pip => "pip",
            Eco::Uv => "uv",
        }
    }
}

impl Class {
    /// `ci-pytest`, `system-pip`: file names.
    fn name(self) -> String {
        format!("{}-{}", self.row_name(), self.eco.name())
    }

    fn row_name(self) -> &'static str {
        match self.row {
            Row::Ci => "ci",
            Row::System => "system",
        }
    }

    /// Remove what the tool keeps outside HOME and TMPDIR, shared by every run on the
    /// machine, so that a run in a fresh site is a run on a fresh machine (a new CI runner):
    /// before the recorded run, and before every scenario but S1. S3's warm run finds it,
    /// left there by its bare run.
    fn forget_machine_state(self) {
        // pnpm's lock and swap directories, /tmp/pnpm-*-UID whatever TMPDIR says.
        if self.eco == Eco::Pnpm {
            let uid = nix::unistd::getuid();
            for name in ["dir-locks", "modules-swaps", "store-operation-locks"] {
                let dir = PathBuf::from(format!("/tmp/pnpm-{name}-{uid}"));
                if dir.exists() {
                    std::fs::remove_dir_all(&dir)
                        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
                }
            }
        }
    }

    /// The workload's argv.
    fn command(self) -> Vec<String> {
        let argv: &[&str] = match (self.row, self.eco) {
            (Row::Ci, eco) => &["bash", "-c", ci_step(eco)],
            (Row::System, Eco::Npm) => &[
                "npm",
                "install",
                "--offline",
                "--no-audit",
                "--no-fund",
                "--update-notifier=false",
            ],
            // PATH's python3 may be another installation without pytest: Debian's, explicitly.
            (Row::System, Eco::Pytest) => &["/usr/bin/python3", "-m", "pytest", "-q"],
            (Row::System, Eco::Cargo) => &["cargo", "build", "--offline"],
            (Row::System, Eco::Autoconf) => &["sh", "-c", "./configure && make"],
            (Row::System, Eco::Git) => &[
                "sh",
                "-c",
                "rm -rf clone && git clone -q origin clone && git -C clone gc -q",
            ],
            // --system-site-packages: Debian's `wheel` (python3-wheel), which setuptools 66
            // needs to build a wheel without build isolation (a bare venv has none, and
            // --no-index cannot fetch it). The package is asked for by name from the sdist
            // directory (--find-links), as offline installs from a wheelhouse do: pip looks
            // up its wheel cache only for named requirements (a path argument is built every
            // time), so a warm ~/.cache/pip skips the compiler.
            (Row::System, Eco::Pip) => &[
                "sh",
                "-c",
                "/usr/bin/python3 -m venv --system-site-packages venv && \
                 venv/bin/pip install -q --no-index --find-links vendor --no-build-isolation \
                 ecopkg",
            ],
            (Row::System, eco @ (Eco::Pnpm | Eco::Yarn | Eco::Uv)) => {
                unreachable!("no system row for {}", eco.name())
            }
        };
        argv.iter().map(|a| a.to_string()).collect()
    }

    /// PATH of every run of this class: the current releases first in the `ci` row.
    fn path(self) -> OsString {
        let mut dirs = match self.row {
            Row::Ci => tools().bin.clone(),
            Row::System => Vec::new(),
        };
        let path = std::env::var_os("PATH").unwrap_or_default();
        dirs.extend(std::env::split_paths(&path));
        std::env::join_paths(dirs).unwrap()
    }

    /// The whole environment of a run in `site`.
    fn envs(self, site: &Site) -> Vec<(OsString, OsString)> {
        let mut envs: Vec<(OsString, OsString)> = vec![
            ("PATH".into(), self.path()),
            ("HOME".into(), site.home.clone().into()),
            ("TMPDIR".into(), site.tmp.clone().into()),
        ];
        // rustup's toolchains, found whatever HOME is (as for a user who installed rustup):
        // cargo needs them, and pip runs `rustc --version` when rustc is on PATH, which
        // would otherwise make rustup create HOME/.rustup.
        if let Some(h) = rustup_home() {
            envs.push(("RUSTUP_HOME".into(), h));
        }
        match self.eco {
            Eco::Npm => envs.push(("npm_config_cache".into(), site.npm_cache.clone().into())),
            // Classic yarn keeps root's cache in /usr/local/share/.cache/yarn, shared by every
            // site (and every test run); a CI runner's user has it in ~/.cache/yarn.
            Eco::Yarn if nix::unistd::geteuid().is_root() => {
                envs.push((
                    "YARN_CACHE_FOLDER".into(),
                    site.home.join(".cache/yarn").into(),
                ));
            }
            Eco::Cargo => {
                envs.push(("CARGO_HOME".into(), site.home.join(".cargo").into()));
                if let Some(t) = std::env::var_os("RUSTUP_TOOLCHAIN") {
                    envs.push(("RUSTUP_TOOLCHAIN".into(), t));
                }
            }
            Eco::Git => envs.push(("GIT_CONFIG_NOSYSTEM".into(), "1".into())),
            Eco::Yarn | Eco::Pnpm | Eco::Pytest | Eco::Autoconf | Eco::Pip | Eco::Uv => {}
        }
        envs
    }

    /// Fail with a clear message when a tool this class needs is missing; returns the
    /// versions of the tools that run the workload (`pytest 9.2.0, bash 5.2.15`).
    fn check_tools(self, root: &Path) -> String {
        let python_h = "import sysconfig, os; \
                        h = os.path.join(sysconfig.get_paths()['include'], 'Python.h'); \
                        assert os.path.exists(h), h";
        // (the name to print the version under, or none; program; arguments)
        let mut probes: Vec<(Option<&str>, &str, Vec<&str>)> = match (self.row, self.eco) {
            (_, Eco::Npm) => vec![
                (Some("node"), "node", vec!["--version"]),
                (Some("npm"), "npm", vec!["--version"]),
            ],
            (_, Eco::Pnpm) => vec![(Some("pnpm"), "pnpm", vec!["--version"])],
            (_, Eco::Yarn) => vec![(Some("yarn"), "yarn", vec!["--version"])],
            (Row::Ci, Eco::Pytest) => vec![(Some("pytest"), "pytest", vec!["--version"])],
            (Row::System, Eco::Pytest) => vec![(
                Some("pytest"),
                "/usr/bin/python3",
                vec!["-m", "pytest", "--version"],
            )],
            (_, Eco::Cargo) => vec![
                (Some("cargo"), "cargo", vec!["--version"]),
                (None, "tar", vec!["--version"]),
                (None, "sha256sum", vec!["--version"]),
            ],
            (_, Eco::Autoconf) => vec![
                (Some("gcc"), "gcc", vec!["--version"]),
                (Some("make"), "make", vec!["--version"]),
            ],
            (_, Eco::Git) => vec![(Some("git"), "git", vec!["--version"])],
            (Row::Ci, Eco::Pip) => vec![
                (Some("pip"), "python", vec!["-m", "pip", "--version"]),
                (None, "python", vec!["-c", python_h]),
                (Some("gcc"), "gcc", vec!["--version"]),
            ],
            (Row::Ci, Eco::Uv) => vec![
                (Some("uv"), "uv", vec!["--version"]),
                (None, "/usr/bin/python3", vec!["-c", python_h]),
                (Some("gcc"), "gcc", vec!["--version"]),
            ],
            (Row::System, Eco::Pip) => vec![
                (
                    Some("pip"),
                    "/usr/bin/python3",
                    vec!["-m", "pip", "--version"],
                ),
                (
                    None,
                    "/usr/bin/python3",
                    vec!["-c", "import venv, ensurepip, setuptools, wheel"],
                ),
                (None, "/usr/bin/python3", vec!["-c", python_h]),
                (Some("gcc"), "gcc", vec!["--version"]),
            ],
            (Row::System, Eco::Uv) => unreachable!("no system row for uv"),
        };
        if self.row == Row::Ci {
            probes.push((Some("bash"), "bash", vec!["--version"]));
        }
        let site = Site::new(root, "tools");
        let envs = self.envs(&site);
        let path = self.path();
        let mut versions = Vec::new();
        for (name, prog, args) in probes {
            if which(prog, &path).is_none() {
                panic!(
                    "eco {}: `{prog}` is not installed (PATH or path); the test needs it \
                     (.ci/run installs it)",
                    self.name()
                );
            }
            let mut argv = vec![OsStr::new(prog)];
            argv.extend(args.iter().map(OsStr::new));
            let out = run_env(&argv, root, &envs);
            assert_eq!(
                out.code,
                Some(0),
                "eco {}: `{prog} {}` failed; the test needs it (.ci/run installs it):\n{}{}",
                self.name(),
                args.join(" "),
                out.stdout,
                out.stderr
            );
            if let Some(name) = name {
                let text = if out.stdout.trim().is_empty() {
                    &out.stderr
                } else {
                    &out.stdout
                };
                versions.push(format!("{name} {}", version_of(text)));
            }
        }
        std::fs::remove_dir_all(site.base()).unwrap();
        let launcher = match (self.row, self.command().first().map(String::as_str)) {
            (Row::Ci, _) => "bash -c",
            (Row::System, Some("sh")) => "sh -c",
            (Row::System, _) => "argv",
        };
        format!("{launcher}; {}", versions.join(", "))
    }

    /// Build what every site of this class copies (tarballs, registry, sdists) into `dir`.
    fn artifacts(self, dir: &Path) -> Artifacts {
        let mut a = Artifacts::default();
        let eco = eco_dir();
        // Tools that write caches get a private HOME and TMPDIR here.
        let home = dir.join("home");
        let tmp = dir.join("tmp");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::create_dir_all(&tmp).unwrap();
        let envs: Vec<(OsString, OsString)> = vec![
            ("PATH".into(), std::env::var_os("PATH").unwrap_or_default()),
            ("HOME".into(), home.clone().into()),
            ("TMPDIR".into(), tmp.into()),
            ("npm_config_cache".into(), home.join(".npm").into()),
        ];
        match self.eco {
            Eco::Npm | Eco::Pnpm | Eco::Yarn => {
                let base = dir.join("npm-base");
                let changed = dir.join("npm-changed");
                std::fs::create_dir_all(&base).unwrap();
                std::fs::create_dir_all(&changed).unwrap();
                let mut argv = os(&["npm", "pack", "--offline", "--silent", "--pack-destination"]);
                argv.push(base.clone().into());
                for p in ["a", "b", "c", "d", "e"] {
                    argv.push(eco.join(format!("npm/packages/hpkg-{p}")).into());
                }
                must_succeed(&run_env(&refs(&argv), dir, &envs), "npm pack");
                // S5: a patch release of hpkg-d.
                let stage = dir.join("stage/hpkg-d");
                copy_dir(&eco.join("npm/packages/hpkg-d"), &stage);
                edit(
                    &stage.join("package.json"),
                    "\"version\": \"1.0.0\"",
                    "\"version\": \"1.0.1\"",
                );
                let mut argv = os(&["npm", "pack", "--offline", "--silent", "--pack-destination"]);
                argv.extend([changed.clone().into(), stage.into()]);
                must_succeed(&run_env(&refs(&argv), dir, &envs), "npm pack hpkg-d 1.0.1");
                for e in std::fs::read_dir(&base).unwrap() {
                    let name = e.unwrap().file_name();
                    if !name.to_string_lossy().starts_with("hpkg-d-") {
                        std::fs::copy(base.join(&name), changed.join(&name)).unwrap();
                    }
                }
                a.npm = [base, changed];
            }
            Eco::Cargo => {
                // A cargo local registry: `NAME-VERSION.crate` (a gzipped tar of
                // NAME-VERSION/) and index/PREFIX/NAME with one JSON line per version.
                let reg = dir.join("registry");
                let stage = dir.join("stage");
                for (name, deps) in [
                    ("eco-alpha", "[]"),
                    (
                        "eco-beta",
                        r#"[{"name":"eco-alpha","req":"^0.1","features":[],"optional":false,"default_features":true,"target":null,"kind":"normal"}]"#,
                    ),
                ] {
                    let full = format!("{name}-0.1.0");
                    copy_dir(&eco.join("cargo/crates").join(name), &stage.join(&full));
                    std::fs::create_dir_all(&reg).unwrap();
                    let krate = reg.join(format!("{full}.crate"));
                    let argv = [
                        OsStr::new("tar"),
                        OsStr::new("-czf"),
                        krate.as_os_str(),
                        OsStr::new("-C"),
                        stage.as_os_str(),
                        OsStr::new(&full),
                    ];
                    must_succeed(&run_env(&argv, dir, &envs), "tar of a crate");
                    let sum = run_env(&[OsStr::new("sha256sum"), krate.as_os_str()], dir, &envs);
                    must_succeed(&sum, "sha256sum");
                    let cksum = sum.stdout.split_whitespace().next().unwrap().to_string();
                    // The index layout of crates.io (names of 4 or more characters).
                    let index = reg.join("index").join(&name[..2]).join(&name[2..4]);
                    std::fs::create_dir_all(&index).unwrap();
                    let line = format!(
                        r#"{{"name":"{name}","vers":"0.1.0","deps":{deps},"cksum":"{cksum}","features":{{}},"yanked":false}}"#
                    );
                    std::fs::write(index.join(name), line + "\n").unwrap();
                }
                a.registry = reg;
            }
            Eco::Pip | Eco::Uv => {
                for (i, variant) in [Variant::Base, Variant::Changed].into_iter().enumerate() {
                    let stage = dir.join(format!("stage-{i}/ecopkg"));
                    copy_dir(&eco.join("pip/ecopkg"), &stage);
                    if variant == Variant::Changed {
                        copy_dir(&eco.join("pip/s5"), &stage);
                        edit(
                            &stage.join("setup.py"),
                            "version=\"1.0\"",
                            "version=\"1.1\"",
                        );
                    }
                    let out_dir = dir.join(format!("sdist-{i}"));
                    let argv = os(&["/usr/bin/python3", "setup.py", "-q", "sdist", "-d"]);
                    let mut argv = argv;
                    argv.push(out_dir.clone().into());
                    must_succeed(&run_env(&refs(&argv), &stage, &envs), "setup.py sdist");
                    a.sdist[i] = out_dir;
                }
            }
            Eco::Pytest | Eco::Autoconf | Eco::Git => {}
        }
        a
    }

    /// The node project in `site.work`: the tarballs in `vendor/`, `index.js`, and
    /// `package.json` (with `extra` fields); returns the tarball names and the dependencies.
    fn node_project(
        self,
        arts: &Artifacts,
        site: &Site,
        variant: Variant,
    ) -> (Vec<String>, serde_json::Value) {
        let work = &site.work;
        let vendor = work.join("vendor");
        copy_dir(&arts.npm[(variant == Variant::Changed) as usize], &vendor);
        std::fs::copy(eco_dir().join("npm/app/index.js"), work.join("index.js")).unwrap();
        let mut tarballs: Vec<String> = std::fs::read_dir(&vendor)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        tarballs.sort();
        assert_eq!(tarballs.len(), 5, "{tarballs:?}");
        let mut deps = serde_json::Map::new();
        for t in &tarballs {
            deps.insert(tarball_name(t).into(), format!("file:vendor/{t}").into());
        }
        let pkg = serde_json::json!({
            "name": "eco-npm-app",
            "version": "1.0.0",
            "private": true,
            "license": "MIT",
            "dependencies": deps,
        });
        (tarballs, pkg)
    }

    /// Set up the project in `site.work` (which must not exist yet).
    fn prepare(self, arts: &Artifacts, site: &Site, variant: Variant) {
        let eco = eco_dir();
        let work = &site.work;
        assert!(!work.exists(), "{} exists already", work.display());
        std::fs::create_dir_all(work).unwrap();
        let changed = variant == Variant::Changed;
        let write_json = |name: &str, v: &serde_json::Value| {
            let text = serde_json::to_string_pretty(v).unwrap() + "\n";
            std::fs::write(work.join(name), text).unwrap();
        };
        match self.eco {
            Eco::Npm => {
                let (tarballs, mut pkg) = self.node_project(arts, site, variant);
                // npm 11 warns about a file: dependency's install scripts unless allowScripts
                // names its tarball by absolute path (it refuses them only with
                // --strict-allow-scripts; examples/npm-demo/prepare.sh); npm 9 ignores it.
                let mut allow = serde_json::Map::new();
                for t in &tarballs {
                    let abs = format!("file:{}", work.join("vendor").join(t).display());
                    allow.insert(abs, true.into());
                }
                pkg["allowScripts"] = allow.into();
                write_json("package.json", &pkg);
            }
            Eco::Pnpm => {
                let (tarballs, pkg) = self.node_project(arts, site, variant);
                write_json("package.json", &pkg);
                // pnpm reads its settings from pnpm-workspace.yaml (package.json's "pnpm"
                // field is ignored since pnpm 11). hpkg-e's `"hpkg-a": "1.0.0"` would be
                // looked up in the registry: overridden by the local tarball, as npm and
                // yarn dedupe it. pnpm runs no dependency's scripts unless allowBuilds names
                // it (a file: tarball by its `name@file:path` key).
                let mut yaml = String::from("overrides:\n");
                let a = tarballs
                    .iter()
                    .find(|t| tarball_name(t) == "hpkg-a")
                    .unwrap();
                yaml.push_str(&format!("  hpkg-a: file:vendor/{a}\nallowBuilds:\n"));
                for t in &tarballs {
                    yaml.push_str(&format!(
                        "  \"{}@file:vendor/{t}\": true\n",
                        tarball_name(t)
                    ));
                }
                std::fs::write(work.join("pnpm-workspace.yaml"), yaml).unwrap();
            }
            Eco::Yarn => {
                let (tarballs, mut pkg) = self.node_project(arts, site, variant);
                // hpkg-e's `"hpkg-a": "1.0.0"` resolved to the local tarball (yarn would ask
                // the registry otherwise).
                let a = tarballs
                    .iter()
                    .find(|t| tarball_name(t) == "hpkg-a")
                    .unwrap();
                pkg["resolutions"] = serde_json::json!({ "hpkg-a": format!("file:vendor/{a}") });
                write_json("package.json", &pkg);
            }
            Eco::Pytest | Eco::Autoconf => {
                let dir = eco.join(self.eco.name());
                copy_dir(&dir.join("project"), work);
                if changed {
                    copy_dir(&dir.join("s5"), work);
                }
            }
            Eco::Cargo => {
                copy_dir(&eco.join("cargo/app"), work);
                copy_dir(&arts.registry, &work.join("registry"));
                if changed {
                    copy_dir(&eco.join("cargo/s5"), work);
                }
            }
            Eco::Git => {
                std::fs::write(
                    site.home.join(".gitconfig"),
                    "[user]\n\tname = sbx test\n\temail = sbx@example.invalid\n",
                )
                .unwrap();
                let script = eco.join("git/origin.sh");
                let mut argv = vec![OsStr::new("sh"), script.as_os_str(), OsStr::new("origin")];
                if changed {
                    argv.push(OsStr::new("--more"));
                }
                must_succeed(&run_env(&argv, work, &self.envs(site)), "git/origin.sh");
            }
            Eco::Pip | Eco::Uv => {
                let vendor = work.join("vendor");
                copy_dir(&arts.sdist[changed as usize], &vendor);
                // The wheelhouse of the ci row: the build backend (build isolation) and pip.
                if self.row == Row::Ci {
                    for w in &tools().wheels {
                        std::fs::copy(w, vendor.join(w.file_name().unwrap())).unwrap();
                    }
                }
            }
        }
    }

    /// Did a finished run in `site` do its work? `out` is the run's output.
    fn check(self, site: &Site, out: &Output, variant: Variant) -> Result<(), String> {
        let work = &site.work;
        let changed = variant == Variant::Changed;
        let read = |p: &str| std::fs::read_to_string(work.join(p)).unwrap_or_default();
        let run = |argv: &[&str]| {
            let argv: Vec<&OsStr> = argv.iter().map(OsStr::new).collect();
            run_env(&argv, work, &self.envs(site))
        };
        let mut bad = Vec::new();
        match self.eco {
            Eco::Npm | Eco::Pnpm | Eco::Yarn => {
                let nm = "node_modules";
                if !read(&format!("{nm}/hpkg-e/stamp.txt")).ends_with(" ok\n") {
                    bad.push("hpkg-e's postinstall did not run".to_string());
                }
                for f in [
                    "hpkg-a/build/Release/hpkg_a.node",
                    "hpkg-b/detected.json",
                    "hpkg-c/state.json",
                    "hpkg-d/preinstall.txt",
                ] {
                    if !work.join(nm).join(f).exists() {
                        bad.push(format!("{nm}/{f} is missing"));
                    }
                }
                let version = if changed { "1.0.1" } else { "1.0.0" };
                if !read(&format!("{nm}/hpkg-d/generated.js")).contains(version) {
                    bad.push(format!("hpkg-d's generated.js is not for {version}"));
                }
                let left: Vec<String> = std::fs::read_dir(&site.tmp)
                    .unwrap()
                    .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                    .filter(|n| n.starts_with("hpkg-build-"))
                    .collect();
                if !left.is_empty() {
                    bad.push(format!("scratch directories left in TMPDIR: {left:?}"));
                }
            }
            Eco::Pytest => {
                let want = if changed { "4 passed" } else { "3 passed" };
                if !out.stdout.contains(want) {
                    bad.push(format!("pytest did not say {want:?}"));
                }
                for p in [".pytest_cache/v/cache/nodeids", "calc/__pycache__"] {
                    if !work.join(p).exists() {
                        bad.push(format!("{p} is missing"));
                    }
                }
            }
            Eco::Cargo => {
                let o = run(&["target/debug/eco-app"]);
                let mut want = vec!["HELLO FROM BUILD.RS"];
                if changed {
                    want.push("built offline");
                }
                if o.code != Some(0) || want.iter().any(|w| !o.stdout.contains(w)) {
                    bad.push(format!("target/debug/eco-app: {o:?}"));
                }
            }
            Eco::Autoconf => {
                let o = run(&["./hello"]);
                let want = if changed {
                    "[hello] hello from hello 1.0"
                } else {
                    "hello from hello 1.0"
                };
                if o.code != Some(0) || o.stdout.trim() != want {
                    bad.push(format!("./hello: {o:?}"));
                }
            }
            Eco::Git => {
                let o = run(&["git", "-C", "clone", "rev-list", "--count", "HEAD"]);
                let want = if changed { "4" } else { "3" };
                if o.stdout.trim() != want {
                    bad.push(format!("the clone has not {want} commits: {o:?}"));
                }
                let packs = std::fs::read_dir(work.join("clone/.git/objects/pack"))
                    .map(|d| {
                        d.filter(|e| {
                            e.as_ref().unwrap().path().extension() == Some(OsStr::new("pack"))
                        })
                        .count()
                    })
                    .unwrap_or(0);
                if packs == 0 {
                    bad.push("git gc wrote no pack".to_string());
                }
            }
            Eco::Pip | Eco::Uv => {
                let mut code = String::from("import ecopkg; print(ecopkg.add(2, 3))");
                if changed {
                    code.push_str("; import ecopkg.extra");
                }
                let python = match self.eco {
                    Eco::Uv => ".venv/bin/python",
                    _ => "venv/bin/python",
                };
                let o = run(&[python, "-c", &code]);
                if o.code != Some(0) || o.stdout.trim() != "5" {
                    bad.push(format!("the installed package does not work: {o:?}"));
                }
                if self.eco == Eco::Pip && self.row == Row::Ci {
                    // The upgrade took: the pip in the venv is the current release.
                    let want = tools()
                        .wheels
                        .iter()
                        .filter_map(|w| w.file_name()?.to_str()?.strip_prefix("pip-"))
                        .find_map(|w| w.split('-').next())
                        .unwrap_or("?")
                        .to_string();
                    let o = run(&["venv/bin/python", "-m", "pip", "--version"]);
                    if !o.stdout.starts_with(&format!("pip {want} ")) {
                        bad.push(format!("the venv's pip is not {want}: {}", o.stdout.trim()));
                    }
                }
            }
        }
        if bad.is_empty() {
            Ok(())
        } else {
            Err(bad.join("; "))
        }
    }
}

/// The version a `--version` output starts with: the first word of its first line that
/// starts with a digit (`v` ignored), cut at the first character that is not a digit or a dot
/// (`GNU bash, version 5.2.15(1)-release` -> `5.2.15`).
fn version_of(text: &str) -> String {
    let first = text.lines().next().unwrap_or("");
    first
        .split_whitespace()
        .map(|w| w.trim_start_matches('v'))
        .find(|w| w.starts_with(|c: char| c.is_ascii_digit()))
        .map(|w| {
            w.chars()
                .take_while(|c| c.is_ascii_digit() || *c == '.')
                .collect::<String>()
        })
        .unwrap_or_else(|| format!("? ({first})"))
}

/// `hpkg-d` of `hpkg-d-1.0.1.tgz`.
fn tarball_name(tarball: &str) -> &str {
    tarball.trim_end_matches(".tgz").rsplit_once('-').unwrap().0
}

/// The peers a trace reached that are not this machine: inet addresses other than loopback
/// and unspecified, and DNS names asked.
fn remote_peers(trace: &Path) -> BTreeSet<String> {
    let (_, events) = read_trace(trace);
    let mut out = BTreeSet::new();
    for e in &events {
        let EventKind::Syscall(sc) = &e.kind else {
            continue;
        };
        for t in &sc.targets {
            match &t.object {
                Object::Socket(SockAddr::Inet { addr, port }) => {
                    let ip = std::net::Ipv4Addr::from(*addr);
                    if !ip.is_loopback() && !ip.is_unspecified() {
                        out.insert(format!("{} {ip}:{port}", sc.name));
                    }
                }
                Object::Socket(SockAddr::Inet6 { addr, port, .. }) => {
                    let ip = std::net::Ipv6Addr::from(*addr);
                    let v4_local = ip
                        .to_ipv4_mapped()
                        .is_some_and(|v4| v4.is_loopback() || v4.is_unspecified());
                    if !ip.is_loopback() && !ip.is_unspecified() && !v4_local {
                        out.insert(format!("{} [{ip}]:{port}", sc.name));
                    }
                }
                Object::DnsName(name) => {
                    out.insert(format!("resolve {name}"));
                }
                _ => {}
            }
        }
    }
    out
}

/// One scenario's result: runs made, runs passed, and what went wrong.
struct Outcome {
    label: &'static str,
    runs: usize,
    passed: usize,
    /// Short form of the first failure (`read ${HOME}/x`, `exit 1`...).
    first: Option<String>,
    details: Vec<String>,
}

impl Outcome {
    fn summary(&self) -> String {
        let state = if self.passed == self.runs {
            "ok"
        } else {
            "FAIL"
        };
        let mut s = format!("{} {state}", self.label);
        if self.runs > 1 {
            s.push_str(&format!(" {}/{}", self.passed, self.runs));
        }
        if let Some(f) = &self.first {
            s.push_str(&format!(" ({f})"));
        }
        s
    }
}

/// The test state of one class.
struct Harness {
    class: Class,
    root: PathBuf,
    arts: Artifacts,
}

impl Harness {
    fn argv(&self, head: &[&OsStr]) -> Vec<OsString> {
        let mut a: Vec<OsString> = head.iter().map(|h| h.to_os_string()).collect();
        a.extend(self.class.command().into_iter().map(OsString::from));
        a
    }

    fn sbx(&self, site: &Site, head: &[&OsStr]) -> Output {
        let mut argv = vec![OsStr::new(sbx_bin())];
        argv.extend(head);
        let argv = self.argv(&argv);
        run_env(&refs(&argv), &site.work, &self.class.envs(site))
    }

    /// The workload without sbx (a failure here is a broken fixture or tool).
    fn bare(&self, site: &Site, variant: Variant) {
        let argv = self.argv(&[]);
        let out = run_env(&refs(&argv), &site.work, &self.class.envs(site));
        must_succeed(&out, &format!("eco {}: bare run", self.class.name()));
        if let Err(e) = self.class.check(site, &out, variant) {
            panic!("eco {}: bare run did not work: {e}", self.class.name());
        }
    }

    /// `sbx record` in `site` into `trace` (must succeed), then `sbx learn`: the profile text.
    fn record_and_learn(&self, site: &Site, trace: &Path, profile: &Path) -> String {
        let out = self.sbx(
            site,
            &[
                OsStr::new("record"),
                OsStr::new("-o"),
                trace.as_os_str(),
                OsStr::new("--"),
            ],
        );
        let what = format!("eco {}: sbx record", self.class.name());
        must_succeed(&out, &what);
        if let Err(e) = self.class.check(site, &out, Variant::Base) {
            panic!("{what}: the recorded run did not work: {e}");
        }
        let peers = remote_peers(trace);
        assert!(
            peers.is_empty(),
            "{what}: the workload reached the network, the test must run offline: {peers:?}"
        );
        learn_cli(&[trace], profile, &[])
    }

    /// `sbx enforce --mode MODE --report REPORT PROFILE -- CMD` in `site`.
    fn enforce(&self, site: &Site, profile: &Path, mode: &str, report: &Path) -> Output {
        self.sbx(
            site,
            &[
                OsStr::new("enforce"),
                OsStr::new("--mode"),
                OsStr::new(mode),
                OsStr::new("--report"),
                report.as_os_str(),
                profile.as_os_str(),
                OsStr::new("--"),
            ],
        )
    }

    /// Site paths in a text replaced by their variables, the test root by `ROOT`.
    fn short(&self, site: &Site, text: &str) -> String {
        text.replace(&*site.work.to_string_lossy(), "${CWD}")
            .replace(&*site.home.to_string_lossy(), "${HOME}")
            .replace(&*site.tmp.to_string_lossy(), "${TMPDIR}")
            .replace(&*self.root.to_string_lossy(), "ROOT")
    }

    /// The violations of a report, one `verb object (comm)` line each, site paths shortened.
    fn violations(&self, site: &Site, report: &Path) -> Vec<String> {
        let Ok(text) = std::fs::read_to_string(report) else {
            return Vec::new();
        };
        let Ok(json) = serde_json::from_str::<serde_json::Value>(&text) else {
            return vec![format!("unreadable report: {text}")];
        };
        let mut seen = BTreeSet::new();
        let mut out = Vec::new();
        for v in json["violations"].as_array().into_iter().flatten() {
            let line = format!(
                "{} {} ({} {})",
                v["verb"].as_str().unwrap_or("?"),
                self.short(site, v["object"].as_str().unwrap_or("?")),
                v["comm"].as_str().unwrap_or("?"),
                v["syscall"].as_str().unwrap_or("?"),
            );
            if seen.insert(line.clone()) {
                out.push(line);
            }
        }
        out
    }

    /// One enforce run in kill mode in `site`; `Err` holds (short, details) on failure.
    /// With `SBX_ECO_AUDIT`, a failure sets the site up again with `redo` and reruns it in
    /// audit mode to list every violation.
    fn enforce_one(
        &self,
        label: &str,
        site: &Site,
        profile: &Path,
        variant: Variant,
        redo: &dyn Fn() -> Site,
    ) -> Result<(), (String, String)> {
        let name = self.class.name();
        let report = self.root.join(format!("{label}.report.json"));
        let _ = std::fs::remove_file(&report);
        let out = self.enforce(site, profile, "kill", &report);
        let violations = self.violations(site, &report);
        let short = if out.code == Some(0) {
            match self.class.check(site, &out, variant) {
                Ok(()) => return Ok(()),
                Err(e) => format!("work not done: {e}"),
            }
        } else if let Some(v) = violations.first() {
            v.clone()
        } else {
            format!(
                "exit {:?}: {}",
                out.code,
                tail(&self.short(site, &out.stderr), 1)
            )
        };
        let mut details = format!(
            "--- eco {name} {label}: sbx exited {:?} (signal {:?}) in {}\n\
             violations: {violations:#?}\n--- stderr (last 40 lines)\n{}\n--- stdout (last 20 lines)\n{}\n",
            out.code,
            out.signal,
            site.work.display(),
            tail(&out.stderr, 40),
            tail(&out.stdout, 20),
        );
        if let Ok(r) = std::fs::read_to_string(&report) {
            details.push_str(&format!("--- report {}\n{r}\n", report.display()));
        }
        if flag("SBX_ECO_AUDIT") {
            let again = redo();
            let report = self.root.join(format!("{label}.audit.json"));
            let out = self.enforce(&again, profile, "audit", &report);
            let all = self.violations(&again, &report);
            details.push_str(&format!(
                "--- audit rerun of {label} (exit {:?}): {} distinct violation(s)\n  {}\n",
                out.code,
                all.len(),
                all.join("\n  ")
            ));
        }
        Err((short, details))
    }

    /// A fresh site `name` set up with `variant`.
    fn fresh(&self, name: &str, variant: Variant) -> Site {
        let site = Site::new(&self.root, name);
        self.class.prepare(&self.arts, &site, variant);
        site
    }

    fn scenario(
        &self,
        label: &'static str,
        runs: Vec<(Site, Variant, &dyn Fn() -> Site)>,
        profile: &Path,
    ) -> Outcome {
        let mut o = Outcome {
            label,
            runs: runs.len(),
            passed: 0,
            first: None,
            details: Vec::new(),
        };
        for (i, (site, variant, redo)) in runs.into_iter().enumerate() {
            let tag = if o.runs > 1 {
                format!("{label}-{}", i + 1)
            } else {
                label.to_string()
            };
            // Every scenario but S1 (the same site again) is a fresh machine.
            if label != "S1" {
                self.class.forget_machine_state();
            }
            match self.enforce_one(&tag, &site, profile, variant, redo) {
                Ok(()) => o.passed += 1,
                Err((short, details)) => {
                    o.first.get_or_insert(short);
                    o.details.push(details);
                }
            }
        }
        o
    }
}

/// The tightness checks: what the profile must deny, judged for `site`. Returns the admitted
/// ones (`create ${TMPDIR}/pwned-x: Allow`) and how many were checked.
fn tightness(text: &str, site: &Site, ran: &BTreeSet<String>) -> (Vec<String>, usize) {
    let env = Env {
        cwd: s(site.work.as_os_str().as_encoded_bytes()),
        home: s(site.home.as_os_str().as_encoded_bytes()),
        tmpdir: s(site.tmp.as_os_str().as_encoded_bytes()),
        vars: Default::default(),
    };
    let pol = CompiledPolicy::load("learned.profile", text, &env)
        .unwrap_or_else(|e| panic!("the learned profile does not load: {e}\n{text}"));
    let home = |p: &str| site.home.join(p);
    let tmp = |p: &str| site.tmp.join(p);
    let mut checks: Vec<(&str, Access, PathBuf, &str)> = vec![
        (
            "read",
            Access::Read,
            home(".ssh/id_rsa"),
            "${HOME}/.ssh/id_rsa",
        ),
        (
            "read",
            Access::Read,
            home(".aws/credentials"),
            "${HOME}/.aws/credentials",
        ),
        ("write", Access::Write, home(".bashrc"), "${HOME}/.bashrc"),
        ("create", Access::Create, home(".bashrc"), "${HOME}/.bashrc"),
        ("write", Access::Write, tmp("pwned-x"), "${TMPDIR}/pwned-x"),
        (
            "create",
            Access::Create,
            tmp("pwned-x"),
            "${TMPDIR}/pwned-x",
        ),
        (
            "write",
            Access::Write,
            PathBuf::from("/etc/passwd"),
            "/etc/passwd",
        ),
    ];
    // Programs that exist here and never ran (the shell snippet's PATH-search probe admits
    // an exec only while the file is absent: such a decision is a denial for these).
    let mut n_exec = 0;
    for prog in [
        "/usr/bin/curl",
        "/usr/bin/wget",
        "/usr/bin/nc",
        "/usr/bin/ssh",
        "/usr/bin/perl",
    ] {
        if !ran.contains(prog) && Path::new(prog).exists() {
            n_exec += 1;
            checks.push(("exec", Access::Exec, PathBuf::from(prog), prog));
        }
    }
    assert!(
        n_exec > 0,
        "no exec attack program exists here or all ran: {ran:?}"
    );
    let n = checks.len();
    let admitted = checks
        .into_iter()
        .filter_map(|(verb, access, path, shown)| {
            let exists = path.symlink_metadata().is_ok();
            let p = path.into_os_string().into_encoded_bytes();
            let obj = Object::Path(PathObj {
                literal: p.clone(),
                abs: p,
                resolved: None,
            });
            match pol.decide(AccessSet::of(access), &obj) {
                Decision::Deny { .. } => None,
                Decision::AllowIfAbsent if exists => None,
                d => Some(format!("{verb} {shown}: {d:?}")),
            }
        })
        .collect();
    (admitted, n)
}

/// Programs the trace executed.
fn executed(trace: &Path) -> BTreeSet<String> {
    let (_, events) = read_trace(trace);
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Exec(x) => Some(s(&x.path)),
            _ => None,
        })
        .collect()
}

/// Record, learn, check tightness and run every wanted scenario for `class`; prints the
/// summary line and fails with every failure's details.
fn run_class(class: Class) {
    let _heavy = crate::util::heavy_shared();
    let start = Instant::now();
    let name = class.name();
    let dir = Dir::new();
    let root = dir.path().to_path_buf();
    let versions = class.check_tools(&root);
    let arts = class.artifacts(&root.join("artifacts"));
    let h = Harness {
        class,
        root: root.clone(),
        arts,
    };

    // Record in site A and learn.
    class.forget_machine_state();
    let a = h.fresh("a", Variant::Base);
    let trace_a = root.join("a.bin");
    let profile_a = root.join(format!("{name}.profile"));
    let text_a = h.record_and_learn(&a, &trace_a, &profile_a);
    let (lines, rules) = profile_size(&text_a);

    let mut outcomes = Vec::new();
    let mut extra_profiles = Vec::new();
    let fresh_run = |site: &str, variant: Variant| {
        class.forget_machine_state();
        let s = h.fresh(site, variant);
        h.bare(&s, variant);
        s
    };
    // S1: the same directory with what the recorded run left behind.
    if wanted("S1") {
        let redo = || fresh_run("a", Variant::Base);
        outcomes.push(h.scenario(
            "S1",
            vec![(same_site(&a), Variant::Base, &redo)],
            &profile_a,
        ));
    }
    // S5: a small legitimate change, fresh at the recorded paths.
    if wanted("S5") {
        let redo = || h.fresh("a", Variant::Changed);
        let site = h.fresh("a", Variant::Changed);
        outcomes.push(h.scenario("S5", vec![(site, Variant::Changed, &redo)], &profile_a));
    }
    // S2: a fresh site at another depth, cold caches.
    let s2_name = "x/y/z";
    if wanted("S2") {
        let redo = || h.fresh(s2_name, Variant::Base);
        let site = h.fresh(s2_name, Variant::Base);
        outcomes.push(h.scenario("S2", vec![(site, Variant::Base, &redo)], &profile_a));
    }
    // S3: recorded with warm caches (a bare run first; the project set up again and TMPDIR
    // emptied, HOME kept), enforced in a fresh, cold site.
    if wanted("S3") {
        let w = fresh_run("w", Variant::Base);
        // Only HOME keeps what the bare run left (the download and build caches); the
        // project and TMPDIR start empty again (state left there is S1's subject).
        std::fs::remove_dir_all(&w.work).unwrap();
        std::fs::remove_dir_all(&w.tmp).unwrap();
        std::fs::create_dir_all(&w.tmp).unwrap();
        class.prepare(&h.arts, &w, Variant::Base);
        let profile_w = root.join(format!("{name}-warm.profile"));
        let trace_w = root.join("w.bin");
        let mut text_w = h.record_and_learn(&w, &trace_w, &profile_w);
        // Where the warm cache let the run skip a whole step (pip installing a wheel it had
        // built before: no compiler), learn says so, and the profile to use is learned from
        // the cold and the warm trace together (docs/learning.md, "Thin evidence").
        let warned = Sbx::new([
            OsStr::new("learn"),
            trace_w.as_os_str(),
            OsStr::new("-o"),
            root.join("warm-alone.profile").as_os_str(),
        ])
        .run();
        let skipped = warned
            .stderr
            .contains("learn from a cold and a warm trace together");
        if skipped {
            text_w = learn_cli(&[&trace_a, &trace_w], &profile_w, &[]);
            extra_profiles.push("warm run skipped a step: learned cold+warm".to_string());
        }
        if class.eco == Eco::Pip {
            assert!(
                skipped,
                "pip reused its wheel, learn did not say so: {}",
                warned.stderr
            );
        }
        let redo = || h.fresh("c", Variant::Base);
        let site = h.fresh("c", Variant::Base);
        let mut o = h.scenario("S3", vec![(site, Variant::Base, &redo)], &profile_w);
        if o.passed < o.runs {
            o.details.push(format!(
                "--- the warm profile ({})\n{text_w}",
                profile_w.display()
            ));
        }
        extra_profiles.push(format!("warm {} lines", text_w.lines().count()));
        outcomes.push(o);
    }
    // S4: three fresh sites in a row.
    if wanted("S4") {
        let names = ["r1", "r2/r", "r3/r/r"];
        let hr = &h;
        let redos: Vec<Box<dyn Fn() -> Site + '_>> = names
            .iter()
            .map(|n| Box::new(move || hr.fresh(n, Variant::Base)) as Box<dyn Fn() -> Site>)
            .collect();
        let runs = names
            .iter()
            .zip(&redos)
            .map(|(n, redo)| (h.fresh(n, Variant::Base), Variant::Base, &**redo))
            .collect();
        outcomes.push(h.scenario("S4", runs, &profile_a));
    }

    // Tightness, judged for a fresh site at S2's paths.
    let t_site = Site::new(&root, s2_name);
    let (admitted, n_checks) = tightness(&text_a, &t_site, &executed(&trace_a));

    let mut summary = format!(
        "eco: {} {} [{versions}] profile {lines} lines, {rules} rules",
        class.row_name(),
        class.eco.name()
    );
    for sc in SCENARIOS {
        match outcomes.iter().find(|o| o.label == sc) {
            Some(o) => summary.push_str(&format!("; {}", o.summary())),
            None => summary.push_str(&format!("; {sc} skipped")),
        }
    }
    if admitted.is_empty() {
        summary.push_str(&format!("; tight ok {n_checks}/{n_checks}"));
    } else {
        summary.push_str(&format!(
            "; tight FAIL {}/{n_checks} denied ({})",
            n_checks - admitted.len(),
            admitted.join(", ")
        ));
    }
    if !extra_profiles.is_empty() {
        summary.push_str(&format!("; {}", extra_profiles.join(", ")));
    }
    summary.push_str(&format!("; {:.0} s", start.elapsed().as_secs_f64()));

    let failed = outcomes.iter().any(|o| o.passed < o.runs) || !admitted.is_empty();
    if flag("SBX_ECO_KEEP") {
        let kept = dir.tmp.keep();
        eprintln!("eco {name}: kept {}", kept.display());
    }
    if !failed {
        eprintln!("{summary}");
    } else {
        for o in &outcomes {
            for d in &o.details {
                eprintln!("{d}");
            }
        }
        if !admitted.is_empty() {
            eprintln!("--- eco {name}: tightness: the profile admits {admitted:#?}");
        }
        eprintln!(
            "--- eco {name}: the learned profile ({})\n{text_a}",
            profile_a.display()
        );
        panic!("{summary}");
    }
}

/// What CI runs: the current releases of `.ci/run` (tools()), each step through `bash -c`.
mod ci {
    use super::{Class, Eco, Row, run_class};

    fn run(eco: Eco) {
        run_class(Class { eco, row: Row::Ci });
    }

    #[test]
    fn npm() {
        run(Eco::Npm);
    }

    #[test]
    fn pnpm() {
        run(Eco::Pnpm);
    }

    #[test]
    fn yarn() {
        run(Eco::Yarn);
    }

    #[test]
    fn pytest() {
        run(Eco::Pytest);
    }

    #[test]
    fn cargo() {
        run(Eco::Cargo);
    }

    #[test]
    fn autoconf() {
        run(Eco::Autoconf);
    }

    #[test]
    fn git() {
        run(Eco::Git);
    }

    #[test]
    fn pip() {
        run(Eco::Pip);
    }

    #[test]
    fn uv() {
        run(Eco::Uv);
    }
}

/// The machine's tools (Debian's python3, pytest and pip; PATH's npm, cargo, gcc, git), each
/// step run directly or through `sh -c`.
mod system {
    use super::{Class, Eco, Row, run_class};

    fn run(eco: Eco) {
        run_class(Class {
            eco,
            row: Row::System,
        });
    }

    #[test]
    fn npm() {
        run(Eco::Npm);
    }

    #[test]
    fn pytest() {
        run(Eco::Pytest);
    }

    #[test]
    fn cargo() {
        run(Eco::Cargo);
    }

    #[test]
    fn autoconf() {
        run(Eco::Autoconf);
    }

    #[test]
    fn git() {
        run(Eco::Git);
    }

    #[test]
    fn pip() {
        run(Eco::Pip);
    }
}
