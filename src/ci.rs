//! What CI systems read from an enforce run, made from its [`Report`]: where in the profile a
//! violation's rule would go, the GitHub job summary (Markdown), SARIF 2.1.0 for code-scanning
//! tools and GitLab's Code Quality report. Pure: data in, text or JSON out (docs/ci.md).

use serde_json::{Value, json};
use similar::{DiffOp, TextDiff};

use crate::report::{Action, Report, Violation};

/// Where the rules learning proposes for one violation go in the profile file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placement {
    /// The rules (the non-comment lines learning adds), one per line: a new file can need
    /// both `write` and `create`; a `# WARNING: ...` comment learning puts before a rule (a
    /// secret place, a persistence write) is kept, on its line before it.
    pub rule: String,
    /// The line of the profile file the first rule would follow, or the rule it widens
    /// (1-based; 0: before the first line).
    pub line: usize,
}

/// The rules `new` adds to `old` (both rendered profiles) and the line of `file` (the
/// profile's text as on disk, which `old` renders) where the first goes. `None` when `new`
/// adds no rule.
pub fn placement(file: &str, old: &str, new: &str) -> Option<Placement> {
    let diff = TextDiff::from_lines(old, new);
    let old_lines: Vec<&str> = old.lines().collect();
    let new_lines: Vec<&str> = new.lines().collect();
    let mut rules: Vec<&str> = Vec::new();
    let mut line = None;
    for op in diff.ops() {
        let (old_index, old_len, new_index, new_len) = match *op {
            DiffOp::Insert {
                old_index,
                new_index,
                new_len,
            } => (old_index, 0, new_index, new_len),
            DiffOp::Replace {
                old_index,
                old_len,
                new_index,
                new_len,
            } => (old_index, old_len, new_index, new_len),
            DiffOp::Equal { .. } | DiffOp::Delete { .. } => continue,
        };
        let added: Vec<&str> = new_lines
            .get(new_index..new_index + new_len)
            .unwrap_or_default()
            .iter()
            .map(|l| l.trim())
            .filter(|l| !l.is_empty() && (!l.starts_with('#') || l.starts_with("# WARNING")))
            .collect();
        if added.iter().all(|l| l.starts_with('#')) {
            continue;
        }
        rules.extend(added);
        if line.is_none() {
            // The anchor: the rule it replaces, else the line it follows.
            let anchor = if old_len > 0 {
                Some(old_index)
            } else {
                old_index.checked_sub(1)
            };
            // A blank or normalized line of the rendering may not be in the file: the nearest
            // line above it that is.
            line = Some(
                anchor
                    .and_then(|a| (0..=a).rev().find_map(|i| file_line(file, &old_lines, i)))
                    .unwrap_or(0),
            );
        }
    }
    Some(Placement {
        rule: rules.join("\n"),
        line: line?,
    })
}

/// The 1-based line of `file` holding the rendered line `rendered[i]`: the same occurrence
/// (the k-th line with that text) in the file as in the rendering.
fn file_line(file: &str, rendered: &[&str], i: usize) -> Option<usize> {
    let text = rendered.get(i)?.trim();
    if text.is_empty() {
        return None;
    }
    let nth = rendered[..i].iter().filter(|l| l.trim() == text).count();
    file.lines()
        .enumerate()
        .filter(|(_, l)| l.trim() == text)
        .nth(nth)
        .map(|(n, _)| n + 1)
}

/// Escape text for a Markdown table cell or inline text: no HTML, no table breaks.
fn md(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '|' => out.push_str("\\|"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '`' => out.push('\''),
            '\n' | '\r' => out.push(' '),
            '*' | '_' | '[' | ']' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out
}

/// Inline code that survives any content: a fence longer than the longest backtick run.
fn code(s: &str) -> String {
    let s = s.replace(['\n', '\r'], " ");
    let mut longest = 0;
    let mut run = 0;
    for c in s.chars() {
        run = if c == '`' { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    let fence = "`".repeat(longest + 1);
    let pad = if s.starts_with('`') || s.ends_with('`') {
        " "
    } else {
        ""
    };
    format!("{fence}{pad}{}{pad}{fence}", s.replace('|', "\\|"))
}

/// The one-line verdict of a run.
pub fn verdict(r: &Report) -> String {
    let n = r.violations.len();
    if let Some(e) = &r.error {
        return format!("sbx could not run the workload (exit {}): {e}", r.exit_code);
    }
    let status = match &r.workload {
        Some(w) if w.timed_out => "killed by sbx: --timeout passed".to_string(),
        Some(w) if w.interrupted => "killed by sbx: interrupted twice".to_string(),
        Some(w) if w.how == "exited" => format!("exited {}", w.value),
        Some(w) if w.killed_by_sbx => "killed by sbx".to_string(),
        Some(w) => format!("killed by signal {}", w.value),
        None => "no status".to_string(),
    };
    match (n, r.mode.as_str()) {
        (0, _) => format!("passed: no violation; the workload {status}"),
        (_, "audit") => format!(
            "{n} violation{} seen (audit mode, nothing blocked); the workload {status}",
            plural(n)
        ),
        (_, "kill") => format!("{n} violation{}: the workload was killed", plural(n)),
        _ => format!("{n} violation{} denied; the workload {status}", plural(n)),
    }
}

/// The workload's command line, shell-quoted.
fn command_line(r: &Report) -> String {
    r.command
        .iter()
        .map(|a| crate::show::shell_word(a.as_bytes()))
        .collect::<Vec<_>>()
        .join(" ")
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// The GitHub job summary (`$GITHUB_STEP_SUMMARY`): the verdict, the counts, one table row per
/// violation (at most `MAX_ROWS`) and the profile change as a `diff` block to review and apply.
pub fn github_summary(r: &Report) -> String {
    const MAX_ROWS: usize = 50;
    let mut s = String::new();
    let icon = if r.error.is_some() {
        "⚠️"
    } else if r.violations.is_empty() {
        "✅"
    } else if r.mode == "audit" {
        "⚠️"
    } else {
        "❌"
    };
    s.push_str(&format!("## {icon} sbx: {}\n\n", md(&verdict(r))));
    s.push_str(&format!(
        "Profile {}, mode **{}**, command {}, exit code {}.\n\n",
        code(&r.profile),
        md(&r.mode),
        code(&command_line(r)),
        r.exit_code
    ));
    if r.violations.is_empty() {
        return s;
    }
    // Counts by verb.
    let mut counts: Vec<(&str, usize)> = Vec::new();
    for v in &r.violations {
        match counts.iter_mut().find(|(verb, _)| *verb == v.verb) {
            Some((_, n)) => *n += 1,
            None => counts.push((&v.verb, 1)),
        }
    }
    let counts: Vec<String> = counts.iter().map(|(v, n)| format!("{n} {v}")).collect();
    s.push_str(&format!("Violations by verb: {}.\n\n", counts.join(", ")));
    s.push_str("| # | process | verb | object | action | rule that would allow it |\n");
    s.push_str("|---|---|---|---|---|---|\n");
    for (i, v) in r.violations.iter().take(MAX_ROWS).enumerate() {
        let rules = |r: &str| {
            let mut cell = r
                .lines()
                .filter(|l| !l.starts_with('#'))
                .map(code)
                .collect::<Vec<_>>()
                .join(" + ");
            for w in r.lines().filter_map(|l| l.strip_prefix("# ")) {
                cell.push_str(&format!(" ⚠️ {}", md(w)));
            }
            cell
        };
        let rule = match (&v.rule, v.profile_line) {
            (Some(rule), Some(l)) if l > 0 => format!("{} (after line {l})", rules(rule)),
            (Some(rule), _) => rules(rule),
            (None, _) => "none (see the reason)".to_string(),
        };
        let rule = match v.closest.first() {
            Some(c) => format!("{rule}; closest: {}", code(c)),
            None => rule,
        };
        s.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} |\n",
            i + 1,
            code(&format!("{}[{}] {}", v.comm, v.pid, v.exe)),
            md(&v.verb),
            code(&v.object),
            action_name(v.action),
            rule
        ));
    }
    if r.violations.len() > MAX_ROWS {
        s.push_str(&format!(
            "\n{} more in the report.\n",
            r.violations.len() - MAX_ROWS
        ));
    }
    if !r.diff.is_empty() {
        s.push_str(
            "\n### Suggested profile change\n\nReview each line before accepting it (a `WARNING` comment marks a secret place or a persistence write): apply it with `sbx learn --base`, or by hand.\n\n",
        );
        let fence = "`".repeat(longest_backtick_run(&r.diff).max(2) + 1);
        s.push_str(&format!("{fence}diff\n{}", r.diff));
        if !r.diff.ends_with('\n') {
            s.push('\n');
        }
        s.push_str(&format!("{fence}\n"));
    }
    s
}

fn longest_backtick_run(s: &str) -> usize {
    s.split(|c| c != '`').map(str::len).max().unwrap_or(0)
}

fn action_name(a: Action) -> &'static str {
    match a {
        Action::Killed => "killed",
        Action::Denied => "denied",
        Action::Audited => "audited",
    }
}

/// A violation's line, and the rules that would allow it (SARIF messages, Code Quality).
fn described(v: &Violation) -> String {
    let mut text = v.line();
    if let Some(rule) = &v.rule {
        text.push_str(&format!(
            ". To allow it after review, add: {}",
            rule.lines()
                .map(|l| l.strip_prefix("# ").unwrap_or(l))
                .collect::<Vec<_>>()
                .join("; ")
        ));
    }
    text
}

/// The SARIF rule id of a violation: one rule per verb (`sbx/read`, `sbx/connect`...).
fn rule_id(v: &Violation) -> String {
    format!("sbx/{}", v.verb)
}

/// What a verb's SARIF rule says.
fn rule_text(verb: &str) -> &'static str {
    match verb {
        "read" => "The workload read a file the profile does not allow it to read.",
        "write" | "create" | "own" => {
            "The workload wrote or created a file where the profile does not allow it."
        }
        "delete" => "The workload deleted or renamed a file the profile does not allow it to.",
        "exec" => "The workload ran a program the profile does not list.",
        "connect" | "send" => "The workload reached a network peer the profile does not list.",
        "bind" | "listen" => "The workload opened a server socket the profile does not list.",
        "syscall" => "The workload made a system call the profile does not allow.",
        _ => "The workload did something the profile does not allow.",
    }
}

/// The SARIF 2.1.0 log of a run: one result per violation (level `error`, `warning` in audit
/// mode), one rule per verb, each located in the profile file (the file a fix changes) at the
/// line where the proposed rule would go.
pub fn sarif(r: &Report) -> Value {
    let mut verbs: Vec<&str> = Vec::new();
    for v in &r.violations {
        if !verbs.contains(&v.verb.as_str()) {
            verbs.push(&v.verb);
        }
    }
    let rules: Vec<Value> = verbs
        .iter()
        .map(|verb| {
            json!({
                "id": format!("sbx/{verb}"),
                "name": format!("Unallowed{}", capitalized(verb)),
                "shortDescription": { "text": format!("{verb} outside the profile") },
                "fullDescription": { "text": rule_text(verb) },
                "help": {
                    "text": "Review the access. If the workload needs it, add the proposed rule to the profile (sbx learn --base); if not, the workload or one of its dependencies is doing something it should not.",
                },
                "defaultConfiguration": { "level": "error" },
            })
        })
        .collect();
    let results: Vec<Value> = r
        .violations
        .iter()
        .map(|v| {
            let message = described(v);
            let mut location = json!({
                "physicalLocation": {
                    "artifactLocation": { "uri": uri(r.profile_location()), "index": 0 },
                }
            });
            if let Some(line) = v.profile_line {
                location["physicalLocation"]["region"] = json!({ "startLine": line.max(1) });
            }
            let mut result = json!({
                "ruleId": rule_id(v),
                "ruleIndex": verbs.iter().position(|x| *x == v.verb).unwrap_or(0),
                "level": if v.action == Action::Audited { "warning" } else { "error" },
                "message": { "text": message },
                "locations": [location],
                "partialFingerprints": { "sbxAccess/v1": format!("{} {}", v.verb, v.object) },
                "properties": {
                    "pid": v.pid,
                    "tid": v.tid,
                    "process": v.comm,
                    "executable": v.exe,
                    "syscall": v.syscall,
                    "object": v.object,
                    "action": action_name(v.action),
                    "reason": v.reason,
                },
            });
            if !v.chain.is_empty() {
                result["properties"]["chain"] = json!(v.chain);
            }
            if let Some(rule) = &v.rule {
                result["properties"]["proposedRule"] = json!(rule);
            }
            result
        })
        .collect();
    let mut invocation = json!({
        "executionSuccessful": r.error.is_none(),
        "exitCode": r.exit_code,
        "commandLine": command_line(r),
    });
    if let Some(e) = &r.error {
        invocation["toolExecutionNotifications"] = json!([{
            "level": "error",
            "message": { "text": e },
        }]);
    }
    json!({
        "$schema": "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {
                "driver": {
                    "name": "sbx",
                    "version": r.sbx_version,
                    "informationUri": "https://crates.io/crates/sbx-sandbox",
                    "rules": rules,
                }
            },
            "artifacts": [{
                "location": { "uri": uri(r.profile_location()) },
                "roles": ["analysisTarget"],
            }],
            "invocations": [invocation],
            "results": results,
            "properties": { "mode": r.mode },
        }]
    })
}

fn capitalized(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

/// A profile path as a URI reference: relative paths stay relative (to the checkout, where
/// code-scanning tools resolve them), with percent-escapes for what a URI cannot hold.
fn uri(path: &str) -> String {
    let path = path.strip_prefix("./").unwrap_or(path);
    let mut out = String::with_capacity(path.len());
    for b in path.bytes() {
        if b.is_ascii_alphanumeric() || b"/-._~".contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    if path.starts_with('/') {
        format!("file://{out}")
    } else {
        out
    }
}

/// GitLab's Code Quality report (a JSON array of issues, CodeClimate's format): one issue per
/// distinct violation, located at the profile line where its rule would go.
pub fn code_quality(r: &Report) -> Value {
    let mut seen = std::collections::HashSet::new();
    let issues: Vec<Value> = r
        .violations
        .iter()
        .filter(|v| seen.insert((v.verb.clone(), v.object.clone())))
        .map(|v| {
            let description = described(v);
            json!({
                "type": "issue",
                "check_name": rule_id(v),
                "description": description,
                "categories": ["Security"],
                "severity": if v.action == Action::Audited { "major" } else { "blocker" },
                "fingerprint": fingerprint(&format!("{} {} {}", r.profile_location(), v.verb, v.object)),
                "location": {
                    "path": r.profile_location().strip_prefix("./").unwrap_or(r.profile_location()),
                    "lines": { "begin": v.profile_line.unwrap_or(1).max(1) },
                },
            })
        })
        .collect();
    Value::Array(issues)
}

/// A stable hex fingerprint (64-bit FNV-1a, twice with different seeds: GitLab wants a
/// unique string per issue, not a cryptographic hash).
fn fingerprint(s: &str) -> String {
    let fnv = |seed: u64| {
        s.bytes().fold(seed, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
        })
    };
    format!(
        "{:016x}{:016x}",
        fnv(0xcbf2_9ce4_8422_2325),
        fnv(0x8422_2325_cbf2_9ce4)
    )
}

#[cfg(test)]
mod tests;
