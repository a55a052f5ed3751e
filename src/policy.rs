//! The compiled policy: the single decision function used by enforce, tests and learn.
//!
//! [`CompiledPolicy::compile`] takes a profile flattened by `profile::snippets::resolve`, expands
//! its `${VARS}` against an [`Env`] (values glob-escaped), and builds one `GlobSet` per
//! (effect, verb) for paths, the same for unix socket paths and abstract names, a list of
//! tcp/udp rules, and the syscall allow set.
//!
//! Semantics (docs/profile-format.md, "Semantics"):
//! - an access implies one or more verbs ([`verbs_of`]); every implied verb must be allowed,
//!   and a `deny` rule matching ANY implied verb on ANY checked path wins over every allow;
//! - a path object is checked as written (`abs`) AND where it leads (`resolved`), except that
//!   `/proc/self/X` resolving to `/proc/<pid>/X` is the same object;
//! - a read, exec or stat allowed only by a `probe` rule is [`Decision::AllowIfAbsent`];
//! - stat is also allowed by a read, write, exec or delete rule on the same path.
//!
//! Pure: no I/O; matching works on path bytes (non-UTF-8 included).

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::net::IpAddr;

use globset::{Candidate, GlobSet, GlobSetBuilder};

pub mod persistence;

use crate::event::{Access, AccessSet, Event, EventKind, Object, Outcome, PathObj, SockAddr};
use crate::profile::parse::{HostPat, ParseErrorKind, glob_builder, parse_inet_addr};
use crate::profile::parse::{ParseErrors, parse_str};
use crate::profile::render::{quote_if_needed, render_rule};
use crate::profile::snippets::{Origin, ResolveError, Resolved, resolve};
use crate::profile::vars::{
    CWD_ANCESTORS, Env, VarError, escape_glob, expand, expand_ancestors, path_to_text,
};
use crate::profile::{Effect, Pattern, Proto, Span, Verb};

/// The verdict on one access.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    Allow,
    /// Allowed only if the path does not exist (a `probe` rule): the tracer must check.
    AllowIfAbsent,
    Deny {
        verb: Verb,
        reason: DenyReason,
    },
}

/// Why an access was denied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DenyReason {
    /// No allow rule covers it.
    NoRule,
    /// An explicit `deny` rule matched.
    DenyRule {
        /// The rule as rendered (`deny read ${HOME}/.ssh/**`).
        rule: String,
        origin: Origin,
        span: Span,
    },
}

impl fmt::Display for DenyReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DenyReason::NoRule => write!(f, "no rule allows it"),
            DenyReason::DenyRule { rule, origin, span } => write!(
                f,
                "denied by \"{rule}\" at {}:{}:{}",
                origin.file, span.line, span.col
            ),
        }
    }
}

/// A rule that could not be compiled, with where it came from.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}:{}:{}: {kind}", span.line, span.col)]
pub struct PolicyError {
    pub file: String,
    pub span: Span,
    pub kind: PolicyErrorKind,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PolicyErrorKind {
    #[error("{0}")]
    Var(#[from] VarError),
    #[error("pattern {pattern:?} is not absolute after expansion (expanded to {expanded:?})")]
    NotAbsolute { pattern: String, expanded: String },
    #[error("bad glob {pattern:?}: {message}")]
    Glob { pattern: String, message: String },
    #[error(
        "{pattern:?} would let the workload reach HOME's own files ({home}/.ssh...): the workload starts in {cwd}, which is HOME or above it; start it in the project directory"
    )]
    CwdCoversHome {
        pattern: String,
        cwd: String,
        home: String,
    },
    #[error(
        "{pattern:?} would let the workload write HOME's own files ({home}/.bashrc...): TMPDIR is {tmpdir}; set TMPDIR to a private directory outside HOME"
    )]
    TmpdirCoversHome {
        pattern: String,
        tmpdir: String,
        home: String,
    },
    #[error("{0}")]
    Net(ParseErrorKind),
    #[error(
        "unknown program {name:?} in the \"by\" list (define it with `program {name} PATH-GLOB`, or include the snippet that does)"
    )]
    UnknownProgram { name: String },
    #[error("more than 64 different \"by\" lists: use fewer program combinations")]
    TooManyScopes,
    #[error(
        "\"by\" cannot apply to syscall rules: gated syscalls are allowed in the kernel, for every process"
    )]
    ScopedSyscall,
}

/// Which `by` lists a process's exec chain satisfies (docs/profile-format.md, "Rights bound
/// to programs"): bit `i` for the policy's list `i`. A chain holds a list when every program
/// from its first one that is not a launcher down to the process is in the list; the
/// launchers that started the chain (the CI shell, `make`, `env`: `launcher` lines) stand
/// outside it, and each holds only the lists that name it. Fork keeps the scope, exec narrows
/// it ([`CompiledPolicy::program_mask`], [`CompiledPolicy::is_launcher`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Scope {
    held: u64,
    /// Every program of the chain so far was a launcher: the next exec starts from every
    /// list again.
    launching: bool,
}

impl Scope {
    /// No program yet (the chain is empty): every list holds.
    pub const ROOT: Scope = Scope {
        held: u64::MAX,
        launching: true,
    };
    /// Holds no scoped right: only rules without `by` apply.
    pub const NONE: Scope = Scope {
        held: 0,
        launching: false,
    };

    /// A scope past its launchers that holds the lists of `held`'s bits.
    pub const fn with_held(held: u64) -> Scope {
        Scope {
            held,
            launching: false,
        }
    }

    pub fn holds(self, list: u32) -> bool {
        list < 64 && self.held & (1u64 << list) != 0
    }

    /// The lists held, one bit each (what a decision depends on).
    pub fn held_bits(self) -> u64 {
        self.held
    }

    /// Only launchers (or nothing) ran on this chain so far.
    pub fn launching(self) -> bool {
        self.launching
    }

    /// The scope after the process exec'd a program that is in `mask`'s lists; `launcher`:
    /// the program is a launcher, which at the start of a chain does not narrow what the
    /// programs it starts may hold.
    pub fn exec(self, mask: u64, launcher: bool) -> Scope {
        let from = if self.launching { u64::MAX } else { self.held };
        Scope {
            held: from & mask,
            launching: self.launching && launcher,
        }
    }
}

/// A `program` or `launcher` line's path glob, expanded for this run and compiled.
fn compile_program_glob(
    path: &str,
    env: &Env,
    span: Span,
    origin: &Origin,
) -> Result<(String, globset::Glob), PolicyError> {
    let err = |kind| PolicyError {
        file: origin.file.clone(),
        span,
        kind,
    };
    let expanded = expand(path, env).map_err(|e| err(e.into()))?;
    let glob = glob_builder(&expanded).build().map_err(|e| {
        err(PolicyErrorKind::Glob {
            pattern: path.to_string(),
            message: e.kind().to_string(),
        })
    })?;
    Ok((expanded, glob))
}

/// Does `glob` match the files of HOME a workload must never write (shell start-up files,
/// ssh keys)?
fn reaches_home_files(glob: &globset::GlobMatcher, env: &Env) -> bool {
    let home = env.home.trim_end_matches('/');
    [
        ".bashrc",
        ".profile",
        ".ssh/id_rsa",
        ".aws/credentials",
        ".ssh/authorized_keys",
        ".config/autostart/x.desktop",
    ]
    .iter()
    .any(|f| glob.is_match(format!("{home}/{f}")))
}

/// Is HOME inside (or equal to) the start directory, or the start directory the root?
fn cwd_covers_home(env: &Env) -> bool {
    let cwd = env.cwd.trim_end_matches('/');
    let home = env.home.trim_end_matches('/');
    cwd.is_empty()
        || (!home.is_empty()
            && (home == cwd || home.strip_prefix(cwd).is_some_and(|r| r.starts_with('/'))))
}

/// Is HOME inside (or equal to) TMPDIR, or TMPDIR the root?
fn tmpdir_covers_home(env: &Env) -> bool {
    let tmp = env.tmpdir.trim_end_matches('/');
    let home = env.home.trim_end_matches('/');
    tmp.is_empty()
        || (!home.is_empty()
            && (home == tmp || home.strip_prefix(tmp).is_some_and(|r| r.starts_with('/'))))
}

/// May `${CWD_ANCESTORS}` name `dir`, an ancestor of the start directory? Not when it is a
/// secret place or below one (a workload started inside `~/.ssh` does not get to list it):
/// the places learn never widens into (`learn::generalize::is_secret`). HOME itself may be
/// listed (docs/security.md, "Ancestors of the start directory").
fn ancestor_listable(dir: &str, env: &Env) -> bool {
    let home = env.home.trim_end_matches('/');
    let abstracted = match dir.strip_prefix(home).and_then(|r| r.strip_prefix('/')) {
        Some(rel) if !home.is_empty() => format!("${{HOME}}/{}", escape_glob(rel)),
        _ => escape_glob(dir),
    };
    !crate::learn::generalize::is_secret(&abstracted)
}

/// Is target `t` of the recorded call `sc` a mkdir that found its name taken (EEXIST, its
/// create settled as a write: `mkdir -p` of an existing directory)? It made and changed
/// nothing: a look at the name. Enforce decides it as a `stat` where it answers EEXIST itself
/// (`EnforceSink::mkdir_look`), learn learns it so, and [`CompiledPolicy::admits_event`]
/// judges it so. Not with `..` in the path as written: enforce lets the kernel answer those
/// and decides the write the trace says.
pub fn mkdir_found_existing(sc: &crate::event::Syscall, t: &crate::event::Target) -> bool {
    const EEXIST: i32 = 17;
    sc.name.starts_with("mkdir")
        && sc.outcome == Outcome::Errno(EEXIST)
        && t.access == AccessSet::of(Access::Write)
        && matches!(&t.object, Object::Path(p)
            if !p.literal.split(|&b| b == b'/').any(|c| c == b".."))
}

/// The verbs an access implies (every one must be allowed).
pub fn verbs_of(access: AccessSet) -> Vec<Verb> {
    let mut verbs = BTreeSet::new();
    for a in access.iter() {
        match a {
            Access::Read => {
                verbs.insert(Verb::Read);
            }
            Access::Create => {
                verbs.insert(Verb::Create);
            }
            Access::Write | Access::Truncate | Access::Chmod | Access::Chown | Access::Symlink => {
                verbs.insert(Verb::Write);
            }
            Access::Delete | Access::Rename => {
                verbs.insert(Verb::Delete);
            }
            // A hard link gives a second name to the source: it needs read and write on it.
            Access::Link => {
                verbs.insert(Verb::Read);
                verbs.insert(Verb::Write);
            }
            Access::Exec => {
                verbs.insert(Verb::Exec);
            }
            Access::Stat | Access::Chdir => {
                verbs.insert(Verb::Stat);
            }
            Access::Connect => {
                verbs.insert(Verb::Connect);
            }
            Access::Bind | Access::Listen => {
                verbs.insert(Verb::Bind);
            }
            Access::Send => {
                verbs.insert(Verb::Send);
            }
            Access::Resolve => {
                verbs.insert(Verb::Resolve);
            }
        }
    }
    // A new name: nothing is there to read, and what is written is the run's own (the sink
    // turns `Create` into `Write` when the path exists, see docs/profile-format.md).
    if access.contains(Access::Create) {
        verbs.remove(&Verb::Read);
        verbs.remove(&Verb::Write);
    }
    verbs.into_iter().collect()
}

/// Paths that neither an `own` area nor provenance (what the run created) may write or
/// create: git control paths (a hook is code that git runs later, outside the sandbox, and a
/// repository's config can name programs too: `core.fsmonitor`, `core.pager`) and the other
/// persistence places ([`persistence`]). Only a `write` or `create` rule naming them exactly
/// allows them (a glob does not), and only a `delete` rule naming them exactly lets them be
/// moved away. By spelling; enforce also asks what git would read
/// ([`Provenance::git_controlled`]).
pub fn owner_excluded(path: &[u8]) -> bool {
    persistence::owner_excluded(path)
}

/// What the running workload created itself (enforce tracks it by inode): it may read,
/// write and delete those objects, and create names in directories it created, without a
/// rule naming them. Implemented by the enforce sink; the policy asks only where no rule
/// decides.
pub trait Provenance {
    /// Was the object at `path` (not following a final symlink) created by this run?
    fn owns(&self, path: &[u8]) -> bool;
    /// Is nothing at `path`, in a directory this run created (a lookup that can find
    /// nothing but what the run made)?
    fn absent_in_owned(&self, path: &[u8]) -> bool;
    /// Would git read a write or create of `path` as a repository's configuration or hooks,
    /// by what is on disk now ([`persistence::git_controlled`])? Asked only where an area, a
    /// glob or provenance would admit the write. Learn's replay has no disk: spelling only.
    fn git_controlled(&self, _path: &[u8]) -> bool {
        false
    }
}

/// Anything that can go wrong between profile text and a compiled policy.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LoadError {
    #[error("{0}")]
    Parse(#[from] ParseErrors),
    #[error("{0}")]
    Resolve(#[from] ResolveError),
    #[error("{0}")]
    Compile(#[from] PolicyError),
}

/// Where a compiled rule came from, for deny messages.
#[derive(Debug, Clone)]
struct RuleRef {
    text: String,
    origin: Origin,
    span: Span,
}

/// A GlobSet plus, per glob index, the rule it came from.
#[derive(Debug, Clone)]
struct PathSet {
    set: GlobSet,
    rules: Vec<usize>,
    /// Per glob: it names one path exactly (no glob character once expanded), the only
    /// kind of rule that admits writing a persistence place ([`owner_excluded`]).
    exact: Vec<bool>,
}

impl PathSet {
    fn first_match(&self, c: &Candidate<'_>) -> Option<usize> {
        if self.set.is_empty() {
            return None;
        }
        self.set
            .matches_candidate(c)
            .first()
            .and_then(|&i| self.rules.get(i).copied())
    }

    fn is_match(&self, c: &Candidate<'_>) -> bool {
        !self.set.is_empty() && self.set.is_match_candidate(c)
    }

    /// The first rule (in profile order) whose glob names exactly this path.
    fn first_exact_match(&self, c: &Candidate<'_>) -> Option<usize> {
        if self.set.is_empty() {
            return None;
        }
        self.set
            .matches_candidate(c)
            .into_iter()
            .filter(|&i| self.exact.get(i).copied().unwrap_or(false))
            .filter_map(|i| self.rules.get(i).copied())
            .min()
    }

    /// Does a glob that names exactly this path match it?
    fn is_exact_match(&self, c: &Candidate<'_>) -> bool {
        !self.set.is_empty()
            && self
                .set
                .matches_candidate(c)
                .iter()
                .any(|&i| self.exact.get(i).copied().unwrap_or(false))
    }
}

/// Does an expanded pattern name one path exactly (no unescaped glob character)?
fn names_exactly(expanded: &str) -> bool {
    let mut it = expanded.chars();
    while let Some(c) = it.next() {
        match c {
            '\\' => {
                it.next();
            }
            '*' | '?' | '[' | '{' => return false,
            _ => {}
        }
    }
    true
}

#[derive(Debug)]
struct SetBuilder {
    builder: GlobSetBuilder,
    rules: Vec<usize>,
    exact: Vec<bool>,
}

impl Default for SetBuilder {
    fn default() -> Self {
        SetBuilder {
            builder: GlobSetBuilder::new(),
            rules: Vec::new(),
            exact: Vec::new(),
        }
    }
}

/// Which name space a glob rule matches in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
enum Space {
    /// Files (read, write, ... and unix socket paths share globs but not sets).
    Path,
    UnixPath,
    UnixAbstract,
}

#[derive(Debug, Clone)]
struct NetRule {
    effect: Effect,
    verb: Verb,
    proto: Proto,
    host: HostRule,
    port: Option<u16>,
    rule: usize,
    /// The `by` list that holds it (index into `CompiledPolicy::lists`), `None`: everyone.
    by: Option<u32>,
}

impl NetRule {
    fn held(&self, scope: Scope) -> bool {
        self.by.is_none_or(|l| scope.holds(l))
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum HostRule {
    Any,
    Ip(IpAddr),
    /// A name glob: matches an address that a matching name resolved to in this run.
    Name(String),
}

impl HostRule {
    fn matches(&self, ip: IpAddr, names: &[String]) -> bool {
        match self {
            HostRule::Any => true,
            HostRule::Ip(h) => *h == ip,
            HostRule::Name(p) => names.iter().any(|n| crate::dns::name_matches(p, n)),
        }
    }
}

/// One check of one verb on one object.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Check {
    Allow,
    IfAbsent,
    NoRule,
    /// Index into `rules`.
    DenyRule(usize),
}

/// A failed (or conditional) check, with the object in profile syntax.
#[derive(Debug, Clone)]
struct Finding {
    verb: Verb,
    object: String,
    check: Check,
    /// The rules that decided it (filled only for `sbx explain`: [`Findings::explain`]).
    why: Why,
}

impl Finding {
    fn new(verb: Verb, object: String, check: Check) -> Finding {
        Finding {
            verb,
            object,
            check,
            why: Why::default(),
        }
    }
}

/// Where the checks of one decision go. The enforce hot path keeps only the checks that are
/// not allowed; `sbx explain` ([`CompiledPolicy::explain_in`]) keeps every check with the
/// rules that decided it.
#[derive(Debug, Default)]
struct Findings {
    list: Vec<Finding>,
    explain: bool,
}

impl Findings {
    fn push(&mut self, f: Finding) {
        if self.explain || f.check != Check::Allow {
            self.list.push(f);
        }
    }
}

/// Which rules decided one check (indexes for [`CompiledPolicy::rule_ref`]), as the decision
/// code found them: see [`CompiledPolicy::explain_in`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Why {
    /// The deciding rules: the first matching allow rule (in profile order) of the verb that
    /// allowed it, the deny rule that won, the probe rule, the `syscall` rule.
    pub rules: Vec<usize>,
    /// Allow rules bound to programs (`by`) that match, but whose list the caller's exec
    /// chain does not hold.
    pub unheld: Vec<usize>,
    /// No rule decided it: what the run created itself admitted it ([`Provenance`]).
    pub provenance: bool,
    /// A `probe` rule decided it (allowed while the path is missing, or the call failed
    /// with ENOENT).
    pub probe: bool,
    /// Refused by a deny rule: the allow rule it wins over (the first matching one).
    pub overridden: Option<usize>,
    /// `own` rules that match but do not write or create git hooks and configs
    /// ([`owner_excluded`]).
    pub excluded: Vec<usize>,
}

/// The outcome of one check of one verb on one object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Allow,
    /// Allowed only while the path does not exist (a probe rule).
    AllowIfAbsent,
    /// No rule allows it.
    NoRule,
    /// A `deny` rule refuses it.
    DenyRule,
}

/// One check of one verb on one object, with what decided it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checked {
    pub verb: Verb,
    /// The object in profile syntax.
    pub object: String,
    pub verdict: Verdict,
    pub why: Why,
}

/// A compiled rule as the profile wrote it, and where.
#[derive(Debug, Clone, Copy)]
pub struct RuleInfo<'a> {
    pub text: &'a str,
    pub origin: &'a Origin,
    pub span: Span,
}

/// A profile compiled for matching. Build with [`CompiledPolicy::compile`].
#[derive(Debug, Clone)]
pub struct CompiledPolicy {
    rules: Vec<RuleRef>,
    sets: BTreeMap<(Space, Effect, Verb), PathSet>,
    /// Allow rules with a `by` list: per (space, verb), (list index, globs).
    scoped: BTreeMap<(Space, Verb), Vec<(u32, PathSet)>>,
    /// The distinct `by` lists (sorted names) and, per list, the identities its programs match.
    lists: Vec<(Vec<String>, GlobSet)>,
    /// The identities of the `launcher` lines.
    launchers: GlobSet,
    /// `program` definitions: name -> the identities it matches.
    programs: Vec<(String, GlobSet)>,
    /// `env NAME by LIST` rules: (variable name glob, list index).
    env: Vec<(globset::GlobMatcher, u32)>,
    net: Vec<NetRule>,
    /// `resolve NAME` rules: (effect, name glob, rule index).
    resolve: Vec<(Effect, String, usize)>,
    syscalls_allow: BTreeSet<String>,
    syscalls_deny: BTreeSet<String>,
    /// The answers of path checks already made ([`Memo`]).
    memo: std::cell::RefCell<Memo>,
}

/// What decides one path check besides the path: the rules are fixed once compiled, so
/// [`CompiledPolicy::glob_decide`] answers the same for the same key and path.
type MemoKey = (Space, Verb, bool, bool, u64);

/// Path check answers remembered, so a path checked again (every program opens the same
/// libraries, a build the same headers) costs a hash lookup instead of glob matching.
/// Bounded: forgotten all at once when full.
#[derive(Debug, Clone, Default)]
struct Memo {
    answers: std::collections::HashMap<MemoKey, std::collections::HashMap<Box<[u8]>, Check>>,
    len: usize,
}

/// The most answers [`Memo`] keeps (about 100 bytes each).
const MEMO_MAX: usize = 16_384;

impl Memo {
    fn get(&self, key: MemoKey, path: &[u8]) -> Option<Check> {
        self.answers.get(&key)?.get(path).copied()
    }

    fn put(&mut self, key: MemoKey, path: &[u8], check: Check) {
        if self.len >= MEMO_MAX {
            self.answers.clear();
            self.len = 0;
        }
        if self
            .answers
            .entry(key)
            .or_default()
            .insert(path.into(), check)
            .is_none()
        {
            self.len += 1;
        }
    }
}

impl CompiledPolicy {
    /// Expand and compile every rule. Errors name the rule's file, line and column.
    pub fn compile(resolved: &Resolved, env: &Env) -> Result<CompiledPolicy, PolicyError> {
        let mut rules = Vec::new();
        let mut builders: BTreeMap<(Space, Effect, Verb), SetBuilder> = BTreeMap::new();
        let mut net = Vec::new();
        let mut resolve_rules = Vec::new();
        let mut syscalls_allow = BTreeSet::new();
        let mut syscalls_deny = BTreeSet::new();
        let mut scoped_builders: BTreeMap<(Space, Verb, u32), SetBuilder> = BTreeMap::new();
        let mut env_rules = Vec::new();
        let mut lists: Vec<Vec<String>> = Vec::new();
        // Program definitions first: a `by` list may name a program defined anywhere.
        let mut programs: BTreeMap<String, Vec<(String, globset::Glob)>> = BTreeMap::new();
        let mut launchers = GlobSetBuilder::new();
        for (rule, origin) in &resolved.rules {
            if rule.verb == Verb::Launcher
                && let Pattern::Path(path) = &rule.pattern
            {
                launchers.add(compile_program_glob(path, env, rule.span, origin)?.1);
                continue;
            }
            if let Pattern::Program { name, path } = &rule.pattern {
                programs
                    .entry(name.clone())
                    .or_default()
                    .push(compile_program_glob(path, env, rule.span, origin)?);
            }
        }
        for (rule, origin) in &resolved.rules {
            if matches!(rule.pattern, Pattern::Program { .. }) || rule.verb == Verb::Launcher {
                continue;
            }
            let idx = rules.len();
            rules.push(RuleRef {
                text: render_rule(rule),
                origin: origin.clone(),
                span: rule.span,
            });
            let err = |kind| PolicyError {
                file: origin.file.clone(),
                span: rule.span,
                kind,
            };
            // A ${TMPDIR} write or delete rule (the `tmp` snippet: `write ${TMPDIR}/**`) is
            // meant for scratch files: refuse to start when TMPDIR is HOME, `/` or above HOME
            // (~/.bashrc, ~/.ssh would be writable) rather than widen silently.
            // Likewise an area of the start directory (`read ${CWD}/**`, `own ${CWD}/x`) when
            // the workload starts at HOME or above it: ~/.ssh would be part of "the project".
            if rule.effect == Effect::Allow
                && matches!(
                    rule.verb,
                    Verb::Read | Verb::Write | Verb::Create | Verb::Delete | Verb::Own
                )
                && let Pattern::Path(pattern) = &rule.pattern
                && pattern.starts_with("${CWD}")
                && cwd_covers_home(env)
                && let Ok(expanded) = expand(pattern, env)
                && let Ok(glob) = glob_builder(&expanded).build()
                && reaches_home_files(&glob.compile_matcher(), env)
            {
                return Err(err(PolicyErrorKind::CwdCoversHome {
                    pattern: pattern.clone(),
                    cwd: env.cwd.clone(),
                    home: env.home.clone(),
                }));
            }
            if rule.effect == Effect::Allow
                && matches!(
                    rule.verb,
                    Verb::Write | Verb::Delete | Verb::Create | Verb::Own
                )
                && let Pattern::Path(pattern) = &rule.pattern
                && pattern.starts_with("${TMPDIR}")
                && tmpdir_covers_home(env)
                && let Ok(expanded) = expand(pattern, env)
                && let Ok(glob) = glob_builder(&expanded).build()
                && reaches_home_files(&glob.compile_matcher(), env)
            {
                return Err(err(PolicyErrorKind::TmpdirCoversHome {
                    pattern: pattern.clone(),
                    tmpdir: env.tmpdir.clone(),
                    home: env.home.clone(),
                }));
            }
            // The `by` list this rule is held by, as an index into `lists`.
            let by: Option<u32> = if rule.by.is_empty() {
                None
            } else {
                if matches!(rule.pattern, Pattern::Syscall(_)) {
                    return Err(err(PolicyErrorKind::ScopedSyscall));
                }
                if let Some(name) = rule.by.iter().find(|n| !programs.contains_key(*n)) {
                    return Err(err(PolicyErrorKind::UnknownProgram { name: name.clone() }));
                }
                let mut names = rule.by.clone();
                names.sort();
                names.dedup();
                let i = match lists.iter().position(|l| *l == names) {
                    Some(i) => i,
                    None => {
                        if lists.len() >= 64 {
                            return Err(err(PolicyErrorKind::TooManyScopes));
                        }
                        lists.push(names);
                        lists.len() - 1
                    }
                };
                Some(u32::try_from(i).unwrap_or(u32::MAX))
            };
            let mut add_glob = |space: Space, pattern: &str, absolute: bool| {
                let expanded = expand(pattern, env).map_err(|e| err(e.into()))?;
                if absolute && !(expanded.starts_with('/') || expanded.starts_with("**")) {
                    return Err(err(PolicyErrorKind::NotAbsolute {
                        pattern: pattern.to_string(),
                        expanded,
                    }));
                }
                let glob = glob_builder(&expanded).build().map_err(|e| {
                    err(PolicyErrorKind::Glob {
                        pattern: pattern.to_string(),
                        message: e.kind().to_string(),
                    })
                })?;
                let b = match by {
                    Some(l) => scoped_builders.entry((space, rule.verb, l)).or_default(),
                    None => builders.entry((space, rule.effect, rule.verb)).or_default(),
                };
                b.builder.add(glob);
                b.rules.push(idx);
                b.exact.push(names_exactly(&expanded));
                Ok(())
            };
            match &rule.pattern {
                // An area is the path and everything below it.
                Pattern::Path(p) if rule.verb == Verb::Own => {
                    add_glob(Space::Path, p, true)?;
                    let below = if p.ends_with('/') {
                        format!("{p}**")
                    } else {
                        format!("{p}/**")
                    };
                    add_glob(Space::Path, &below, true)?;
                }
                // The directories above the start directory: one literal glob each
                // (globset's literal strategy, a hash lookup: nothing more per check).
                Pattern::Path(p) if p == CWD_ANCESTORS => {
                    for dir in expand_ancestors(env, &|dir| ancestor_listable(dir, env)) {
                        add_glob(Space::Path, &dir, true)?;
                    }
                }
                Pattern::Path(p) => add_glob(Space::Path, p, true)?,
                Pattern::Net {
                    proto: Proto::Unix,
                    addr,
                } => match addr.strip_prefix('@') {
                    Some(name) => add_glob(Space::UnixAbstract, name, false)?,
                    None => add_glob(Space::UnixPath, addr, true)?,
                },
                Pattern::Net {
                    proto: Proto::Netlink,
                    addr,
                } => {
                    let protocol = crate::profile::netlink_protocol(addr).map_err(|message| {
                        err(PolicyErrorKind::Net(
                            crate::profile::parse::ParseErrorKind::BadNetlink { message },
                        ))
                    })?;
                    // For netlink rules, `port` holds the netlink protocol (None = any).
                    net.push(NetRule {
                        effect: rule.effect,
                        verb: rule.verb,
                        proto: Proto::Netlink,
                        host: HostRule::Any,
                        port: protocol,
                        rule: idx,
                        by,
                    });
                }
                Pattern::Net { proto, addr } => {
                    let a = parse_inet_addr(addr).map_err(|k| err(PolicyErrorKind::Net(k)))?;
                    let hosts = match a.host {
                        None => vec![HostRule::Any],
                        Some(HostPat::Ip(ip)) => vec![HostRule::Ip(ip.to_canonical())],
                        Some(HostPat::Name(n)) => vec![HostRule::Name(n)],
                        // No name server known: the rule admits nothing (fail closed).
                        Some(HostPat::Nameservers) => env
                            .get("NAMESERVERS")
                            .unwrap_or_default()
                            .split_whitespace()
                            .filter_map(|w| w.parse::<IpAddr>().ok())
                            .map(|ip| HostRule::Ip(ip.to_canonical()))
                            .collect(),
                    };
                    for host in hosts {
                        net.push(NetRule {
                            effect: rule.effect,
                            verb: rule.verb,
                            proto: *proto,
                            host,
                            port: a.port,
                            rule: idx,
                            by,
                        });
                    }
                }
                Pattern::Host(name) => resolve_rules.push((rule.effect, name.clone(), idx)),
                Pattern::Syscall(name) => {
                    match rule.effect {
                        Effect::Allow => syscalls_allow.insert(name.clone()),
                        Effect::Deny => syscalls_deny.insert(name.clone()),
                    };
                }
                Pattern::Program { .. } => {}
                Pattern::Env(name) => {
                    let glob = globset::GlobBuilder::new(name)
                        .literal_separator(true)
                        .build()
                        .map_err(|e| {
                            err(PolicyErrorKind::Glob {
                                pattern: name.clone(),
                                message: e.kind().to_string(),
                            })
                        })?;
                    // Parsing requires a `by` list on every env rule.
                    if let Some(l) = by {
                        env_rules.push((glob.compile_matcher(), l));
                    }
                }
            }
        }
        let build_err = |rules: &[RuleRef], first: Option<usize>, e: globset::Error| {
            let first = first.and_then(|i| rules.get(i));
            PolicyError {
                file: first.map(|r| r.origin.file.clone()).unwrap_or_default(),
                span: first.map(|r| r.span).unwrap_or_default(),
                kind: PolicyErrorKind::Glob {
                    pattern: e.glob().unwrap_or("").to_string(),
                    message: e.kind().to_string(),
                },
            }
        };
        let mut scoped: BTreeMap<(Space, Verb), Vec<(u32, PathSet)>> = BTreeMap::new();
        for ((space, verb, l), b) in scoped_builders {
            let first = b.rules.first().copied();
            let set = b.builder.build().map_err(|e| build_err(&rules, first, e))?;
            scoped.entry((space, verb)).or_default().push((
                l,
                PathSet {
                    set,
                    rules: b.rules,
                    exact: b.exact,
                },
            ));
        }
        let mut compiled_lists = Vec::new();
        for names in lists {
            let mut b = GlobSetBuilder::new();
            for n in &names {
                for (_, g) in programs.get(n).into_iter().flatten() {
                    b.add(g.clone());
                }
            }
            let set = b.build().map_err(|e| build_err(&rules, None, e))?;
            compiled_lists.push((names, set));
        }
        let mut program_sets = Vec::new();
        for (name, globs) in programs {
            let mut b = GlobSetBuilder::new();
            for (_, g) in globs {
                b.add(g);
            }
            let set = b.build().map_err(|e| build_err(&rules, None, e))?;
            program_sets.push((name, set));
        }
        let mut sets = BTreeMap::new();
        for (key, b) in builders {
            let set = b.builder.build().map_err(|e| {
                let first = b.rules.first().and_then(|&i| rules.get(i));
                PolicyError {
                    file: first.map(|r| r.origin.file.clone()).unwrap_or_default(),
                    span: first.map(|r| r.span).unwrap_or_default(),
                    kind: PolicyErrorKind::Glob {
                        pattern: e.glob().unwrap_or("").to_string(),
                        message: e.kind().to_string(),
                    },
                }
            })?;
            sets.insert(
                key,
                PathSet {
                    set,
                    rules: b.rules,
                    exact: b.exact,
                },
            );
        }
        let launchers = launchers.build().map_err(|e| build_err(&rules, None, e))?;
        Ok(CompiledPolicy {
            rules,
            sets,
            scoped,
            lists: compiled_lists,
            launchers,
            programs: program_sets,
            env: env_rules,
            net,
            resolve: resolve_rules,
            syscalls_allow,
            syscalls_deny,
            memo: Default::default(),
        })
    }

    /// Whether an allow rule names an abstract unix socket (`unix @NAME`): then sbx does not
    /// scope abstract sockets in-kernel (`tracer::landlock`), which would refuse those made
    /// outside the run.
    pub fn allows_abstract_unix(&self) -> bool {
        self.sets
            .keys()
            .any(|(space, effect, _)| *space == Space::UnixAbstract && *effect == Effect::Allow)
            || self
                .scoped
                .keys()
                .any(|(space, _)| *space == Space::UnixAbstract)
    }

    /// Whether any rule has a `by` list (else a process's exec chain never matters).
    pub fn has_scopes(&self) -> bool {
        !self.lists.is_empty()
    }

    /// The `by` lists (bits) whose programs include the program identity `program` (an
    /// absolute path: a script, else the executable; [`crate::identity`]).
    pub fn program_mask(&self, program: &[u8]) -> u64 {
        let text = path_to_text(program);
        let cand = Candidate::from_bytes(text.as_bytes());
        let mut mask = 0u64;
        for (i, (_, set)) in self.lists.iter().enumerate() {
            if i < 64 && set.is_match_candidate(&cand) {
                mask |= 1u64 << i;
            }
        }
        mask
    }

    /// Whether the program identity `program` is a launcher (a `launcher` line matches it).
    pub fn is_launcher(&self, program: &[u8]) -> bool {
        let text = path_to_text(program);
        self.launchers
            .is_match_candidate(&Candidate::from_bytes(text.as_bytes()))
    }

    /// The name of the first `program` definition (by name) that matches identity `program`.
    pub fn program_name(&self, program: &[u8]) -> Option<&str> {
        let text = path_to_text(program);
        let cand = Candidate::from_bytes(text.as_bytes());
        self.programs
            .iter()
            .find(|(_, set)| set.is_match_candidate(&cand))
            .map(|(n, _)| n.as_str())
    }

    /// Whether some `env` rule names variables to keep from programs outside its list.
    pub fn has_env_rules(&self) -> bool {
        !self.env.is_empty()
    }

    /// Whether a program whose exec chain holds `scope` may see the environment variable
    /// `name`: yes unless an `env` rule names it, and then only when one of the rules naming
    /// it holds.
    pub fn env_visible(&self, scope: Scope, name: &[u8]) -> bool {
        // A launcher at the start of the chain passes its environment on to the programs it
        // starts, which start from every list (`bash -c 'npm publish'` keeps NPM_TOKEN).
        if scope.launching() {
            return true;
        }
        let text = String::from_utf8_lossy(name);
        let mut named = false;
        for (m, l) in &self.env {
            if m.is_match(text.as_ref()) {
                if scope.holds(*l) {
                    return true;
                }
                named = true;
            }
        }
        !named
    }

    /// The program names of the `by` lists `scope` holds, for messages.
    pub fn scope_names(&self, scope: Scope) -> Vec<&[String]> {
        self.lists
            .iter()
            .enumerate()
            .filter(|(i, _)| scope.holds(u32::try_from(*i).unwrap_or(u32::MAX)))
            .map(|(_, (names, _))| names.as_slice())
            .collect()
    }

    /// Parse, resolve includes against the shipped snippets, and compile, in one step.
    pub fn load(file: &str, text: &str, env: &Env) -> Result<CompiledPolicy, LoadError> {
        let profile = parse_str(file, text)?;
        let resolved = resolve(&profile, file)?;
        Ok(CompiledPolicy::compile(&resolved, env)?)
    }

    /// Decide one access to one object (see the module doc for the semantics).
    ///
    /// For inet sockets the protocol is not known here: a deny rule of either protocol wins,
    /// and an allow rule of either protocol allows. Use [`CompiledPolicy::decide_net`] when the
    /// caller knows the socket type.
    pub fn decide(&self, access: AccessSet, object: &Object) -> Decision {
        self.decide_in(Scope::NONE, access, object, None)
    }

    /// [`CompiledPolicy::decide`] for a caller whose exec chain holds `scope` (rules with a
    /// `by` list it satisfies apply too), with what the run created (`prov`, see
    /// [`CompiledPolicy::decide_owned`]).
    pub fn decide_in(
        &self,
        scope: Scope,
        access: AccessSet,
        object: &Object,
        prov: Option<&dyn Provenance>,
    ) -> Decision {
        let mut findings = Findings::default();
        self.check_target(access, object, false, prov, scope, &mut findings);
        self.fold(&findings.list)
    }

    /// [`CompiledPolicy::decide`] for a running workload: where no rule decides a read,
    /// write, create or delete of a path, `prov` says whether the run created the object
    /// (or, for a create, the directory it is made in).
    pub fn decide_owned(
        &self,
        access: AccessSet,
        object: &Object,
        prov: &dyn Provenance,
    ) -> Decision {
        self.decide_in(Scope::NONE, access, object, Some(prov))
    }

    /// Decide a network verb (connect, bind, send) with a known protocol.
    pub fn decide_net(&self, verb: Verb, proto: Proto, addr: &SockAddr) -> Decision {
        self.decide_net_named(verb, Some(proto), addr, &[])
    }

    /// [`Self::decide_net`] for a peer that `names` resolved to in this run (DNS answers or
    /// /etc/hosts): a rule naming any of them matches it as well as a rule naming the
    /// address. A deny rule matching the address or any name wins. `proto` `None`: either.
    pub fn decide_net_named(
        &self,
        verb: Verb,
        proto: Option<Proto>,
        addr: &SockAddr,
        names: &[String],
    ) -> Decision {
        self.decide_net_named_in(Scope::NONE, verb, proto, addr, names)
    }

    /// [`Self::decide_net_named`] for a caller whose exec chain holds `scope`.
    pub fn decide_net_named_in(
        &self,
        scope: Scope,
        verb: Verb,
        proto: Option<Proto>,
        addr: &SockAddr,
        names: &[String],
    ) -> Decision {
        let check = match addr {
            SockAddr::Inet { addr: a, port } => {
                self.inet_check(verb, proto, IpAddr::from(*a), *port, names, scope)
            }
            SockAddr::Inet6 { addr: a, port, .. } => self.inet_check(
                verb,
                proto,
                IpAddr::from(*a).to_canonical(),
                *port,
                names,
                scope,
            ),
            _ => self.check_net(verb, proto, addr, scope),
        };
        self.fold(&[Finding::new(verb, sockaddr_text(addr), check)])
    }

    /// Decide a DNS query for `name` (normalized): allowed by a `resolve` rule or by a
    /// tcp/udp rule naming it (`connect tcp registry.npmjs.org:443` implies resolving it);
    /// a `deny resolve` rule wins. Rules with `*` or an address as host do not count.
    pub fn decide_resolve(&self, name: &str) -> Decision {
        let check = self.resolve_check(name);
        self.fold(&[Finding::new(Verb::Resolve, name.to_string(), check)])
    }

    fn resolve_check(&self, name: &str) -> Check {
        self.resolve_decide(name, None)
    }

    fn resolve_decide(&self, name: &str, why: Option<&mut Why>) -> Check {
        let by_rule = |effect: Effect| {
            self.resolve
                .iter()
                .find(|(e, p, _)| *e == effect && crate::dns::name_matches(p, name))
                .map(|(_, _, i)| *i)
        };
        if let Some(i) = by_rule(Effect::Deny) {
            return Check::DenyRule(i);
        }
        let named = self.net.iter().find(|r| {
            r.effect == Effect::Allow
                && matches!(&r.host, HostRule::Name(p) if crate::dns::name_matches(p, name))
        });
        let allowed = by_rule(Effect::Allow);
        if named.is_some() || allowed.is_some() {
            if let Some(w) = why {
                w.rules
                    .extend(allowed.into_iter().chain(named.map(|r| r.rule)));
                w.rules.sort_unstable();
                w.rules.truncate(1);
            }
            Check::Allow
        } else {
            Check::NoRule
        }
    }

    /// Decide a bind/send/connect on a netlink socket of `protocol` (NETLINK_ROUTE = 0...),
    /// against `VERB netlink NAME` rules; deny rules win; an unknown protocol is allowed by
    /// nothing (fail closed).
    pub fn decide_netlink(&self, verb: Verb, protocol: Option<u16>) -> Decision {
        self.decide_netlink_in(Scope::NONE, verb, protocol)
    }

    /// [`Self::decide_netlink`] for a caller whose exec chain holds `scope`.
    pub fn decide_netlink_in(&self, scope: Scope, verb: Verb, protocol: Option<u16>) -> Decision {
        let check = self.netlink_check(verb, protocol, scope);
        self.fold(&[Finding::new(
            verb,
            format!("netlink {}", crate::profile::netlink_name(protocol)),
            check,
        )])
    }

    fn netlink_check(&self, verb: Verb, protocol: Option<u16>, scope: Scope) -> Check {
        self.netlink_decide(verb, protocol, scope, None)
    }

    fn netlink_decide(
        &self,
        verb: Verb,
        protocol: Option<u16>,
        scope: Scope,
        why: Option<&mut Why>,
    ) -> Check {
        let matching = |effect: Effect| {
            self.net.iter().find(|r| {
                r.effect == effect
                    && r.held(scope)
                    && r.verb == verb
                    && r.proto == Proto::Netlink
                    && r.port.is_none_or(|p| Some(p) == protocol)
            })
        };
        if let Some(r) = matching(Effect::Deny) {
            Check::DenyRule(r.rule)
        } else if let Some(r) = matching(Effect::Allow).filter(|_| protocol.is_some()) {
            if let Some(w) = why {
                w.rules.push(r.rule);
            }
            Check::Allow
        } else {
            Check::NoRule
        }
    }

    /// Whether any rule names hosts (`resolve` rules, tcp/udp rules with a host name): then
    /// DNS answers must be watched to link addresses to names.
    pub fn names_hosts(&self) -> bool {
        !self.resolve.is_empty() || self.net.iter().any(|r| matches!(r.host, HostRule::Name(_)))
    }

    /// Whether the gated syscall `name` is allowed (an allow rule and no deny rule).
    pub fn syscall_allowed(&self, name: &str) -> bool {
        self.syscalls_allow.contains(name) && !self.syscalls_deny.contains(name)
    }

    /// The allowed gated syscalls, sorted.
    pub fn allowed_syscalls(&self) -> Vec<String> {
        self.syscalls_allow
            .difference(&self.syscalls_deny)
            .cloned()
            .collect()
    }

    /// What in `ev` this policy does not admit (empty = admitted), as (verb, object) with the
    /// object in profile syntax. Used by learn's self-check.
    ///
    /// - Syscall events: every target is checked like [`CompiledPolicy::decide`]; when the
    ///   syscall failed with ENOENT a `probe` rule admits any path verb (a read rule admits
    ///   the failed read as well); an event without targets is a gated syscall and needs
    ///   `syscall NAME` (see [`CompiledPolicy::admits_event_with`] to gate named syscalls
    ///   that also have targets). A mkdir that found its name ([`mkdir_found_existing`])
    ///   is a look and is not judged.
    /// - Exec events need `exec` on the new program's path.
    /// - Spawn and exit events are always admitted.
    pub fn admits_event(&self, ev: &Event) -> Vec<(Verb, String)> {
        self.admits_event_with(ev, &|_| false)
    }

    /// [`CompiledPolicy::admits_event`], also requiring `syscall NAME` for every syscall event
    /// whose name `is_gated` accepts, whether or not it has targets.
    pub fn admits_event_with(
        &self,
        ev: &Event,
        is_gated: &dyn Fn(&str) -> bool,
    ) -> Vec<(Verb, String)> {
        self.admits_event_owned(ev, is_gated, None)
    }

    /// [`CompiledPolicy::admits_event_with`] with what the run created so far (`prov`), as
    /// enforce decides: for replaying a recorded run event by event.
    pub fn admits_event_owned(
        &self,
        ev: &Event,
        is_gated: &dyn Fn(&str) -> bool,
        prov: Option<&dyn Provenance>,
    ) -> Vec<(Verb, String)> {
        self.admits_event_in(ev, is_gated, prov, Scope::NONE)
    }

    /// [`CompiledPolicy::admits_event_owned`] for an event of a process whose exec chain
    /// holds `scope` (replay it from the trace's spawns and execs: [`ScopeTracker`]).
    pub fn admits_event_in(
        &self,
        ev: &Event,
        is_gated: &dyn Fn(&str) -> bool,
        prov: Option<&dyn Provenance>,
        scope: Scope,
    ) -> Vec<(Verb, String)> {
        let mut findings = Findings::default();
        self.event_checks(ev, is_gated, prov, scope, &mut findings);
        findings
            .list
            .into_iter()
            .filter(|f| f.check != Check::Allow)
            .map(|f| (f.verb, f.object))
            .collect()
    }

    /// The checks of one event ([`Self::admits_event_in`]), into `findings`.
    fn event_checks(
        &self,
        ev: &Event,
        is_gated: &dyn Fn(&str) -> bool,
        prov: Option<&dyn Provenance>,
        scope: Scope,
        findings: &mut Findings,
    ) {
        match &ev.kind {
            EventKind::Syscall(sc) => {
                // Targets without access are a gated call's decoded arguments (chroot's path).
                let gated_args = sc.targets.iter().all(|t| t.access.is_empty());
                let allowed = self.syscall_allowed(&sc.name);
                if (gated_args || is_gated(&sc.name)) && (findings.explain || !allowed) {
                    findings.push(self.syscall_finding(&sc.name, findings.explain));
                }
                let enoent = sc.outcome == Outcome::Errno(2);
                for t in &sc.targets {
                    // A look: enforce checks it (as a stat) only with --metadata, which
                    // the event does not say; free otherwise, as here.
                    if mkdir_found_existing(sc, t) {
                        continue;
                    }
                    let object = match &t.object {
                        Object::Path(p) => Object::Path(self_view(p, ev.pid)),
                        o => o.clone(),
                    };
                    self.check_target(t.access, &object, enoent, prov, scope, findings);
                }
            }
            EventKind::Exec(ex) => {
                let obj = Object::Path(PathObj {
                    literal: ex.path.clone(),
                    abs: ex.path.clone(),
                    resolved: None,
                });
                self.check_target(
                    AccessSet::of(Access::Exec),
                    &obj,
                    false,
                    None,
                    scope,
                    findings,
                );
            }
            EventKind::Spawn(_) | EventKind::Exit(_) | EventKind::Resolved(_) => {}
        }
    }

    /// Deny rules first, then missing rules, then probes.
    fn fold(&self, findings: &[Finding]) -> Decision {
        let worst = findings
            .iter()
            .filter(|f| f.check != Check::Allow)
            .max_by_key(|f| match f.check {
                Check::DenyRule(_) => 3,
                Check::NoRule => 2,
                Check::IfAbsent => 1,
                Check::Allow => 0,
            });
        match worst {
            None => Decision::Allow,
            Some(f) => match f.check {
                Check::Allow => Decision::Allow,
                Check::IfAbsent => Decision::AllowIfAbsent,
                Check::NoRule => Decision::Deny {
                    verb: f.verb,
                    reason: DenyReason::NoRule,
                },
                Check::DenyRule(i) => Decision::Deny {
                    verb: f.verb,
                    reason: match self.rules.get(i) {
                        Some(r) => DenyReason::DenyRule {
                            rule: r.text.clone(),
                            origin: r.origin.clone(),
                            span: r.span,
                        },
                        None => DenyReason::NoRule,
                    },
                },
            },
        }
    }

    /// Push one finding per (verb, checked object). With `enoent`, the syscall is known to
    /// have failed with ENOENT, so a probe rule admits every path verb without condition.
    fn check_target(
        &self,
        access: AccessSet,
        object: &Object,
        enoent: bool,
        prov: Option<&dyn Provenance>,
        scope: Scope,
        out: &mut Findings,
    ) {
        let verbs = verbs_of(access);
        // The source of a rename (read and delete: an unlink is delete alone): moving a git
        // control path away (`.git/hooks` out, edited, and back) is guarded like writing it.
        let moved = access.contains(Access::Read) && access.contains(Access::Delete);
        let anon = |out: &mut Findings, what: &[u8]| {
            // Pipes, memfds, sockets: nothing to name; only exec (fileless exec) is refused.
            if verbs.contains(&Verb::Exec) {
                out.push(Finding::new(
                    Verb::Exec,
                    quote_if_needed(&path_to_text(what)).into_owned(),
                    Check::NoRule,
                ));
            }
        };
        match object {
            // `fstat(pipe)` is `newfstatat(fd, "", AT_EMPTY_PATH)`, `fexecve(memfd)` is
            // `execveat(fd, "", AT_EMPTY_PATH)`: the decoder names the fd by its /proc link
            // (`pipe:[N]`, `/memfd:x (deleted)`), which is no path. Same as an Fd without a
            // path: allowed, except exec, whatever the rules say.
            // See: tests/enforce.rs::metadata_is_checked_only_with_the_flag
            // See: tests/enforce.rs::fileless_exec_is_refused_even_when_a_rule_names_it
            Object::Path(p) if is_fd_pseudo_name(p) => anon(out, &p.abs),
            Object::Path(p) => {
                let paths = candidates(p);
                self.check_paths(&verbs, &paths, enoent, moved, prov, scope, out);
            }
            Object::Fd {
                path: Some(path), ..
            } if path.starts_with(b"/") => {
                self.check_paths(&verbs, &[path.as_slice()], enoent, moved, prov, scope, out)
            }
            Object::Fd { path, fd } => {
                let what = path
                    .clone()
                    .unwrap_or_else(|| format!("fd {fd}").into_bytes());
                anon(out, &what);
            }
            Object::Anon(name) => anon(out, name),
            // Arguments of gated syscalls (always without access): `syscall NAME` decides.
            Object::Text(_) | Object::Ids(_) => {}
            Object::DnsName(name) => {
                if verbs.contains(&Verb::Resolve) {
                    let mut why = Why::default();
                    let check = self.resolve_decide(name, out.explain.then_some(&mut why));
                    if out.explain || check != Check::Allow {
                        let mut f = Finding::new(Verb::Resolve, name.clone(), check);
                        f.why = why;
                        out.push(f);
                    }
                }
            }
            Object::Socket(addr) => {
                for &verb in &verbs {
                    if !matches!(verb, Verb::Connect | Verb::Bind | Verb::Send) {
                        continue;
                    }
                    let mut why = Why::default();
                    let check = self.check_net_why(
                        verb,
                        None,
                        addr,
                        scope,
                        out.explain.then_some(&mut why),
                    );
                    // Allowed checks cost no string (the enforce hot path), but for explain.
                    if out.explain || check != Check::Allow {
                        let mut f = Finding::new(verb, sockaddr_text(addr), check);
                        f.why = why;
                        out.push(f);
                    }
                }
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn check_paths(
        &self,
        verbs: &[Verb],
        paths: &[&[u8]],
        enoent: bool,
        moved: bool,
        prov: Option<&dyn Provenance>,
        scope: Scope,
        out: &mut Findings,
    ) {
        for path in paths {
            for &verb in verbs {
                let (space, excluded) = match verb {
                    Verb::Connect | Verb::Bind | Verb::Send => (Space::UnixPath, false),
                    _ => (
                        Space::Path,
                        (matches!(verb, Verb::Write | Verb::Create)
                            || (moved && verb == Verb::Delete))
                            && owner_excluded(path),
                    ),
                };
                let key = (space, verb, enoent, excluded, scope.held_bits());
                // A name is created or deleted once, mostly: those answers are not kept
                // (they would only push out the ones asked again, reads of the same files).
                let keep = !matches!(verb, Verb::Create | Verb::Delete);
                let known = if keep {
                    self.memo.borrow().get(key, path)
                } else {
                    None
                };
                let mut why = Why::default();
                // `sbx explain` asks the same function, without the memo, for the rules.
                let mut check = match known.filter(|_| !out.explain) {
                    Some(check) => check,
                    None => {
                        let text = path_to_text(path);
                        let cand = Candidate::from_bytes(text.as_bytes());
                        let w = out.explain.then_some(&mut why);
                        let check =
                            self.glob_decide(space, verb, &cand, enoent, excluded, scope, w);
                        if keep {
                            self.memo.borrow_mut().put(key, path, check);
                        }
                        check
                    }
                };
                // Owner exclusions follow the object: a write that an area or provenance
                // would admit, into what git reads as a repository's config or hooks (a
                // `.git` renamed away, a bare repository, a common directory), needs a rule
                // naming it, as by spelling.
                let mut git = false;
                if space == Space::Path
                    && (matches!(verb, Verb::Write | Verb::Create)
                        || (moved && verb == Verb::Delete))
                    && !excluded
                    && let Some(prov) = prov
                {
                    let text = path_to_text(path);
                    let cand = Candidate::from_bytes(text.as_bytes());
                    let without_areas =
                        || self.glob_decide(space, verb, &cand, enoent, true, scope, None);
                    let by_owner = match check {
                        Check::Allow => without_areas() != Check::Allow,
                        Check::NoRule | Check::IfAbsent => provenance_admits(prov, verb, path),
                        _ => false,
                    };
                    if by_owner && prov.git_controlled(path) {
                        git = true;
                        why = Why::default();
                        let w = out.explain.then_some(&mut why);
                        check = self.glob_decide(space, verb, &cand, enoent, true, scope, w);
                    }
                }
                // What this run created is its own: no rule needs to name it. Deny rules
                // still win, exec always needs a rule, and git hooks and configs need one.
                if matches!(check, Check::NoRule | Check::IfAbsent)
                    && !git
                    && !excluded
                    && let Some(prov) = prov
                    && provenance_admits(prov, verb, path)
                {
                    check = Check::Allow;
                    why.provenance = true;
                    why.probe = false;
                    why.rules.clear();
                }
                // Allowed checks are not recorded (but for `sbx explain`): this is the
                // enforce hot path.
                if out.explain || check != Check::Allow {
                    let mut f = Finding::new(
                        verb,
                        quote_if_needed(&path_to_text(path)).into_owned(),
                        check,
                    );
                    f.why = why;
                    out.push(f);
                }
            }
        }
    }

    fn set(&self, space: Space, effect: Effect, verb: Verb) -> Option<&PathSet> {
        self.sets.get(&(space, effect, verb))
    }

    fn allows(&self, space: Space, verb: Verb, c: &Candidate<'_>, scope: Scope) -> bool {
        self.set(space, Effect::Allow, verb)
            .is_some_and(|s| s.is_match(c))
            || (scope.held_bits() != 0
                && self
                    .scoped
                    .get(&(space, verb))
                    .is_some_and(|sets| sets.iter().any(|(l, s)| scope.holds(*l) && s.is_match(c))))
    }

    /// [`Self::allows`], by a rule that names the path exactly.
    fn allows_exactly(&self, space: Space, verb: Verb, c: &Candidate<'_>, scope: Scope) -> bool {
        self.set(space, Effect::Allow, verb)
            .is_some_and(|s| s.is_exact_match(c))
            || (scope.held_bits() != 0
                && self.scoped.get(&(space, verb)).is_some_and(|sets| {
                    sets.iter()
                        .any(|(l, s)| scope.holds(*l) && s.is_exact_match(c))
                }))
    }

    /// One check of `verb` on the name `c` against the glob rules of `space`; `why` (when
    /// given, for `sbx explain`) says which rules decided.
    #[allow(clippy::too_many_arguments)]
    fn glob_decide(
        &self,
        space: Space,
        verb: Verb,
        c: &Candidate<'_>,
        enoent: bool,
        excluded: bool,
        scope: Scope,
        mut why: Option<&mut Why>,
    ) -> Check {
        // File verbs: the path name space (unix socket paths have no implied verbs).
        let files = space == Space::Path;
        // The rules that speak for a verb: its own, and for files the wider verbs that imply
        // it (`own` implies read, write, create and delete; `write` implies create). A deny
        // rule of any of them refuses: `deny write X` also forbids creating X.
        let implied: &[Verb] = match (files, verb) {
            (true, Verb::Create) => &[Verb::Create, Verb::Write, Verb::Own],
            (true, Verb::Read | Verb::Write | Verb::Delete) => &[verb, Verb::Own],
            _ => std::slice::from_ref(&verb),
        };
        for &v in implied {
            if let Some(i) = self
                .set(space, Effect::Deny, v)
                .and_then(|s| s.first_match(c))
            {
                if let Some(w) = why {
                    w.rules.push(i);
                    w.overridden = self.allowing_rule(space, implied, c, scope);
                }
                return Check::DenyRule(i);
            }
        }
        for &v in implied {
            // Persistence places (`owner_excluded`: git hooks and configs, shell startup
            // files...) are written or created only through a rule naming them exactly:
            // never through an area, never through a glob.
            if matches!(verb, Verb::Write | Verb::Create | Verb::Delete) && excluded {
                if v != Verb::Own && self.allows_exactly(space, v, c, scope) {
                    if let Some(w) = why {
                        w.rules.extend(self.exact_rule(space, v, c, scope));
                    }
                    return Check::Allow;
                }
                if let Some(w) = why.as_deref_mut() {
                    w.excluded.extend(self.allowing_rule(space, &[v], c, scope));
                }
                continue;
            }
            if self.allows(space, v, c, scope) {
                if let Some(w) = why {
                    w.rules.extend(self.allowing_rule(space, &[v], c, scope));
                }
                return Check::Allow;
            }
        }
        if files {
            const STAT_BY: [Verb; 5] =
                [Verb::Read, Verb::Write, Verb::Exec, Verb::Delete, Verb::Own];
            if verb == Verb::Stat && STAT_BY.iter().any(|&v| self.allows(space, v, c, scope)) {
                if let Some(w) = why {
                    w.rules
                        .extend(self.allowing_rule(space, &STAT_BY, c, scope));
                }
                return Check::Allow;
            }
            let probed = self.allows(space, Verb::Probe, c, scope)
                && self
                    .set(space, Effect::Deny, Verb::Probe)
                    .is_none_or(|s| !s.is_match(c));
            let probe_why = |w: Option<&mut Why>| {
                if let Some(w) = w {
                    w.rules
                        .extend(self.allowing_rule(space, &[Verb::Probe], c, scope));
                    w.probe = true;
                }
            };
            if probed && enoent {
                probe_why(why);
                return Check::Allow;
            }
            if probed && matches!(verb, Verb::Read | Verb::Exec | Verb::Stat) {
                probe_why(why);
                return Check::IfAbsent;
            }
        }
        if let Some(w) = why {
            w.unheld = self.unheld_rules(space, implied, c, scope);
        }
        Check::NoRule
    }

    /// The first rule in profile order, among the allow rules of `verbs` that `scope` holds,
    /// that matches `c`: the rule that allowed a check [`Self::allows`] allowed.
    fn allowing_rule(
        &self,
        space: Space,
        verbs: &[Verb],
        c: &Candidate<'_>,
        scope: Scope,
    ) -> Option<usize> {
        verbs
            .iter()
            .flat_map(|&v| {
                let open = self
                    .set(space, Effect::Allow, v)
                    .and_then(|s| s.first_match(c));
                let scoped = self.scoped.get(&(space, v)).into_iter().flatten();
                let held = scoped
                    .filter(|(l, _)| scope.holds(*l))
                    .filter_map(|(_, s)| s.first_match(c));
                open.into_iter().chain(held)
            })
            .min()
    }

    /// The first rule in profile order, among the allow rules of `verb` that `scope` holds,
    /// that names `c` exactly: the rule that allowed a check [`Self::allows_exactly`]
    /// allowed.
    fn exact_rule(
        &self,
        space: Space,
        verb: Verb,
        c: &Candidate<'_>,
        scope: Scope,
    ) -> Option<usize> {
        let open = self
            .set(space, Effect::Allow, verb)
            .and_then(|s| s.first_exact_match(c));
        let scoped = self.scoped.get(&(space, verb)).into_iter().flatten();
        let held = scoped
            .filter(|(l, _)| scope.holds(*l))
            .filter_map(|(_, s)| s.first_exact_match(c));
        open.into_iter().chain(held).min()
    }

    /// The allow rules of `verbs` bound to programs that match `c` but that `scope` does not
    /// hold, first in profile order.
    fn unheld_rules(
        &self,
        space: Space,
        verbs: &[Verb],
        c: &Candidate<'_>,
        scope: Scope,
    ) -> Vec<usize> {
        let mut out: Vec<usize> = verbs
            .iter()
            .filter_map(|&v| self.scoped.get(&(space, v)))
            .flatten()
            .filter(|(l, _)| !scope.holds(*l))
            .filter_map(|(_, s)| s.first_match(c))
            .collect();
        out.sort_unstable();
        out.dedup();
        out
    }

    fn check_net(&self, verb: Verb, proto: Option<Proto>, addr: &SockAddr, scope: Scope) -> Check {
        self.check_net_why(verb, proto, addr, scope, None)
    }

    /// [`Self::check_net`], saying in `why` (when given) which rules decided.
    fn check_net_why(
        &self,
        verb: Verb,
        proto: Option<Proto>,
        addr: &SockAddr,
        scope: Scope,
        why: Option<&mut Why>,
    ) -> Check {
        let unix_ok = proto.is_none_or(|p| p == Proto::Unix);
        match addr {
            SockAddr::Inet { addr, port } => {
                self.inet_decide(verb, proto, IpAddr::from(*addr), *port, &[], scope, why)
            }
            SockAddr::Inet6 { addr, port, .. } => self.inet_decide(
                verb,
                proto,
                IpAddr::from(*addr).to_canonical(),
                *port,
                &[],
                scope,
                why,
            ),
            SockAddr::Unix(path) if unix_ok => {
                let text = path_to_text(path);
                self.glob_decide(
                    Space::UnixPath,
                    verb,
                    &Candidate::from_bytes(text.as_bytes()),
                    false,
                    false,
                    scope,
                    why,
                )
            }
            SockAddr::UnixAbstract(name) if unix_ok => {
                let text = path_to_text(name);
                self.glob_decide(
                    Space::UnixAbstract,
                    verb,
                    &Candidate::from_bytes(text.as_bytes()),
                    false,
                    false,
                    scope,
                    why,
                )
            }
            SockAddr::Netlink { protocol, .. } if proto.is_none_or(|p| p == Proto::Netlink) => {
                self.netlink_decide(verb, *protocol, scope, why)
            }
            // Autobind or socketpair-like: reaches nothing.
            SockAddr::UnixUnnamed if unix_ok => Check::Allow,
            _ => Check::NoRule,
        }
    }

    fn inet_check(
        &self,
        verb: Verb,
        proto: Option<Proto>,
        ip: IpAddr,
        port: u16,
        names: &[String],
        scope: Scope,
    ) -> Check {
        self.inet_decide(verb, proto, ip, port, names, scope, None)
    }

    /// [`Self::inet_check`], saying in `why` (when given) which rules decided.
    #[allow(clippy::too_many_arguments)]
    fn inet_decide(
        &self,
        verb: Verb,
        proto: Option<Proto>,
        ip: IpAddr,
        port: u16,
        names: &[String],
        scope: Scope,
        why: Option<&mut Why>,
    ) -> Check {
        let fits = |r: &&NetRule| {
            r.verb == verb
                && !matches!(r.proto, Proto::Unix | Proto::Netlink)
                && proto.is_none_or(|p| p == r.proto)
                && r.host.matches(ip, names)
                && r.port.is_none_or(|p| p == port)
        };
        let matching = |effect: Effect| {
            self.net
                .iter()
                .find(|r| r.effect == effect && r.held(scope) && fits(r))
        };
        if let Some(r) = matching(Effect::Deny) {
            return Check::DenyRule(r.rule);
        }
        if let Some(r) = matching(Effect::Allow) {
            if let Some(w) = why {
                w.rules.push(r.rule);
            }
            Check::Allow
        } else {
            if let Some(w) = why {
                w.unheld = self
                    .net
                    .iter()
                    .filter(|r| r.effect == Effect::Allow && !r.held(scope) && fits(r))
                    .map(|r| r.rule)
                    .collect();
                w.unheld.dedup();
            }
            Check::NoRule
        }
    }
    /// How many compiled rules there are (`program` and `launcher` lines are not rules):
    /// the indexes of [`Why::rules`] run below it.
    pub fn rule_count(&self) -> usize {
        self.rules.len()
    }

    /// Compiled rule `i` as the profile wrote it, and where (file and line, or the snippet).
    pub fn rule_info(&self, i: usize) -> Option<RuleInfo<'_>> {
        self.rules.get(i).map(|r| RuleInfo {
            text: &r.text,
            origin: &r.origin,
            span: r.span,
        })
    }

    /// [`Self::decide_in`], with every check it made and the rules that decided each (the
    /// same decision code: `sbx explain`). `enoent`: the call is known to have failed with
    /// ENOENT (a probe rule then admits without condition).
    pub fn explain_in(
        &self,
        scope: Scope,
        access: AccessSet,
        object: &Object,
        enoent: bool,
        prov: Option<&dyn Provenance>,
    ) -> (Decision, Vec<Checked>) {
        let mut findings = Findings {
            list: Vec::new(),
            explain: true,
        };
        self.check_target(access, object, enoent, prov, scope, &mut findings);
        let decision = self.fold(&findings.list);
        (decision, checked(findings.list))
    }

    /// [`Self::admits_event_in`], with every check it made and the rules that decided each:
    /// the event is admitted when no check is [`Verdict::NoRule`] or [`Verdict::DenyRule`]
    /// (an [`Verdict::AllowIfAbsent`] check is one `admits_event_in` refuses too).
    pub fn explain_event_in(
        &self,
        ev: &Event,
        is_gated: &dyn Fn(&str) -> bool,
        prov: Option<&dyn Provenance>,
        scope: Scope,
    ) -> Vec<Checked> {
        let mut findings = Findings {
            list: Vec::new(),
            explain: true,
        };
        self.event_checks(ev, is_gated, prov, scope, &mut findings);
        checked(findings.list)
    }

    /// The check of the gated syscall `name` ([`Self::syscall_allowed`]); `explain`: with the
    /// rule that decided.
    fn syscall_finding(&self, name: &str, explain: bool) -> Finding {
        let allowed = self.syscall_allowed(name);
        let check = if allowed {
            Check::Allow
        } else if self.syscalls_deny.contains(name) {
            // A deny rule refuses it whatever allows it.
            self.syscall_rules(name, false)
                .first()
                .map_or(Check::NoRule, |&i| Check::DenyRule(i))
        } else {
            Check::NoRule
        };
        let mut f = Finding::new(Verb::Syscall, name.to_string(), check);
        if explain && allowed {
            f.why.rules = self.syscall_rules(name, allowed);
        }
        f
    }

    /// [`Self::syscall_allowed`] for `sbx explain --check syscall NAME`: the decision and the
    /// check, with the `syscall` (or `deny syscall`) rule that decided.
    pub fn explain_syscall(&self, name: &str) -> (Decision, Vec<Checked>) {
        let f = self.syscall_finding(name, true);
        let decision = self.fold(std::slice::from_ref(&f));
        (decision, checked(vec![f]))
    }

    /// [`Self::decide_net_named_in`] (what enforce asks of a connect, bind or send), with the
    /// check and the rules that decided it: `sbx explain --check connect tcp HOST:PORT`.
    pub fn explain_net_in(
        &self,
        scope: Scope,
        verb: Verb,
        proto: Option<Proto>,
        addr: &SockAddr,
        names: &[String],
    ) -> (Decision, Vec<Checked>) {
        let mut why = Why::default();
        let check = match addr {
            SockAddr::Inet { addr: a, port } => self.inet_decide(
                verb,
                proto,
                IpAddr::from(*a),
                *port,
                names,
                scope,
                Some(&mut why),
            ),
            SockAddr::Inet6 { addr: a, port, .. } => self.inet_decide(
                verb,
                proto,
                IpAddr::from(*a).to_canonical(),
                *port,
                names,
                scope,
                Some(&mut why),
            ),
            _ => self.check_net_why(verb, proto, addr, scope, Some(&mut why)),
        };
        let mut f = Finding::new(verb, sockaddr_text(addr), check);
        f.why = why;
        let decision = self.fold(std::slice::from_ref(&f));
        (decision, checked(vec![f]))
    }

    /// The `syscall NAME` rule that allows it, or the `deny syscall NAME` rule that refuses it.
    fn syscall_rules(&self, name: &str, allowed: bool) -> Vec<usize> {
        let want = if allowed {
            format!("syscall {name}")
        } else {
            format!("deny syscall {name}")
        };
        self.rules
            .iter()
            .position(|r| r.text == want)
            .into_iter()
            .collect()
    }

    /// The `by` lists that hold program `name` (a `program` definition), as scope bits.
    pub fn name_mask(&self, name: &str) -> u64 {
        let mut mask = 0u64;
        for (i, (names, _)) in self.lists.iter().enumerate() {
            if i < 64 && names.iter().any(|n| n == name) {
                mask |= 1u64 << i;
            }
        }
        mask
    }

    /// Whether `name` is defined by a `program` line.
    pub fn defines_program(&self, name: &str) -> bool {
        self.programs.iter().any(|(n, _)| n == name)
    }
}

/// The public form of the checks `sbx explain` collected.
fn checked(list: Vec<Finding>) -> Vec<Checked> {
    list.into_iter()
        .map(|f| {
            let mut why = f.why;
            let verdict = match f.check {
                Check::Allow => Verdict::Allow,
                Check::IfAbsent => Verdict::AllowIfAbsent,
                Check::NoRule => Verdict::NoRule,
                Check::DenyRule(i) => {
                    why.rules = vec![i];
                    Verdict::DenyRule
                }
            };
            Checked {
                verb: f.verb,
                object: f.object,
                verdict,
                why,
            }
        })
        .collect()
}

/// Does what the run created admit `verb` on `path`? Read, write and delete of an object it
/// created; create of a name in a directory it created. Never exec (a dropped program still
/// needs an exec rule), and never a write or create of a git hook or config.
fn provenance_admits(prov: &dyn Provenance, verb: Verb, path: &[u8]) -> bool {
    match verb {
        Verb::Read | Verb::Stat => prov.owns(path) || prov.absent_in_owned(path),
        Verb::Delete => prov.owns(path),
        Verb::Write => !owner_excluded(path) && prov.owns(path),
        Verb::Create => {
            !owner_excluded(path)
                && match path.iter().rposition(|&b| b == b'/') {
                    Some(0) | None => false,
                    Some(i) => prov.owns(&path[..i]),
                }
        }
        _ => false,
    }
}

/// A process naming itself by pid (`/proc/<own pid>/...`, as decode makes `/proc/self`
/// absolute) is `/proc/self/...`, so `/proc/self` rules admit it; other pids stay as they are.
pub fn self_view(p: &PathObj, pid: i32) -> PathObj {
    if !under_proc(p) {
        return p.clone();
    }
    let prefix = format!("/proc/{pid}");
    let fix = |b: &[u8]| -> Vec<u8> {
        match b.strip_prefix(prefix.as_bytes()) {
            Some(rest) if rest.is_empty() || rest[0] == b'/' => {
                [b"/proc/self".as_slice(), rest].concat()
            }
            _ => b.to_vec(),
        }
    };
    PathObj {
        literal: p.literal.clone(),
        abs: fix(&p.abs),
        resolved: p.resolved.as_deref().map(fix),
    }
}

/// Does the path object name anything under /proc (as written or where it leads)? Only then
/// can [`self_view`] change it.
pub fn under_proc(p: &PathObj) -> bool {
    p.abs.starts_with(b"/proc/")
        || p.resolved
            .as_ref()
            .is_some_and(|r| r.starts_with(b"/proc/"))
}

/// The paths to check for a path object: as written and, unless it is the same object, where
/// it leads.
fn candidates(p: &PathObj) -> Vec<&[u8]> {
    let mut out = vec![p.abs.as_slice()];
    // A magic link to an object without a filesystem name (`/dev/stdin` -> `pipe:[N]`,
    // `/proc/self/fd/3` -> `socket:[N]`) reopens something the process already holds: only
    // the name it used is checked. See: docs/real-world.md (cargo build reopening a pipe).
    if let Some(r) = &p.resolved
        && r != &p.abs
        && r.starts_with(b"/")
        && !is_self_alias(&p.abs, r)
    {
        out.push(r.as_slice());
    }
    out
}

/// `/proc/self/X` -> `/proc/<pid>/X` and `/proc/thread-self/X` -> `/proc/<pid>/task/<tid>/X`
/// name the caller itself: the resolved form adds nothing to check.
fn is_self_alias(abs: &[u8], resolved: &[u8]) -> bool {
    fn digits(s: &[u8]) -> Option<&[u8]> {
        let n = s.iter().take_while(|b| b.is_ascii_digit()).count();
        (n > 0).then(|| &s[n..])
    }
    let Some(after) = resolved.strip_prefix(b"/proc/") else {
        return false;
    };
    let Some(after_pid) = digits(after) else {
        return false;
    };
    if let Some(rest) = abs.strip_prefix(b"/proc/self") {
        return rest == after_pid && (rest.is_empty() || rest.starts_with(b"/"));
    }
    if let Some(rest) = abs.strip_prefix(b"/proc/thread-self") {
        let Some(task) = after_pid.strip_prefix(b"/task/") else {
            return false;
        };
        return digits(task) == Some(rest) && (rest.is_empty() || rest.starts_with(b"/"));
    }
    false
}

/// A socket address in profile syntax (without the protocol when it is not known).
/// A path named by a descriptor alone (AT_EMPTY_PATH: the literal is empty) whose /proc link
/// is the kernel's name for an object without a path: `pipe:[123]`, `socket:[123]`,
/// `anon_inode:[eventfd]`, `anon_inode:inotify`, `/memfd:NAME (deleted)`.
fn is_fd_pseudo_name(p: &PathObj) -> bool {
    let abs = p.abs.as_slice();
    let name = |prefix: &[u8]| abs.starts_with(prefix) && !abs.contains(&b'/');
    p.literal.is_empty()
        && (name(b"pipe:[")
            || name(b"socket:[")
            || name(b"anon_inode:")
            || abs.starts_with(b"/memfd:"))
}

fn sockaddr_text(addr: &SockAddr) -> String {
    match addr {
        SockAddr::Inet { addr, port } => format!("{}:{port}", IpAddr::from(*addr)),
        SockAddr::Inet6 { addr, port, .. } => {
            format!("[{}]:{port}", std::net::Ipv6Addr::from(*addr))
        }
        SockAddr::Unix(p) => format!("unix {}", quote_if_needed(&path_to_text(p))),
        SockAddr::UnixAbstract(n) => {
            let text: Cow<'_, str> = path_to_text(n);
            format!("unix {}", quote_if_needed(&format!("@{text}")))
        }
        SockAddr::UnixUnnamed => "unix (unnamed)".to_string(),
        SockAddr::Other { family, .. } => format!("family {family}"),
        SockAddr::Invalid { len } => format!("invalid address ({len} bytes)"),
        SockAddr::Netlink { protocol, .. } => {
            format!("netlink {}", crate::profile::netlink_name(*protocol))
        }
    }
}

#[cfg(test)]
mod anon_link_tests {
    use super::*;

    #[test]
    fn a_magic_link_to_a_pipe_is_checked_by_its_name_only() {
        let p = PathObj {
            literal: b"/dev/stdin".to_vec(),
            abs: b"/dev/stdin".to_vec(),
            resolved: Some(b"pipe:[123]".to_vec()),
        };
        assert_eq!(candidates(&p), vec![b"/dev/stdin".as_slice()]);
        let q = PathObj {
            literal: vec![],
            abs: b"/a".to_vec(),
            resolved: Some(b"/b".to_vec()),
        };
        assert_eq!(candidates(&q), vec![b"/a".as_slice(), b"/b".as_slice()]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{ProcInfo, Syscall, Target};

    fn env() -> Env {
        Env {
            cwd: "/work/app".into(),
            home: "/home/u[1]".into(),
            tmpdir: "/tmp".into(),
            vars: BTreeMap::new(),
        }
    }

    fn policy(text: &str) -> CompiledPolicy {
        CompiledPolicy::load("t.profile", text, &env()).unwrap_or_else(|e| panic!("{e}"))
    }

    /// The scope after a process of scope `s` exec'd `program`.
    fn ran(p: &CompiledPolicy, s: Scope, program: &[u8]) -> Scope {
        s.exec(p.program_mask(program), p.is_launcher(program))
    }

    /// A right with `by` is held only by a caller whose chain satisfies the list; rules
    /// without `by` hold for everyone; deny rules still win.
    #[test]
    fn scoped_rules_need_the_callers_programs() {
        let p = policy(
            "program npm /usr/lib/node_modules/npm/bin/npm-cli.js\n\
             program git /usr/bin/git\n\
             read ${HOME}/.npmrc by npm\n\
             own ${HOME}/.cache/x by git,npm\n\
             connect tcp 10.0.0.1:443 by npm\n\
             read /etc/**\n\
             deny read /etc/shadow\n",
        );
        assert!(p.has_scopes());
        let npm = ran(&p, Scope::ROOT, b"/usr/lib/node_modules/npm/bin/npm-cli.js");
        let git = ran(&p, Scope::ROOT, b"/usr/bin/git");
        let node = ran(&p, npm, b"/w/node_modules/x/install.js");
        assert_eq!(p.program_name(b"/usr/bin/git"), Some("git"));
        let read = |scope: Scope, p_: &str| {
            p.decide_in(scope, AccessSet::of(Access::Read), &path(p_), None)
        };
        assert_eq!(read(npm, "/home/u[1]/.npmrc"), Decision::Allow);
        assert!(matches!(
            read(git, "/home/u[1]/.npmrc"),
            Decision::Deny { .. }
        ));
        assert!(matches!(
            read(node, "/home/u[1]/.npmrc"),
            Decision::Deny { .. }
        ));
        assert!(matches!(
            read(Scope::NONE, "/home/u[1]/.npmrc"),
            Decision::Deny { .. }
        ));
        // Both npm and git may use the shared area, and a chain of both programs too.
        let both = ran(&p, npm, b"/usr/bin/git");
        for s in [npm, git, both] {
            assert_eq!(read(s, "/home/u[1]/.cache/x/y"), Decision::Allow);
        }
        assert!(matches!(
            read(node, "/home/u[1]/.cache/x/y"),
            Decision::Deny { .. }
        ));
        // Global rules hold for all, deny rules for all.
        assert_eq!(read(node, "/etc/hosts"), Decision::Allow);
        assert!(matches!(read(npm, "/etc/shadow"), Decision::Deny { .. }));
        let peer = SockAddr::Inet {
            addr: [10, 0, 0, 1],
            port: 443,
        };
        let connect =
            |s: Scope| p.decide_net_named_in(s, Verb::Connect, Some(Proto::Tcp), &peer, &[]);
        assert_eq!(connect(npm), Decision::Allow);
        assert!(matches!(connect(node), Decision::Deny { .. }));
        assert!(matches!(connect(git), Decision::Deny { .. }));
    }

    /// `env` rules: a named variable is visible only to programs whose chain holds one of
    /// the rules naming it; other variables to everyone.
    #[test]
    fn env_rules_name_who_sees_a_variable() {
        let p = policy(
            "program npm /usr/lib/node_modules/npm/bin/npm-cli.js\n\
             program pub /usr/bin/publish\n\
             env NPM_TOKEN by npm\n\
             env *_TOKEN by pub\n",
        );
        assert!(p.has_env_rules());
        let npm = ran(&p, Scope::ROOT, b"/usr/lib/node_modules/npm/bin/npm-cli.js");
        let publish = ran(&p, Scope::ROOT, b"/usr/bin/publish");
        let script = ran(&p, npm, b"/usr/bin/dash");
        assert!(p.env_visible(npm, b"NPM_TOKEN"));
        assert!(
            p.env_visible(publish, b"NPM_TOKEN"),
            "either rule naming it"
        );
        assert!(!p.env_visible(script, b"NPM_TOKEN"));
        assert!(!p.env_visible(npm, b"GITHUB_TOKEN"));
        assert!(p.env_visible(script, b"PATH"));
        assert!(!policy("read /x\n").has_env_rules());
    }

    /// Launchers (the shipped `base` lines) at the start of a chain pass every list on and
    /// keep the environment; a launcher after another program is an ordinary program.
    #[test]
    fn launchers_start_chains_without_narrowing_them() {
        let p = policy("include node\nread ${HOME}/.npmrc by npm\n");
        let npm = b"/usr/lib/node_modules/npm/bin/npm-cli.js";
        let chain = |programs: &[&[u8]]| {
            programs
                .iter()
                .fold(Scope::ROOT, |s, prog| ran(&p, s, prog))
        };
        let read = |s: Scope| {
            p.decide_in(
                s,
                AccessSet::of(Access::Read),
                &path("/home/u[1]/.npmrc"),
                None,
            ) == Decision::Allow
        };
        for launcher in [
            &b"/usr/bin/bash"[..],
            b"/bin/sh",
            b"/usr/bin/env",
            b"/usr/bin/make",
        ] {
            assert!(
                p.is_launcher(launcher),
                "{}",
                String::from_utf8_lossy(launcher)
            );
        }
        assert!(!p.is_launcher(npm));
        assert!(read(chain(&[b"/usr/bin/bash", npm])));
        assert!(read(chain(&[
            b"/usr/bin/bash",
            b"/usr/bin/make",
            b"/bin/sh",
            npm
        ])));
        assert!(
            !read(chain(&[b"/usr/bin/bash"])),
            "a launcher holds no list of its own"
        );
        let script = chain(&[b"/usr/bin/bash", npm, b"/usr/bin/dash"]);
        assert!(!read(script));
        assert!(!read(ran(&p, script, npm)), "npm run by an install script");
        // The CI shell keeps NPM_TOKEN for the npm it starts; the install script's shell
        // does not get it.
        assert!(p.env_visible(chain(&[b"/usr/bin/bash"]), b"NPM_TOKEN"));
        assert!(p.env_visible(chain(&[b"/usr/bin/bash", npm]), b"NPM_TOKEN"));
        assert!(!p.env_visible(script, b"NPM_TOKEN"));
        assert!(!p.env_visible(chain(&[b"/usr/bin/node"]), b"NPM_TOKEN"));
    }

    /// The shipped `cargo` snippet: every compiler reads the registry, only cargo writes it
    /// (a build script rewriting another crate's sources would poison later builds).
    #[test]
    fn cargo_snippet_binds_registry_writes_to_cargo() {
        let p = policy("include cargo\n");
        let home = "/home/u[1]";
        let rustup = ran(&p, Scope::ROOT, b"/root/.cargo/bin/rustup");
        let cargo = ran(
            &p,
            rustup,
            b"/root/.rustup/toolchains/stable-x86_64-unknown-linux-gnu/bin/cargo",
        );
        let build_script = ran(&p, cargo, b"/w/target/debug/build/x-1/build-script-build");
        let rustc = ran(
            &p,
            cargo,
            b"/root/.rustup/toolchains/stable-x86_64-unknown-linux-gnu/bin/rustc",
        );
        let src = format!("{home}/.cargo/registry/src/index.crates.io-1/serde-1.0.0/src/lib.rs");
        let decide = |s: Scope, a: Access| p.decide_in(s, AccessSet::of(a), &path(&src), None);
        assert_eq!(decide(cargo, Access::Write), Decision::Allow);
        assert!(matches!(
            decide(build_script, Access::Write),
            Decision::Deny { .. }
        ));
        assert!(matches!(
            decide(rustc, Access::Write),
            Decision::Deny { .. }
        ));
        assert_eq!(decide(build_script, Access::Read), Decision::Allow);
        assert_eq!(decide(rustc, Access::Read), Decision::Allow);
    }

    #[test]
    fn scoped_rule_errors() {
        let env = env();
        let err = |text: &str| {
            CompiledPolicy::load("t.profile", text, &env)
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default()
        };
        assert!(err("read /x by npm\n").contains("unknown program \"npm\""));
        assert!(
            err("program x /usr/bin/x\nsyscall ptrace by x\n").contains("cannot apply to syscall")
        );
        assert!(!policy("read /x\n").has_scopes());
    }

    /// The remembered path checks answer as a policy that has never checked anything, for
    /// every verb, scope and path, however the checks are interleaved; a full memo is
    /// emptied and keeps answering.
    #[test]
    fn remembered_path_checks_answer_as_fresh_ones() {
        let text = "program npm /usr/bin/npm\n\
                    read /a/**\n\
                    deny read /a/secret\n\
                    probe /b/**\n\
                    own /w/**\n\
                    read /c/** by npm\n\
                    exec /usr/bin/*\n\
                    connect unix /run/s.sock\n";
        let p = policy(text);
        let npm = ran(&p, Scope::ROOT, b"/usr/bin/npm");
        let paths = [
            "/a/x",
            "/a/secret",
            "/b/tool",
            "/c/y",
            "/w/.git/hooks/pre-commit",
            "/w/f",
            "/usr/bin/true",
            "/run/s.sock",
            "/elsewhere",
        ];
        let accesses = [
            acc(R),
            acc(W),
            acc(&[Access::Exec]),
            acc(&[Access::Create]),
            acc(&[Access::Stat]),
            acc(&[Access::Read, Access::Write]),
        ];
        for round in 0..3 {
            for &scope in &[Scope::NONE, npm, Scope::ROOT] {
                for path_ in paths {
                    for &a in &accesses {
                        let got = p.decide_in(scope, a, &path(path_), None);
                        let fresh = policy(text).decide_in(scope, a, &path(path_), None);
                        assert_eq!(got, fresh, "round {round}: {path_} {a:?} {scope:?}");
                    }
                }
            }
        }
        assert!(p.memo.borrow().len > 0);
        let key = (Space::Path, Verb::Read, false, false, 0);
        let mut m = Memo::default();
        for i in 0..MEMO_MAX {
            m.put(key, format!("/p/{i}").as_bytes(), Check::Allow);
        }
        assert_eq!(m.len, MEMO_MAX);
        m.put(key, b"/q", Check::NoRule);
        assert_eq!(m.len, 1);
        assert_eq!(m.get(key, b"/q"), Some(Check::NoRule));
        assert_eq!(m.get(key, b"/p/0"), None);
    }

    fn path(abs: &str) -> Object {
        Object::Path(PathObj {
            literal: abs.as_bytes().to_vec(),
            abs: abs.as_bytes().to_vec(),
            resolved: None,
        })
    }

    fn linked(abs: &str, resolved: &str) -> Object {
        Object::Path(PathObj {
            literal: abs.as_bytes().to_vec(),
            abs: abs.as_bytes().to_vec(),
            resolved: Some(resolved.as_bytes().to_vec()),
        })
    }

    fn acc(list: &[Access]) -> AccessSet {
        list.iter().copied().collect()
    }

    const R: &[Access] = &[Access::Read];
    const W: &[Access] = &[Access::Write];

    fn short(d: &Decision) -> String {
        match d {
            Decision::Allow => "allow".into(),
            Decision::AllowIfAbsent => "if-absent".into(),
            Decision::Deny {
                verb,
                reason: DenyReason::NoRule,
            } => format!("deny {} no-rule", verb.name()),
            Decision::Deny {
                verb,
                reason: DenyReason::DenyRule { rule, .. },
            } => format!("deny {} by {rule}", verb.name()),
        }
    }

    #[test]
    fn path_decision_table() {
        let pol = policy(
            "read /etc/*\nread /usr/lib/**\nwrite ${CWD}/out/**\ndeny read /etc/shadow\n\
             deny write ${CWD}/out/keep\nprobe /opt/maybe/*\nread ${HOME}/.npm/**\n\
             exec /usr/bin/{node,git}\ndelete ${CWD}/out/*.tmp\ndeny probe /opt/maybe/no\n\
             read /home/v/**\ndeny read **/.ssh/**\n",
        );
        let cases: &[(&[Access], &str, &str)] = &[
            (R, "/etc/passwd", "allow"),
            (R, "/etc/ssl/certs/x", "deny read no-rule"), // `*` stops at `/`
            (R, "/usr/lib/x/y/z.so", "allow"),            // `**` crosses `/`
            (R, "/usr/lib", "deny read no-rule"),         // `/a/**` is below `/a` only
            (
                R,
                "/home/v/.ssh/id_rsa",
                "deny read by deny read **/.ssh/**",
            ),
            (R, "/etc/shadow", "deny read by deny read /etc/shadow"),
            (W, "/etc/passwd", "deny write no-rule"),
            (W, "/work/app/out/a/b", "allow"),
            (
                W,
                "/work/app/out/keep",
                "deny write by deny write ${CWD}/out/keep",
            ),
            (
                &[Access::Read, Access::Write],
                "/work/app/out/x",
                "deny read no-rule",
            ),
            (
                &[Access::Create, Access::Truncate],
                "/work/app/out/x",
                "allow",
            ),
            (R, "/opt/maybe/x", "if-absent"),
            (R, "/opt/maybe/no", "deny read no-rule"), // `deny probe` removes the probe
            (W, "/opt/maybe/x", "deny write no-rule"),
            (&[Access::Exec], "/usr/bin/node", "allow"),
            (&[Access::Exec], "/usr/bin/python3", "deny exec no-rule"),
            (&[Access::Rename], "/work/app/out/a.tmp", "allow"),
            (&[Access::Delete], "/work/app/out/a", "deny delete no-rule"),
            // Link needs read and write on the source.
            (&[Access::Link], "/work/app/out/a", "deny read no-rule"),
            (
                &[Access::Link],
                "/etc/shadow",
                "deny read by deny read /etc/shadow",
            ),
            // Stat is implied by any other verb's rule, and probe makes it conditional.
            (&[Access::Stat], "/etc/hosts", "allow"),
            (&[Access::Stat], "/opt/maybe/q", "if-absent"),
            (&[Access::Chdir], "/nowhere", "deny stat no-rule"),
            // The HOME value "/home/u[1]" is escaped: a literal match only.
            (R, "/home/u[1]/.npm/x", "allow"),
            (R, "/home/u1/.npm/x", "deny read no-rule"),
            (&[], "/anything", "allow"),
        ];
        for (access, p, want) in cases {
            let got = short(&pol.decide(acc(access), &path(p)));
            assert_eq!(&got, want, "{access:?} {p}");
        }
    }

    #[test]
    fn deny_wins_across_rules_and_order() {
        for text in [
            "read /secret/**\ndeny read /secret/key\n",
            "deny read /secret/key\nread /secret/**\n",
            "read /secret/key\ndeny read /secret/*\n",
        ] {
            let pol = policy(text);
            assert!(matches!(
                pol.decide(acc(R), &path("/secret/key")),
                Decision::Deny {
                    reason: DenyReason::DenyRule { .. },
                    ..
                }
            ));
        }
    }

    #[test]
    fn abs_and_resolved_are_both_checked() {
        let pol =
            policy("read /allowed/**\ndeny read /secret/**\nread /lib/**\nread /usr/lib/**\n");
        let cases = [
            (
                linked("/allowed/link", "/secret/key"),
                "deny read by deny read /secret/**",
            ),
            (linked("/allowed/link", "/elsewhere/x"), "deny read no-rule"),
            (linked("/elsewhere/x", "/allowed/y"), "deny read no-rule"),
            (linked("/lib/x.so", "/usr/lib/x.so"), "allow"),
        ];
        for (obj, want) in cases {
            assert_eq!(short(&pol.decide(acc(R), &obj)), want, "{obj:?}");
        }
    }

    #[test]
    fn proc_self_alias_is_not_checked_twice() {
        let pol = policy("read /proc/self/maps\n");
        assert_eq!(
            pol.decide(acc(R), &linked("/proc/self/maps", "/proc/4711/maps")),
            Decision::Allow
        );
        assert_eq!(
            pol.decide(
                acc(R),
                &linked("/proc/thread-self/maps", "/proc/4711/task/4712/maps")
            ),
            Decision::Deny {
                verb: Verb::Read,
                reason: DenyReason::NoRule
            }
        );
        let pol = policy("read /proc/thread-self/maps\n");
        assert_eq!(
            pol.decide(
                acc(R),
                &linked("/proc/thread-self/maps", "/proc/4711/task/4712/maps")
            ),
            Decision::Allow
        );
        // A magic link leading elsewhere is checked.
        let pol = policy("read /proc/self/root/**\n");
        assert!(matches!(
            pol.decide(acc(R), &linked("/proc/self/root/etc/shadow", "/etc/shadow")),
            Decision::Deny { .. }
        ));
        assert!(!is_self_alias(b"/proc/self/maps", b"/proc/12/mapsx"));
        assert!(!is_self_alias(b"/proc/selfish", b"/proc/12ish"));
    }

    #[test]
    fn non_utf8_paths_match() {
        let pol = policy("read \"/data/\\xff*\"\nread /any/*\n");
        let obj = |b: &[u8]| {
            Object::Path(PathObj {
                literal: b.to_vec(),
                abs: b.to_vec(),
                resolved: None,
            })
        };
        assert_eq!(pol.decide(acc(R), &obj(b"/data/\xffabc")), Decision::Allow);
        assert!(matches!(
            pol.decide(acc(R), &obj(b"/data/\xfeabc")),
            Decision::Deny { .. }
        ));
        assert_eq!(pol.decide(acc(R), &obj(b"/any/\xfe\xfd")), Decision::Allow);
        assert!(matches!(
            pol.decide(acc(R), &obj(b"/any/\xfe/x")),
            Decision::Deny { .. }
        ));
    }

    #[test]
    fn fd_pseudo_names_are_not_paths() {
        let pol = policy("read /work/**\n");
        let path = |p: &str| {
            Object::Path(PathObj {
                literal: vec![],
                abs: p.as_bytes().to_vec(),
                resolved: None,
            })
        };
        let st = acc(&[Access::Stat]);
        let cases: &[(&str, bool)] = &[
            ("pipe:[123]", true),
            ("socket:[9]", true),
            ("anon_inode:[eventfd]", true),
            ("anon_inode:inotify", true),
            ("/memfd:x (deleted)", true),
            ("/etc/passwd", false),
            ("pipe:[1]/x", false),
        ];
        for (p, allowed) in cases {
            assert_eq!(pol.decide(st, &path(p)) == Decision::Allow, *allowed, "{p}");
        }
        // Never executable, even with a rule naming them.
        let pol = policy("exec /**\nexec \"/memfd:x (deleted)\"\n");
        for p in ["pipe:[5]", "/memfd:x (deleted)"] {
            assert!(
                matches!(
                    pol.decide(acc(&[Access::Exec]), &path(p)),
                    Decision::Deny {
                        verb: Verb::Exec,
                        ..
                    }
                ),
                "{p}"
            );
        }
        // A file really named so (a literal path) is an ordinary path.
        let real = Object::Path(PathObj {
            literal: b"/memfd:x (deleted)".to_vec(),
            abs: b"/memfd:x (deleted)".to_vec(),
            resolved: None,
        });
        assert_eq!(pol.decide(acc(&[Access::Exec]), &real), Decision::Allow);
    }

    #[test]
    fn fds_and_anonymous_objects() {
        let pol = policy("write /work/**\n");
        let fd = |p: Option<&str>| Object::Fd {
            fd: 3,
            path: p.map(|s| s.as_bytes().to_vec()),
        };
        let w = acc(&[Access::Chmod]);
        assert_eq!(pol.decide(w, &fd(Some("/work/x"))), Decision::Allow);
        assert!(matches!(
            pol.decide(w, &fd(Some("/etc/x"))),
            Decision::Deny { .. }
        ));
        assert_eq!(pol.decide(w, &fd(Some("pipe:[123]"))), Decision::Allow);
        assert_eq!(pol.decide(w, &fd(None)), Decision::Allow);
        let x = acc(&[Access::Exec]);
        assert!(matches!(
            pol.decide(x, &fd(None)),
            Decision::Deny {
                verb: Verb::Exec,
                ..
            }
        ));
        assert!(matches!(
            pol.decide(x, &Object::Anon(b"memfd:x".to_vec())),
            Decision::Deny {
                verb: Verb::Exec,
                ..
            }
        ));
    }

    #[test]
    fn network_table() {
        let pol = policy(
            "connect tcp 127.0.0.1:8080\nconnect udp *:53\nconnect tcp [::1]:*\n\
             deny connect tcp 10.0.0.1:*\nconnect tcp *:443\nbind tcp 0.0.0.0:3000\n\
             send udp 10.1.1.1:5353\nconnect unix /run/app/*.sock\nconnect unix @/tmp/.X11-unix/X*\n",
        );
        let v4 = |a: [u8; 4], port| SockAddr::Inet { addr: a, port };
        let v6 = |s: &str, port| SockAddr::Inet6 {
            addr: s
                .parse::<std::net::Ipv6Addr>()
                .map(|a| a.octets())
                .unwrap_or_default(),
            port,
            scope_id: 0,
        };
        let cases: Vec<(Verb, Option<Proto>, SockAddr, &str)> = vec![
            (
                Verb::Connect,
                Some(Proto::Tcp),
                v4([127, 0, 0, 1], 8080),
                "allow",
            ),
            (
                Verb::Connect,
                Some(Proto::Tcp),
                v4([127, 0, 0, 1], 8081),
                "deny connect no-rule",
            ),
            (
                Verb::Connect,
                Some(Proto::Udp),
                v4([127, 0, 0, 1], 8080),
                "deny connect no-rule",
            ),
            (
                Verb::Connect,
                Some(Proto::Udp),
                v4([8, 8, 8, 8], 53),
                "allow",
            ),
            (
                Verb::Connect,
                Some(Proto::Tcp),
                v4([8, 8, 8, 8], 53),
                "deny connect no-rule",
            ),
            (Verb::Connect, Some(Proto::Tcp), v6("::1", 9), "allow"),
            (
                Verb::Connect,
                Some(Proto::Tcp),
                v6("::2", 9),
                "deny connect no-rule",
            ),
            // IPv4-mapped IPv6 is the IPv4 address, for allows and denies.
            (
                Verb::Connect,
                Some(Proto::Tcp),
                v6("::ffff:127.0.0.1", 8080),
                "allow",
            ),
            (
                Verb::Connect,
                Some(Proto::Tcp),
                v6("::ffff:10.0.0.1", 443),
                "deny connect by deny connect tcp 10.0.0.1:*",
            ),
            (
                Verb::Connect,
                Some(Proto::Tcp),
                v4([1, 2, 3, 4], 443),
                "allow",
            ),
            (
                Verb::Bind,
                Some(Proto::Tcp),
                v4([0, 0, 0, 0], 3000),
                "allow",
            ),
            (
                Verb::Bind,
                Some(Proto::Tcp),
                v4([127, 0, 0, 1], 3000),
                "deny bind no-rule",
            ),
            (
                Verb::Send,
                Some(Proto::Udp),
                v4([10, 1, 1, 1], 5353),
                "allow",
            ),
            (
                Verb::Send,
                Some(Proto::Udp),
                v4([10, 1, 1, 1], 53),
                "deny send no-rule",
            ),
            (
                Verb::Connect,
                Some(Proto::Unix),
                SockAddr::Unix(b"/run/app/a.sock".to_vec()),
                "allow",
            ),
            (
                Verb::Connect,
                Some(Proto::Unix),
                SockAddr::Unix(b"/run/app/x/a.sock".to_vec()),
                "deny connect no-rule",
            ),
            (
                Verb::Connect,
                Some(Proto::Tcp),
                SockAddr::Unix(b"/run/app/a.sock".to_vec()),
                "deny connect no-rule",
            ),
            (
                Verb::Connect,
                Some(Proto::Unix),
                SockAddr::UnixAbstract(b"/tmp/.X11-unix/X0".to_vec()),
                "allow",
            ),
            (
                Verb::Connect,
                Some(Proto::Unix),
                SockAddr::UnixAbstract(b"/run/app/a.sock".to_vec()),
                "deny connect no-rule",
            ),
            (
                Verb::Connect,
                None,
                SockAddr::Other {
                    family: 16,
                    bytes: vec![],
                },
                "deny connect no-rule",
            ),
            // Without a protocol: any protocol's allow, any protocol's deny.
            (Verb::Connect, None, v4([9, 9, 9, 9], 53), "allow"),
            (
                Verb::Connect,
                None,
                v4([10, 0, 0, 1], 53),
                "deny connect by deny connect tcp 10.0.0.1:*",
            ),
        ];
        for (verb, proto, addr, want) in cases {
            let got = match proto {
                Some(p) => pol.decide_net(verb, p, &addr),
                None => {
                    let access = match verb {
                        Verb::Bind => Access::Bind,
                        Verb::Send => Access::Send,
                        _ => Access::Connect,
                    };
                    pol.decide(AccessSet::of(access), &Object::Socket(addr.clone()))
                }
            };
            assert_eq!(short(&got), want, "{verb:?} {proto:?} {addr:?}");
        }
        // Listen maps to bind.
        assert_eq!(
            pol.decide(
                AccessSet::of(Access::Listen),
                &Object::Socket(v4([0, 0, 0, 0], 3000))
            ),
            Decision::Allow
        );
    }

    #[test]
    fn syscalls() {
        let pol = policy("syscall ptrace\nsyscall mount\ndeny syscall mount\nsyscall bpf\n");
        assert!(pol.syscall_allowed("ptrace"));
        assert!(!pol.syscall_allowed("mount"));
        assert!(!pol.syscall_allowed("kexec_load"));
        assert_eq!(
            pol.allowed_syscalls(),
            vec!["bpf".to_string(), "ptrace".to_string()]
        );
    }

    /// `include tmp` with TMPDIR at or above HOME would make HOME writable: refused.
    #[test]
    fn tmpdir_covering_home_is_refused_for_tmpdir_writes() {
        let text = "include tmp\n";
        assert!(CompiledPolicy::load("t.profile", text, &env()).is_ok());
        for (tmpdir, home) in [
            ("/tmp", "/tmp/x/home"),
            ("/home/u", "/home/u"),
            ("/", "/home/u"),
        ] {
            let e = Env {
                tmpdir: tmpdir.into(),
                home: home.into(),
                ..env()
            };
            let err = CompiledPolicy::load("t.profile", text, &e)
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            assert!(
                err.contains("would let the workload write HOME's own files"),
                "{tmpdir} {home}: {err}"
            );
            // A narrow temp-file rule cannot reach HOME's files: fine.
            assert!(
                CompiledPolicy::load("t.profile", "write ${TMPDIR}/cc*.c\n", &e).is_ok(),
                "{tmpdir}"
            );
            // Reads under ${TMPDIR} alone are not refused.
            assert!(CompiledPolicy::load("t.profile", "read ${TMPDIR}/**\n", &e).is_ok());
        }
        // A sibling with a common prefix is not inside.
        let e = Env {
            tmpdir: "/home/u".into(),
            home: "/home/u2".into(),
            ..env()
        };
        assert!(CompiledPolicy::load("t.profile", text, &e).is_ok());
    }

    fn at(cwd: &str, home: &str, text: &str) -> CompiledPolicy {
        let env = Env {
            cwd: cwd.into(),
            home: home.into(),
            tmpdir: "/tmp".into(),
            vars: BTreeMap::new(),
        };
        CompiledPolicy::load("t.profile", text, &env).unwrap_or_else(|e| panic!("{e}"))
    }

    /// `${CWD_ANCESTORS}` matches exactly the directories above this run's start directory:
    /// not the start directory, not a sibling or any other child of an ancestor, not a file
    /// in one, not the recording's old parents; HOME itself when it is one.
    /// See: docs/profile-format.md, "The directories above the start directory"
    #[test]
    fn cwd_ancestors_are_exactly_the_start_directorys_parents() {
        let p = at("/home/u/w/a/proj", "/home/u", "read ${CWD_ANCESTORS}\n");
        let read = |abs: &str| short(&p.decide(acc(R), &path(abs)));
        for dir in ["/", "/home", "/home/u", "/home/u/w", "/home/u/w/a"] {
            assert_eq!(read(dir), "allow", "{dir}");
            // A look at one (with --metadata) is allowed by the read rule.
            assert_eq!(short(&p.decide(acc(&[Access::Stat]), &path(dir))), "allow");
            // Listing is all: no write (chmod 0777 ~), no delete.
            assert_eq!(short(&p.decide(acc(W), &path(dir))), "deny write no-rule");
        }
        for other in [
            "/home/u/w/a/proj",
            "/home/u/w/a/proj/src",
            "/home/u/w/a/other",
            "/home/u/w/a/secret.txt",
            "/home/u/.ssh",
            "/home/u/.ssh/id_rsa",
            "/home/u/.npmrc",
            "/home/uu",
            "/home/u/w/ab",
            "/srv/ci/build-7",
            "/etc",
        ] {
            assert_eq!(read(other), "deny read no-rule", "{other}");
        }
        // Both names are checked: a symlink in an ancestor leading elsewhere admits nothing.
        assert_eq!(
            short(&p.decide(acc(R), &linked("/home/u/w", "/home/u/.ssh"))),
            "deny read no-rule"
        );
    }

    /// Deny rules win over it; a start directory at `/` has no ancestors; glob characters in
    /// a parent are literal; a start directory inside a secret place does not get to list it.
    #[test]
    fn cwd_ancestors_edge_cases() {
        let p = at(
            "/w/proj",
            "/home/u",
            "read /**\ndeny read ${CWD_ANCESTORS}\n",
        );
        assert_eq!(
            short(&p.decide(acc(R), &path("/w"))).split(' ').next(),
            Some("deny")
        );
        assert_eq!(short(&p.decide(acc(R), &path("/w/proj"))), "allow");
        let root = at("/", "/home/u", "read ${CWD_ANCESTORS}\n");
        for abs in ["/", "/home"] {
            assert_eq!(short(&root.decide(acc(R), &path(abs))), "deny read no-rule");
        }
        let star = at("/w/a*b/proj", "/home/u", "read ${CWD_ANCESTORS}\n");
        assert_eq!(short(&star.decide(acc(R), &path("/w/a*b"))), "allow");
        assert_eq!(
            short(&star.decide(acc(R), &path("/w/axb"))),
            "deny read no-rule"
        );
        let inside = at(
            "/home/u/.ssh/keys/proj",
            "/home/u",
            "read ${CWD_ANCESTORS}\n",
        );
        assert_eq!(short(&inside.decide(acc(R), &path("/home/u"))), "allow");
        for abs in ["/home/u/.ssh", "/home/u/.ssh/keys"] {
            assert_eq!(
                short(&inside.decide(acc(R), &path(abs))),
                "deny read no-rule"
            );
        }
        // Never from the environment, never a value.
        let mut env = env();
        env.vars.insert("CWD_ANCESTORS".into(), "/".into());
        let e = CompiledPolicy::load("t.profile", "read ${CWD_ANCESTORS}/**\n", &env);
        assert!(e.is_err());
    }

    #[test]
    fn a_project_area_is_refused_when_the_workload_starts_at_home() {
        let text = "read ${CWD}/**\n";
        assert!(CompiledPolicy::load("t.profile", text, &env()).is_ok());
        for cwd in ["/home/u", "/home", "/"] {
            let e = Env {
                cwd: cwd.into(),
                home: "/home/u".into(),
                ..env()
            };
            let err = CompiledPolicy::load("t.profile", text, &e)
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            assert!(err.contains("reach HOME's own files"), "{cwd}: {err}");
            // A named area inside the project cannot reach them: fine.
            assert!(CompiledPolicy::load("t.profile", "own ${CWD}/build\n", &e).is_ok());
        }
    }

    /// A provenance made of a list of owned paths (what a run created).
    struct Made(Vec<&'static str>);

    impl Provenance for Made {
        fn owns(&self, path: &[u8]) -> bool {
            self.0.iter().any(|p| p.as_bytes() == path)
        }
        fn absent_in_owned(&self, path: &[u8]) -> bool {
            !self.owns(path)
                && path
                    .iter()
                    .rposition(|&b| b == b'/')
                    .is_some_and(|i| self.owns(&path[..i]))
        }
    }

    #[test]
    fn areas_new_names_and_what_the_run_made() {
        let p = policy("own ${CWD}/build\ncreate ${CWD}/conf*\ndeny write ${CWD}/build/keep\n");
        let allow = |a: AccessSet, at: &str| p.decide(a, &path(at)) == Decision::Allow;
        let read = AccessSet::of(Access::Read);
        let write = AccessSet::of(Access::Write);
        let create = AccessSet::of(Access::Create).with(Access::Write);
        let delete = AccessSet::of(Access::Delete);
        let exec = AccessSet::of(Access::Exec);
        // An area: the path and below, every file verb but exec.
        for a in [read, write, create, delete] {
            assert!(allow(a, "/work/app/build"));
            assert!(allow(a, "/work/app/build/x/y.o"));
        }
        assert!(!allow(exec, "/work/app/build/demo"));
        assert!(!allow(read, "/work/app/buildx"));
        // ...never git hooks and configs, and a deny rule wins.
        assert!(!allow(write, "/work/app/build/.git/hooks/post-checkout"));
        assert!(!allow(create, "/work/app/build/.git/config"));
        assert!(allow(read, "/work/app/build/.git/config"));
        assert!(!allow(write, "/work/app/build/keep"));
        // A create rule admits the new name only: not a write to an existing one.
        assert!(allow(create, "/work/app/conf4711"));
        assert!(!allow(write, "/work/app/configure"));
        assert!(!allow(delete, "/work/app/configure"));
        // `write` still allows creating (old profiles).
        assert!(
            policy("write /work/app/out\n").decide(create, &path("/work/app/out"))
                == Decision::Allow
        );
        // What the run made: its own, but never exec, never past a deny, never a hook.
        let p = policy("deny read /t/made/secret\n");
        let made = Made(vec![
            "/t/made",
            "/t/made/a",
            "/t/made/secret",
            "/t/made/.git",
        ]);
        let owned = |a: AccessSet, at: &str| p.decide_owned(a, &path(at), &made) == Decision::Allow;
        assert!(owned(read, "/t/made/a") && owned(write, "/t/made/a"));
        assert!(owned(delete, "/t/made/a"));
        assert!(owned(create, "/t/made/new"));
        assert!(owned(read, "/t/made/absent"));
        assert!(!owned(exec, "/t/made/a"));
        assert!(!owned(read, "/t/made/secret"));
        assert!(!owned(create, "/t/made/.git/config"));
        assert!(!owned(create, "/t/other/new"));
        assert!(!owned(read, "/t/other"));
        // Without provenance nothing of it is allowed.
        assert!(p.decide(read, &path("/t/made/a")) != Decision::Allow);
    }

    /// A provenance that owns everything and takes `/w/x` for a git directory on disk
    /// (a `.git` renamed away).
    struct MovedGitDir;

    impl Provenance for MovedGitDir {
        fn owns(&self, _path: &[u8]) -> bool {
            true
        }
        fn absent_in_owned(&self, _path: &[u8]) -> bool {
            false
        }
        fn git_controlled(&self, path: &[u8]) -> bool {
            let look = |p: &[u8]| match p {
                b"/w/x" | b"/w/x/objects" | b"/w/x/refs" => persistence::Found::Dir,
                b"/w/x/HEAD" => persistence::Found::Other,
                _ => persistence::Found::Nothing,
            };
            persistence::git_controlled(path, &look)
        }
    }

    /// Issue 39: persistence places are written only through rules naming them exactly;
    /// neither an area, nor a glob, nor provenance admits them, nor moving one away.
    /// See: tests/attacks/round4_persist.rs
    #[test]
    fn persistence_places_need_a_rule_naming_them_exactly() {
        let p = policy(concat!(
            "write /w/**\nown /w/dep\ndelete /w/**\n",
            "write /w/dep/.git/config\ndelete /w/dep/.git/index\n"
        ));
        let write = AccessSet::of(Access::Write);
        let create = AccessSet::of(Access::Create);
        let moved = AccessSet::of(Access::Read).with(Access::Delete);
        let unlink = AccessSet::of(Access::Delete);
        let allow = |a: AccessSet, at: &str| p.decide(a, &path(at)) == Decision::Allow;
        for place in [
            "/w/dep/.git/hooks/post-checkout",
            "/w/.git/modules/lib/config",
            "/w/.bashrc",
            "/w/.npmrc",
            "/w/dep/lib/site-packages/zz.pth",
            "/w/.local/bin/git",
            "/w/sub/.git",
        ] {
            assert!(!allow(write, place) && !allow(create, place), "{place}");
            assert!(!allow(moved, place), "{place} moved away");
            assert!(allow(unlink, place), "{place} removed");
        }
        assert!(allow(write, "/w/dep/.git/config"));
        assert!(allow(create, "/w/dep/.git/objects/ab/cd"));
        assert!(allow(moved, "/w/dep/.git/index"));
        assert!(allow(write, "/w/dep/src/main.rs"));
        // By what git reads: `/w/x` holds HEAD, objects and refs.
        let owned =
            |a: AccessSet, at: &str| p.decide_owned(a, &path(at), &MovedGitDir) == Decision::Allow;
        assert!(!owned(create, "/w/x/hooks/post-checkout"));
        assert!(!owned(write, "/w/x/config"));
        assert!(!owned(moved, "/w/x/hooks"));
        assert!(owned(create, "/w/x/objects/ab/cd"));
        assert!(owned(write, "/w/y/config"));
    }

    #[test]
    fn owner_excluded_names_hooks_and_repository_configs() {
        for (path, want) in [
            ("/w/.git/hooks/pre-commit", true),
            ("/w/.git/hooks", true),
            ("/w/.git/config", true),
            // Fail closed: only a git directory's data entries are an area's (issue 39).
            ("/w/.git/config.bak", true),
            ("/w/.git/configx/y", true),
            ("/w/.git/modules/s/config", true),
            ("/w/.git/commondir", true),
            ("/w/.git/objects/ab/cd", false),
            ("/w/git/hooks/x", false),
        ] {
            assert_eq!(owner_excluded(path.as_bytes()), want, "{path}");
        }
    }

    #[test]
    fn compile_errors_carry_location() {
        let p = parse_str("t.profile", "read /ok\nread /usr/${NOPE}/x\n").unwrap_or_default();
        let r = resolve(&p, "t.profile").unwrap_or_default();
        let e = CompiledPolicy::compile(&r, &env())
            .err()
            .map(|e| e.to_string());
        assert_eq!(
            e.as_deref(),
            Some(
                "t.profile:2:1: undefined variable \"${NOPE}\" at byte 5 of the pattern (set it in the environment)"
            )
        );
        let mut vars = BTreeMap::new();
        vars.insert("REL".to_string(), "rel/dir".to_string());
        let p = parse_str("t.profile", "read ${REL}/x\n").unwrap_or_default();
        let r = resolve(&p, "t.profile").unwrap_or_default();
        let e = CompiledPolicy::compile(&r, &Env { vars, ..env() })
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.starts_with("t.profile:1:"), "{e}");
        assert!(e.contains("not an absolute path"), "{e}");
    }

    #[test]
    fn deny_reason_names_origin() {
        let pol = policy("include ssl\n");
        let d = pol.decide(acc(R), &path("/etc/ssl/private/server.key"));
        let Decision::Deny { reason, .. } = d else {
            panic!("expected deny, got {d:?}")
        };
        let text = reason.to_string();
        assert!(
            text.starts_with("denied by \"deny read /etc/ssl/private/**\" at ssl.profile:"),
            "{text}"
        );
        assert_eq!(
            pol.decide(acc(R), &path("/etc/ssl/certs/ca.pem")),
            Decision::Allow
        );
    }

    fn ev(kind: EventKind) -> Event {
        Event {
            time_ns: 0,
            pid: 1,
            tid: 1,
            proc: ProcInfo::default(),
            kind,
        }
    }

    fn open(p: &str, access: &[Access], outcome: Outcome) -> Event {
        ev(EventKind::Syscall(Syscall {
            name: "openat".into(),
            nr: 257,
            args: [0; 6],
            targets: vec![Target {
                access: acc(access),
                object: path(p),
            }],
            outcome,
            sock_type: None,
        }))
    }

    #[test]
    fn admits_events() {
        let pol = policy("read /etc/*\nprobe /opt/*\nexec /usr/bin/node\nsyscall ptrace\n");
        let none: Vec<(Verb, String)> = vec![];
        assert_eq!(
            pol.admits_event(&open("/etc/hosts", R, Outcome::Value(3))),
            none
        );
        assert_eq!(
            pol.admits_event(&open("/etc/nope", R, Outcome::Errno(2))),
            none
        );
        assert_eq!(
            pol.admits_event(&open("/opt/x", R, Outcome::Errno(2))),
            none
        );
        assert_eq!(
            pol.admits_event(&open("/opt/x", R, Outcome::Value(3))),
            vec![(Verb::Read, "/opt/x".to_string())]
        );
        // A failed create in a probed place is a probe too.
        assert_eq!(
            pol.admits_event(&open("/opt/x", &[Access::Create], Outcome::Errno(2))),
            none
        );
        assert_eq!(
            pol.admits_event(&open("/home/a b", R, Outcome::Errno(13))),
            vec![(Verb::Read, "\"/home/a b\"".to_string())]
        );
        // A mkdir that found its name (EEXIST, settled as a write) is a look; one that
        // failed otherwise, or with `..` as written (the kernel answers it), is a write.
        let mkdir = |p: &str, literal: &str, outcome| {
            let mut e = open(p, W, outcome);
            if let EventKind::Syscall(sc) = &mut e.kind {
                sc.name = "mkdirat".into();
                if let Object::Path(o) = &mut sc.targets[0].object {
                    o.literal = literal.as_bytes().to_vec();
                }
            }
            e
        };
        assert_eq!(
            pol.admits_event(&mkdir("/home", "/home", Outcome::Errno(17))),
            none
        );
        let write_home = vec![(Verb::Write, "/home".to_string())];
        for e in [
            mkdir("/home", "../home", Outcome::Errno(17)),
            mkdir("/home", "/home", Outcome::Errno(13)),
            mkdir("/home", "/home", Outcome::Killed),
        ] {
            assert_eq!(pol.admits_event(&e), write_home);
        }
        let exec = |p: &str| {
            ev(EventKind::Exec(crate::event::Exec {
                path: p.as_bytes().to_vec(),
                argv: vec![],
                env_names: vec![],
                former_tid: None,
                program: None,
                thinned: Vec::new(),
            }))
        };
        assert_eq!(pol.admits_event(&exec("/usr/bin/node")), none);
        assert_eq!(
            pol.admits_event(&exec("/bin/sh")),
            vec![(Verb::Exec, "/bin/sh".to_string())]
        );
        let gated = |name: &str| {
            ev(EventKind::Syscall(Syscall {
                name: name.into(),
                nr: 0,
                args: [0; 6],
                targets: vec![],
                outcome: Outcome::Value(0),
                sock_type: None,
            }))
        };
        assert_eq!(pol.admits_event(&gated("ptrace")), none);
        assert_eq!(
            pol.admits_event(&gated("bpf")),
            vec![(Verb::Syscall, "bpf".to_string())]
        );
        // With targets, the gate applies only through admits_event_with.
        let mut mount = open("/etc/hosts", R, Outcome::Value(0));
        if let EventKind::Syscall(sc) = &mut mount.kind {
            sc.name = "mount".into();
        }
        assert_eq!(pol.admits_event(&mount), none);
        assert_eq!(
            pol.admits_event_with(&mount, &|n| n == "mount"),
            vec![(Verb::Syscall, "mount".to_string())]
        );
    }

    #[test]
    fn shipped_snippets_compile_and_keep_secrets_out() {
        let mut all = String::new();
        for name in crate::profile::snippets::names() {
            let _ = policy(&format!("include {name}\n"));
            all.push_str(&format!("include {name}\n"));
        }
        let everything = policy(&all);
        for secret in [
            "/etc/shadow",
            "/etc/gshadow",
            "/home/u[1]/.ssh/id_ed25519",
            "/home/u[1]/.aws/credentials",
            "/home/u[1]/.npmrc",
            "/home/u[1]/.netrc",
            "/home/u[1]/.git-credentials",
            "/home/u[1]/.docker/config.json",
            "/home/u[1]/.config/gh/hosts.yml",
            "/home/u[1]/.gnupg/private-keys-v1.d/x.key",
            "/home/u[1]/.bash_history",
            "/etc/ssl/private/server.key",
            "/root/.ssh/id_rsa",
        ] {
            for access in [R, W] {
                let d = everything.decide(acc(access), &path(secret));
                // node probes ${HOME}/.npmrc: admitted only while it does not exist.
                let probed = secret.ends_with(".npmrc") && access == R;
                let ok = if probed {
                    d == Decision::AllowIfAbsent
                } else {
                    matches!(d, Decision::Deny { .. })
                };
                assert!(ok, "{secret} {access:?}: {d:?}");
            }
        }
        let pol = policy("include base\ninclude tmp\n");
        assert_eq!(
            pol.decide(
                acc(R),
                &linked(
                    "/lib/x86_64-linux-gnu/libc.so.6",
                    "/usr/lib/x86_64-linux-gnu/libc.so.6"
                )
            ),
            Decision::Allow
        );
        assert!(matches!(
            pol.decide(acc(R), &path("/etc/shadow")),
            Decision::Deny { .. }
        ));
        assert!(matches!(
            pol.decide(acc(R), &path("/home/u[1]/.ssh/id_rsa")),
            Decision::Deny { .. }
        ));
        assert_eq!(pol.decide(acc(W), &path("/tmp/x/y")), Decision::Allow);
    }
}
