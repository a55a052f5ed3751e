//! What CI reads from sbx, on real runs: the report rendered as a job summary, annotations on
//! the profile line where a rule would go, SARIF validated against the OASIS schema, GitLab's
//! Code Quality report; and the GitHub Action's steps (ci/github/*.sh) run as a runner would
//! run them (its environment variables, a simulated `actions/setup-node` tool cache), the
//! GitLab template's script likewise.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::util::{Dir, Output, Sbx, run_guarded, sbx_bin};

const VIOLATION: i32 = 124;

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn json(path: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}\n{text}", path.display()))
}

/// Validate a SARIF file against the OASIS SARIF 2.1.0 schema (tests/fixtures, errata01) with
/// Python's jsonschema (.ci/run installs it). A missing validator fails the test.
fn assert_valid_sarif(path: &Path) {
    let schema = repo().join("tests/fixtures/sarif-schema-2.1.0.json");
    let script = "import json, sys, jsonschema\n\
        schema = json.load(open(sys.argv[1]))\n\
        doc = json.load(open(sys.argv[2]))\n\
        v = jsonschema.validators.validator_for(schema)(schema)\n\
        errors = sorted(v.iter_errors(doc), key=lambda e: list(e.path))\n\
        for e in errors: print(list(e.path), e.message)\n\
        sys.exit(1 if errors else 0)\n";
    let mut cmd = Command::new("/usr/bin/python3");
    cmd.arg("-c").arg(script).arg(&schema).arg(path);
    let out = run_guarded(cmd, Duration::from_secs(60));
    assert_eq!(
        out.code,
        Some(0),
        "{} is not valid SARIF 2.1.0 (or python3-jsonschema is missing):\n{}{}",
        path.display(),
        out.stdout,
        out.stderr
    );
}

/// `sbx report --format FORMAT report` (stdout).
fn render(report: &Path, format: &str) -> String {
    let out = Sbx::new(["report", "--format", format]).run_with(&[report.as_os_str()]);
    out.assert_code(0);
    out.stdout
}

/// A shell workload that reads `in.txt`, writes `out.txt`, and with `EVIL=1` also reads a
/// key in HOME and writes a file in HOME.
const SCRIPT: &str = "cat in.txt > out.txt; if [ -n \"$EVIL\" ]; then cat \"$HOME/.ssh/id_rsa\" > /dev/null; echo x > \"$HOME/dropped\"; fi; exit 0";

fn project(d: &Dir) -> PathBuf {
    d.write("in.txt", "hello\n");
    d.write("home/.ssh/id_rsa", "KEY\n");
    let home = d.join("home");
    let out = Sbx::new(["record", "-o", "t.bin", "--", "sh", "-c", SCRIPT])
        .cwd(d.path())
        .env("HOME", &home)
        .run();
    out.assert_code(0);
    Sbx::new(["learn", "t.bin", "-o", "p.profile"])
        .cwd(d.path())
        .run()
        .assert_code(0);
    d.join("p.profile")
}

fn enforce(d: &Dir, mode: &str, evil: bool, extra: &[&str]) -> Output {
    let mut args = vec!["enforce", "--mode", mode];
    args.extend(extra);
    args.extend(["p.profile", "--", "sh", "-c", SCRIPT]);
    let mut s = Sbx::new(args)
        .cwd(d.path())
        .env("HOME", d.join("home"))
        .env("GITHUB_ACTIONS", "true");
    s.cmd.env_remove("LD_LIBRARY_PATH");
    if evil {
        s = s.env("EVIL", "1");
    } else {
        s.cmd.env_remove("EVIL");
    }
    s.run()
}

#[test]
fn sarif_summary_annotations_and_code_quality_of_a_real_run() {
    let d = Dir::new();
    let profile = project(&d);
    let profile_text = std::fs::read_to_string(&profile).unwrap();
    // The attack works without sbx: the key is read, the file dropped.
    let mut cmd = Command::new("sh");
    cmd.args(["-c", SCRIPT])
        .current_dir(d.path())
        .env("HOME", d.join("home"))
        .env("EVIL", "1");
    run_guarded(cmd, Duration::from_secs(30)).assert_code(0);
    assert!(d.join("home/dropped").exists());
    std::fs::remove_file(d.join("home/dropped")).unwrap();

    let out = enforce(
        &d,
        "deny",
        true,
        &["--report", "r.json", "--sarif", "r.sarif"],
    );
    out.assert_code(VIOLATION);
    assert!(!d.join("home/dropped").exists(), "the write was not denied");
    let r = json(&d.join("r.json"));
    let v = r["violations"].as_array().unwrap();
    assert_eq!(v.len(), 2, "{r:#}");
    assert_eq!(v[0]["verb"], "read");
    assert_eq!(v[1]["verb"], "create");

    // Each violation names its own rule and where in the profile file it goes; the line is a
    // real line of the file.
    let lines = profile_text.lines().count();
    for x in v {
        let rules = x["rule"]
            .as_str()
            .unwrap_or_else(|| panic!("no rule: {x:#}"));
        for rule in rules.lines().filter(|l| !l.starts_with('#')) {
            let verb = rule.split(' ').next().unwrap();
            assert!(
                verb == x["verb"] || (x["verb"] == "create" && ["write", "own"].contains(&verb)),
                "{rules}"
            );
        }
        let line = usize::try_from(x["profile_line"].as_u64().unwrap()).unwrap();
        assert!((1..=lines).contains(&line), "line {line} of {lines}");
    }
    // The key is a secret place: the WARNING learning writes comes with the rule.
    assert!(
        v[0]["rule"]
            .as_str()
            .unwrap()
            .starts_with("# WARNING: the traced run used a secret place")
            && v[0]["rule"]
                .as_str()
                .unwrap()
                .contains("\nread ${HOME}/.ssh/id_rsa"),
        "{r:#}"
    );

    // Annotations: one per violation on stdout, `::error` at that line.
    let ann: Vec<&str> = out.stdout.lines().filter(|l| l.starts_with("::")).collect();
    assert_eq!(ann.len(), 2, "{}", out.stdout);
    assert!(
        ann[0].starts_with(&format!(
            "::error file=p.profile,line={},title=sbx violation (read openat)::",
            v[0]["profile_line"]
        )),
        "{}",
        ann[0]
    );
    assert!(
        ann[0].contains("to allow it after review, add: read "),
        "{}",
        ann[0]
    );
    // `sbx report --format annotations` prints the same from the saved report.
    assert_eq!(
        render(&d.join("r.json"), "annotations")
            .lines()
            .collect::<Vec<_>>(),
        ann
    );

    // SARIF: valid against the schema, one result per violation, rules per verb, located in
    // the profile at the same lines.
    assert_valid_sarif(&d.join("r.sarif"));
    let s = json(&d.join("r.sarif"));
    let results = s["runs"][0]["results"].as_array().unwrap();
    assert_eq!(results.len(), 2);
    assert_eq!(results[0]["ruleId"], "sbx/read");
    assert_eq!(results[1]["ruleId"], "sbx/create");
    let loc = &results[0]["locations"][0]["physicalLocation"];
    assert_eq!(loc["artifactLocation"]["uri"], "p.profile");
    assert_eq!(loc["region"]["startLine"], v[0]["profile_line"]);
    // `sbx report --format sarif` makes the same document.
    let again: serde_json::Value =
        serde_json::from_str(&render(&d.join("r.json"), "sarif")).unwrap();
    assert_eq!(again, s);

    // The job summary.
    let md = render(&d.join("r.json"), "summary");
    assert!(
        md.starts_with("## ❌ sbx: 2 violations denied; the workload exited 0\n"),
        "{md}"
    );
    assert!(md.contains("Violations by verb: 1 read, 1 create."), "{md}");
    assert!(md.contains("/.ssh/id_rsa` | denied |"), "{md}");
    assert!(
        md.contains(" ⚠️ WARNING: the traced run used a secret place"),
        "{md}"
    );
    assert!(md.contains("```diff\n--- p.profile\n"), "{md}");

    // GitLab Code Quality: one issue per access, at the profile line.
    let q: serde_json::Value =
        serde_json::from_str(&render(&d.join("r.json"), "codequality")).unwrap();
    let q = q.as_array().unwrap();
    assert_eq!(q.len(), 2);
    assert_eq!(q[0]["location"]["path"], "p.profile");
    assert_eq!(q[0]["location"]["lines"]["begin"], v[0]["profile_line"]);

    // The proposed rules, put where the report says, admit the run: the placement is right.
    let mut text: Vec<String> = profile_text.lines().map(str::to_string).collect();
    let mut placed: Vec<(usize, String)> = v
        .iter()
        .map(|x| {
            (
                usize::try_from(x["profile_line"].as_u64().unwrap()).unwrap(),
                x["rule"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    placed.sort_by_key(|p| std::cmp::Reverse(p.0));
    for (line, rules) in placed {
        for rule in rules.lines().rev() {
            text.insert(line, rule.to_string());
        }
    }
    std::fs::write(&profile, text.join("\n") + "\n").unwrap();
    Sbx::new(["check", "p.profile"])
        .cwd(d.path())
        .run()
        .assert_code(0);
    let out = enforce(&d, "kill", true, &["--report", "r2.json"]);
    out.assert_code(0);
    assert_eq!(
        json(&d.join("r2.json"))["violations"],
        serde_json::json!([])
    );
    // A clean run: no annotation, and a passing summary.
    assert!(!out.stdout.contains("::error"), "{}", out.stdout);
    assert!(render(&d.join("r2.json"), "summary").starts_with("## ✅ sbx: passed"));
}

#[test]
fn audit_mode_gives_warnings_and_a_bad_report_is_an_error() {
    let d = Dir::new();
    project(&d);
    let out = enforce(&d, "audit", true, &["--sarif", "a.sarif"]);
    out.assert_code(0);
    assert!(d.join("home/dropped").exists(), "audit mode blocks nothing");
    let ann: Vec<&str> = out.stdout.lines().filter(|l| l.starts_with("::")).collect();
    assert_eq!(ann.len(), 2, "{}", out.stdout);
    assert!(
        ann.iter()
            .all(|a| a.starts_with("::warning file=p.profile,line="))
    );
    assert_valid_sarif(&d.join("a.sarif"));
    let s = json(&d.join("a.sarif"));
    assert_eq!(s["runs"][0]["results"][0]["level"], "warning");

    // Not a report: one line with the file, line and column, exit 125.
    d.write("bad.json", "{\"sbx_version\": 1}\n");
    let out = Sbx::new(["report", "--format", "summary", "bad.json"])
        .cwd(d.path())
        .run();
    out.assert_code(125);
    assert!(
        out.stderr.contains("bad.json:1:") && out.stderr.contains("not an sbx report"),
        "{}",
        out.stderr
    );
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
}

/// A simulated `actions/setup-node` tool cache: node copied to
/// `/opt/hostedtoolcache/node/VERSION/x64/bin/node`, removed on drop.
struct ToolCache {
    dir: PathBuf,
}

impl ToolCache {
    fn new(version: &str) -> ToolCache {
        let dir = PathBuf::from(format!("/opt/hostedtoolcache/node/{version}/x64"));
        std::fs::create_dir_all(dir.join("bin")).unwrap_or_else(|e| {
            panic!(
                "cannot create {} (the tool cache simulation needs root): {e}",
                dir.display()
            )
        });
        std::fs::copy("/usr/bin/node", dir.join("bin/node")).unwrap();
        ToolCache { dir }
    }
    fn bin(&self) -> PathBuf {
        self.dir.join("bin")
    }
}

impl Drop for ToolCache {
    fn drop(&mut self) {
        if let Some(version_dir) = self.dir.parent() {
            let _ = std::fs::remove_dir_all(version_dir);
        }
    }
}

/// The workload of the Action test: a node build that reads its sources, runs a second node
/// (looked up on PATH: the tool cache's) and writes its output. `EVIL=1` makes it also read a
/// key in HOME, as a compromised build dependency would.
const BUILD_JS: &str = r#"
const fs = require('fs');
const cp = require('child_process');
const src = fs.readFileSync('src/main.js', 'utf8');
const n = cp.execFileSync('node', ['-e', 'process.stdout.write(String(6 * 7))']).toString();
fs.mkdirSync('dist', { recursive: true });
fs.writeFileSync('dist/main.js', src + '// ' + n + '\n');
if (process.env.EVIL) {
  try { fs.readFileSync(process.env.HOME + '/.ssh/id_rsa'); } catch (e) {}
}
"#;

/// The runner's environment for one step: GITHUB_* files in `d/runner`, PATH with the tool
/// cache first.
fn runner_step(cmd: &mut Command, d: &Dir, tc: &ToolCache, home: &Path) {
    let runner = d.join("runner");
    std::fs::create_dir_all(runner.join("temp")).unwrap();
    let path = format!(
        "{}:{}",
        tc.bin().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    cmd.env("GITHUB_ACTIONS", "true")
        .env("CI", "true")
        .env("RUNNER_TEMP", runner.join("temp"))
        .env("RUNNER_TOOL_CACHE", "/opt/hostedtoolcache")
        .env("GITHUB_STEP_SUMMARY", runner.join("summary.md"))
        .env("GITHUB_OUTPUT", runner.join("output"))
        .env("GITHUB_PATH", runner.join("path"))
        .env("GITHUB_WORKSPACE", d.join("ws"))
        .env("GITHUB_ACTION_PATH", repo())
        .env("HOME", home)
        .env("PATH", path)
        .env_remove("LD_LIBRARY_PATH")
        .env_remove("EVIL")
        .current_dir(d.join("ws"));
}

#[test]
fn github_action_steps_in_a_simulated_runner_with_a_tool_cache() {
    let d = Dir::new();
    d.write("ws/src/main.js", "console.log('app');\n");
    d.write("ws/build.js", BUILD_JS);
    let home = d.join("home");
    d.write("home/.ssh/id_rsa", "KEY\n");
    // Two node versions, as two setup-node runs a few weeks apart would leave.
    let pid = std::process::id();
    let old = ToolCache::new(&format!("20.{}.1", pid % 1000));
    let new = ToolCache::new(&format!("22.{}.2", pid % 1000));

    // Learned on a branch with the old node: `sbx record` + `sbx learn` as docs/ci.md says.
    let mut cmd = Command::new(sbx_bin());
    cmd.args(["record", "-o", "build.trace", "--", "node", "build.js"]);
    runner_step(&mut cmd, &d, &old, &home);
    run_guarded(cmd, Duration::from_secs(120)).assert_code(0);
    std::fs::create_dir_all(d.join("ws/.sbx")).unwrap();
    let mut cmd = Command::new(sbx_bin());
    cmd.args(["learn", "build.trace", "-o", ".sbx/build.profile"]);
    runner_step(&mut cmd, &d, &old, &home);
    run_guarded(cmd, Duration::from_secs(60)).assert_code(0);
    let profile = std::fs::read_to_string(d.join("ws/.sbx/build.profile")).unwrap();
    // Portable across node versions: the `node` snippet covers the tool cache, and no rule
    // names the version directory it was learned with.
    assert!(profile.contains("include node"), "{profile}");
    assert!(
        !profile.contains(old.dir.to_str().unwrap()),
        "the tool cache's version directory is learned:\n{profile}"
    );
    std::fs::remove_dir_all(d.join("ws/dist")).unwrap();

    // The install step: the "release" (this test's sbx) from a file:// URL, checked against
    // the pinned checksum. A tampered asset is refused and nothing is installed.
    let version = env!("CARGO_PKG_VERSION");
    let asset = format!("sbx-{version}-{}-linux-musl", std::env::consts::ARCH);
    let rel = d.join("release");
    std::fs::create_dir_all(&rel).unwrap();
    std::fs::copy(sbx_bin(), rel.join(&asset)).unwrap();
    let sha = {
        let mut c = Command::new("sha256sum");
        c.arg(rel.join(&asset));
        let o = run_guarded(c, Duration::from_secs(30));
        o.stdout.split_whitespace().next().unwrap().to_string()
    };
    d.write("pinned.txt", &format!("# pinned\n{sha}  {asset}\n"));
    let install = |tamper: bool| {
        if tamper {
            let mut b = std::fs::read(rel.join(&asset)).unwrap();
            b.extend_from_slice(b"\0tampered");
            std::fs::write(rel.join(format!("{asset}.bad")), b).unwrap();
            std::fs::create_dir_all(d.join("bad")).unwrap();
            std::fs::rename(rel.join(format!("{asset}.bad")), d.join("bad").join(&asset)).unwrap();
        }
        let mut cmd = Command::new("bash");
        cmd.arg(repo().join("ci/github/install.sh"));
        runner_step(&mut cmd, &d, &new, &home);
        let base = if tamper { d.join("bad") } else { rel.clone() };
        cmd.env("INPUT_INSTALL", "release")
            .env("SBX_RELEASE_BASE_URL", format!("file://{}", base.display()))
            .env("SBX_PINNED_CHECKSUMS", d.join("pinned.txt"));
        run_guarded(cmd, Duration::from_secs(60))
    };
    let installed = d.join("runner/temp/sbx-bin/sbx");
    let out = install(true);
    out.assert_code(1);
    assert!(out.stderr.contains("checksum mismatch"), "{}", out.stderr);
    assert!(!installed.exists(), "a tampered binary was installed");
    let out = install(false);
    out.assert_code(0);
    assert!(installed.exists());
    let gh_path = std::fs::read_to_string(d.join("runner/path")).unwrap();
    assert_eq!(
        gh_path.trim(),
        installed.parent().unwrap().to_str().unwrap()
    );
    let outputs = std::fs::read_to_string(d.join("runner/output")).unwrap();
    assert!(
        outputs.contains(&format!("sbx={}", installed.display())),
        "{outputs}"
    );
    // Nothing pinned for this asset: `release` refuses; `auto` would build from source.
    d.write("pinned.txt", "# nothing pinned\n");
    let mut cmd = Command::new("bash");
    cmd.arg(repo().join("ci/github/install.sh"));
    runner_step(&mut cmd, &d, &new, &home);
    cmd.env("INPUT_INSTALL", "release")
        .env("SBX_PINNED_CHECKSUMS", d.join("pinned.txt"));
    let out = run_guarded(cmd, Duration::from_secs(60));
    out.assert_code(1);
    assert!(out.stderr.contains("no checksum pinned"), "{}", out.stderr);

    // The run step on a PR, with the NEW node version first on PATH: passes.
    let run = |evil: bool| {
        let _ = std::fs::remove_file(d.join("runner/summary.md"));
        let _ = std::fs::remove_file(d.join("runner/output"));
        let mut cmd = Command::new("bash");
        cmd.arg(repo().join("ci/github/run.sh"));
        runner_step(&mut cmd, &d, &new, &home);
        cmd.env("SBX", &installed)
            .env("INPUT_PROFILE", ".sbx/build.profile")
            .env("INPUT_COMMAND", "node 'build.js'")
            .env("INPUT_MODE", "kill")
            .env("INPUT_REPORT", "sbx-report.json")
            .env("INPUT_SARIF", "sbx.sarif")
            .env("INPUT_TIMEOUT", "2m");
        if evil {
            cmd.env("EVIL", "1");
        }
        run_guarded(cmd, Duration::from_secs(180))
    };
    let out = run(false);
    out.assert_code(0);
    assert!(d.join("ws/dist/main.js").exists());
    let summary = std::fs::read_to_string(d.join("runner/summary.md")).unwrap();
    assert!(
        summary.starts_with("## ✅ sbx: passed: no violation; the workload exited 0"),
        "{summary}"
    );
    assert!(summary.contains("command `node build.js`"), "{summary}");
    let outputs = std::fs::read_to_string(d.join("runner/output")).unwrap();
    assert!(outputs.contains("exit-code=0\n"), "{outputs}");
    assert!(outputs.contains("sarif=sbx.sarif\n"), "{outputs}");
    assert_valid_sarif(&d.join("ws/sbx.sarif"));

    // A compromised build: killed, annotated on the profile, summarized, SARIF valid. The
    // attack works without sbx (the key is readable; the script swallows no error here).
    let mut cmd = Command::new(new.bin().join("node"));
    cmd.args([
        "-e",
        "require('fs').readFileSync(process.env.HOME + '/.ssh/id_rsa')",
    ])
    .env("HOME", &home);
    run_guarded(cmd, Duration::from_secs(30)).assert_code(0);
    let out = run(true);
    out.assert_code(VIOLATION);
    let ann: Vec<&str> = out
        .stdout
        .lines()
        .filter(|l| l.starts_with("::error "))
        .collect();
    assert_eq!(ann.len(), 1, "{}\n{}", out.stdout, out.stderr);
    assert!(
        ann[0].starts_with("::error file=.sbx/build.profile,line="),
        "{}",
        ann[0]
    );
    assert!(ann[0].contains(".ssh/id_rsa"), "{}", ann[0]);
    let summary = std::fs::read_to_string(d.join("runner/summary.md")).unwrap();
    assert!(
        summary.starts_with("## ❌ sbx: 1 violation: the workload was killed"),
        "{summary}"
    );
    assert!(summary.contains("/.ssh/id_rsa` | killed |"), "{summary}");
    assert!(
        summary.contains("### Suggested profile change"),
        "{summary}"
    );
    let outputs = std::fs::read_to_string(d.join("runner/output")).unwrap();
    assert!(outputs.contains("exit-code=124\n"), "{outputs}");
    assert_valid_sarif(&d.join("ws/sbx.sarif"));
    let r = json(&d.join("ws/sbx-report.json"));
    assert_eq!(
        r["violations"][0]["exe"],
        format!("{}/node", new.bin().display())
    );

    // The shipped `node` snippet alone knows the tool cache: a hand-written profile.
    d.write(
        "ws/.sbx/hand.profile",
        "include node\ninclude ssl\nread ${CWD}/**\nown ${CWD}/dist\n",
    );
    let mut cmd = Command::new("bash");
    cmd.arg(repo().join("ci/github/run.sh"));
    runner_step(&mut cmd, &d, &new, &home);
    cmd.env("SBX", &installed)
        .env("INPUT_PROFILE", ".sbx/hand.profile")
        .env("INPUT_COMMAND", "node build.js");
    run_guarded(cmd, Duration::from_secs(180)).assert_code(0);

    // Bad inputs: a mode that does not exist, unbalanced quotes.
    for (k, v, msg) in [
        ("INPUT_MODE", "block", "mode must be kill, deny or audit"),
        ("INPUT_COMMAND", "node 'build.js", "unbalanced quotes"),
    ] {
        let mut cmd = Command::new("bash");
        cmd.arg(repo().join("ci/github/run.sh"));
        runner_step(&mut cmd, &d, &new, &home);
        cmd.env("SBX", &installed)
            .env("INPUT_PROFILE", ".sbx/build.profile")
            .env("INPUT_COMMAND", "node build.js")
            .env(k, v);
        let out = run_guarded(cmd, Duration::from_secs(60));
        out.assert_code(2);
        assert!(out.stderr.contains(msg), "{}", out.stderr);
    }
}

/// The `.sbx-enforce` job of ci/gitlab/sbx.gitlab-ci.yml as GitLab would run it: its
/// variables (overridden by `vars`) in the environment, before_script and script in one
/// POSIX shell, after_script in another whatever the outcome. Returns the script's output.
fn gitlab_job(ws: &Path, vars: &[(&str, String)]) -> Output {
    let extract = "import json, sys, yaml\n\
        job = yaml.safe_load(open(sys.argv[1]))['.sbx-enforce']\n\
        print(json.dumps({k: job.get(k) for k in ('variables', 'before_script', 'script', 'after_script')}))\n";
    let mut cmd = Command::new("/usr/bin/python3");
    cmd.arg("-c")
        .arg(extract)
        .arg(repo().join("ci/gitlab/sbx.gitlab-ci.yml"));
    let out = run_guarded(cmd, Duration::from_secs(30));
    out.assert_code(0);
    let job: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let section = |k: &str| -> String {
        job[k]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| l.as_str().unwrap().to_string() + "\n")
            .collect()
    };
    let env = |cmd: &mut Command| {
        cmd.current_dir(ws)
            .env("CI", "true")
            .env("GITLAB_CI", "true")
            .env("CI_PROJECT_DIR", ws)
            .env_remove("GITHUB_ACTIONS")
            .env_remove("LD_LIBRARY_PATH")
            .env_remove("EVIL");
        for (k, v) in job["variables"].as_object().unwrap() {
            cmd.env(k, v.as_str().unwrap());
        }
        for (k, v) in vars {
            cmd.env(k, v);
        }
    };
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(section("before_script") + &section("script"));
    env(&mut cmd);
    let out = run_guarded(cmd, Duration::from_secs(180));
    let mut after = Command::new("sh");
    after.arg("-c").arg(section("after_script"));
    env(&mut after);
    run_guarded(after, Duration::from_secs(60)).assert_code(0);
    out
}

#[test]
fn gitlab_template_job_with_code_quality() {
    let d = Dir::new();
    d.write("ws/in.txt", "hello\n");
    d.write("home/.ssh/id_rsa", "KEY\n");
    let ws = d.join("ws");
    let home = d.join("home");
    let out = Sbx::new(["record", "-o", "t.bin", "--", "sh", "-c", SCRIPT])
        .cwd(&ws)
        .env("HOME", &home)
        .run();
    out.assert_code(0);
    Sbx::new(["learn", "t.bin", "-o", "sbx.profile"])
        .cwd(&ws)
        .run()
        .assert_code(0);
    std::fs::remove_file(ws.join("t.bin")).unwrap();
    let command = format!("sh -c '{}'", SCRIPT.replace('\'', "'\\''"));
    let base = |extra: &[(&'static str, String)]| -> Vec<(&'static str, String)> {
        let mut v = vec![
            ("HOME", home.display().to_string()),
            ("SBX_PROFILE", "sbx.profile".to_string()),
            ("SBX_COMMAND", command.clone()),
        ];
        v.extend(extra.iter().cloned());
        v
    };

    // The download path: a "release" from a file:// URL, checked against SBX_SHA256.
    let rel = d.join("rel/v0.1.0");
    std::fs::create_dir_all(&rel).unwrap();
    let asset = format!("sbx-0.1.0-{}-linux-musl", std::env::consts::ARCH);
    std::fs::copy(sbx_bin(), rel.join(&asset)).unwrap();
    let mut c = Command::new("sha256sum");
    c.arg(rel.join(&asset));
    let sha = run_guarded(c, Duration::from_secs(30))
        .stdout
        .split_whitespace()
        .next()
        .unwrap()
        .to_string();
    let url = format!("file://{}", d.join("rel").display());
    let out = gitlab_job(
        &ws,
        &base(&[
            ("SBX_RELEASE_URL", url.clone()),
            ("SBX_SHA256", "0".repeat(64)),
        ]),
    );
    out.assert_code(1);
    assert!(out.stderr.contains("checksum mismatch"), "{}", out.stderr);
    assert!(!ws.join(".sbx-bin/sbx").exists());
    // No violation (clean run): exit 0, an empty Code Quality report.
    let out = gitlab_job(&ws, &base(&[("SBX_RELEASE_URL", url), ("SBX_SHA256", sha)]));
    out.assert_code(0);
    assert_eq!(
        json(&ws.join("gl-code-quality.json")),
        serde_json::json!([])
    );
    assert_eq!(json(&ws.join("sbx-report.json"))["exit_code"], 0);

    // A compromised run: the job fails with 124, the Code Quality report lists the accesses
    // on the profile's lines.
    let out = gitlab_job(
        &ws,
        &base(&[
            ("SBX_BIN", sbx_bin().to_string()),
            ("EVIL", "1".to_string()),
        ]),
    );
    out.assert_code(VIOLATION);
    let q = json(&ws.join("gl-code-quality.json"));
    let q = q.as_array().unwrap();
    assert_eq!(q.len(), 1, "{q:#?}");
    assert_eq!(q[0]["check_name"], "sbx/read");
    assert_eq!(q[0]["location"]["path"], "sbx.profile");
    assert!(q[0]["location"]["lines"]["begin"].as_u64().unwrap() >= 1);
    assert!(
        q[0]["description"]
            .as_str()
            .unwrap()
            .contains(".ssh/id_rsa"),
        "{q:#?}"
    );
    assert!(!home.join("dropped").exists(), "killed before the write");

    // A bad mode: a usage error before anything runs.
    let out = gitlab_job(
        &ws,
        &base(&[
            ("SBX_BIN", sbx_bin().to_string()),
            ("SBX_MODE", "block".to_string()),
        ]),
    );
    out.assert_code(2);
    assert!(out.stderr.contains("SBX_MODE must be"), "{}", out.stderr);
}

/// A monorepo step (the Action's `working-directory: web`, GitLab's `cd web`): annotations,
/// SARIF locations and Code Quality paths name the profile from the repository's root, where
/// GitHub and GitLab resolve them, not from the step's directory. The root comes from
/// `GITHUB_WORKSPACE`, else from the checkout's `.git`.
#[test]
fn a_step_in_a_subdirectory_names_the_profile_from_the_repository_root() {
    let d = Dir::new();
    let ws = d.join("ws");
    let web = ws.join("web");
    std::fs::create_dir_all(ws.join(".git")).unwrap();
    std::fs::create_dir_all(web.join(".sbx")).unwrap();
    std::fs::write(web.join("in.txt"), "hello\n").unwrap();
    std::fs::create_dir_all(d.join("home/.ssh")).unwrap();
    std::fs::write(d.join("home/.ssh/id_rsa"), "KEY\n").unwrap();
    Sbx::new(["record", "-o", "t.bin", "--", "sh", "-c", SCRIPT])
        .cwd(&web)
        .env("HOME", d.join("home"))
        .run()
        .assert_code(0);
    Sbx::new(["learn", "t.bin", "-o", ".sbx/p.profile"])
        .cwd(&web)
        .run()
        .assert_code(0);
    for workspace in [Some(&ws), None] {
        let mut s = Sbx::new([
            "enforce",
            "--mode",
            "deny",
            "--report",
            "r.json",
            "--sarif",
            "r.sarif",
            ".sbx/p.profile",
            "--",
            "sh",
            "-c",
            SCRIPT,
        ])
        .cwd(&web)
        .env("HOME", d.join("home"))
        .env("GITHUB_ACTIONS", "true")
        .env("EVIL", "1");
        s.cmd.env_remove("CI_PROJECT_DIR");
        match workspace {
            Some(w) => s = s.env("GITHUB_WORKSPACE", w),
            None => {
                s.cmd.env_remove("GITHUB_WORKSPACE");
            }
        }
        let out = s.run();
        out.assert_code(VIOLATION);
        let annotations: Vec<&str> = out.stdout.lines().filter(|l| l.starts_with("::")).collect();
        assert!(!annotations.is_empty(), "{out:?}");
        for a in &annotations {
            assert!(a.contains("file=web/.sbx/p.profile,"), "{workspace:?}: {a}");
        }
        let sarif = json(&web.join("r.sarif"));
        let uri = &sarif["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]
            ["uri"];
        assert_eq!(uri, "web/.sbx/p.profile", "{sarif:#}");
        let r = json(&web.join("r.json"));
        assert_eq!(r["profile"], ".sbx/p.profile");
        assert_eq!(r["profile_in_repo"], "web/.sbx/p.profile");
        // The saved report renders the same paths later (`sbx report`), from any directory.
        assert!(render(&web.join("r.json"), "annotations").contains("file=web/.sbx/p.profile,"));
        assert!(
            render(&web.join("r.json"), "codequality").contains("\"path\": \"web/.sbx/p.profile\"")
        );
    }
}

/// The README's install line lists every Debian package `.ci/run` installs for the test
/// command, so a user who follows the README can run the suite (issue 41, item 5).
#[test]
fn the_readme_install_line_names_every_package_ci_installs() {
    let packages = |text: &str| -> std::collections::BTreeSet<String> {
        let joined = text.replace("\\\n", " ");
        joined
            .lines()
            .filter_map(|l| l.split_once("apt-get install").map(|(_, rest)| rest))
            .flat_map(|rest| {
                rest.split_whitespace()
                    .take_while(|w| !w.starts_with('>') && !w.starts_with('#'))
                    .filter(|w| !w.starts_with('-'))
                    .map(str::to_string)
                    .collect::<Vec<_>>()
            })
            .collect()
    };
    let ci = packages(&std::fs::read_to_string(repo().join(".ci/run")).unwrap());
    let readme = packages(&std::fs::read_to_string(repo().join("README.md")).unwrap());
    assert!(
        ci.contains("python3-jsonschema") && ci.contains("gcc"),
        "{ci:?}"
    );
    let missing: Vec<&String> = ci.difference(&readme).collect();
    assert!(
        missing.is_empty(),
        "README's install line lacks {missing:?}"
    );
}
