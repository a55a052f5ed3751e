//! `sbx explain`: why each rule of a profile is there, and which rule decides an access.
//!
//! [`Explainer`] replays recorded runs against a compiled profile the way enforce decides
//! (`CompiledPolicy::explain_event_in`: the same checks as `admits_event_in`, with the rules
//! that decided each), with what each run created ([`crate::learn::own::Ownership`], as the
//! self-check replays provenance) and each process's exec chain ([`Scope`], as
//! `sink::chains` tracks it in enforce). Per rule it counts the events it decided, the exec
//! chains that used it, two example objects, and in how many runs it was used.
//!
//! [`check`] answers one question (`--check VERB OBJECT [--chain ...]`) with the same code.
//!
//! Pure: events in, data out. Reading traces and printing belong to `cli::explain`.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::Write as _;
use std::rc::Rc;

use serde::Serialize;

use crate::event::{Access, AccessSet, Event, EventKind, Object, PathObj, SockAddr};
use crate::learn::own::Ownership;
use crate::policy::{Checked, CompiledPolicy, Decision, Provenance, Scope, Verdict};
use crate::profile::{Proto, Verb};

/// How many example objects a rule shows.
const EXAMPLES: usize = 2;
/// How many exec chains a rule lists before `...`.
const CHAINS: usize = 3;
/// How many programs a chain names before `...` (as enforce's violation lines).
const CHAIN_LEN: usize = 6;
/// How many refused accesses the explanation lists.
const REFUSED: usize = 20;

/// One process's exec chain: its scope and its programs' labels, newest first.
#[derive(Debug, Clone)]
struct Entry {
    scope: Scope,
    labels: Rc<Vec<String>>,
}

/// What one rule did in the runs.
#[derive(Debug, Clone, Default, Serialize)]
pub struct RuleUse {
    /// Index of the compiled rule.
    pub index: usize,
    /// The rule as the profile writes it.
    pub rule: String,
    /// The file it comes from: the profile, or `NAME.profile` for a shipped snippet.
    pub file: String,
    pub line: u32,
    /// `true` for an included snippet's rule.
    pub snippet: bool,
    /// `true` for a `deny` rule (its events are the accesses it refused).
    pub deny: bool,
    /// Events of all runs the rule decided (at least one check of the event).
    pub events: u64,
    /// In how many runs it decided at least one event.
    pub runs: usize,
    /// Exec chains (`npm <- bash`), by events, most first (ties by name).
    pub chains: Vec<(String, u64)>,
    /// The first objects it decided, as the run saw them.
    pub examples: Vec<String>,
    /// Events it decided only as a probe (the path was missing).
    pub probes: u64,
    /// The runs that used it (indexes into [`Explanation::runs`]).
    pub used_in: Vec<usize>,
    /// In how many runs, and when only some used it, which: `3/3 runs`, `1/3 runs: cold
    /// cache only` (used only by the runs that found no cache warm, every other run found
    /// one warm), `1/3 runs: in b.bin`.
    pub runs_text: String,
    /// The base profile rule it was kept from (`learn --base`): `BASE:LINE`.
    pub from_base: Option<String>,
    /// All of it on one line, as the text form prints it (`2/3 runs; 5 events; by ...`).
    pub evidence: String,
}

/// An access the profile does not admit, as in a violation line.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Refused {
    pub verb: String,
    pub object: String,
    pub chain: String,
}

/// The explanation of a profile by a set of runs.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Explanation {
    /// The traces, in the order given.
    pub runs: Vec<String>,
    /// Per run: it found a tool's cache or the project's build outputs warm (the warning
    /// `sbx learn` gives), so it skipped work a cold run does.
    pub warm: Vec<bool>,
    /// The events of all runs (as `sbx stats --count` counts them).
    pub events: u64,
    /// Events with a check that no rule admits (enforce would stop them).
    pub refused_events: u64,
    /// The first distinct refused accesses.
    pub refused: Vec<Refused>,
    /// Every rule, in profile order (includes first, as they are compiled).
    pub rules: Vec<RuleUse>,
    /// Events decided without a rule because the run had created the object.
    pub by_provenance: u64,
}

#[derive(Debug, Default)]
struct Tally {
    events: u64,
    used_in: Vec<usize>,
    in_run: bool,
    chains: BTreeMap<String, u64>,
    examples: Vec<String>,
    probes: u64,
}

/// Replays runs against a profile, rule by rule. Each run's events are judged by the
/// profile compiled for that run's variables (its HOME, CWD...): the rules are the same, in
/// the same order, whatever the variables.
pub struct Explainer<'p> {
    is_gated: Box<dyn Fn(&str) -> bool + 'p>,
    tallies: Vec<Tally>,
    out: Explanation,
    refused: BTreeSet<Refused>,
    owned: Ownership,
    procs: HashMap<i32, Entry>,
}

impl std::fmt::Debug for Explainer<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Explainer")
            .field("runs", &self.out.runs)
            .field("events", &self.out.events)
            .finish_non_exhaustive()
    }
}

impl<'p> Explainer<'p> {
    /// `is_gated`: which syscalls need a `syscall NAME` rule even with targets (learn's and
    /// the self-check's predicate: the arch table's gated and spawn classes).
    pub fn new(policy: &CompiledPolicy, is_gated: Box<dyn Fn(&str) -> bool + 'p>) -> Self {
        let tallies = (0..policy.rule_count()).map(|_| Tally::default()).collect();
        Explainer {
            is_gated,
            tallies,
            out: Explanation::default(),
            refused: BTreeSet::new(),
            owned: Ownership::default(),
            procs: HashMap::new(),
        }
    }

    /// A new run starts (named `name` in the output): nothing created, no process known.
    pub fn begin_run(&mut self, name: &str) {
        self.finish_run();
        self.out.runs.push(name.to_string());
        self.out.warm.push(false);
        self.owned = Ownership::default();
        self.procs.clear();
    }

    /// The current run found a cache or build outputs warm (`learn::evidence::Evidence`).
    pub fn set_warm(&mut self, warm: bool) {
        if let Some(w) = self.out.warm.last_mut() {
            *w = warm;
        }
    }

    fn finish_run(&mut self) {
        let run = self.out.runs.len().saturating_sub(1);
        for t in &mut self.tallies {
            if std::mem::take(&mut t.in_run) {
                t.used_in.push(run);
            }
        }
    }

    /// The scope and chain text of process `pid` (a process never seen exec holds nothing,
    /// as in enforce).
    fn chain_of(&self, pid: i32) -> (Scope, String) {
        match self.procs.get(&pid) {
            Some(e) => (e.scope, chain_text(&e.labels)),
            None => (Scope::NONE, String::new()),
        }
    }

    /// Whether enforce judges the event at all: a syscall by its name when it is gated, else
    /// only when a target has an access left (socket() without an address, the setuid
    /// family, and a call whose targets lost their access are not: an unlink of a missing
    /// name, which the sink settles to no access, as enforce decides nothing for it);
    /// spawns and exits never.
    pub fn judged(&self, ev: &Event) -> bool {
        match &ev.kind {
            EventKind::Syscall(sc) => {
                (self.is_gated)(&sc.name) || sc.targets.iter().any(|t| !t.access.is_empty())
            }
            EventKind::Exec(_) => true,
            _ => false,
        }
    }

    /// The checks of one event with the scope its process holds, as enforce decides it
    /// (none for an event enforce does not judge: [`Self::judged`]).
    pub fn checks(&self, policy: &CompiledPolicy, ev: &Event) -> Vec<Checked> {
        if !self.judged(ev) {
            return Vec::new();
        }
        let (scope, _) = self.chain_of(ev.pid);
        policy.explain_event_in(ev, &*self.is_gated, Some(&self.owned), scope)
    }

    /// The scope event `ev`'s process holds now.
    pub fn scope(&self, pid: i32) -> Scope {
        self.chain_of(pid).0
    }

    /// What the run created so far (enforce's provenance, replayed by path).
    pub fn provenance(&self) -> &dyn Provenance {
        &self.owned
    }

    /// Account one event of the current run, then follow it (creations, forks, execs).
    pub fn observe(&mut self, policy: &CompiledPolicy, ev: &Event) {
        self.out.events += 1;
        if self.judged(ev) {
            let checks = self.checks(policy, ev);
            self.account(ev, &checks);
        }
        self.owned.replay(ev);
        self.follow(policy, ev);
    }

    fn account(&mut self, ev: &Event, checks: &[Checked]) {
        let (_, chain) = self.chain_of(ev.pid);
        let mut decided: BTreeSet<usize> = BTreeSet::new();
        let mut probe_only: BTreeSet<usize> = BTreeSet::new();
        let mut refused = false;
        let mut provenance = false;
        for c in checks {
            match c.verdict {
                Verdict::Allow | Verdict::AllowIfAbsent | Verdict::DenyRule => {
                    for &i in &c.why.rules {
                        if decided.insert(i) {
                            self.example(i, &c.object);
                        }
                        if c.why.probe {
                            probe_only.insert(i);
                        }
                    }
                    provenance |= c.why.provenance;
                }
                Verdict::NoRule => {}
            }
            // AllowIfAbsent is what admits_event_in refuses too: the path must be missing,
            // which a recorded event (the call succeeded) says it was not.
            if c.verdict != Verdict::Allow {
                refused = true;
                if self.refused.len() < REFUSED {
                    self.refused.insert(Refused {
                        verb: c.verb.name().to_string(),
                        object: c.object.clone(),
                        chain: chain.clone(),
                    });
                }
            }
        }
        for &i in &decided {
            let Some(t) = self.tallies.get_mut(i) else {
                continue;
            };
            t.events += 1;
            t.in_run = true;
            *t.chains.entry(chain.clone()).or_default() += 1;
            if probe_only.contains(&i) {
                t.probes += 1;
            }
        }
        if refused {
            self.out.refused_events += 1;
        }
        if provenance && decided.is_empty() {
            self.out.by_provenance += 1;
        }
    }

    fn example(&mut self, rule: usize, object: &str) {
        if let Some(t) = self.tallies.get_mut(rule)
            && t.examples.len() < EXAMPLES
            && !t.examples.iter().any(|e| e == object)
        {
            t.examples.push(object.to_string());
        }
    }

    /// Forks share the chain, execs extend it and narrow the scope (as `sink::chains`).
    fn follow(&mut self, policy: &CompiledPolicy, ev: &Event) {
        match &ev.kind {
            EventKind::Spawn(sp) if !sp.thread => {
                if let Some(e) = self.procs.get(&ev.pid).cloned() {
                    self.procs.insert(sp.child, e);
                }
            }
            EventKind::Exec(ex) => {
                let identity = ex.identity();
                let base = match self.procs.get(&ev.pid) {
                    Some(e) => e.clone(),
                    None => Entry {
                        scope: if ev.proc.ppid == 0 {
                            Scope::ROOT
                        } else {
                            Scope::NONE
                        },
                        labels: Rc::new(Vec::new()),
                    },
                };
                let scope = if policy.has_scopes() {
                    base.scope
                        .exec(policy.program_mask(identity), policy.is_launcher(identity))
                } else {
                    base.scope
                };
                let mut labels = vec![label(policy, &ex.path, identity)];
                labels.extend(base.labels.iter().cloned());
                labels.truncate(CHAIN_LEN * 4);
                self.procs.insert(
                    ev.pid,
                    Entry {
                        scope,
                        labels: Rc::new(labels),
                    },
                );
            }
            EventKind::Exit(x) if x.process => {
                self.procs.remove(&ev.pid);
            }
            _ => {}
        }
    }

    /// The explanation of every rule by the runs observed.
    pub fn finish(mut self, policy: &CompiledPolicy) -> Explanation {
        self.finish_run();
        let mut out = self.out;
        out.refused = self.refused.into_iter().collect();
        for (i, t) in self.tallies.into_iter().enumerate() {
            let Some(info) = policy.rule_info(i) else {
                continue;
            };
            let mut chains: Vec<(String, u64)> = t.chains.into_iter().collect();
            chains.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
            out.rules.push(RuleUse {
                index: i,
                rule: info.text.to_string(),
                file: info.origin.file.clone(),
                line: info.span.line,
                snippet: false,
                deny: info.text.starts_with("deny "),
                events: t.events,
                runs: t.used_in.len(),
                chains,
                examples: t.examples,
                probes: t.probes,
                used_in: t.used_in,
                runs_text: String::new(),
                from_base: None,
                evidence: String::new(),
            });
        }
        out.describe();
        out
    }
}

/// `npm <- bash`: the labels newest first, repeats folded, at most [`CHAIN_LEN`].
fn chain_text(labels: &[String]) -> String {
    let mut out: Vec<&str> = Vec::new();
    let mut more = false;
    for l in labels {
        if out.last() == Some(&l.as_str()) {
            continue;
        }
        if out.len() == CHAIN_LEN {
            more = true;
            break;
        }
        out.push(l);
    }
    let mut s = out.join(" <- ");
    if more {
        s.push_str(" <- ...");
    }
    s
}

/// A program's label in chains: its `program` name, else its file name (and its script's).
fn label(policy: &CompiledPolicy, exe: &[u8], identity: &[u8]) -> String {
    if let Some(name) = policy.program_name(identity) {
        return name.to_string();
    }
    let base = |p: &[u8]| {
        String::from_utf8_lossy(p.rsplit(|&b| b == b'/').next().unwrap_or(p)).into_owned()
    };
    if identity == exe {
        base(exe)
    } else {
        format!("{} {}", base(exe), base(identity))
    }
}

impl Explanation {
    /// Fill every rule's [`RuleUse::runs_text`] and [`RuleUse::evidence`].
    fn describe(&mut self) {
        for i in 0..self.rules.len() {
            let text = runs_text(&self.rules[i].used_in, &self.runs, &self.warm);
            let r = &mut self.rules[i];
            r.runs_text = text;
            r.evidence = evidence_line(r);
        }
    }

    /// Mark the rules a base profile holds (`learn --base BASE`: its rules are kept), by
    /// effect, verb and pattern (learn may change a kept rule's `by` list): `from base
    /// BASE:LINE` in the evidence.
    pub fn mark_base(&mut self, base_file: &str, base: &crate::profile::Profile) {
        let key = |r: &crate::profile::Rule| (r.effect, r.verb, r.pattern.clone());
        for r in &mut self.rules {
            if r.snippet {
                continue;
            }
            let Ok(parsed) = crate::profile::parse::parse_str("rule", &r.rule) else {
                continue;
            };
            let Some(rule) = parsed.rules.first() else {
                continue;
            };
            r.from_base = base
                .rules
                .iter()
                .find(|b| key(b) == key(rule))
                .map(|b| format!("{base_file}:{}", b.span.line));
        }
        self.describe();
    }
}

/// `3/3 runs`; when only some runs used it, why or which: `1/3 runs: cold cache only`,
/// `1/3 runs: in b.bin` (trace file names).
fn runs_text(used_in: &[usize], runs: &[String], warm: &[bool]) -> String {
    let (k, n) = (used_in.len(), runs.len());
    let mut s = format!("{k}/{n} runs");
    if k == 0 || k == n {
        return s;
    }
    let is_warm = |i: usize| warm.get(i).copied().unwrap_or(false);
    let cold_only = used_in.iter().all(|&i| !is_warm(i))
        && (0..n).filter(|i| !used_in.contains(i)).all(is_warm);
    if cold_only {
        s.push_str(": cold cache only");
        return s;
    }
    let name = |i: usize| {
        let r = runs.get(i).map_or("", String::as_str);
        r.rsplit('/').next().unwrap_or(r).to_string()
    };
    let names: Vec<String> = used_in.iter().take(CHAINS).map(|&i| name(i)).collect();
    let _ = write!(s, ": in {}", names.join(", "));
    if k > CHAINS {
        let _ = write!(s, " and {} more", k - CHAINS);
    }
    s
}

/// Mark the rules of `own_file` as the profile's own; the others come from snippets.
pub fn mark_snippets(e: &mut Explanation, own_file: &str) {
    for r in &mut e.rules {
        r.snippet = r.file != own_file;
    }
}

/// One rule's evidence on one line: `3/3 runs; 12 events; by npm <- bash; e.g. /x, /y`
/// (`; from base BASE:LINE` for a rule kept from a base profile).
pub fn evidence_line(r: &RuleUse) -> String {
    let mut s = r.runs_text.clone();
    if let Some(b) = &r.from_base {
        let _ = write!(s, "; from base {b}");
    }
    let _ = write!(
        s,
        "; {} event{}",
        r.events,
        if r.events == 1 { "" } else { "s" }
    );
    if r.probes == r.events && r.probes > 0 {
        s.push_str(" (missing paths only)");
    }
    if !r.chains.is_empty() {
        let names: Vec<&str> = r
            .chains
            .iter()
            .take(CHAINS)
            .map(|(c, _)| {
                if c.is_empty() {
                    "(sbx starting the workload)"
                } else {
                    c.as_str()
                }
            })
            .collect();
        let _ = write!(s, "; by {}", names.join(", "));
        if r.chains.len() > CHAINS {
            let _ = write!(s, " and {} more", r.chains.len() - CHAINS);
        }
    }
    if !r.examples.is_empty() {
        let _ = write!(s, "; e.g. {}", r.examples.join(", "));
    }
    s
}

/// The text form: one block per rule, then the unused rules and what was refused. Fits a
/// pull request comment (Markdown renders it as a code block when fenced).
pub fn render_text(e: &Explanation, profile: &str) -> String {
    let mut out = String::new();
    let n = e.runs.len();
    let _ = writeln!(
        out,
        "{profile}: {} rules; {} run{} ({}), {} events",
        e.rules.len(),
        n,
        if n == 1 { "" } else { "s" },
        e.runs.join(", "),
        e.events
    );
    let mut unused = Vec::new();
    for r in &e.rules {
        let at = format!("{}:{}", r.file, r.line);
        if r.events == 0 {
            unused.push((at, r));
            continue;
        }
        let _ = writeln!(out, "\n{at}  {}", r.rule);
        let what = if r.deny { "refused: " } else { "" };
        let _ = writeln!(out, "  {what}{}", evidence_line(r));
    }
    let own_unused: Vec<_> = unused.iter().filter(|(_, r)| !r.snippet).collect();
    let snippet_unused = unused.len() - own_unused.len();
    let _ = writeln!(
        out,
        "\nunused: {} of the profile's own rules decided no event of {}{}",
        own_unused.len(),
        if n == 1 { "the run" } else { "these runs" },
        if own_unused.is_empty() { "" } else { ":" }
    );
    for (at, r) in &own_unused {
        let note = if r.deny { "  (refused nothing)" } else { "" };
        let base = r
            .from_base
            .as_ref()
            .map_or(String::new(), |b| format!("  (from base {b})"));
        let _ = writeln!(out, "  {at}  {}{note}{base}", r.rule);
    }
    if snippet_unused > 0 {
        let _ = writeln!(
            out,
            "  (and {snippet_unused} rules of included snippets, not listed)"
        );
    }
    if e.refused_events > 0 {
        let _ = writeln!(
            out,
            "\nrefused: {} events the profile does not admit (enforce would stop them):",
            e.refused_events
        );
        for r in &e.refused {
            let by = if r.chain.is_empty() {
                String::new()
            } else {
                format!(" (by {})", r.chain)
            };
            let _ = writeln!(out, "  {} {}{by}", r.verb, r.object);
        }
    }
    out
}

/// The longest example an annotation shows, in characters (longer ones end in `...`).
const ANNOTATION_EXAMPLE: usize = 96;
/// How many exec chains an annotation names.
const ANNOTATION_CHAINS: usize = 2;

/// Whether a comment line is an evidence comment [`annotation`] wrote (`N/M runs...`).
pub fn is_annotation(comment: &str) -> bool {
    let Some((used, rest)) = comment.split_once('/') else {
        return false;
    };
    let Some((total, _)) = rest.split_once(" runs") else {
        return false;
    };
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    digits(used) && digits(total)
}

/// The evidence comment of `sbx learn --annotate` for one rule: `3/3 runs; by npm; e.g.
/// ${HOME}/.npm/_cacache/...` (one example, written with the run's variables). The same
/// traces give the same text.
pub fn annotation(r: &RuleUse, total_runs: usize, env: &crate::profile::vars::Env) -> String {
    let base = r
        .from_base
        .as_ref()
        .map_or(String::new(), |b| format!("; from base {b}"));
    if r.events == 0 && r.deny {
        return format!("0/{total_runs} runs: refused nothing in the runs{base}");
    }
    if r.events == 0 {
        return format!("0/{total_runs} runs: no event of the runs used it{base}");
    }
    let mut short = r.clone();
    short.chains.truncate(ANNOTATION_CHAINS);
    let more = r.chains.len().saturating_sub(ANNOTATION_CHAINS);
    short.examples = r
        .examples
        .iter()
        .take(1)
        .map(|e| {
            let e = if e.starts_with('/') {
                crate::profile::vars::abstract_path(e.as_bytes(), env)
            } else {
                e.clone()
            };
            if e.chars().count() > ANNOTATION_EXAMPLE {
                let cut: String = e.chars().take(ANNOTATION_EXAMPLE).collect();
                format!("{cut}...")
            } else {
                e
            }
        })
        .collect();
    let mut line = evidence_line(&short);
    if more > 0 {
        // `by a, b and N more` before the examples.
        let by_end = line.find("; e.g. ").unwrap_or(line.len());
        line.insert_str(by_end, &format!(" and {more} more"));
    }
    line
}

/// A question for [`check`]: a verb on an object, by a chain.
#[derive(Debug, Clone)]
pub struct Question {
    pub verb: Verb,
    pub object: Object,
    /// Programs of the chain, newest first (`npm <- bash`): `program` names or absolute
    /// program paths. Empty: a process whose chain holds no `by` list.
    pub chain: Vec<String>,
    /// The call is known to fail with ENOENT (the path is missing).
    pub missing: bool,
    /// A network peer's protocol as asked (`tcp`, `udp`, `unix`, `netlink`); `None`: either
    /// of tcp and udp (a rule of either admits, a deny rule of either refuses).
    pub proto: Option<Proto>,
    /// A peer asked by host name (`registry.npmjs.org:443`): the object's address is
    /// `0.0.0.0`, and host rules match this name as enforce matches them against the names
    /// the run resolved to the peer's address. No DNS is asked.
    pub host: Option<String>,
}

impl Question {
    /// `verb` on `object` by a chain holding no `by` list, the path not known missing.
    pub fn new(verb: Verb, object: Object) -> Question {
        Question {
            verb,
            object,
            chain: Vec::new(),
            missing: false,
            proto: None,
            host: None,
        }
    }

    /// The object as the answer names it (a peer asked by name keeps its name).
    fn object_text(&self, checked: &str) -> String {
        match (&self.host, &self.object) {
            (Some(h), Object::Socket(SockAddr::Inet { port, .. })) => format!("{h}:{port}"),
            _ => checked.to_string(),
        }
    }
}

/// Bad input to [`parse_question`] or [`check`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct QuestionError(pub String);

/// Parse `VERB OBJECT`: a path verb with an absolute path (`read /etc/passwd`); a network
/// verb with `[tcp|udp] HOST:PORT` (HOST an IP address, `[IPv6]`, or a host name),
/// `unix PATH`, `unix @NAME` or `netlink NAME`; `resolve NAME`; `syscall NAME`.
pub fn parse_question(verb: &str, object: &str) -> Result<Question, QuestionError> {
    let err = |m: String| Err(QuestionError(m));
    let Some(v) = Verb::from_name(verb) else {
        return err(format!(
            "unknown verb {verb:?} (one of: read, write, create, delete, exec, stat, connect, bind, send, resolve, syscall)"
        ));
    };
    let path = |p: &str| {
        Object::Path(PathObj {
            literal: p.as_bytes().to_vec(),
            abs: p.as_bytes().to_vec(),
            resolved: None,
        })
    };
    match v {
        Verb::Read | Verb::Write | Verb::Create | Verb::Delete | Verb::Exec | Verb::Stat => {
            if !object.starts_with('/') {
                return err(format!("{verb} needs an absolute path, not {object:?}"));
            }
            Ok(Question::new(v, path(object)))
        }
        Verb::Connect | Verb::Bind | Verb::Send => parse_peer(v, object),
        Verb::Resolve => Ok(Question::new(
            v,
            Object::DnsName(object.to_ascii_lowercase()),
        )),
        Verb::Syscall => {
            if object.is_empty()
                || !object
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_')
            {
                return err(format!("syscall needs a syscall name, not {object:?}"));
            }
            Ok(Question::new(v, Object::Text(object.as_bytes().to_vec())))
        }
        _ => err(format!(
            "--check asks about an access: {verb} is not one (use read, write, create, delete, exec, stat, connect, bind, send, resolve or syscall)"
        )),
    }
}

/// The peer of a network question: `[tcp|udp] HOST:PORT`, `unix PATH`, `unix @NAME`,
/// `netlink NAME`.
fn parse_peer(v: Verb, object: &str) -> Result<Question, QuestionError> {
    let verb = v.name();
    let err = |m: String| Err(QuestionError(m));
    let (proto, addr) = match object.split_once(' ') {
        Some((p @ ("tcp" | "udp" | "unix" | "netlink"), rest)) => (Some(p), rest.trim()),
        Some(_) => {
            return err(format!(
                "{verb} needs '[tcp|udp] HOST:PORT', 'unix PATH', 'unix @NAME' or 'netlink NAME', not {object:?}"
            ));
        }
        None => (None, object),
    };
    let sock = match proto {
        Some("unix") => match addr.strip_prefix('@') {
            Some(n) => SockAddr::UnixAbstract(n.as_bytes().to_vec()),
            None if addr.starts_with('/') => SockAddr::Unix(addr.as_bytes().to_vec()),
            None => return err(format!("unix needs a path or @NAME, not {addr:?}")),
        },
        Some("netlink") => match crate::profile::netlink_protocol(addr) {
            Ok(protocol @ Some(_)) => SockAddr::Netlink {
                protocol,
                port_id: 0,
                groups: 0,
            },
            Ok(None) => return err("netlink needs one protocol, not *".to_string()),
            Err(e) => return err(e),
        },
        _ => {
            let mut q = parse_inet(v, addr)?;
            q.proto = match proto {
                Some("tcp") => Some(Proto::Tcp),
                Some("udp") => Some(Proto::Udp),
                _ => None,
            };
            return Ok(q);
        }
    };
    let mut q = Question::new(v, Object::Socket(sock));
    q.proto = match proto {
        Some("unix") => Some(Proto::Unix),
        _ => Some(Proto::Netlink),
    };
    Ok(q)
}

/// `IP:PORT`, `[IPv6]:PORT` or `NAME:PORT`.
fn parse_inet(v: Verb, addr: &str) -> Result<Question, QuestionError> {
    let inet = |sock| Question::new(v, Object::Socket(sock));
    match addr.parse::<std::net::SocketAddr>() {
        Ok(std::net::SocketAddr::V4(a)) => {
            return Ok(inet(SockAddr::Inet {
                addr: a.ip().octets(),
                port: a.port(),
            }));
        }
        Ok(std::net::SocketAddr::V6(a)) => {
            return Ok(inet(SockAddr::Inet6 {
                addr: a.ip().octets(),
                port: a.port(),
                scope_id: a.scope_id(),
            }));
        }
        Err(_) => {}
    }
    let bad = || {
        QuestionError(format!(
            "{} needs HOST:PORT (an IP address, [IPv6] or a host name, and a port), not {addr:?}",
            v.name()
        ))
    };
    let (host, port) = addr.rsplit_once(':').ok_or_else(bad)?;
    let port: u16 = port.parse().map_err(|_| bad())?;
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    let label_ok = |l: &str| {
        !l.is_empty()
            && l.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    };
    if host.is_empty() || !host.split('.').all(label_ok) {
        return Err(bad());
    }
    let mut q = inet(SockAddr::Inet { addr: [0; 4], port });
    q.host = Some(host);
    Ok(q)
}

/// The access a verb stands for in a question.
fn access_of(verb: Verb) -> AccessSet {
    let a = match verb {
        Verb::Read => Access::Read,
        Verb::Write => Access::Write,
        Verb::Create => Access::Create,
        Verb::Delete => Access::Delete,
        Verb::Exec => Access::Exec,
        Verb::Connect => Access::Connect,
        Verb::Bind => Access::Bind,
        Verb::Send => Access::Send,
        Verb::Resolve => Access::Resolve,
        _ => Access::Stat,
    };
    AccessSet::of(a)
}

/// The scope of a chain given newest first, replayed oldest first as enforce does.
pub fn chain_scope(policy: &CompiledPolicy, chain: &[String]) -> Result<Scope, QuestionError> {
    let mut scope = Scope::ROOT;
    if chain.is_empty() {
        return Ok(Scope::NONE);
    }
    for p in chain.iter().rev() {
        let (mask, launcher) = if p.starts_with('/') {
            (
                policy.program_mask(p.as_bytes()),
                policy.is_launcher(p.as_bytes()),
            )
        } else if policy.defines_program(p) {
            (policy.name_mask(p), false)
        } else {
            return Err(QuestionError(format!(
                "--chain: {p:?} is not a `program` the profile defines: give the program's path (/usr/bin/{p}), which the program and launcher lines are matched against"
            )));
        };
        scope = scope.exec(mask, launcher);
    }
    Ok(scope)
}

/// Everything is the run's own: what provenance could admit during a run.
struct AllOwned;

impl Provenance for AllOwned {
    fn owns(&self, _: &[u8]) -> bool {
        true
    }
    fn absent_in_owned(&self, _: &[u8]) -> bool {
        true
    }
}

/// The answer to a question.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    pub decision: Decision,
    pub checks: Vec<Checked>,
    /// Whether, refused by the rules, it would be admitted during a run that created the
    /// object itself (or, for a create, its directory).
    pub provenance_admits: bool,
}

/// The decision and its checks for question `q` asked by a chain holding `scope`, with what
/// the run created (`prov`): the functions enforce decides with (`decide_in`,
/// `decide_net_named_in`, the `syscall` rules), asked for the rules that decided.
fn decide(
    policy: &CompiledPolicy,
    q: &Question,
    scope: Scope,
    prov: Option<&dyn Provenance>,
) -> (Decision, Vec<Checked>) {
    let (decision, mut checks) = match &q.object {
        Object::Text(name) if q.verb == Verb::Syscall => {
            policy.explain_syscall(&String::from_utf8_lossy(name))
        }
        Object::Socket(addr) => {
            let names: Vec<String> = q.host.iter().cloned().collect();
            policy.explain_net_in(scope, q.verb, q.proto, addr, &names)
        }
        object => policy.explain_in(scope, access_of(q.verb), object, q.missing, prov),
    };
    for c in &mut checks {
        c.object = q.object_text(&c.object);
    }
    (decision, checks)
}

/// Which rules admit or refuse the access, by the decision code enforce uses.
pub fn check(policy: &CompiledPolicy, q: &Question) -> Result<Answer, QuestionError> {
    let scope = chain_scope(policy, &q.chain)?;
    let (decision, checks) = decide(policy, q, scope, None);
    let provenance_admits = !matches!(decision, Decision::Allow)
        && matches!(q.object, Object::Path(_))
        && matches!(decide(policy, q, scope, Some(&AllOwned)).0, Decision::Allow);
    Ok(Answer {
        decision,
        checks,
        provenance_admits,
    })
}

/// The texts of the rules that admit question `q` asked by a chain holding `scope` (the
/// deciding rules of an allowed answer, one per check); none when refused.
pub fn admitting_rules<'p>(policy: &'p CompiledPolicy, q: &Question, scope: Scope) -> Vec<&'p str> {
    let (decision, checks) = decide(policy, q, scope, None);
    if decision != Decision::Allow {
        return Vec::new();
    }
    let mut out: Vec<&str> = checks
        .iter()
        .flat_map(|c| c.why.rules.iter())
        .filter_map(|&i| policy.rule_info(i).map(|r| r.text))
        .collect();
    out.dedup();
    out
}

/// What a persistence place needs, in the words of `--check` and the closest rules.
const PERSISTENCE: &str = "a persistence place (git hooks and configs, shell startup files...) is written only by a rule naming it exactly, never by an area or a glob";

/// The rules that came closest to admitting a refused access, at most three: what the
/// decision itself found (a probe, a rule held by other programs, an area or glob that does
/// not write a persistence place); for a path, rules that allow another verb on it (asked of
/// the same decision code), then rules of the same verb (or a verb implying it) naming
/// another name in the same directory; for a network peer, rules naming the same host with
/// another port, then the same port on another host. `env`: the variables the profile was
/// compiled with. Empty when the access is allowed.
pub fn closest(
    policy: &CompiledPolicy,
    env: &crate::profile::vars::Env,
    q: &Question,
    scope: Scope,
) -> Vec<String> {
    let (decision, checks) = decide(policy, q, scope, None);
    if decision == Decision::Allow {
        return Vec::new();
    }
    let mut near = Near {
        policy,
        out: Vec::new(),
        named: BTreeSet::new(),
    };
    // A deny rule won: the allow rule it won over is what came closest, and nothing else
    // would admit it.
    let denied: Vec<&Checked> = checks
        .iter()
        .filter(|c| c.verdict == Verdict::DenyRule)
        .collect();
    if !denied.is_empty() {
        for c in denied {
            if let (Some(over), Some(&deny)) = (c.why.overridden, c.why.rules.first()) {
                let by = rule_at(policy, deny);
                near.add(over, &format!("matches, but the deny rule {by} wins"));
            }
        }
        return near.out;
    }
    for c in &checks {
        let found = c
            .why
            .unheld
            .iter()
            .map(|&i| {
                (
                    i,
                    "matches, but only for the chains of its programs".to_string(),
                )
            })
            .chain(
                c.why
                    .excluded
                    .iter()
                    .map(|&i| (i, format!("matches, but {PERSISTENCE}"))),
            )
            .chain(
                c.why
                    .rules
                    .iter()
                    .filter(|_| c.verdict == Verdict::AllowIfAbsent)
                    .map(|&i| (i, "admits it only while the path is missing".to_string())),
            );
        for (i, what) in found {
            near.add(i, &what);
        }
    }
    match &q.object {
        Object::Path(p) => near.paths(env, q, &p.abs, scope),
        Object::Socket(SockAddr::Inet { addr, port }) => {
            let host = q
                .host
                .clone()
                .unwrap_or_else(|| std::net::IpAddr::from(*addr).to_string());
            near.peers(q, &host, *port);
        }
        Object::Socket(SockAddr::Inet6 { addr, port, .. }) => {
            let host = std::net::IpAddr::from(*addr).to_canonical().to_string();
            near.peers(q, &host, *port);
        }
        _ => {}
    }
    near.out
}

/// The closest rules found so far (at most [`Near::MAX`], each once).
struct Near<'a> {
    policy: &'a CompiledPolicy,
    out: Vec<String>,
    named: BTreeSet<usize>,
}

impl Near<'_> {
    const MAX: usize = 3;

    fn full(&self) -> bool {
        self.out.len() >= Self::MAX
    }

    fn add(&mut self, i: usize, what: &str) {
        if !self.full() && self.named.insert(i) {
            self.out.push(format!("{} {what}", rule_at(self.policy, i)));
        }
    }

    /// The profile's own allow rules of `verbs`, parsed back from their text, with their
    /// index.
    fn rules(&self, verbs: &[Verb]) -> Vec<(usize, crate::profile::Rule)> {
        (0..self.policy.rule_count())
            .filter_map(|i| {
                let info = self.policy.rule_info(i)?;
                let parsed = crate::profile::parse::parse_str("rule", info.text).ok()?;
                let rule = parsed.rules.into_iter().next()?;
                (rule.effect == crate::profile::Effect::Allow && verbs.contains(&rule.verb))
                    .then_some((i, rule))
            })
            .collect()
    }

    /// Another verb allowed on the path; the same verb on another name of its directory.
    fn paths(&mut self, env: &crate::profile::vars::Env, q: &Question, abs: &[u8], scope: Scope) {
        for other in [
            Verb::Read,
            Verb::Write,
            Verb::Create,
            Verb::Delete,
            Verb::Exec,
        ] {
            if other == q.verb {
                continue;
            }
            let (d, checks) =
                self.policy
                    .explain_in(scope, access_of(other), &q.object, false, None);
            if d != Decision::Allow {
                continue;
            }
            for i in checks.iter().flat_map(|c| c.why.rules.iter().copied()) {
                self.add(
                    i,
                    &format!("allows {} here, not {}", other.name(), q.verb.name()),
                );
            }
        }
        let path = crate::profile::vars::path_to_text(abs);
        let Some((dir, _)) = path.rsplit_once('/') else {
            return;
        };
        let implied: &[Verb] = match q.verb {
            Verb::Create => &[Verb::Create, Verb::Write, Verb::Own],
            Verb::Read | Verb::Write | Verb::Delete => &[q.verb, Verb::Own],
            v => &[v][..],
        };
        for (i, rule) in self.rules(implied) {
            let crate::profile::Pattern::Path(pattern) = &rule.pattern else {
                continue;
            };
            let Ok(expanded) = crate::profile::vars::expand(pattern, env) else {
                continue;
            };
            let same_dir = expanded.rsplit_once('/').is_some_and(|(d, _)| d == dir);
            if same_dir {
                self.add(i, &format!("names another file of {dir}/"));
            }
        }
    }

    /// The same host (name or address) on another port, then the same port on another
    /// host, among the tcp/udp rules of the verb (of the protocol asked).
    fn peers(&mut self, q: &Question, host: &str, port: u16) {
        let rules: Vec<(usize, String, Option<u16>)> = self
            .rules(&[q.verb])
            .into_iter()
            .filter_map(|(i, rule)| {
                let crate::profile::Pattern::Net { proto, addr } = rule.pattern else {
                    return None;
                };
                if !matches!(proto, Proto::Tcp | Proto::Udp) || q.proto.is_some_and(|p| p != proto)
                {
                    return None;
                }
                let (h, p) = addr.rsplit_once(':')?;
                let h = h.trim_start_matches('[').trim_end_matches(']');
                Some((i, h.to_ascii_lowercase(), p.parse().ok()))
            })
            .collect();
        let same_host = |h: &str| {
            h == host
                || match (
                    h.parse::<std::net::IpAddr>(),
                    host.parse::<std::net::IpAddr>(),
                ) {
                    (Ok(a), Ok(b)) => a.to_canonical() == b.to_canonical(),
                    (Err(_), Err(_)) => crate::dns::name_matches(h, host),
                    _ => false,
                }
        };
        for (i, h, p) in &rules {
            if let Some(p) = p
                && *p != port
                && same_host(h)
            {
                self.add(*i, &format!("names this host, on port {p}, not {port}"));
            }
        }
        for (i, h, p) in &rules {
            if *p == Some(port) && h != "*" && !same_host(h) {
                self.add(*i, &format!("allows port {port} on another host, {h}"));
            }
        }
    }
}

fn rule_at(policy: &CompiledPolicy, i: usize) -> String {
    match policy.rule_info(i) {
        Some(r) => format!("{}:{}: {}", r.origin.file, r.span.line, r.text),
        None => format!("rule {i}"),
    }
}

/// The answer in words, one check per paragraph.
pub fn render_answer(policy: &CompiledPolicy, q: &Question, a: &Answer) -> String {
    let mut out = String::new();
    let verdict = match &a.decision {
        Decision::Allow => "allowed".to_string(),
        Decision::AllowIfAbsent => "allowed only while the path is missing (a probe)".to_string(),
        Decision::Deny { reason, .. } => format!("refused: {reason}"),
    };
    let chain = if q.chain.is_empty() {
        String::new()
    } else {
        format!(" (chain: {})", q.chain.join(" <- "))
    };
    let _ = writeln!(out, "{verdict}{chain}");
    for c in &a.checks {
        let _ = write!(out, "  {} {}: ", c.verb.name(), c.object);
        match c.verdict {
            Verdict::Allow if c.why.provenance => {
                let _ = writeln!(out, "allowed: the run created it");
            }
            Verdict::Allow if c.why.probe => {
                let _ = writeln!(
                    out,
                    "allowed: the call failed with ENOENT, and a probe rule"
                );
            }
            Verdict::Allow => {
                let _ = writeln!(out, "allowed by the first matching rule");
            }
            Verdict::AllowIfAbsent => {
                let _ = writeln!(
                    out,
                    "a probe rule matches: allowed only while the path does not exist"
                );
            }
            Verdict::DenyRule => {
                let _ = writeln!(out, "a deny rule wins over every allow rule");
            }
            Verdict::NoRule => {
                let _ = writeln!(out, "no rule allows it");
            }
        }
        for &i in &c.why.rules {
            let _ = writeln!(out, "    {}", rule_at(policy, i));
        }
        if let Some(i) = c.why.overridden {
            let _ = writeln!(out, "    (over {})", rule_at(policy, i));
        }
        for &i in &c.why.excluded {
            let _ = writeln!(
                out,
                "    {} (matches, but {PERSISTENCE})",
                rule_at(policy, i)
            );
        }
        for &i in &c.why.unheld {
            let _ = writeln!(
                out,
                "    {} ({})",
                rule_at(policy, i),
                if q.chain.is_empty() {
                    "held only by the chains of its programs: give the chain with --chain"
                } else {
                    "not held: the chain runs a program outside its list below its launchers"
                }
            );
        }
    }
    let by_address = matches!(
        q.object,
        Object::Socket(SockAddr::Inet { .. } | SockAddr::Inet6 { .. })
    ) && q.host.is_none();
    if by_address && a.decision != Decision::Allow && policy.names_hosts() {
        let _ = writeln!(
            out,
            "  host rules match an address only when the run resolved their name to it: ask by name (connect HOST:PORT)"
        );
    }
    if a.provenance_admits {
        let _ = writeln!(
            out,
            "  during a run: admitted if the run created this object itself (or, to create a name, its directory)"
        );
    }
    out
}

#[cfg(test)]
mod tests;
