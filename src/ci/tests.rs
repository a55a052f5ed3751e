use super::*;
use crate::report::{Report, Violation, WorkloadStatus};

fn violation(verb: &str, object: &str, action: Action) -> Violation {
    Violation {
        time_ns: 1,
        pid: 42,
        tid: 42,
        comm: "node".into(),
        exe: "/usr/bin/node".into(),
        syscall: "openat".into(),
        verb: verb.into(),
        object: object.into(),
        reason: format!("no rule allows {verb} here"),
        action,
        chain: "node <- sh <- npm".into(),
        rule: Some(format!("{verb} {object}")),
        profile_line: Some(3),
        closest: Vec::new(),
    }
}

fn report(mode: &str, violations: Vec<Violation>) -> Report {
    Report {
        layers: None,
        sbx_version: "0.1.0".into(),
        command: vec!["npm".into(), "ci".into(), "--foo=a b".into()],
        profile: ".sbx/npm.profile".into(),
        profile_in_repo: None,
        mode: mode.into(),
        violations,
        diff: "--- a\n+++ b\n@@ -1,3 +1,4 @@\n read /x\n+read /home/u/.ssh/id_rsa\n".into(),
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
    }
}

#[test]
fn placement_after_the_line_it_follows_in_the_file() {
    // The file has a comment block the rendering keeps, and a blank line.
    let file = "# npm\ninclude node\n\nread /a\nread /c\n";
    let old = "# npm\ninclude node\n\nread /a\nread /c\n";
    let new = "# npm\ninclude node\n\nread /a\nread /b\nread /c\n";
    let p = placement(file, old, new).unwrap();
    assert_eq!(p.rule, "read /b");
    assert_eq!(p.line, 4);
}

#[test]
fn placement_skips_warning_comments_and_maps_repeated_lines() {
    // `read /a` occurs twice in the rendering; the rule goes after the second one, which is
    // line 6 of the file (the file has an extra comment the rendering does not).
    let file = "read /a\n\n# mine\nwrite /w\n\nread /a\n";
    let old = "read /a\n\nwrite /w\n\nread /a\n";
    let new = "read /a\n\nwrite /w\n\nread /a\n# WARNING: secret\n# other\nread /s\n";
    let p = placement(file, old, new).unwrap();
    assert_eq!(p.rule, "# WARNING: secret\nread /s");
    assert_eq!(p.line, 6);
}

#[test]
fn placement_after_a_blank_line_the_file_lacks_is_the_line_above() {
    // The rendering separates sections with blank lines the file does not have.
    let file = "include base\ninclude shell\nexec /usr/bin/cat\n";
    let old = "include base\ninclude shell\n\nexec /usr/bin/cat\n";
    let new = "include base\ninclude shell\n\nread /d\n\nexec /usr/bin/cat\n";
    let p = placement(file, old, new).unwrap();
    assert_eq!((p.rule.as_str(), p.line), ("read /d", 2));
}

#[test]
fn placement_of_a_widened_rule_is_the_rule_it_replaces() {
    let file = "read /a\nread /x/one\n";
    let old = file;
    let new = "read /a\nread /x/*\n";
    let p = placement(file, old, new).unwrap();
    assert_eq!(p.rule, "read /x/*");
    assert_eq!(p.line, 2);
}

#[test]
fn placement_at_the_top_and_none_without_a_rule() {
    let p = placement("read /b\n", "read /b\n", "read /a\nread /b\n").unwrap();
    assert_eq!((p.rule.as_str(), p.line), ("read /a", 0));
    assert_eq!(placement("read /b\n", "read /b\n", "read /b\n"), None);
    // Every rule added, the line of the first.
    let p = placement(
        "read /b\nread /c\n",
        "read /b\nread /c\n",
        "read /b\nwrite /x\n\ncreate /x\nread /c\nread /d\n",
    )
    .unwrap();
    assert_eq!(
        (p.rule.as_str(), p.line),
        ("write /x\ncreate /x\nread /d", 1)
    );
    // Only a comment added: no rule.
    assert_eq!(placement("read /b\n", "read /b\n", "read /b\n# x\n"), None);
    assert_eq!(
        placement("read /b\n", "read /b\n", "read /b\n# WARNING: x\n"),
        None
    );
}

#[test]
fn summary_has_verdict_counts_rows_and_the_diff() {
    let r = report(
        "kill",
        vec![
            violation("read", "/home/u/.ssh/id_rsa", Action::Killed),
            violation("connect", "tcp 1.2.3.4:443", Action::Killed),
            violation("read", "/etc/a|b`c", Action::Killed),
        ],
    );
    let s = github_summary(&r);
    assert!(
        s.starts_with("## ❌ sbx: 3 violations: the workload was killed\n"),
        "{s}"
    );
    assert!(s.contains("mode **kill**"), "{s}");
    assert!(s.contains("command `npm ci '--foo=a b'`"), "{s}");
    assert!(s.contains("Violations by verb: 2 read, 1 connect."), "{s}");
    assert!(
        s.contains(
            "| 1 | `node[42] /usr/bin/node` | read | `/home/u/.ssh/id_rsa` | killed | `read /home/u/.ssh/id_rsa` (after line 3) |"
        ),
        "{s}"
    );
    // A `|` cannot break the table, a backtick cannot end the code span.
    assert!(s.contains("``/etc/a\\|b`c``"), "{s}");
    assert!(s.contains("```diff\n--- a\n"), "{s}");
    assert!(s.trim_end().ends_with("```"), "{s}");
    // Every table row has the same number of cells.
    let rows: Vec<&str> = s.lines().filter(|l| l.starts_with("| ")).collect();
    assert_eq!(rows.len(), 4);
    for row in rows {
        assert_eq!(row.replace("\\|", "").matches('|').count(), 7, "{row}");
    }
}

#[test]
fn summary_of_a_clean_run_an_audit_and_an_error() {
    let mut r = report("kill", vec![]);
    r.workload.as_mut().unwrap().how = "exited".into();
    r.workload.as_mut().unwrap().value = 0;
    r.exit_code = 0;
    let s = github_summary(&r);
    assert!(
        s.starts_with("## ✅ sbx: passed: no violation; the workload exited 0"),
        "{s}"
    );
    assert!(!s.contains("| # |"));
    let mut r = report("audit", vec![violation("read", "/x", Action::Audited)]);
    r.workload.as_mut().unwrap().how = "exited".into();
    r.workload.as_mut().unwrap().value = 0;
    assert!(github_summary(&r).starts_with(
        "## ⚠️ sbx: 1 violation seen (audit mode, nothing blocked); the workload exited 0"
    ));
    let mut r = report("kill", vec![]);
    r.workload = None;
    r.exit_code = 127;
    r.error = Some("nosuch: command not found".into());
    assert!(
        github_summary(&r).starts_with(
            "## ⚠️ sbx: sbx could not run the workload (exit 127): nosuch: command not found"
        ),
        "{}",
        github_summary(&r)
    );
}

#[test]
fn warnings_reach_the_summary_and_the_messages() {
    let mut v = violation("read", "/home/u/.ssh/id_rsa", Action::Killed);
    v.rule = Some("# WARNING: a secret place\nread /home/u/.ssh/id_rsa".into());
    let r = report("kill", vec![v.clone()]);
    let s = github_summary(&r);
    assert!(
        s.contains("| `read /home/u/.ssh/id_rsa` ⚠️ WARNING: a secret place (after line 3) |"),
        "{s}"
    );
    assert!(described(&v).ends_with("add: WARNING: a secret place; read /home/u/.ssh/id_rsa"));
}

#[test]
fn sarif_has_one_result_per_violation_and_a_rule_per_verb() {
    let mut a = violation("read", "/x", Action::Audited);
    a.profile_line = Some(0);
    a.rule = None;
    let r = report(
        "kill",
        vec![
            violation("read", "/home/u/.ssh/id_rsa", Action::Killed),
            violation("connect", "tcp 1.2.3.4:443", Action::Killed),
            a,
        ],
    );
    let s = sarif(&r);
    assert_eq!(s["version"], "2.1.0");
    let run = &s["runs"][0];
    assert_eq!(run["tool"]["driver"]["name"], "sbx");
    let rules = run["tool"]["driver"]["rules"].as_array().unwrap();
    let ids: Vec<&str> = rules.iter().map(|r| r["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["sbx/read", "sbx/connect"]);
    let results = run["results"].as_array().unwrap();
    assert_eq!(results.len(), 3);
    assert_eq!(results[0]["ruleId"], "sbx/read");
    assert_eq!(results[1]["ruleIndex"], 1);
    assert_eq!(results[0]["level"], "error");
    assert_eq!(results[2]["level"], "warning");
    let loc = &results[0]["locations"][0]["physicalLocation"];
    assert_eq!(loc["artifactLocation"]["uri"], ".sbx/npm.profile");
    assert_eq!(loc["region"]["startLine"], 3);
    // Line 0 (before the first line) is line 1: SARIF lines start at 1.
    assert_eq!(
        results[2]["locations"][0]["physicalLocation"]["region"]["startLine"],
        1
    );
    assert!(
        results[0]["message"]["text"]
            .as_str()
            .unwrap()
            .ends_with("To allow it after review, add: read /home/u/.ssh/id_rsa")
    );
    assert_eq!(run["invocations"][0]["exitCode"], 124);
    assert_eq!(run["invocations"][0]["executionSuccessful"], true);
}

#[test]
fn uris_are_escaped_and_absolute_paths_are_file_uris() {
    assert_eq!(uri("./a b/p.profile"), "a%20b/p.profile");
    assert_eq!(uri("/w/p#1.profile"), "file:///w/p%231.profile");
}

#[test]
fn code_quality_has_one_issue_per_distinct_access() {
    let r = report(
        "deny",
        vec![
            violation("read", "/x", Action::Denied),
            violation("read", "/x", Action::Denied),
            violation("read", "/y", Action::Denied),
        ],
    );
    let q = code_quality(&r);
    let issues = q.as_array().unwrap();
    assert_eq!(issues.len(), 2);
    assert_eq!(issues[0]["check_name"], "sbx/read");
    assert_eq!(issues[0]["severity"], "blocker");
    assert_eq!(issues[0]["location"]["path"], ".sbx/npm.profile");
    assert_eq!(issues[0]["location"]["lines"]["begin"], 3);
    assert_ne!(issues[0]["fingerprint"], issues[1]["fingerprint"]);
    assert_eq!(issues[0]["fingerprint"].as_str().unwrap().len(), 32);
}

#[test]
fn annotations_carry_the_line_and_the_level() {
    let v = violation("read", "/x", Action::Killed);
    let a = v.github_annotation("p.profile");
    assert!(
        a.starts_with("::error file=p.profile,line=3,title=sbx violation (read openat)::"),
        "{a}"
    );
    assert!(
        a.ends_with("%0Ato allow it after review, add: read /x"),
        "{a}"
    );
    let v = violation("read", "/x", Action::Audited);
    assert!(v.github_annotation("p.profile").starts_with("::warning "));
}
