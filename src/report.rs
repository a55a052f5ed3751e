//! Violations and the JSON report of `sbx enforce --report` (documented in docs/report.md),
//! plus GitHub workflow annotation lines. Pure data and formatting.

use serde::{Deserialize, Serialize};

use crate::show::{terminal_line, terminal_text};

/// What sbx did about a violation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    /// The tree was killed before the syscall ran.
    Killed,
    /// The syscall failed with an errno.
    Denied,
    /// Nothing was blocked (audit mode).
    Audited,
}

/// One access the profile did not allow.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Violation {
    /// Nanoseconds since the start of the run.
    pub time_ns: u64,
    pub pid: i32,
    pub tid: i32,
    pub comm: String,
    pub exe: String,
    pub syscall: String,
    /// The profile verb that was missing (read, write, exec, connect, syscall...).
    pub verb: String,
    /// The resolved object: a path, `tcp 1.2.3.4:443`, a syscall name.
    pub object: String,
    /// Why: `no rule allows read here`, or the deny rule that matched.
    pub reason: String,
    pub action: Action,
    /// The exec chain of the process, newest first: `node build.js <- sh <- npm`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub chain: String,
    /// The rule learning proposes for this violation alone (what the diff adds for it), when
    /// a rule can allow it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
    /// The line of the profile file after which that rule would go (1-based; 0: before the
    /// first line).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile_line: Option<usize>,
    /// The rules that came closest to admitting it (`sbx explain --check` says the same):
    /// `FILE:LINE: RULE allows read here, not write`, `... names another file of DIR/`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub closest: Vec<String>,
}

impl Violation {
    /// The one-line stderr form:
    /// `node[4711] (/usr/bin/node) read /home/u/.ssh/id_rsa — no rule allows read here`.
    pub fn line(&self) -> String {
        let what = match self.action {
            Action::Killed => "",
            Action::Denied => " (denied)",
            Action::Audited => " (audit)",
        };
        format!("{}{what}", self.subject())
    }

    /// The line without what was done about it (ask mode puts it as a question). Every
    /// field is the workload's to choose (a DNS name, a path, a comm), so each goes through
    /// [`terminal_line`]: no control byte reaches a terminal or a CI log.
    pub fn subject(&self) -> String {
        let line = |s: &str| terminal_line(s).into_owned();
        let (comm, exe, chain) = (line(&self.comm), line(&self.exe), line(&self.chain));
        let (verb, object, reason) = (line(&self.verb), line(&self.object), line(&self.reason));
        let who = if self.pid == self.tid {
            format!("{comm}[{}]", self.pid)
        } else {
            format!("{comm}[{}/{}]", self.pid, self.tid)
        };
        // The chain says who asked, when it says more than the exe does.
        let exe_name = exe.rsplit('/').next().unwrap_or(&exe);
        let chain = if chain.is_empty() || chain == exe_name {
            String::new()
        } else {
            format!("; {chain}")
        };
        format!("{who} ({exe}{chain}) {verb} {object} — {reason}")
    }

    /// The GitHub Actions workflow command for this violation
    /// (`::error file=...,line=...,title=...::message`; `::warning` for what audit mode let
    /// through), attached to `file` (the profile: the file a fix would change) unless empty, at
    /// the line after which the proposed rule would go. Newlines, `%` (and in properties `:`
    /// and `,`) are escaped as the runner requires.
    pub fn github_annotation(&self, file: &str) -> String {
        let esc = |s: &str| {
            terminal_text(s)
                .replace('%', "%25")
                .replace('\r', "%0D")
                .replace('\n', "%0A")
        };
        // Property values also escape `:` and `,`.
        let prop = |s: &str| esc(s).replace(':', "%3A").replace(',', "%2C");
        let level = if self.action == Action::Audited {
            "warning"
        } else {
            "error"
        };
        let mut props = String::new();
        if !file.is_empty() {
            props.push_str(&format!("file={},", prop(file)));
            if let Some(line) = self.profile_line {
                props.push_str(&format!("line={},", line.max(1)));
            }
        }
        let mut message = self.line();
        if let Some(rule) = &self.rule {
            // Learning's warning (a secret place, a persistence write) first, then the rules.
            for w in rule.lines().filter_map(|l| l.strip_prefix("# ")) {
                message.push('\n');
                message.push_str(w);
            }
            let rules: Vec<&str> = rule.lines().filter(|l| !l.starts_with('#')).collect();
            message.push_str(&format!(
                "\nto allow it after review, add: {}",
                rules.join("; ")
            ));
        }
        format!(
            "::{level} {props}title={}::{}",
            prop(&format!("sbx violation ({} {})", self.verb, self.syscall)),
            esc(&message)
        )
    }
}

/// How the workload ended, for the report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkloadStatus {
    /// `exited` or `signaled`.
    pub how: String,
    /// The exit code, or the signal number.
    pub value: i32,
    /// True when sbx killed the tree.
    pub killed_by_sbx: bool,
    /// sbx killed the tree because `--timeout` passed.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub timed_out: bool,
    /// sbx killed the tree on a second interrupt.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub interrupted: bool,
}

/// The `--report` document.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Report {
    pub sbx_version: String,
    pub command: Vec<String>,
    pub profile: String,
    /// The profile's path from the repository's root (`GITHUB_WORKSPACE`, `CI_PROJECT_DIR`, or
    /// the checkout holding it), where it differs from `profile`: what annotations, SARIF and
    /// Code Quality name, since CI resolves their paths from the root whatever directory the
    /// step ran in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile_in_repo: Option<String>,
    pub mode: String,
    pub violations: Vec<Violation>,
    /// Unified diff of the profile against the profile widened by the violations.
    pub diff: String,
    pub workload: Option<WorkloadStatus>,
    /// sbx's own exit code.
    pub exit_code: u8,
    /// With `--unused`: the profile's own rules that admitted nothing in this run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unused: Option<Vec<String>>,
    /// Why sbx stopped without a workload status (exit 125, 126, 127): the message it printed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The in-kernel layers that were in force under the ptrace checks (Landlock scopes and
    /// the fence), as `-v` prints them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layers: Option<String>,
}

impl Report {
    /// The profile's path as CI tools resolve it: from the repository's root where known.
    pub fn profile_location(&self) -> &str {
        self.profile_in_repo.as_deref().unwrap_or(&self.profile)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v() -> Violation {
        Violation {
            time_ns: 5,
            pid: 4711,
            tid: 4711,
            comm: "node".into(),
            exe: "/usr/bin/node".into(),
            syscall: "openat".into(),
            verb: "read".into(),
            object: "/home/u/.ssh/id_rsa".into(),
            reason: "no rule allows read here".into(),
            action: Action::Killed,
            chain: String::new(),
            rule: None,
            profile_line: None,
            closest: Vec::new(),
        }
    }

    #[test]
    fn line_format() {
        assert_eq!(
            v().line(),
            "node[4711] (/usr/bin/node) read /home/u/.ssh/id_rsa — no rule allows read here"
        );
        let mut t = v();
        t.tid = 4712;
        t.action = Action::Denied;
        assert_eq!(
            t.line(),
            "node[4711/4712] (/usr/bin/node) read /home/u/.ssh/id_rsa — no rule allows read here (denied)"
        );
    }

    #[test]
    fn annotation_escapes_newlines_and_percent() {
        let mut t = v();
        t.object = "/tmp/a\nb%".into();
        let a = t.github_annotation("");
        assert!(a.starts_with("::error title=sbx violation (read openat)::"));
        // A newline in a name is escaped in the line itself (`\n`); the runner's own `%0A`
        // only separates the lines sbx writes.
        assert!(a.contains("/tmp/a\\nb%25"), "{a}");
        assert!(!a.contains('\n'));
        // The file property: `:` and `,` escaped in property values.
        let a = t.github_annotation(".sbx/a,b:c.profile");
        assert!(
            a.starts_with(
                "::error file=.sbx/a%2Cb%3Ac.profile,title=sbx violation (read openat)::"
            ),
            "{a}"
        );
    }

    #[test]
    fn hostile_names_reach_no_terminal_raw() {
        let mut t = v();
        t.verb = "resolve".into();
        t.object = "x.example\r\u{1b}]0;owned\u{7}\u{1b}[2K\u{9b}1A".into();
        t.comm = "no\u{1b}[8mde".into();
        t.exe = "/usr/bin/\u{202e}edon".into();
        t.chain = "sh\u{8}\u{8}".into();
        t.rule = Some("# WARNING: \u{1b}[31m\nresolve \"x\\r\"".into());
        for text in [
            t.line(),
            t.subject(),
            t.github_annotation("p\u{1b}.profile"),
        ] {
            assert!(!text.chars().any(crate::show::is_unsafe_char), "{text:?}");
        }
        assert!(
            t.line().contains("x.example\\r\\x1b]0;owned\\x07"),
            "{}",
            t.line()
        );
    }

    #[test]
    fn report_serializes() {
        let r = Report {
            layers: None,
            sbx_version: "0.1.0".into(),
            command: vec!["npm".into(), "install".into()],
            profile: "npm.profile".into(),
            profile_in_repo: None,
            mode: "kill".into(),
            violations: vec![v()],
            diff: "+read x\n".into(),
            workload: Some(WorkloadStatus {
                how: "signaled".into(),
                value: 9,
                killed_by_sbx: true,
                timed_out: false,
                interrupted: false,
            }),
            exit_code: 124,
            unused: None,
            error: None,
        };
        let j = serde_json::to_value(&r).unwrap();
        assert_eq!(j["violations"][0]["action"], "killed");
        assert_eq!(j["violations"][0]["object"], "/home/u/.ssh/id_rsa");
        assert_eq!(j["exit_code"], 124);
    }
}
