//! The decision table of `--check`, by hand, and the explainer on made-up events.

use super::*;
use crate::event::{Exec, Outcome, ProcInfo, Spawn, SpawnVia, Syscall, Target};
use crate::policy::DenyReason;
use crate::profile::vars::Env;

fn env() -> Env {
    Env {
        cwd: "/w".into(),
        home: "/home/u".into(),
        tmpdir: "/tmp".into(),
        vars: Default::default(),
    }
}

fn policy(text: &str) -> CompiledPolicy {
    CompiledPolicy::load("t.profile", text, &env()).expect("profile")
}

fn ask(p: &CompiledPolicy, verb: &str, object: &str, chain: &[&str], missing: bool) -> Answer {
    let mut q = parse_question(verb, object).expect("question");
    q.chain = chain.iter().map(|s| s.to_string()).collect();
    q.missing = missing;
    check(p, &q).expect("answer")
}

/// The lines of the rules that decided, over every check.
fn lines(p: &CompiledPolicy, a: &Answer) -> Vec<u32> {
    a.checks
        .iter()
        .flat_map(|c| c.why.rules.iter())
        .map(|&i| p.rule_info(i).expect("rule").span.line)
        .collect()
}

const PROFILE: &str = "\
program npm /usr/lib/node_modules/npm/bin/npm-cli.js
read /etc/**
read /etc/passwd
own ${HOME}/.cache/x
deny read ${HOME}/.cache/x/secret
write ${HOME}/.npm/** by npm
probe /opt/**
connect tcp 10.0.0.1:443
resolve example.org
";

#[test]
fn the_first_matching_rule_in_profile_order_decides() {
    let p = policy(PROFILE);
    let a = ask(&p, "read", "/etc/passwd", &[], false);
    assert_eq!(a.decision, Decision::Allow);
    // `read /etc/**` (line 2) comes before `read /etc/passwd` (line 3).
    assert_eq!(lines(&p, &a), [2]);
    // `own` implies write; stat is allowed by the read rule.
    let a = ask(&p, "write", "/home/u/.cache/x/f", &[], false);
    assert_eq!(
        (a.decision.clone(), lines(&p, &a)),
        (Decision::Allow, vec![4])
    );
    let a = ask(&p, "stat", "/etc/hosts", &[], false);
    assert_eq!(
        (a.decision.clone(), lines(&p, &a)),
        (Decision::Allow, vec![2])
    );
}

#[test]
fn a_deny_carve_out_wins() {
    let p = policy(PROFILE);
    let a = ask(&p, "read", "/home/u/.cache/x/secret", &[], false);
    assert!(matches!(
        a.decision,
        Decision::Deny {
            reason: DenyReason::DenyRule { .. },
            ..
        }
    ));
    assert_eq!(lines(&p, &a), [5]);
    assert_eq!(a.checks[0].verdict, Verdict::DenyRule);
    // The run's own objects do not beat a deny rule.
    assert!(!a.provenance_admits);
}

#[test]
fn a_by_list_the_chain_does_not_hold_is_named() {
    let p = policy(PROFILE);
    let a = ask(&p, "write", "/home/u/.npm/_cacache/x", &[], false);
    assert!(matches!(a.decision, Decision::Deny { .. }));
    assert_eq!(a.checks[0].verdict, Verdict::NoRule);
    let unheld: Vec<u32> = a.checks[0]
        .why
        .unheld
        .iter()
        .map(|&i| p.rule_info(i).expect("rule").span.line)
        .collect();
    assert_eq!(unheld, [6]);
    // npm (started by a launcher or not) holds it; bash after npm still does not break it
    // only if bash is on the list: it is not.
    let a = ask(&p, "write", "/home/u/.npm/_cacache/x", &["npm"], false);
    assert_eq!(
        (a.decision.clone(), lines(&p, &a)),
        (Decision::Allow, vec![6])
    );
    let a = ask(
        &p,
        "write",
        "/home/u/.npm/_cacache/x",
        &["/bin/sh", "npm"],
        false,
    );
    assert!(matches!(a.decision, Decision::Deny { .. }));
    let mut q = parse_question("write", "/home/u/.npm/x").unwrap();
    q.chain = vec!["/bin/sh".into(), "npm".into()];
    assert!(render_answer(&p, &q, &a).contains("not held: the chain runs a program outside"));
    q.chain.clear();
    let a = check(&p, &q).expect("answer");
    assert!(render_answer(&p, &q, &a).contains("give the chain with --chain"));
}

#[test]
fn a_probe_admits_only_while_the_path_is_missing() {
    let p = policy(PROFILE);
    let a = ask(&p, "read", "/opt/tool", &[], false);
    assert_eq!(a.decision, Decision::AllowIfAbsent);
    assert!(a.checks[0].why.probe);
    assert_eq!(lines(&p, &a), [7]);
    let a = ask(&p, "read", "/opt/tool", &[], true);
    assert_eq!(
        (a.decision.clone(), lines(&p, &a)),
        (Decision::Allow, vec![7])
    );
    // A probe never admits a write.
    let a = ask(&p, "write", "/opt/tool", &[], false);
    assert!(matches!(a.decision, Decision::Deny { .. }));
}

#[test]
fn provenance_would_admit_what_the_run_made() {
    let p = policy(PROFILE);
    let a = ask(&p, "write", "/srv/out.txt", &[], false);
    assert!(matches!(a.decision, Decision::Deny { .. }));
    assert!(a.provenance_admits);
    // Never exec: a dropped program needs a rule.
    let a = ask(&p, "exec", "/srv/tool", &[], false);
    assert!(!a.provenance_admits);
}

#[test]
fn network_and_names() {
    let p = policy(PROFILE);
    let a = ask(&p, "connect", "tcp 10.0.0.1:443", &[], false);
    assert_eq!(
        (a.decision.clone(), lines(&p, &a)),
        (Decision::Allow, vec![8])
    );
    let a = ask(&p, "connect", "tcp 10.0.0.2:443", &[], false);
    assert!(matches!(a.decision, Decision::Deny { .. }));
    let a = ask(&p, "resolve", "Example.ORG", &[], false);
    assert_eq!(
        (a.decision.clone(), lines(&p, &a)),
        (Decision::Allow, vec![9])
    );
}

#[test]
fn bad_questions_are_refused_with_a_reason() {
    assert!(parse_question("frobnicate", "/x").is_err());
    assert!(parse_question("read", "relative").is_err());
    assert!(parse_question("connect", "tcp example.org").is_err());
    assert!(parse_question("connect", "tcp exa mple.org:443").is_err());
    assert!(parse_question("connect", "sctp 10.0.0.1:80").is_err());
    assert!(parse_question("syscall", "../x").is_err());
    assert!(parse_question("own", "/x").is_err());
    let p = policy(PROFILE);
    let chain = vec!["nosuch".to_string()];
    assert!(chain_scope(&p, &chain).is_err());
}

fn event(pid: i32, ppid: i32, kind: EventKind) -> Event {
    Event {
        time_ns: 0,
        pid,
        tid: pid,
        proc: ProcInfo {
            ppid,
            comm: std::sync::Arc::from(&b"x"[..]),
            exe: std::sync::Arc::from(&b"/bin/x"[..]),
            creds: Default::default(),
        },
        kind,
    }
}

fn open(pid: i32, path: &str, access: Access, outcome: Outcome) -> Event {
    event(
        pid,
        1,
        EventKind::Syscall(Syscall {
            name: "openat".into(),
            nr: 257,
            args: [0; 6],
            targets: vec![Target {
                access: AccessSet::of(access),
                object: Object::Path(PathObj {
                    literal: path.as_bytes().to_vec(),
                    abs: path.as_bytes().to_vec(),
                    resolved: None,
                }),
            }],
            outcome,
            sock_type: None,
        }),
    )
}

fn exec(pid: i32, ppid: i32, path: &str) -> Event {
    event(
        pid,
        ppid,
        EventKind::Exec(Exec {
            path: path.as_bytes().to_vec(),
            argv: vec![],
            env_names: vec![],
            former_tid: None,
            program: None,
            thinned: vec![],
        }),
    )
}

#[test]
fn runs_are_counted_rule_by_rule_with_chains_and_examples() {
    let p = policy(
        "program npm /usr/bin/npm\nexec /usr/bin/*\nread /etc/**\nwrite ${HOME}/.npm/** by npm\nread /never\n",
    );
    let mut ex = Explainer::new(&p, Box::new(|_| false));
    for run in 0..2 {
        ex.begin_run(&format!("run{run}"));
        ex.observe(&p, &exec(10, 0, "/usr/bin/npm"));
        ex.observe(&p, &open(10, "/etc/a", Access::Read, Outcome::Value(3)));
        ex.observe(&p, &open(10, "/etc/b", Access::Read, Outcome::Value(3)));
        ex.observe(&p, &open(10, "/etc/c", Access::Read, Outcome::Value(3)));
        if run == 0 {
            ex.observe(
                &p,
                &open(10, "/home/u/.npm/x", Access::Write, Outcome::Value(3)),
            );
            ex.observe(
                &p,
                &event(
                    10,
                    0,
                    EventKind::Spawn(Spawn {
                        child: 11,
                        thread: false,
                        via: SpawnVia::Fork,
                    }),
                ),
            );
            ex.observe(&p, &exec(11, 10, "/usr/bin/sh"));
            // sh after npm is outside the list: refused.
            ex.observe(
                &p,
                &open(11, "/home/u/.npm/y", Access::Write, Outcome::Value(3)),
            );
        }
    }
    let e = ex.finish(&p);
    assert_eq!(e.runs, ["run0", "run1"]);
    let by = |text: &str| e.rules.iter().find(|r| r.rule == text).expect(text);
    let read = by("read /etc/**");
    assert_eq!((read.events, read.runs), (6, 2));
    assert_eq!(read.examples, ["/etc/a", "/etc/b"]);
    assert_eq!(read.chains, [("npm".to_string(), 6)]);
    let npm = by("write ${HOME}/.npm/** by npm");
    assert_eq!((npm.events, npm.runs), (1, 1));
    assert_eq!(by("exec /usr/bin/*").events, 3);
    assert_eq!(by("read /never").events, 0);
    assert_eq!(e.refused_events, 1);
    assert_eq!(e.refused[0].chain, "sh <- npm");
    let text = render_text(&e, "t.profile");
    assert!(
        text.contains("2/2 runs; 6 events; by npm; e.g. /etc/a, /etc/b"),
        "{text}"
    );
    assert!(text.contains("t.profile:5  read /never"), "{text}");
}

#[test]
fn areas_do_not_write_git_configs_and_deny_rules_name_what_they_override() {
    let p = policy(PROFILE);
    let a = ask(&p, "write", "/home/u/.cache/x/.git/config", &[], false);
    assert!(matches!(a.decision, Decision::Deny { .. }));
    let excluded: Vec<u32> = a.checks[0]
        .why
        .excluded
        .iter()
        .map(|&i| p.rule_info(i).expect("rule").span.line)
        .collect();
    assert_eq!(excluded, [4]);
    let a = ask(&p, "read", "/home/u/.cache/x/secret", &[], false);
    let over = a.checks[0]
        .why
        .overridden
        .map(|i| p.rule_info(i).expect("rule").span.line);
    assert_eq!(over, Some(4));
}

#[test]
fn evidence_comments_are_recognized_and_others_kept() {
    assert!(is_annotation(
        "3/3 runs; 12 events; by npm; e.g. ${HOME}/.npm/x"
    ));
    assert!(is_annotation("0/2 runs: no event of the runs used it"));
    assert!(!is_annotation("WARNING: secret place, kept exact"));
    assert!(!is_annotation("1/2 of the files"));
    assert!(!is_annotation("a/b runs"));
}

#[test]
fn the_closest_rules_of_a_refused_access() {
    let p = policy(PROFILE);
    let q = |verb: &str, object: &str| parse_question(verb, object).expect("question");
    // Read is allowed where the write is refused: the read rule comes closest.
    let c = closest(&p, &env(), &q("write", "/etc/passwd"), Scope::NONE);
    assert_eq!(
        c[0],
        "t.profile:2: read /etc/** allows read here, not write"
    );
    // Same verb, same directory, another name.
    let p2 = policy("read /srv/a.txt\nread /srv/sub/b.txt\n");
    let c = closest(&p2, &env(), &q("read", "/srv/b.txt"), Scope::NONE);
    assert_eq!(
        c,
        ["t.profile:1: read /srv/a.txt names another file of /srv/"]
    );
    // A probe, a rule held by other programs.
    let c = closest(&p, &env(), &q("read", "/opt/x"), Scope::NONE);
    assert_eq!(
        c,
        ["t.profile:7: probe /opt/** admits it only while the path is missing"]
    );
    let c = closest(&p, &env(), &q("write", "/home/u/.npm/x"), Scope::NONE);
    assert_eq!(
        c[0],
        "t.profile:6: write ${HOME}/.npm/** by npm matches, but only for the chains of its programs"
    );
    // A deny rule won: the allow rule it won over, and nothing else.
    let c = closest(
        &p,
        &env(),
        &q("read", "/home/u/.cache/x/secret"),
        Scope::NONE,
    );
    assert_eq!(
        c,
        [
            "t.profile:4: own ${HOME}/.cache/x matches, but the deny rule t.profile:5: deny read ${HOME}/.cache/x/secret wins"
        ]
    );
    // Nothing comes close to what is allowed.
    assert!(closest(&p2, &env(), &q("read", "/srv/a.txt"), Scope::NONE).is_empty());
}

#[test]
fn partial_runs_say_why_or_which() {
    let runs: Vec<String> = ["a/t0.bin", "a/t1.bin", "a/t2.bin", "a/t3.bin", "a/t4.bin"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let warm = [false, true, true, true, true];
    assert_eq!(runs_text(&[0], &runs, &warm), "1/5 runs: cold cache only");
    // Used by a warm run too: not a cold-cache rule; the runs by file name.
    assert_eq!(
        runs_text(&[0, 2], &runs, &warm),
        "2/5 runs: in t0.bin, t2.bin"
    );
    // A cold run that did not use it: not a cold-cache rule either.
    assert_eq!(
        runs_text(&[1], &runs, &[false, true, false, true, true]),
        "1/5 runs: in t1.bin"
    );
    assert_eq!(
        runs_text(&[0, 1, 2, 3], &runs, &[false; 5]),
        "4/5 runs: in t0.bin, t1.bin, t2.bin and 1 more"
    );
    assert_eq!(runs_text(&[0, 1, 2, 3, 4], &runs, &warm), "5/5 runs");
    assert_eq!(runs_text(&[], &runs, &warm), "0/5 runs");
}
