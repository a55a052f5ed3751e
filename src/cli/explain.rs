//! `sbx explain`: the evidence for every rule of a profile from recorded runs, or which rule
//! decides one access (`--check`). The work is `crate::explain`; this reads files and prints.

use std::path::Path;

use super::{ExplainArgs, ExplainFormat, exit};
use crate::arch::Class;
use crate::explain::{Explainer, Question, check, mark_snippets, parse_question, render_answer};
use crate::policy::{CompiledPolicy, Decision};
use crate::profile::vars::Env;

/// `--check`: the access is allowed only while the path is missing (a probe rule).
pub const IF_MISSING: u8 = 3;

/// The variables of the recorded run in `trace`, as enforce would have them on that machine:
/// the trace's CWD, HOME, TMPDIR and uid, its tool homes as learn infers them
/// ([`crate::learn::homes`]), this machine's other variables.
pub fn trace_env(trace: &Path) -> anyhow::Result<Env> {
    let mut homes = crate::learn::homes::Homes::default();
    let h = super::show::scan(trace, false, |_, ev| {
        homes.observe(ev);
        Ok(())
    })?;
    let mut env = super::profile::current_env();
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    env.cwd = text(&h.cwd);
    env.home = text(&h.home);
    env.tmpdir = text(&h.tmpdir);
    env.vars.insert("UID".into(), h.uid.to_string());
    homes.apply(&mut env.vars);
    Ok(env)
}

/// Explain `profile` (its text `text`) by the runs of `traces`: the rules' evidence; with
/// `base`, the rules the base profile holds say so.
pub fn explain_traces(
    profile: &Path,
    text: &str,
    traces: &[std::path::PathBuf],
    base: Option<&Path>,
) -> anyhow::Result<crate::explain::Explanation> {
    let first = super::show::open_trace(&traces[0])?.header().clone();
    let policy = super::profile::load_policy(profile, text, &trace_env(&traces[0])?, false)?;
    let arch = first.arch;
    let mut ex = Explainer::new(
        &policy,
        Box::new(move |name: &str| {
            arch.by_name(name)
                .is_some_and(|d| matches!(d.class, Class::Gated | Class::Spawn))
        }),
    );
    for t in traces {
        let header = super::show::open_trace(t)?.header().clone();
        let run_policy = super::profile::load_policy(profile, text, &trace_env(t)?, false)?;
        ex.begin_run(&t.display().to_string());
        // What learn warns of: a run that found a cache warm skipped work a cold one does.
        let mut evidence = crate::learn::evidence::Evidence::for_run(&header.home, &header.cwd);
        super::show::for_each_event(t, |_, ev| {
            ex.observe(&run_policy, ev);
            evidence.observe(ev);
            Ok(())
        })?;
        ex.set_warm(evidence.warm());
    }
    let mut e = ex.finish(&policy);
    mark_snippets(&mut e, &profile.display().to_string());
    if let Some(b) = base {
        let text = super::profile::read_profile(b)?;
        let name = b.display().to_string();
        let parsed = crate::profile::parse::parse_str(&name, &text)
            .map_err(|err| anyhow::anyhow!("{}", err.render_with_source(&text).trim_end()))?;
        e.mark_base(&name, &parsed);
    }
    Ok(e)
}

/// `sbx learn --annotate`: the learned profile `text` with a comment above each of its own
/// rules saying what in `traces` used it (computed by [`explain_traces`] over the rendered
/// profile, so the annotations and `sbx explain` agree). Rules, order and layout are those of
/// `text`: only comment lines are added.
pub fn annotate(
    text: &str,
    traces: &[std::path::PathBuf],
    base: Option<&Path>,
) -> anyhow::Result<String> {
    const NAME: &str = "<learned>";
    let mut profile = crate::profile::parse::parse_str(NAME, text)
        .map_err(|e| anyhow::anyhow!("{}", e.render_with_source(text).trim_end()))?;
    let e = explain_traces(Path::new(NAME), text, traces, base)?;
    let env = trace_env(&traces[0])?;
    let own: Vec<&crate::explain::RuleUse> = e.rules.iter().filter(|r| r.file == NAME).collect();
    let rules = profile.rules.iter_mut().filter(|r| {
        !matches!(r.pattern, crate::profile::Pattern::Program { .. })
            && r.verb != crate::profile::Verb::Launcher
    });
    let mut n = 0;
    for (rule, used) in rules.zip(&own) {
        anyhow::ensure!(
            crate::profile::render::render_rule(rule) == used.rule,
            "internal error: the annotations lost track of the rules at {}",
            used.rule
        );
        // A profile learned with --base keeps its comments: last time's evidence goes.
        rule.comments.retain(|c| !crate::explain::is_annotation(c));
        rule.comments
            .push(crate::explain::annotation(used, e.runs.len(), &env));
        n += 1;
    }
    anyhow::ensure!(
        n == own.len(),
        "internal error: {n} rules for {} annotations",
        own.len()
    );
    Ok(crate::profile::render::render(&profile))
}

/// A violation as a question (`PATH`, `PATH (-> WHERE IT LEADS)`: the name as the program
/// used it; `tcp IP:PORT`, `unix PATH`), and the scope of its process's chain (program
/// identities, oldest first, as enforce replayed them).
fn violation_question(
    policy: &CompiledPolicy,
    v: &crate::report::Violation,
    chain: &[Vec<u8>],
) -> Option<(Question, crate::policy::Scope)> {
    let object = v.object.split(" (-> ").next().unwrap_or(&v.object);
    let q = parse_question(&v.verb, object).ok()?;
    if !matches!(
        q.object,
        crate::event::Object::Path(_) | crate::event::Object::Socket(_)
    ) {
        return None;
    }
    let mut scope = if chain.is_empty() {
        crate::policy::Scope::NONE
    } else {
        crate::policy::Scope::ROOT
    };
    for id in chain {
        scope = scope.exec(policy.program_mask(id), policy.is_launcher(id));
    }
    Some((q, scope))
}

/// The closest rules to a violation (a path or a network peer), for the report, the job
/// summary and the diff; `chain`: the violating process's program identities, oldest first.
pub fn closest_for(
    policy: &CompiledPolicy,
    env: &Env,
    v: &crate::report::Violation,
    chain: &[Vec<u8>],
) -> Vec<String> {
    match violation_question(policy, v, chain) {
        Some((q, scope)) => crate::explain::closest(policy, env, &q, scope),
        None => Vec::new(),
    }
}

/// The rules of `policy` (a profile widened by the violations) that admit violation `v`, as
/// the profile writes them: where the diff says what came closest.
pub fn admitting_rules(
    policy: &CompiledPolicy,
    v: &crate::report::Violation,
    chain: &[Vec<u8>],
) -> Vec<String> {
    match violation_question(policy, v, chain) {
        Some((q, scope)) => crate::explain::admitting_rules(policy, &q, scope)
            .into_iter()
            .map(str::to_string)
            .collect(),
        None => Vec::new(),
    }
}

pub fn run(a: ExplainArgs) -> anyhow::Result<u8> {
    let text = super::profile::read_profile(&a.profile)?;
    if let Some(q) = &a.check {
        let [verb, object] = q.as_slice() else {
            return super::usage_error(
                "--check takes a verb and an object: --check read /etc/passwd",
            );
        };
        // `--check connect tcp 10.0.0.1:443`: the protocol alone is no object, so the word
        // after it (taken for a trace) is the peer.
        let mut object = object.clone();
        let mut traces = a.traces.as_slice();
        if ["tcp", "udp", "unix", "netlink"].contains(&object.as_str())
            && let [peer] = traces
        {
            object = format!("{object} {}", peer.display());
            traces = &[];
        }
        if !traces.is_empty() || a.base.is_some() {
            return super::usage_error(
                "--check answers from the profile alone: give no trace and no --base",
            );
        }
        return run_check(&a, &text, verb, &object);
    }
    if a.chain.is_some() || a.missing {
        return super::usage_error("--chain and --missing go with --check VERB OBJECT");
    }
    if a.traces.is_empty() {
        return super::usage_error(
            "give the traces to explain the profile by (sbx explain PROFILE TRACE...), or --check VERB OBJECT",
        );
    }
    let e = explain_traces(&a.profile, &text, &a.traces, a.base.as_deref())?;
    let out = match a.format {
        ExplainFormat::Text => crate::explain::render_text(&e, &a.profile.display().to_string()),
        ExplainFormat::Json => {
            let mut s = serde_json::to_string_pretty(&e)?;
            s.push('\n');
            s
        }
    };
    super::learn::write_output(None, &out)?;
    Ok(exit::OK)
}

fn run_check(a: &ExplainArgs, text: &str, verb: &str, object: &str) -> anyhow::Result<u8> {
    let policy: CompiledPolicy =
        super::profile::load_policy(&a.profile, text, &super::profile::current_env(), false)?;
    let mut q = match parse_question(verb, object) {
        Ok(q) => q,
        Err(e) => return super::usage_error(&format!("--check: {e}")),
    };
    q.missing = a.missing;
    q.chain = a
        .chain
        .as_deref()
        .map(|c| {
            c.split("<-")
                .map(|p| p.trim().to_string())
                .filter(|p| !p.is_empty())
                .collect()
        })
        .unwrap_or_default();
    let answer = match check(&policy, &q) {
        Ok(answer) => answer,
        Err(e) => return super::usage_error(&e.to_string()),
    };
    let env = super::profile::current_env();
    let scope =
        crate::explain::chain_scope(&policy, &q.chain).unwrap_or(crate::policy::Scope::NONE);
    let closest = crate::explain::closest(&policy, &env, &q, scope);
    let out = match a.format {
        ExplainFormat::Text => {
            let mut t = render_answer(&policy, &q, &answer);
            for c in &closest {
                t.push_str(&format!("  closest: {c}\n"));
            }
            t
        }
        ExplainFormat::Json => {
            let rules = |ids: &[usize]| -> Vec<serde_json::Value> {
                ids.iter()
                    .filter_map(|&i| policy.rule_info(i))
                    .map(|r| {
                        serde_json::json!({
                            "rule": r.text, "file": r.origin.file, "line": r.span.line
                        })
                    })
                    .collect()
            };
            let checks: Vec<serde_json::Value> = answer
                .checks
                .iter()
                .map(|c| {
                    serde_json::json!({
                        "verb": c.verb.name(),
                        "object": c.object,
                        "verdict": format!("{:?}", c.verdict),
                        "rules": rules(&c.why.rules),
                        "not_held": rules(&c.why.unheld),
                        "persistence_place_not_named": rules(&c.why.excluded),
                        "over": rules(&c.why.overridden.into_iter().collect::<Vec<_>>()),
                        "probe": c.why.probe,
                    })
                })
                .collect();
            let decision = match &answer.decision {
                Decision::Allow => "allow".to_string(),
                Decision::AllowIfAbsent => "allow-if-missing".to_string(),
                Decision::Deny { reason, .. } => format!("refuse: {reason}"),
            };
            let mut s = serde_json::to_string_pretty(&serde_json::json!({
                "decision": decision,
                "checks": checks,
                "provenance_admits": answer.provenance_admits,
                "closest": closest,
            }))?;
            s.push('\n');
            s
        }
    };
    super::learn::write_output(None, &out)?;
    Ok(match answer.decision {
        Decision::Allow => exit::OK,
        Decision::AllowIfAbsent => IF_MISSING,
        Decision::Deny { .. } => exit::INVALID,
    })
}
