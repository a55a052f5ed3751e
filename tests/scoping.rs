//! Rights bound to the programs that used them (issue 21, docs/profile-format.md `by`).
//!
//! A private npm registry on 127.0.0.1 (`fixtures/scoping/registry.js`, token required)
//! serves `spkg`, whose install script builds with node and sh children. A benign
//! `npm install` is recorded and learned; then the same install script, turned malicious with
//! `SBX_ATTACK`, tries each way of using npm's rights: (config) read the npm config npm read,
//! (env) read `NPM_TOKEN`, (registry) connect to the registry npm connected to, (npm) run
//! npm's own code to read the token and ask the registry. Each attack is first shown to work
//! without sbx; under the learned profile each is killed (env: the variable is gone), while
//! the benign install passes in another directory with another HOME. A shell pipeline shows
//! the same for one stage that may reach a peer and the next that may not.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::util::*;

const TOKEN: &str = "s3cret-registry-token";
const ENV_TOKEN: &str = "s3cret-env-token";
const NPM_CLI: &str = "/usr/lib/node_modules/npm/bin/npm-cli.js";

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/scoping")
}

/// A server child, killed on drop, and the port it listens on (127.0.0.1).
struct Server {
    child: Child,
    port: u16,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    /// Start `cmd PORTFILE` and wait for it to write its port to PORTFILE.
    fn start(cmd: &mut Command, port_file: &Path) -> Server {
        let mut server = Server {
            child: cmd
                .arg(port_file)
                .stdin(Stdio::null())
                .spawn()
                .expect("server"),
            port: 0,
        };
        let start = Instant::now();
        loop {
            if let Ok(p) = std::fs::read_to_string(port_file)
                && let Ok(port) = p.trim().parse()
            {
                server.port = port;
                return server;
            }
            // Dropping `server` on the panic kills and reaps the child.
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "server did not start"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// Start `node ARGS... PORTFILE` and wait for it to write its port to PORTFILE.
fn serve(args: &[&OsStr], port_file: &Path) -> Server {
    Server::start(Command::new("node").args(args), port_file)
}

/// Pack spkg and serve it from a private registry that wants [`TOKEN`].
fn registry(dir: &Dir) -> Server {
    let pack = dir.join("pack");
    std::fs::create_dir_all(&pack).unwrap();
    let spkg = fixtures().join("spkg");
    bare(
        "npm",
        [
            OsStr::new("pack"),
            OsStr::new("--offline"),
            OsStr::new("--silent"),
            OsStr::new("--pack-destination"),
            pack.as_os_str(),
            spkg.as_os_str(),
        ],
        dir.path(),
    )
    .assert_code(0);
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(spkg.join("package.json")).unwrap()).unwrap();
    let index = serde_json::json!({
        "spkg": {
            "version": "1.0.0",
            "tarball": pack.join("spkg-1.0.0.tgz"),
            "manifest": manifest,
        }
    });
    let index_file = dir.join("index.json");
    std::fs::write(&index_file, index.to_string()).unwrap();
    let script = fixtures().join("registry.js");
    serve(
        &[
            script.as_os_str(),
            index_file.as_os_str(),
            OsStr::new(TOKEN),
        ],
        &dir.join("registry.port"),
    )
}

/// A fresh site: a project (at `depth` extra levels) depending on spkg, and a HOME whose
/// `.npmrc` points npm at the private registry with its token.
struct Site {
    proj: PathBuf,
    home: PathBuf,
    /// The step runs as CI runs it, `bash -c 'npm install ...'`, not npm directly.
    via_bash: bool,
    /// npm's user config is where `npm_config_userconfig` says (`${HOME}/.config/npm/npmrc`),
    /// not `${HOME}/.npmrc`.
    userconfig: bool,
}

impl Site {
    fn npmrc(&self) -> PathBuf {
        if self.userconfig {
            self.home.join(".config/npm/npmrc")
        } else {
            self.home.join(".npmrc")
        }
    }
}

fn site(dir: &Dir, name: &str, depth: usize, port: u16) -> Site {
    let mut proj = dir.join(name);
    for i in 0..depth {
        proj = proj.join(format!("d{i}"));
    }
    proj = proj.join("proj");
    let home = dir.join(&format!("{name}-home"));
    std::fs::create_dir_all(&proj).unwrap();
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(
        proj.join("package.json"),
        r#"{"name":"app","version":"1.0.0","private":true,"dependencies":{"spkg":"1.0.0"}}"#,
    )
    .unwrap();
    std::fs::write(
        home.join(".npmrc"),
        format!("registry=http://127.0.0.1:{port}/\n//127.0.0.1:{port}/:_authToken={TOKEN}\n"),
    )
    .unwrap();
    Site {
        proj,
        home,
        via_bash: false,
        userconfig: false,
    }
}

/// [`site`] with the step run through `bash -c` and npm's user config named by its
/// environment, as asked.
fn site_as(
    dir: &Dir,
    name: &str,
    depth: usize,
    port: u16,
    via_bash: bool,
    userconfig: bool,
) -> Site {
    let s = Site {
        via_bash,
        userconfig,
        ..site(dir, name, depth, port)
    };
    if userconfig {
        let rc = s.npmrc();
        std::fs::create_dir_all(rc.parent().unwrap()).unwrap();
        std::fs::rename(s.home.join(".npmrc"), &rc).unwrap();
    }
    s
}

const NPM_INSTALL: &[&str] = &["npm", "install", "--no-audit", "--no-fund"];

/// `ARGV` bare (`sbx` None) or under `sbx ARGS... -- ARGV`.
fn command<'a>(sbx: Option<&[&OsStr]>, mut argv: impl Iterator<Item = &'a OsStr>) -> Command {
    match sbx {
        Some(args) => {
            let mut c = Command::new(sbx_bin());
            c.args(args).arg("--").args(argv);
            c
        }
        None => {
            let mut c = Command::new(argv.next().expect("a program"));
            c.args(argv);
            c
        }
    }
}

/// `npm install` in `site`, bare (`sbx` None) or under `sbx ARGS... --`, with the attack.
fn npm_install(site: &Site, port: u16, sbx: Option<&[&OsStr]>, attack: Option<&str>) -> Output {
    let step = NPM_INSTALL.join(" ");
    let argv: Vec<&str> = if site.via_bash {
        vec!["bash", "-c", &step]
    } else {
        NPM_INSTALL.to_vec()
    };
    let mut cmd = command(sbx, argv.into_iter().map(OsStr::new));
    cmd.current_dir(&site.proj)
        .env("HOME", &site.home)
        .env("NPM_TOKEN", ENV_TOKEN)
        .env("SBX_REGISTRY_PORT", port.to_string())
        .env("SBX_NPM_CLI", NPM_CLI)
        // Relative to the install script's directory: inside node_modules, which the run
        // creates (a write the profile allows): only the attack itself can be refused.
        .env("SBX_LOOT", "loot")
        .env_remove("npm_config_cache");
    if site.userconfig {
        cmd.env("npm_config_userconfig", site.npmrc());
    } else {
        cmd.env_remove("npm_config_userconfig");
    }
    match attack {
        Some(a) => cmd.env("SBX_ATTACK", a),
        None => cmd.env_remove("SBX_ATTACK"),
    };
    run_guarded(cmd, Duration::from_secs(180))
}

fn loot(site: &Site) -> Option<String> {
    std::fs::read_to_string(site.proj.join("node_modules/spkg/loot")).ok()
}

fn learn(trace: &Path, out: &Path, extra: &[&str]) -> String {
    learn_cli(&[trace], out, extra)
}

/// Record a benign install in site A and learn it: (trace, profile path, profile text).
fn recorded_npm_profile(
    dir: &Dir,
    port: u16,
    via_bash: bool,
    userconfig: bool,
) -> (PathBuf, PathBuf, String) {
    let a = site_as(dir, "a", 0, port, via_bash, userconfig);
    let trace = dir.join("a.bin");
    let rec: Vec<&OsStr> = vec![OsStr::new("record"), OsStr::new("-o"), trace.as_os_str()];
    npm_install(&a, port, Some(&rec), None).assert_code(0);
    let profile = dir.join("npm.profile");
    let text = learn(&trace, &profile, &[]);
    (trace, profile, text)
}

#[test]
fn npm_install_scripts_do_not_inherit_npms_token_registry_or_environment() {
    install_scripts_lose_npms_rights(false, false);
}

/// npm told where its config is (`npm_config_userconfig`, as actions/setup-node does): that
/// file is a secret place like `~/.npmrc`, learned exact with a WARNING and bound to npm, so
/// the install script cannot copy the token from it (issue 38).
#[test]
fn npms_config_where_its_environment_says_is_npms_alone() {
    install_scripts_lose_npms_rights(true, true);
}

/// The same through the CI step's shell (`bash -c 'npm install'`): the shell is npm's
/// launcher, so npm keeps its rights and the profile says `by npm`; the install script, whose
/// `sh` runs below npm, still loses them (issue 38).
#[test]
fn through_the_ci_shell_install_scripts_still_lose_npms_rights() {
    install_scripts_lose_npms_rights(true, false);
}

fn install_scripts_lose_npms_rights(via_bash: bool, userconfig: bool) {
    let _heavy = heavy_shared();
    let dir = Dir::new();
    let reg = registry(&dir);
    let port = reg.port;
    let site = |dir: &Dir, name: &str, depth: usize, port: u16| {
        site_as(dir, name, depth, port, via_bash, userconfig)
    };

    let (trace, profile, text) = recorded_npm_profile(&dir, port, via_bash, userconfig);
    let rc = if userconfig {
        "${HOME}/.config/npm/npmrc"
    } else {
        "${HOME}/.npmrc"
    };
    assert!(text.contains(&format!("read {rc} by npm\n")), "{text}");
    assert!(
        text.contains(&format!(
            "WARNING: the traced run used a secret place (read {rc})"
        )),
        "{text}"
    );
    assert!(
        text.contains(&format!("connect tcp 127.0.0.1:{port} by npm\n")),
        "{text}"
    );
    assert!(text.contains("include node"), "{text}");

    let enforce: Vec<&OsStr> = vec![OsStr::new("enforce"), profile.as_os_str()];
    // The benign install passes in another directory, at another depth, with another HOME.
    let b = site(&dir, "b", 2, port);
    let out = npm_install(&b, port, Some(&enforce), None);
    out.assert_code(0);
    assert!(b.proj.join("node_modules/spkg/built.txt").exists());
    assert!(b.proj.join("node_modules/spkg/built-sh.txt").exists());

    for (attack, stolen) in [
        ("config", TOKEN),
        ("env", ENV_TOKEN),
        ("registry", "connected"),
        ("npm", "1.0.0"),
    ] {
        // Without sbx the attack gets what npm had.
        let bare = site(&dir, &format!("bare-{attack}"), 1, port);
        npm_install(&bare, port, None, Some(attack)).assert_code(0);
        let got = loot(&bare).unwrap_or_default();
        assert!(got.contains(stolen), "{attack} without sbx: {got:?}");

        let s = site(&dir, &format!("sbx-{attack}"), 1, port);
        let out = npm_install(&s, port, Some(&enforce), Some(attack));
        let got = loot(&s).unwrap_or_default();
        assert!(!got.contains(stolen), "{attack} under sbx got {got:?}");
        if attack == "env" {
            // The variable is not there: nothing to refuse, the install goes on.
            out.assert_code(0);
            assert!(
                out.stderr
                    .contains("NPM_TOKEN removed from the environment of"),
                "{}",
                out.stderr
            );
        } else {
            assert_eq!(out.code, Some(124), "{attack}: {}", out.stderr);
            assert!(
                out.stderr
                    .contains("only to the programs of its `by` list, and this process's exec chain runs others"),
                "{attack}: {}",
                out.stderr
            );
            // The violation names who asked: the install script, started through sh by npm.
            assert!(
                out.stderr.contains("node install.js <- dash <- npm"),
                "{attack}: {}",
                out.stderr
            );
        }
    }

    // The same attack under a profile learned with --no-scope succeeds: that is what the
    // binding buys.
    let open = dir.join("open.profile");
    let text = learn(&trace, &open, &["--no-scope"]);
    assert!(
        !text
            .lines()
            .any(|l| !l.starts_with('#') && l.contains(" by ")),
        "{text}"
    );
    let s = site(&dir, "open-config", 1, port);
    let enforce_open: Vec<&OsStr> = vec![OsStr::new("enforce"), open.as_os_str()];
    npm_install(&s, port, Some(&enforce_open), Some("config")).assert_code(0);
    assert!(loot(&s).unwrap_or_default().contains(TOKEN));
}

/// The diff after a violation proposes the caller's programs, with a WARNING.
#[test]
fn audit_diff_widens_a_binding_only_with_a_warning() {
    let _heavy = heavy_shared();
    let dir = Dir::new();
    let reg = registry(&dir);
    let port = reg.port;
    let (_, profile, _) = recorded_npm_profile(&dir, port, false, false);
    let s = site(&dir, "audit", 1, port);
    let audit: Vec<&OsStr> = vec![
        OsStr::new("enforce"),
        OsStr::new("--mode"),
        OsStr::new("audit"),
        profile.as_os_str(),
    ];
    let out = npm_install(&s, port, Some(&audit), Some("config"));
    out.assert_code(0);
    assert!(
        out.stderr
            .contains("# WARNING: widens a right bound to npm to dash, install.js"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr
            .contains("+read ${HOME}/.npmrc by dash,install.js,npm"),
        "{}",
        out.stderr
    );
}

/// `sh -c 'node get.js | node put.js'`: the stage that fetched may reach the peer, the stage
/// after it may not.
#[test]
fn a_pipeline_stage_does_not_get_the_peer_of_another_stage() {
    let _heavy = heavy_shared();
    let dir = Dir::new();
    let server = serve(
        &[
            OsStr::new("-e"),
            OsStr::new(
                "require('http').createServer((q, s) => s.end('data\\n')).listen(0, '127.0.0.1', function () { require('fs').writeFileSync(process.argv[1], String(this.address().port)); })",
            ),
        ],
        &dir.join("http.port"),
    );
    let port = server.port;
    let get = "require('http').get('http://127.0.0.1:' + process.env.PORT + '/', (r) => r.pipe(process.stdout));\n";
    let put = "let d = ''; process.stdin.on('data', (c) => (d += c)); process.stdin.on('end', () => {\n  require('fs').writeFileSync('out.txt', d);\n  if (process.env.SBX_ATTACK) require('net').connect(Number(process.env.PORT), '127.0.0.1', () => { require('fs').writeFileSync('sent.txt', d); process.exit(0); });\n});\n";
    let run = |proj: &Path, sbx: Option<Vec<&OsStr>>, attack: bool| -> Output {
        std::fs::create_dir_all(proj).unwrap();
        std::fs::write(proj.join("get.js"), get).unwrap();
        std::fs::write(proj.join("put.js"), put).unwrap();
        let pipeline = ["sh", "-c", "node get.js | node put.js"];
        let mut cmd = command(sbx.as_deref(), pipeline.iter().map(OsStr::new));
        cmd.current_dir(proj).env("PORT", port.to_string());
        if attack {
            cmd.env("SBX_ATTACK", "1");
        } else {
            cmd.env_remove("SBX_ATTACK");
        }
        run_guarded(cmd, Duration::from_secs(60))
    };
    let trace = dir.join("p.bin");
    run(
        &dir.join("a"),
        Some(vec![
            OsStr::new("record"),
            OsStr::new("-o"),
            trace.as_os_str(),
        ]),
        false,
    )
    .assert_code(0);
    let profile = dir.join("p.profile");
    let text = learn(&trace, &profile, &[]);
    assert!(
        // The step's shell is its launcher: not on the list (issue 38).
        text.contains(&format!("connect tcp 127.0.0.1:{port} by get.js\n")),
        "{text}"
    );
    let enforce = || vec![OsStr::new("enforce"), profile.as_os_str()];
    // Benign, elsewhere: passes.
    let b = dir.join("b/x/proj");
    run(&b, Some(enforce()), false).assert_code(0);
    assert_eq!(
        std::fs::read_to_string(b.join("out.txt")).unwrap(),
        "data\n"
    );
    // The second stage reaching the peer: works bare, killed under sbx.
    let bare_dir = dir.join("bare");
    run(&bare_dir, None, true).assert_code(0);
    assert!(bare_dir.join("sent.txt").exists());
    let c = dir.join("c/proj");
    let out = run(&c, Some(enforce()), true);
    assert_eq!(out.code, Some(124), "{}", out.stderr);
    assert!(!c.join("sent.txt").exists());
    assert!(out.stderr.contains("node put.js <- dash"), "{}", out.stderr);
}

/// A private Python index (`fixtures/scoping/pyindex.py`) that wants a token, named with it
/// in pip's configuration; pip builds `pypkg` from its sdist in a venv.
struct PySite {
    proj: PathBuf,
    home: PathBuf,
}

fn py_site(dir: &Dir, name: &str, depth: usize, port: u16, token: &str) -> PySite {
    let mut proj = dir.join(name);
    for i in 0..depth {
        proj = proj.join(format!("d{i}"));
    }
    proj = proj.join("proj");
    let home = dir.join(&format!("{name}-home"));
    std::fs::create_dir_all(&proj).unwrap();
    std::fs::create_dir_all(home.join(".config/pip")).unwrap();
    std::fs::write(
        home.join(".config/pip/pip.conf"),
        format!("[global]\nindex-url = http://ci:{token}@127.0.0.1:{port}/simple/\n"),
    )
    .unwrap();
    // The venv is made without sbx, as a CI step before the install would.
    bare(
        "/usr/bin/python3",
        ["-m", "venv", "--system-site-packages", "venv"],
        &proj,
    )
    .assert_code(0);
    PySite { proj, home }
}

fn pip_install(site: &PySite, port: u16, sbx: Option<&[&OsStr]>, attack: Option<&str>) -> Output {
    let pip = [
        "venv/bin/pip",
        "install",
        "-v",
        "--no-cache-dir",
        "--no-build-isolation",
        "pypkg",
    ];
    let exe = site.proj.join(pip[0]);
    let argv = std::iter::once(exe.as_os_str()).chain(pip[1..].iter().map(OsStr::new));
    let mut cmd = command(sbx, argv);
    cmd.current_dir(&site.proj)
        .env("HOME", &site.home)
        .env("SBX_INDEX_PORT", port.to_string())
        .env("PIP_DISABLE_PIP_VERSION_CHECK", "1")
        .env_remove("PIP_FIND_LINKS")
        .env_remove("PIP_INDEX_URL")
        .env_remove("PIP_CONFIG_FILE")
        .env_remove("PYTHONDONTWRITEBYTECODE");
    match attack {
        Some(a) => cmd.env("SBX_ATTACK", a),
        None => cmd.env_remove("SBX_ATTACK"),
    };
    run_guarded(cmd, Duration::from_secs(180))
}

/// What the installed module carries (empty when pypkg was not installed).
fn installed_loot(site: &PySite) -> String {
    let lib = site.proj.join("venv/lib");
    std::fs::read_dir(&lib)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| std::fs::read_to_string(e.path().join("site-packages/pypkg.py")).ok())
        .next()
        .unwrap_or_default()
}

#[test]
fn a_setup_py_started_by_pip_does_not_get_pips_index_token_or_index() {
    let _heavy = heavy_shared();
    let dir = Dir::new();
    // The sdist, served by the private index.
    let files = dir.join("files");
    std::fs::create_dir_all(&files).unwrap();
    let src = dir.join("pypkg-src");
    std::fs::create_dir_all(&src).unwrap();
    for f in ["setup.py", "pypkg.py"] {
        std::fs::copy(fixtures().join("pypkg").join(f), src.join(f)).unwrap();
    }
    bare(
        "/usr/bin/python3",
        [
            OsStr::new("setup.py"),
            OsStr::new("-q"),
            OsStr::new("sdist"),
            OsStr::new("-d"),
            files.as_os_str(),
        ],
        &src,
    )
    .assert_code(0);
    let token = "s3cret-index-token";
    let index = Server::start(
        Command::new("/usr/bin/python3")
            .arg(fixtures().join("pyindex.py"))
            .arg(&files)
            .arg(token),
        &dir.join("index.port"),
    );
    let port = index.port;

    let a = py_site(&dir, "a", 0, port, token);
    let trace = dir.join("a.bin");
    let rec: Vec<&OsStr> = vec![OsStr::new("record"), OsStr::new("-o"), trace.as_os_str()];
    pip_install(&a, port, Some(&rec), None).assert_code(0);
    let profile = dir.join("pip.profile");
    let text = learn(&trace, &profile, &[]);
    assert!(
        text.contains("read ${HOME}/.config/pip/pip.conf by pip"),
        "{text}"
    );
    assert!(
        text.contains(&format!("connect tcp 127.0.0.1:{port} by pip")),
        "{text}"
    );
    let enforce: Vec<&OsStr> = vec![OsStr::new("enforce"), profile.as_os_str()];
    let b = py_site(&dir, "b", 2, port, token);
    pip_install(&b, port, Some(&enforce), None).assert_code(0);

    for (attack, stolen) in [("config", token), ("index", "connected")] {
        let bare_site = py_site(&dir, &format!("bare-{attack}"), 1, port, token);
        let out = pip_install(&bare_site, port, None, Some(attack));
        out.assert_code(0);
        let got = installed_loot(&bare_site);
        assert!(got.contains(stolen), "{attack} without sbx: {got:?}");
        let s = py_site(&dir, &format!("sbx-{attack}"), 1, port, token);
        let out = pip_install(&s, port, Some(&enforce), Some(attack));
        assert_eq!(out.code, Some(124), "{attack}: {}", out.stderr);
        assert!(!installed_loot(&s).contains(stolen), "{attack}");
        assert!(
            out.stderr.contains("only to the programs of its `by` list"),
            "{attack}: {}",
            out.stderr
        );
    }
}
