//! Learning: a streaming fold from trace events to a [`Profile`] (design.md section 7,
//! docs/learning.md).
//!
//! [`Learner::begin_trace`] takes a trace [`Header`] and sets the substitution table for the
//! events that follow (so traces recorded in different directories or with different HOMEs
//! merge); [`Learner::observe`] maps each event to `(verb, object)` pairs and stores the
//! generalized object text in sorted sets; [`Learner::finish`] collapses busy directories into
//! `dir/**`, drops what the includes already allow, and builds the sorted profile.
//!
//! Memory grows with the number of distinct generalized objects, never with the number of
//! events. Pure: no I/O, no clock; the same events (in any order) give the same profile.

pub mod chains;
mod cover;
pub mod evidence;
pub mod generalize;
pub mod homes;
pub mod own;
pub mod secrets;
pub mod stores;
pub mod tempnames;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use crate::dns::DnsBook;
use crate::event::{
    Access, AccessSet, Event, EventKind, Object, Outcome, PathObj, ResolveSource, SockAddr, Syscall,
};
use crate::profile::{Effect, Include, Pattern, Profile, Proto, Rule, Span, Verb};
use crate::trace::Header;

use generalize::Var;

/// `ENOENT`: the path does not exist.
const ENOENT: i32 = 2;
/// `ENOTDIR`: a path component is not a directory, so the path does not exist either.
const ENOTDIR: i32 = 20;

/// Default for [`LearnOptions::dir_threshold`].
pub const DEFAULT_DIR_THRESHOLD: usize = 8;

/// Syscalls that are checked or metadata (they carry objects): a target-less event of one of
/// these is not a gated syscall use. Used only when [`LearnOptions::is_gated`] is not set.
const NOT_GATED: &[&str] = &[
    "open",
    "openat",
    "openat2",
    "creat",
    "execve",
    "execveat",
    "stat",
    "lstat",
    "fstat",
    "newfstatat",
    "statx",
    "access",
    "faccessat",
    "faccessat2",
    "readlink",
    "readlinkat",
    "chdir",
    "fchdir",
    "getxattr",
    "lgetxattr",
    "fgetxattr",
    "listxattr",
    "llistxattr",
    "flistxattr",
    "statfs",
    "fstatfs",
    "unlink",
    "unlinkat",
    "rmdir",
    "mkdir",
    "mkdirat",
    "rename",
    "renameat",
    "renameat2",
    "link",
    "linkat",
    "symlink",
    "symlinkat",
    "chmod",
    "fchmod",
    "fchmodat",
    "fchmodat2",
    "chown",
    "fchown",
    "lchown",
    "fchownat",
    "truncate",
    "ftruncate",
    "mknod",
    "mknodat",
    "utime",
    "utimes",
    "utimensat",
    "futimesat",
    "setxattr",
    "lsetxattr",
    "fsetxattr",
    "removexattr",
    "lremovexattr",
    "fremovexattr",
    "socket",
    "socketpair",
    "connect",
    "bind",
    "listen",
    "accept",
    "accept4",
    "sendto",
    "sendmsg",
    "sendmmsg",
];

/// "Is this rule already allowed?": verb and pattern text.
pub type AllowedFn = Box<dyn Fn(Verb, &str) -> bool>;
/// "Is this syscall gated?": syscall name.
pub type GatedFn = Box<dyn Fn(&str) -> bool>;

/// What to learn and how (CLI flags of `sbx learn`).
pub struct LearnOptions {
    /// A directory with at least this many distinct children used with the same verb becomes
    /// `dir/**` for that verb (0 disables collapsing).
    pub dir_threshold: usize,
    /// "Is this rule already allowed by the includes?" (verb, pattern text as rendered after
    /// the verb: a path glob, `tcp *:443`, a syscall name). Rules for which it returns true are
    /// left out. The CLI wires it to the policy compiled from the includes.
    pub already_allowed: Option<AllowedFn>,
    /// Include names to put in the profile (e.g. `["base"]`).
    pub includes: Vec<String>,
    /// An existing profile (`--base`): its rules are kept and widened by what is observed.
    pub base: Option<Profile>,
    /// Is a syscall name gated (from the arch table)? When unset, a target-less syscall event
    /// is learned as `syscall NAME` unless its name is a known checked/metadata syscall.
    pub is_gated: Option<GatedFn>,
    /// The name servers of this machine (/etc/resolv.conf): a peer on port 53 that is one of
    /// them is learned as `${NAMESERVERS}:53`, which enforce expands on its own machine.
    pub nameservers: Vec<IpAddr>,
    /// A DNS answer's name counts as asked (`resolve NAME` unless a net rule names it): for
    /// traces of `sbx record`, which sees the answers but not the queries sent on connected
    /// sockets. Off for enforce's diff, where every query is seen.
    pub answers_are_queries: bool,
    /// Reads of the project's files (under `${CWD}`) become one area, `read ${CWD}/**`, with
    /// its secret-looking top-level names denied (docs/learning.md section 0). `sbx learn`
    /// turns it on; off by default (the enforce diff proposes rules one by one).
    pub project_area: bool,
    /// Rights to secret places and network peers are bound to the programs on the exec
    /// chains that used them (`by npm`, docs/learning.md "Rights bound to programs").
    /// `sbx learn` turns it on (`--no-scope` off); off by default.
    pub scope: bool,
}

impl Default for LearnOptions {
    fn default() -> Self {
        LearnOptions {
            dir_threshold: DEFAULT_DIR_THRESHOLD,
            already_allowed: None,
            includes: Vec::new(),
            base: None,
            is_gated: None,
            nameservers: Vec::new(),
            answers_are_queries: false,
            project_area: false,
            scope: false,
        }
    }
}

impl fmt::Debug for LearnOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LearnOptions")
            .field("dir_threshold", &self.dir_threshold)
            .field(
                "already_allowed",
                &self.already_allowed.as_ref().map(|_| "<fn>"),
            )
            .field("includes", &self.includes)
            .field("base", &self.base.as_ref().map(|b| b.rules.len()))
            .field("is_gated", &self.is_gated.as_ref().map(|_| "<fn>"))
            .field("nameservers", &self.nameservers)
            .finish()
    }
}

/// The per-trace context: the substitution table and what the header says.
#[derive(Debug, Default)]
struct TraceCtx {
    vars: Vec<Var>,
    cwd: Vec<u8>,
    home: Vec<u8>,
    metadata: bool,
    forbidden: Vec<String>,
    /// Names that resolved to each address so far in this trace (its own run).
    book: DnsBook,
    /// What this trace's run created (provenance, by path).
    own: own::Ownership,
    /// Each live process's exec chain: the programs its rights are bound to.
    chains: std::collections::HashMap<i32, std::rc::Rc<chains::Chain>>,
    /// The known `program` definitions, expanded with this trace's variables (built at the
    /// first exec of the trace).
    programs: Option<Vec<(String, globset::GlobMatcher)>>,
    /// The known `launcher` lines, expanded the same way.
    launchers: Option<globset::GlobSet>,
}

/// The streaming learner. Feed it traces (`begin_trace` then `observe` per event), then
/// `finish`.
pub struct Learner {
    opts: LearnOptions,
    ctx: TraceCtx,
    traces: usize,
    /// The earliest and latest recording start over the traces (Unix seconds).
    recorded: Option<(u64, u64)>,
    commands: BTreeSet<String>,
    /// Generalized path globs per verb (collapsible).
    paths: BTreeMap<Verb, BTreeSet<String>>,
    /// Secret places actually used (exact text), with a warning.
    secrets: BTreeSet<(Verb, String)>,
    /// Writes into places whose files run later outside the sandbox (shell startup files,
    /// crontabs, git hooks...): kept exact, with a WARNING.
    persistence: BTreeSet<(Verb, String)>,
    /// Probes/stats of secret places: exact, not collapsed, no warning.
    exact: BTreeSet<(Verb, String)>,
    net: BTreeSet<(Verb, Proto, String)>,
    /// Names queried from DNS (`resolve NAME`), unless a named net rule already implies them.
    resolve: BTreeSet<String>,
    syscalls: BTreeSet<String>,
    /// Places no generalization may cover, over all traces.
    forbidden: BTreeSet<String>,
    /// Comments of base rules, to keep them on the same (verb, pattern).
    base_comments: BTreeMap<(Verb, String), Vec<String>>,
    base_deny: Vec<Rule>,
    /// `program` definitions of the base profile, kept as they are.
    base_programs: Vec<Rule>,
    /// The programs (names of `program` lines) each scoped right is bound to (issue 21):
    /// from the exec chains that used it, and from the base profile's `by` lists.
    scopes: BTreeMap<(Verb, String), BTreeSet<String>>,
    /// `program` definitions learned for identities no snippet names: (name, path glob).
    programs: BTreeMap<String, BTreeSet<String>>,
    /// The same, by path glob; and per file-name stem the next suffix to try: an exec is
    /// named without scanning every program learned so far (issue 39 item 8).
    program_of_glob: std::collections::HashMap<String, String>,
    next_suffix: std::collections::HashMap<String, usize>,
    /// The `by` lists of the base profile, to flag a widening.
    base_scoped: BTreeMap<(Verb, String), BTreeSet<String>>,
    /// Scoped rights some process without a known chain used (they stay global).
    unscoped: BTreeSet<(Verb, String)>,
    /// Loopback peers used, with their port: scoped unless the run listened on the port.
    loopback_peers: BTreeMap<(Verb, String), u16>,
    /// Ports the runs bound (their own servers).
    bound_ports: BTreeSet<u16>,
    /// Where the run's own TCP servers listened (the address `listen` found).
    own_listeners: Vec<(IpAddr, u16)>,
    /// The programs on the chains of the processes that wrote into a shared tool cache
    /// ([`TOOL_CACHES`]), and whether one had no known chain.
    cache_writers: BTreeSet<String>,
    cache_unscoped: bool,
    base_includes: Vec<String>,
    had_base: bool,
    /// Every trace started below HOME's level (not at HOME, an ancestor of it, or `/`): the
    /// project's files may be learned as one area, `read ${CWD}/**`.
    cwd_area_ok: bool,
    /// The names of a base profile's project-area deny rule (see [`project_secrets_rule`]).
    base_project_deny: Option<Vec<String>>,
    /// Probes that came from a failed exec (a read rule does not cover them).
    exec_probes: BTreeSet<String>,
    /// `own` and `create` rules of the root creations of finished traces.
    owned_rules: BTreeSet<(Verb, String)>,
    /// The tool stores the runs used ([`stores`]), by their root's glob.
    stores: BTreeMap<String, &'static stores::Kind>,
    /// Thrown-away names of finished traces, to align with each other's (docs/learning.md
    /// section 0).
    aligned: tempnames::Alignment,
}

impl fmt::Debug for Learner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Learner")
            .field("opts", &self.opts)
            .field("traces", &self.traces)
            .field(
                "paths",
                &self.paths.values().map(BTreeSet::len).sum::<usize>(),
            )
            .field("secrets", &self.secrets.len())
            .field("net", &self.net.len())
            .field("syscalls", &self.syscalls.len())
            .finish()
    }
}

impl Learner {
    pub fn new(mut opts: LearnOptions) -> Learner {
        let mut l = Learner {
            opts: LearnOptions::default(),
            ctx: TraceCtx {
                forbidden: generalize::forbidden_places(b"", &[]),
                ..TraceCtx::default()
            },
            traces: 0,
            recorded: None,
            commands: BTreeSet::new(),
            paths: BTreeMap::new(),
            secrets: BTreeSet::new(),
            persistence: BTreeSet::new(),
            exact: BTreeSet::new(),
            net: BTreeSet::new(),
            resolve: BTreeSet::new(),
            syscalls: BTreeSet::new(),
            forbidden: generalize::forbidden_places(b"", &[]).into_iter().collect(),
            base_comments: BTreeMap::new(),
            base_deny: Vec::new(),
            base_programs: Vec::new(),
            scopes: BTreeMap::new(),
            programs: BTreeMap::new(),
            program_of_glob: std::collections::HashMap::new(),
            next_suffix: std::collections::HashMap::new(),
            unscoped: BTreeSet::new(),
            base_scoped: BTreeMap::new(),
            loopback_peers: BTreeMap::new(),
            bound_ports: BTreeSet::new(),
            own_listeners: Vec::new(),
            cache_writers: BTreeSet::new(),
            cache_unscoped: false,
            base_includes: Vec::new(),
            had_base: false,
            cwd_area_ok: true,
            base_project_deny: None,
            exec_probes: BTreeSet::new(),
            owned_rules: BTreeSet::new(),
            stores: BTreeMap::new(),
            aligned: tempnames::Alignment::default(),
        };
        if let Some(base) = opts.base.take() {
            l.absorb_base(base);
        }
        l.opts = opts;
        l
    }

    fn absorb_base(&mut self, base: Profile) {
        self.had_base = true;
        self.base_includes = base.includes.into_iter().map(|i| i.name).collect();
        for rule in base.rules {
            if rule.effect == Effect::Deny {
                // The project area's deny rule is learned again from what the runs used
                // (a name the workload now reads leaves it), keeping the reviewer's choices.
                if let Some(names) = project_secrets_of(&rule) {
                    self.base_project_deny = Some(names);
                } else {
                    self.base_deny.push(rule);
                }
                continue;
            }
            if matches!(rule.pattern, Pattern::Program { .. } | Pattern::Env(_))
                || rule.verb == Verb::Launcher
            {
                self.base_programs.push(rule);
                continue;
            }
            let key = match &rule.pattern {
                // A base rule naming a secret place exactly (learned with a WARNING, or
                // written by hand) stays exact and keeps generalization away, as when a trace
                // shows it: no `dir/**` may swallow it.
                // See: learn::tests::base_secret_rules_stay_exact_and_block_collapsing
                Pattern::Path(p) if !has_glob(p) && generalize::is_secret(p) => {
                    self.forbidden.insert(p.clone());
                    if matches!(rule.verb, Verb::Probe | Verb::Stat) {
                        self.exact.insert((rule.verb, p.clone()));
                    } else {
                        self.secrets.insert((rule.verb, p.clone()));
                    }
                    (rule.verb, p.clone())
                }
                Pattern::Path(p) => {
                    self.paths.entry(rule.verb).or_default().insert(p.clone());
                    (rule.verb, p.clone())
                }
                Pattern::Net { proto, addr } => {
                    self.net.insert((rule.verb, *proto, addr.clone()));
                    (rule.verb, net_text(*proto, addr))
                }
                Pattern::Syscall(name) => {
                    self.syscalls.insert(name.clone());
                    (rule.verb, name.clone())
                }
                Pattern::Host(name) => {
                    self.resolve.insert(name.clone());
                    (rule.verb, name.clone())
                }
                Pattern::Program { .. } | Pattern::Env(_) => continue,
            };
            if rule.by.is_empty() {
                // A right the reviewer left global stays global.
                self.unscoped.insert(key.clone());
            } else {
                self.scopes
                    .entry(key.clone())
                    .or_default()
                    .extend(rule.by.iter().cloned());
                self.base_scoped
                    .insert(key.clone(), rule.by.iter().cloned().collect());
            }
            // Every base allow rule is recorded (even without comments): it is kept as is.
            self.base_comments.insert(key, rule.comments);
        }
    }

    /// Start a trace: its events are abstracted with this header's variables.
    pub fn begin_trace(&mut self, header: &Header) {
        self.traces += 1;
        let t = header.start_unix;
        self.recorded = Some(self.recorded.map_or((t, t), |(a, b)| (a.min(t), b.max(t))));
        let cwd = header.cwd.strip_suffix(b"/").unwrap_or(&header.cwd);
        let covers_home = cwd.is_empty()
            || header
                .home
                .strip_prefix(cwd)
                .is_some_and(|r| r.is_empty() || r[0] == b'/');
        self.cwd_area_ok &= !covers_home;
        let mut vars: Vec<Var> = vec![
            ("CWD".into(), header.cwd.clone()),
            ("HOME".into(), header.home.clone()),
            ("TMPDIR".into(), header.tmpdir.clone()),
        ];
        vars.push(("UID".into(), header.uid.to_string().into_bytes()));
        let forbidden = generalize::forbidden_places(&header.home, &vars);
        self.forbidden.extend(forbidden.iter().cloned());
        let done = self.ctx.own.rules(&self.ctx.vars, &self.ctx.forbidden);
        self.owned_rules.extend(done);
        if self.traces > 1 {
            let thrown = self
                .ctx
                .own
                .thrown_names(&self.ctx.vars, &self.ctx.forbidden);
            self.aligned.add_trace(thrown);
        }
        self.ctx = TraceCtx {
            vars,
            cwd: header.cwd.clone(),
            home: header.home.clone(),
            metadata: header.metadata,
            forbidden,
            book: DnsBook::default(),
            own: own::Ownership::default(),
            chains: std::collections::HashMap::new(),
            programs: None,
            launchers: None,
        };
        // Shell words: the line can be pasted back (`sh -c 'a b'`, not `sh -c a b`).
        let mut cmd = crate::show::shell_line(&header.argv);
        if cmd.len() > 200 {
            let mut cut = 200;
            while !cmd.is_char_boundary(cut) {
                cut -= 1;
            }
            cmd.truncate(cut);
            cmd.push_str("...");
        }
        self.commands.insert(cmd);
    }

    /// Fold one event in.
    pub fn observe(&mut self, ev: &Event) {
        match &ev.kind {
            EventKind::Syscall(sc) => self.observe_syscall(ev, sc),
            EventKind::Exec(ex) => {
                if self.opts.scope {
                    self.chain_exec(ev, ex.identity());
                }
                self.ctx.own.exec(ev.pid, &ex.argv);
                self.add_path(ev, Verb::Exec, &ex.path);
                // On another machine PATH may list other directories first, where the
                // program is looked for (and not found) before it runs: `probe /**/NAME`.
                // See: docs/real-world.md pip (rustc looked up in a CI tool directory)
                if let Some(g) = generalize::search_probe(&ex.path, &self.ctx.cwd, true) {
                    self.paths.entry(Verb::Probe).or_default().insert(g);
                }
            }
            EventKind::Resolved(r) => {
                self.ctx.book.learn(&r.name, &r.addrs);
                // The name was asked (the answer carries the question): record sees the
                // answers, not always the query (a send on a connected socket does not stop).
                // A named net rule implies it; otherwise it becomes `resolve NAME`.
                if self.opts.answers_are_queries
                    && matches!(r.source, ResolveSource::Dns(_))
                    && crate::dns::check_name_pattern(&r.name).is_ok()
                {
                    self.resolve.insert(r.name.clone());
                }
            }
            EventKind::Spawn(sp) => {
                if !sp.thread
                    && let Some(c) = self.ctx.chains.get(&ev.pid).cloned()
                {
                    self.ctx.chains.insert(sp.child, c);
                }
            }
            EventKind::Exit(x) => {
                if x.process {
                    self.ctx.chains.remove(&ev.pid);
                }
            }
        }
    }

    /// The `program` name for identity `path` (absolute): a shipped snippet's or the base
    /// profile's when one of its globs matches, else a name learned from the file name
    /// (with a `program` line for its generalized path).
    fn program_name(&mut self, ev: &Event, path: &[u8]) -> String {
        let g = generalize::generalize_path(path, ev.pid, ev.tid, &self.ctx.vars, &[]);
        let known = known_programs(&self.base_programs);
        if self.ctx.programs.is_none() {
            // Asked of globset with the trace's own variables, as enforce will ask.
            let env = self.trace_env();
            let mut matchers = Vec::new();
            for (name, globs) in &known {
                for k in globs {
                    if let Ok(e) = crate::profile::vars::expand(k, &env)
                        && let Ok(m) = crate::profile::parse::glob_builder(&e).build()
                    {
                        matchers.push((name.clone(), m.compile_matcher()));
                    }
                }
            }
            self.ctx.programs = Some(matchers);
        }
        let text = crate::profile::vars::path_to_text(path);
        let cand = globset::Candidate::new(text.as_ref());
        if let Some((name, _)) = self
            .ctx
            .programs
            .iter()
            .flatten()
            .find(|(_, m)| m.is_match_candidate(&cand))
        {
            return name.clone();
        }
        if let Some(name) = self.program_of_glob.get(&g) {
            return name.clone();
        }
        let file = path.rsplit(|&b| b == b'/').next().unwrap_or(path);
        let mut stem: String = String::from_utf8_lossy(file)
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '+' | '-') {
                    c
                } else {
                    '-'
                }
            })
            .take(40)
            .collect();
        if !stem.starts_with(|c: char| c.is_ascii_alphabetic()) {
            stem.insert_str(0, "p-");
        }
        // Names taken stay taken: resume after the last suffix tried for this stem.
        let mut n = self.next_suffix.get(&stem).copied().unwrap_or(2);
        let mut name = if n > 2 {
            format!("{stem}-{}", n - 1)
        } else {
            stem.clone()
        };
        while known.contains_key(&name) || self.programs.get(&name).is_some_and(|s| !s.contains(&g))
        {
            name = format!("{stem}-{n}");
            n += 1;
        }
        self.next_suffix.insert(stem, n);
        self.programs
            .entry(name.clone())
            .or_default()
            .insert(g.clone());
        self.program_of_glob.insert(g, name.clone());
        name
    }

    /// Process `pid` runs with this exec chain (program identities, oldest first), as
    /// enforce saw it: for the diff, whose events carry no execs.
    pub fn set_chain(&mut self, pid: i32, identities: &[Vec<u8>]) {
        if !self.opts.scope {
            return;
        }
        let probe = Event {
            time_ns: 0,
            pid,
            tid: pid,
            proc: crate::event::ProcInfo::default(),
            kind: EventKind::Exit(crate::event::Exit {
                status: crate::event::ExitStatus::Code(0),
                process: false,
            }),
        };
        self.ctx.chains.remove(&pid);
        for id in identities {
            self.chain_exec(&probe, id);
        }
    }

    /// Event `ev`'s process exec'd the program `identity`: its chain goes on.
    fn chain_exec(&mut self, ev: &Event, identity: &[u8]) {
        let name = self.program_name(ev, identity);
        let launcher = self.is_launcher(identity);
        let before = self.ctx.chains.get(&ev.pid).cloned();
        let chain = chains::Chain::exec(before.as_deref(), name, launcher);
        self.ctx.chains.insert(ev.pid, chain);
    }

    /// Whether a known `launcher` line (shipped snippets, base profile) matches `identity`.
    fn is_launcher(&mut self, identity: &[u8]) -> bool {
        if self.ctx.launchers.is_none() {
            let env = self.trace_env();
            let mut b = globset::GlobSetBuilder::new();
            for k in known_launchers(&self.base_programs) {
                if let Ok(e) = crate::profile::vars::expand(&k, &env)
                    && let Ok(g) = crate::profile::parse::glob_builder(&e).build()
                {
                    b.add(g);
                }
            }
            self.ctx.launchers = b.build().ok();
        }
        let text = crate::profile::vars::path_to_text(identity);
        self.ctx
            .launchers
            .as_ref()
            .is_some_and(|set| set.is_match(text.as_ref()))
    }

    /// This trace's variables as an enforce-time environment, to expand snippet globs the
    /// way enforce will.
    fn trace_env(&self) -> crate::profile::vars::Env {
        let text = |k: &str| -> String {
            self.ctx
                .vars
                .iter()
                .find(|(n, _)| n == k)
                .map(|(_, v)| String::from_utf8_lossy(v).into_owned())
                .unwrap_or_default()
        };
        crate::profile::vars::Env {
            cwd: text("CWD"),
            home: text("HOME"),
            tmpdir: text("TMPDIR"),
            vars: BTreeMap::new(),
        }
    }

    /// Event `ev`'s process wrote into a shared tool cache.
    fn cache_use(&mut self, ev: &Event) {
        if !self.opts.scope {
            return;
        }
        match self.ctx.chains.get(&ev.pid) {
            Some(c) => self.cache_writers.extend(c.names().iter().cloned()),
            _ => self.cache_unscoped = true,
        }
    }

    /// A scoped right (verb, key) was used by event `ev`'s process.
    fn scope_use(&mut self, ev: &Event, key: (Verb, String)) {
        if !self.opts.scope {
            return;
        }
        match self.ctx.chains.get(&ev.pid) {
            Some(c) => {
                self.scopes
                    .entry(key)
                    .or_default()
                    .extend(c.names().iter().cloned());
            }
            _ => {
                self.unscoped.insert(key);
            }
        }
    }

    fn observe_syscall(&mut self, ev: &Event, sc: &Syscall) {
        // Gated syscalls carry their decoded arguments as targets without access (chroot's
        // directory, mount's type): they are learned as `syscall NAME`, never as path rules.
        let no_access = sc.targets.iter().all(|t| t.access.is_empty());
        let gated = match &self.opts.is_gated {
            Some(f) => f(&sc.name),
            None => no_access && !NOT_GATED.contains(&sc.name.as_str()),
        };
        if gated {
            self.syscalls.insert(sc.name.clone());
        }
        // prctl is free except PR_SET_SECCOMP, which enforce allows only with `syscall
        // seccomp` (filter.rs): a sandboxing workload (a browser, systemd-run) needs it.
        if sc.name == "prctl" && sc.args[0] & 0xffff_ffff == crate::filter::PR_SET_SECCOMP {
            self.syscalls.insert("seccomp".to_string());
        }
        if no_access {
            return;
        }
        // A server of the run's own (what `listen` found the socket bound to): a connect to
        // it is the run talking to itself, which enforce admits without a rule.
        if sc.name == "listen" {
            for t in sc.targets.iter().filter(|t| t.access.is_empty()) {
                if let Object::Socket(
                    a @ (SockAddr::Inet { port, .. } | SockAddr::Inet6 { port, .. }),
                ) = &t.object
                    && *port != 0
                {
                    let ip = match a {
                        SockAddr::Inet { addr, .. } => IpAddr::from(*addr),
                        SockAddr::Inet6 { addr, .. } => IpAddr::from(*addr),
                        _ => continue,
                    };
                    self.own_listeners.push((ip, *port));
                    self.bound_ports.insert(*port);
                }
            }
        }
        let missing = matches!(sc.outcome, Outcome::Errno(ENOENT | ENOTDIR));
        let ok = matches!(sc.outcome, Outcome::Value(_) | Outcome::Unknown);
        for t in &sc.targets {
            let access = if crate::policy::mkdir_found_existing(sc, t) {
                AccessSet::of(Access::Stat)
            } else {
                t.access
            };
            let verbs = verbs_of(access, self.ctx.metadata);
            if verbs.is_empty() {
                continue;
            }
            match &t.object {
                // One name looked up in a removed working directory or dirfd: the kernel
                // failed it with ENOENT whatever the name, and enforce answers it so itself
                // (`EnforceSink::in_removed_dir`); a rule for `DIR (deleted)/NAME` would
                // only puzzle whoever reads the profile. Calls with two paths are learned as
                // they are (enforce answers only one-path calls).
                Object::Path(p)
                    if sc.outcome == Outcome::Errno(ENOENT)
                        && sc.targets.len() == 1
                        && p.under_deleted_base() => {}
                Object::Path(p) => {
                    for verb in verbs {
                        if matches!(verb, Verb::Write | Verb::Create | Verb::Delete)
                            && in_tool_cache(p.effective())
                        {
                            self.cache_use(ev);
                        }
                        // A store the run only looked for (the loader searching a library
                        // path that runs through one) is none of its business.
                        if verb != Verb::Exec && ok {
                            self.store_use(ev, verb, p.effective());
                        }
                        if self.owned_access(ev, sc, verb, p, ok, missing) {
                            continue;
                        }
                        // A read or exec of a missing path reads nothing: a probe, which the
                        // policy admits only while the path does not exist. Writes, deletes
                        // and metadata keep their verb: enforce checks before the syscall and
                        // admits a probe only for read, exec and stat.
                        if missing && matches!(verb, Verb::Read | Verb::Exec) {
                            self.add_probe(ev, verb == Verb::Exec, p);
                            if verb == Verb::Read && generalize::is_git_packed_refs(&p.abs) {
                                self.add_pathobj(ev, verb, p);
                            }
                        } else {
                            self.add_pathobj(ev, verb, p);
                            if verb == Verb::Exec {
                                // The name as called (`rustc`), not only where it leads
                                // (`rustup`): that is what another PATH is searched for.
                                // See: docs/real-world.md pip
                                for path in [p.abs.as_slice(), p.effective()] {
                                    if let Some(g) =
                                        generalize::search_probe(path, &self.ctx.cwd, true)
                                    {
                                        self.paths.entry(Verb::Probe).or_default().insert(g);
                                    }
                                }
                            }
                        }
                    }
                }
                // Only fds with a filesystem name: `socket:[N]`, `pipe:[N]` and `anon_inode:..`
                // are not paths (the policy admits them; a rule for them would not parse).
                // See: tests/enforce.rs::learned_profile_of_a_listening_workload_parses
                Object::Fd { path: Some(p), .. } if p.starts_with(b"/") => {
                    for verb in verbs {
                        self.add_path(ev, verb, p);
                    }
                }
                Object::Socket(addr) => {
                    for verb in verbs {
                        self.add_sock(ev, verb, addr);
                    }
                }
                // A payload to port 53 that is no DNS query cannot become a rule.
                Object::DnsName(name) if verbs.contains(&Verb::Resolve) => {
                    if crate::dns::check_name_pattern(name).is_ok() {
                        self.resolve.insert(name.clone());
                    }
                }
                Object::DnsName(_)
                | Object::Fd { .. }
                | Object::Anon(_)
                | Object::Text(_)
                | Object::Ids(_) => {}
            }
        }
        // A rename moves what the run owns (after its two names were looked at as they were).
        if ok
            && sc.name.starts_with("rename")
            && let [from, to] = sc.targets.as_slice()
            && let (Object::Path(from), Object::Path(to)) = (&from.object, &to.object)
        {
            self.ctx.own.renamed(from.effective(), to.effective());
        }
    }

    /// The tool store `path` is in: its kind, the length of its root in `path`, and the root
    /// as a glob of this trace.
    fn store_root(
        &self,
        ev: &Event,
        path: &[u8],
    ) -> Option<(&'static stores::Kind, usize, String)> {
        let (kind, len) = stores::store_of(path, &self.ctx.home)?;
        let vars = &self.ctx.vars;
        let root =
            generalize::generalize_path(&path[..len], ev.pid, ev.tid, vars, &self.ctx.forbidden);
        Some((kind, len, root))
    }

    /// The `exec` glob of `path` when it lies inside a tool store and a segment below the
    /// store's root is a temp name (`${HOME}/.cache/uv/builds-v0/.tmp??????/bin/python`).
    fn store_exec(&self, ev: &Event, path: &[u8]) -> Option<String> {
        let (_, len, root) = self.store_root(ev, path)?;
        let mut any = false;
        let mut out = root;
        for seg in path[len..].split(|&b| b == b'/').filter(|s| !s.is_empty()) {
            let text = std::str::from_utf8(seg).ok()?;
            let temp = tempnames::temp_glob(text, tempnames::Seen::ThrownAway);
            any |= temp.is_some();
            out.push('/');
            out.push_str(&temp.unwrap_or_else(|| generalize::escape_segment(seg)));
        }
        any.then_some(out)
    }

    /// A tool store ([`stores`]) was used: the run owns it, bound as its kind says.
    fn store_use(&mut self, ev: &Event, verb: Verb, path: &[u8]) {
        let Some((kind, _, root)) = self.store_root(ev, path) else {
            return;
        };
        // A store is known by its layout: one level below HOME is deep enough for one
        // (`${HOME}/.rustup`), where an area learned from creations needs two.
        let home_store = root
            .strip_prefix("${HOME}/")
            .is_some_and(|r| !r.contains('/'))
            && !generalize::is_secret(&root);
        if !own::ownable(&root) && !home_store {
            return;
        }
        self.stores.insert(root.clone(), kind);
        let key = (Verb::Own, root);
        match kind.bind {
            stores::Bind::Users => self.scope_use(ev, key),
            stores::Bind::Tool(tool) => {
                if self.opts.scope {
                    let owned = tool.to_string();
                    self.scopes.entry(key.clone()).or_default().insert(owned);
                }
                // The tool itself, wherever it runs from (rustup's proxy under pip's build
                // backend makes its home on a cold HOME), and whoever else wrote there.
                let by_tool = self
                    .ctx
                    .chains
                    .get(&ev.pid)
                    .is_some_and(|c| c.runs() == tool);
                if by_tool || matches!(verb, Verb::Write | Verb::Create | Verb::Delete) {
                    self.scope_use(ev, key);
                }
            }
        }
    }

    /// Provenance (docs/learning.md, "Ownership before names"): is this access to what the
    /// run created, or a creation (learned as `own`/`create` rules of the trace's root
    /// creations at its end)? Then no path rule is learned for it here.
    fn owned_access(
        &mut self,
        ev: &Event,
        sc: &Syscall,
        verb: Verb,
        p: &PathObj,
        ok: bool,
        missing: bool,
    ) -> bool {
        let path = p.effective();
        // Git control paths and the other persistence places, by spelling as enforce keeps
        // them out of areas, and HOME's (`${HOME}/bin`): never owned, learned exact.
        let excluded = crate::policy::owner_excluded(path)
            || generalize::is_persistence_place(&generalize::abstract_vars(path, &self.ctx.vars));
        match verb {
            Verb::Create if excluded => {
                // Git hooks and configs need their own rule, also in what the run made. A
                // repository's `.git` directory made here is the run's: its objects and refs
                // need no rule (enforce owns what the run made), its control paths do.
                self.add_pathobj(ev, Verb::Write, p);
                if ok
                    && sc.name.starts_with("mkdir")
                    && self.ctx.own.parent_owned(path)
                    && path.rsplit(|&b| b == b'/').next() == Some(b".git".as_slice())
                {
                    self.ctx.own.created(path, true, false, ev.pid, ev.tid);
                }
                true
            }
            // A git control path (or another persistence place) moved away: enforce needs a
            // rule naming it exactly (`.git/hooks` out, edited, and back), learned so.
            Verb::Delete if excluded && sc.name.starts_with("rename") => {
                let exact = generalize::abstract_vars(path, &self.ctx.vars);
                self.forbidden.insert(exact.clone());
                self.persistence.insert((Verb::Delete, exact));
                true
            }
            Verb::Create if self.ctx.own.parent_owned(path) => {
                if ok {
                    let dir = sc.name.starts_with("mkdir");
                    self.ctx.own.created(path, dir, true, ev.pid, ev.tid);
                }
                true
            }
            Verb::Create if ok => {
                let text = generalize::abstract_vars(path, &self.ctx.vars);
                if generalize::is_secret(&text) {
                    return false;
                }
                let dir = sc.name.starts_with("mkdir") || self.ctx.own.is_dir(path);
                self.ctx
                    .own
                    .created(path, dir, own::ownable(&text), ev.pid, ev.tid);
                true
            }
            // A create that did not happen (refused by enforce, or a missing directory): the
            // rule the model learns for the name's shape, never the literal temp name the next
            // run will not use (`create ${CWD}/conf*`, not `conf28554`).
            Verb::Create => {
                let text = generalize::abstract_vars(path, &self.ctx.vars);
                if generalize::is_secret(&text) {
                    return false;
                }
                let g = generalize::generalize_path(
                    path,
                    ev.pid,
                    ev.tid,
                    &self.ctx.vars,
                    &self.ctx.forbidden,
                );
                let g = match g.rsplit_once('/') {
                    Some((dir, last)) => format!("{dir}/{}", own::transient_shape(last)),
                    None => g,
                };
                self.paths.entry(Verb::Create).or_default().insert(g);
                true
            }
            Verb::Read | Verb::Delete | Verb::Write | Verb::Stat
                if !(verb == Verb::Write && excluded) && self.ctx.own.owns(path) =>
            {
                if verb == Verb::Delete && ok && !sc.name.starts_with("rename") {
                    self.ctx.own.deleted(path);
                }
                true
            }
            // A read of a missing name in a directory the run made: nothing to learn.
            Verb::Read | Verb::Stat if missing && self.ctx.own.parent_owned(path) => true,
            _ => false,
        }
    }

    fn add_pathobj(&mut self, ev: &Event, verb: Verb, p: &PathObj) {
        let eff = p.effective();
        self.add_path(ev, verb, eff);
        if !p.abs.is_empty() && p.abs.as_slice() != eff {
            self.add_path(ev, verb, &p.abs);
        }
    }

    /// A probe (a read or exec that found nothing): a `PATH` search or an upward search from
    /// the start directory is learned as `/**/NAME` ([`generalize::search_probe`]); other
    /// probes, and secret places, as usual.
    /// See: docs/real-world.md npm (PATH), pip and cargo (rust-toolchain, .cargo/config)
    fn add_probe(&mut self, ev: &Event, exec: bool, p: &PathObj) {
        let eff = p.effective();
        let abs = (!p.abs.is_empty() && p.abs.as_slice() != eff).then_some(p.abs.as_slice());
        for path in std::iter::once(eff).chain(abs) {
            let exact = generalize::abstract_vars(path, &self.ctx.vars);
            // Upward searches pass through HOME only when the start directory is below it;
            // otherwise HOME and TMPDIR are siblings, not ancestors, and keep their variable.
            let below_home = !self.ctx.home.is_empty()
                && self.ctx.cwd.starts_with(&self.ctx.home)
                && self.ctx.cwd.get(self.ctx.home.len()) == Some(&b'/');
            let sibling =
                exact.starts_with("${TMPDIR}") || (exact.starts_with("${HOME}") && !below_home);
            // A tool's config file is looked for in every parent (yarn's `.yarnrc`): that
            // search is a probe like any other (it admits nothing that exists).
            let secret = generalize::is_secret(&exact) && !generalize::credential_file(&exact);
            let search = if secret || (!exec && sibling) {
                None
            } else {
                generalize::search_probe(path, &self.ctx.cwd, exec)
            };
            match search {
                Some(g) => {
                    if exec {
                        self.exec_probes.insert(g.clone());
                    }
                    self.paths.entry(Verb::Probe).or_default().insert(g);
                }
                None => {
                    if exec {
                        let g = generalize::generalize_path(
                            path,
                            ev.pid,
                            ev.tid,
                            &self.ctx.vars,
                            &self.ctx.forbidden,
                        );
                        self.exec_probes.insert(g);
                    }
                    self.add_path(ev, Verb::Probe, path);
                }
            }
        }
    }

    fn add_path(&mut self, ev: &Event, verb: Verb, path: &[u8]) {
        // `pipe:[N]`, `socket:[N]`, `anon_inode:..` (an fd named by AT_EMPTY_PATH) are not
        // filesystem paths: the policy admits them, and no rule could name them.
        // See: tests/enforce.rs::learned_metadata_profile_round_trips
        if !path.starts_with(b"/") {
            return;
        }
        // The full abstraction decides, except that a start directory at or above HOME must
        // not hide ~/.ssh & co: those fixed places are also checked against HOME alone.
        let exact = generalize::abstract_vars(path, &self.ctx.vars);
        let secret = generalize::is_secret(&exact)
            || (!self.ctx.home.is_empty() && path.starts_with(&self.ctx.home) && {
                let home_only: [Var; 1] = [("HOME".into(), self.ctx.home.clone())];
                generalize::is_secret_place(&generalize::abstract_vars(path, &home_only))
            });
        let persists = matches!(verb, Verb::Write | Verb::Create)
            && (generalize::is_persistence_place(&exact)
                || (!self.ctx.home.is_empty() && path.starts_with(&self.ctx.home) && {
                    let home_only: [Var; 1] = [("HOME".into(), self.ctx.home.clone())];
                    generalize::is_persistence_place(&generalize::abstract_vars(path, &home_only))
                }));
        if persists && !secret {
            self.forbidden.insert(exact.clone());
            self.persistence.insert((verb, exact));
            return;
        }
        // git's disabled hooks (`hooks/*.sample`): exact, never a glob over the hooks.
        if matches!(verb, Verb::Write | Verb::Create) && generalize::is_git_sample_hook(&exact) {
            self.exact.insert((verb, exact));
            return;
        }
        if secret {
            self.forbidden.insert(exact.clone());
            if matches!(verb, Verb::Probe | Verb::Stat) {
                self.exact.insert((verb, exact));
            } else {
                self.scope_use(ev, (verb, exact.clone()));
                self.secrets.insert((verb, exact));
            }
            return;
        }
        // A directory above the start directory, listed or looked at (module resolvers and
        // git walk up to `/`): the set of them, wherever the next checkout is.
        if matches!(verb, Verb::Read | Verb::Stat)
            && generalize::is_cwd_ancestor(path, &self.ctx.cwd)
        {
            let set = self.paths.entry(verb).or_default();
            set.insert(crate::profile::vars::CWD_ANCESTORS.to_string());
            return;
        }
        // A program inside a tool's store (uv's build environments `.tmpXXXXXX` in its
        // cache): the store's temp names are the tool's own.
        if verb == Verb::Exec
            && let Some(g) = self.store_exec(ev, path)
        {
            self.paths.entry(verb).or_default().insert(g);
            return;
        }
        // A program the run made below a directory it created: learned with that
        // directory's shape at the end of the trace (`own::Ownership::defer_exec`).
        if verb == Verb::Exec && self.ctx.own.defer_exec(path) {
            return;
        }
        let g =
            generalize::generalize_path(path, ev.pid, ev.tid, &self.ctx.vars, &self.ctx.forbidden);
        let set = self.paths.entry(verb).or_default();
        if !set.contains(&g) {
            set.insert(g);
        }
    }

    fn add_sock(&mut self, ev: &Event, verb: Verb, addr: &SockAddr) {
        const STREAM: i32 = 1;
        const DGRAM: i32 = 2;
        if !matches!(verb, Verb::Connect | Verb::Bind | Verb::Send) {
            return;
        }
        let stream = match &ev.kind {
            EventKind::Syscall(s) => s.sock_type == Some(STREAM),
            _ => false,
        };
        if verb == Verb::Connect && stream && crate::dns::own_listener(&self.own_listeners, addr) {
            return;
        }
        let peer = verb != Verb::Bind;
        // The socket's type, when the trace has it (format 4+): SOCK_STREAM 1, SOCK_DGRAM 2.
        let sock_type = match &ev.kind {
            EventKind::Syscall(s) => s.sock_type,
            _ => None,
        };
        // A peer is written by the name it was resolved from in this run (the latest), else
        // exactly; name servers of this machine as `${NAMESERVERS}`; loopback stays exact.
        let inet = |ip: IpAddr,
                    port: u16,
                    scoped: &mut bool,
                    loopback: &mut bool|
         -> Vec<(Proto, String)> {
            let ip = crate::dns::canonical(ip);
            let exact = match ip {
                IpAddr::V4(v4) => v4.to_string(),
                IpAddr::V6(v6) => format!("[{v6}]"),
            };
            let names = self.ctx.book.names(ip);
            // Who may reach it: a peer that is no name server and no server of the run
            // itself is bound to the programs that reached it.
            *scoped = peer && !(port == crate::dns::PORT && self.opts.nameservers.contains(&ip));
            *loopback = crate::dns::is_loopback(ip);
            let host = if !peer {
                exact
            } else if port == crate::dns::PORT && self.opts.nameservers.contains(&ip) {
                crate::profile::parse::NAMESERVERS.to_string()
            } else if crate::dns::is_loopback(ip) {
                exact
            } else if let Some(name) = names.first() {
                name.clone()
            } else {
                exact
            };
            let a = format!("{host}:{port}");
            match (verb, sock_type) {
                (_, Some(DGRAM)) | (Verb::Send, _) => vec![(Proto::Udp, a)],
                (_, Some(STREAM)) => vec![(Proto::Tcp, a)],
                // The socket type is unknown (a raw socket, or an fd gone before sbx asked):
                // DNS (port 53) is usually UDP, anything else TCP.
                (Verb::Connect, _) if port == 53 => {
                    vec![(Proto::Tcp, a.clone()), (Proto::Udp, a)]
                }
                _ => vec![(Proto::Tcp, a)],
            }
        };
        let mut scoped = false;
        let mut loopback = false;
        let mut port_of = 0u16;
        let entries: Vec<(Proto, String)> = match addr {
            SockAddr::Inet { addr, port } => {
                port_of = *port;
                inet(
                    IpAddr::V4(Ipv4Addr::from(*addr)),
                    *port,
                    &mut scoped,
                    &mut loopback,
                )
            }
            SockAddr::Inet6 { addr, port, .. } => {
                port_of = *port;
                inet(
                    IpAddr::V6(Ipv6Addr::from(*addr)),
                    *port,
                    &mut scoped,
                    &mut loopback,
                )
            }
            SockAddr::Unix(path) => {
                let g = generalize::generalize_path(
                    path,
                    ev.pid,
                    ev.tid,
                    &self.ctx.vars,
                    &self.ctx.forbidden,
                );
                vec![(Proto::Unix, g)]
            }
            SockAddr::UnixAbstract(name) => {
                vec![(Proto::Unix, format!("@{}", generalize::escape_path(name)))]
            }
            // The kernel's netlink protocol, as the tracer found it on the socket.
            SockAddr::Netlink {
                protocol: Some(p), ..
            } => {
                vec![(Proto::Netlink, crate::profile::netlink_name(Some(*p)))]
            }
            SockAddr::UnixUnnamed
            | SockAddr::Other { .. }
            | SockAddr::Invalid { .. }
            | SockAddr::Netlink { protocol: None, .. } => Vec::new(),
        };
        if verb == Verb::Bind && port_of != 0 {
            self.bound_ports.insert(port_of);
        }
        for (proto, a) in entries {
            if scoped {
                let key = (verb, net_text(proto, &a));
                if loopback {
                    self.loopback_peers.insert(key.clone(), port_of);
                }
                self.scope_use(ev, key);
            }
            self.net.insert((verb, proto, a));
        }
    }

    /// Build the profile: collapse, drop what the includes allow, sort.
    pub fn finish(self) -> Profile {
        self.finish_with(&self.opts.includes, self.opts.already_allowed.as_ref())
    }

    /// The profile as [`Learner::finish`] would make it with `includes` and `already_allowed`
    /// instead of the options': the events are folded once, the includes only decide what is
    /// left out (`sbx learn` tries the `ssl` and `tmp` snippets this way).
    pub fn finish_with(&self, includes: &[String], already_allowed: Option<&AllowedFn>) -> Profile {
        let allowed =
            |verb: Verb, text: &str| -> bool { already_allowed.is_some_and(|f| f(verb, text)) };
        // Rules an include already allows are left out, globs included (the `already_allowed`
        // hook only sees one pattern at a time and cannot judge globs or `${VARS}`).
        // See: tests/learn.rs npm-demo (every `${HOME}/.npm/...` rule repeated `include node`).
        let include_names: Vec<String> = includes
            .iter()
            .chain(self.base_includes.iter())
            .cloned()
            .collect();
        let covering = include_globs(&include_names);
        let covers = |g: &str, text: &str| g == text || generalize::subsumes_with_vars(g, text);
        // An area covers its path and everything below it, for every file verb but exec
        // (and not the git hooks and configs it never writes).
        let area_covers = |verb: Verb, g: &str, text: &str| {
            let hook = matches!(verb, Verb::Write | Verb::Create)
                && crate::policy::owner_excluded(text.as_bytes());
            !matches!(verb, Verb::Exec | Verb::Own)
                && !hook
                && (covers(g, text) || covers(&format!("{g}/**"), text))
        };
        let included = |verb: Verb, text: &str| -> bool {
            covering
                .get(&verb)
                .is_some_and(|gs| gs.iter().any(|g| covers(g, text)))
                || covering
                    .get(&Verb::Own)
                    .is_some_and(|gs| gs.iter().any(|g| area_covers(verb, g, text)))
                || (verb == Verb::Create
                    && covering
                        .get(&Verb::Write)
                        .is_some_and(|gs| gs.iter().any(|g| covers(g, text))))
        };
        let allowed =
            |verb: Verb, text: &str| -> bool { allowed(verb, text) || included(verb, text) };
        let forbidden: Vec<String> = self.forbidden.iter().cloned().collect();
        let mut rules: Vec<Rule> = Vec::new();
        let mut project_deny: Option<Rule> = None;
        let mut area_active = false;
        // Scoped rights: those a process without a known chain used stay global, and a
        // loopback peer is bound only when the runs did not serve on its port themselves.
        let scopes: BTreeMap<(Verb, String), BTreeSet<String>> = self
            .scopes
            .iter()
            .filter(|(k, _)| {
                !self.unscoped.contains(*k)
                    && self
                        .loopback_peers
                        .get(*k)
                        .is_none_or(|port| !self.bound_ports.contains(port))
            })
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let scopes = &scopes;
        let base_scoped = &self.base_scoped;
        // Writes into a shared tool cache are bound to the programs that wrote there.
        let cache_writers: Vec<String> = if self.cache_unscoped {
            Vec::new()
        } else {
            self.cache_writers.iter().cloned().collect()
        };
        let mut push = |verb: Verb, pattern: Pattern, mut comments: Vec<String>| {
            let key = (verb, rule_key(&pattern));
            let mut by: Vec<String> = scopes
                .get(&key)
                .map(|s| s.iter().cloned().collect())
                .unwrap_or_default();
            if by.is_empty()
                && matches!(verb, Verb::Own | Verb::Write | Verb::Create | Verb::Delete)
                && let Pattern::Path(p) = &pattern
                && in_tool_cache(p.as_bytes())
            {
                by.clone_from(&cache_writers);
            }
            // A right the profile bound to programs, now wanted by others: say so loudly
            // (an install script asking for npm's token is the attack this binding stops).
            if let Some(was) = base_scoped.get(&key) {
                let to = if by.is_empty() {
                    Some("every process of the workload".to_string())
                } else {
                    let new: Vec<&String> = by.iter().filter(|n| !was.contains(*n)).collect();
                    (!new.is_empty()).then(|| {
                        new.iter()
                            .map(|s| s.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    })
                };
                if let Some(to) = to {
                    let was: Vec<&str> = was.iter().map(String::as_str).collect();
                    comments.push(format!(
                        "WARNING: widens a right bound to {} to {to}: review who asked for it",
                        was.join(",")
                    ));
                }
            }
            rules.push(Rule {
                effect: Effect::Allow,
                verb,
                pattern,
                comments,
                span: Span::default(),
                by,
            });
        };
        let base_comments = &self.base_comments;
        let stores = &self.stores;
        let comments_of = |verb: Verb, text: &str| -> Vec<String> {
            base_comments
                .get(&(verb, text.to_string()))
                .cloned()
                .or_else(|| {
                    let kind = stores.get(text).filter(|_| verb == Verb::Own)?;
                    Some(vec![kind.comment.to_string()])
                })
                .unwrap_or_default()
        };

        // What the runs created in places they did not create: `own` and `create` rules.
        let mut paths = self.paths.clone();
        // Tool stores are owned warm or cold; a tool-bound one is read by everyone. A cold
        // HOME lacks the directories above a store too (`.cache`, `.local/share`): the run
        // may create them (a name that does not exist, nothing more).
        for (root, kind) in &self.stores {
            paths.entry(Verb::Own).or_default().insert(root.clone());
            if let Some(rel) = root.strip_prefix("${HOME}/") {
                let parents = rel.match_indices('/').map(|(i, _)| &rel[..i]);
                for parent in parents {
                    let text = format!("${{HOME}}/{parent}");
                    paths.entry(Verb::Create).or_default().insert(text);
                }
            }
            if matches!(kind.bind, stores::Bind::Tool(_)) {
                paths
                    .entry(Verb::Read)
                    .or_default()
                    .insert(format!("{root}/**"));
            }
        }
        let current = self.ctx.own.rules(&self.ctx.vars, &self.ctx.forbidden);
        for (verb, text) in self.owned_rules.iter().cloned().chain(current) {
            paths.entry(verb).or_default().insert(text);
        }
        let thrown = self
            .ctx
            .own
            .thrown_names(&self.ctx.vars, &self.ctx.forbidden);
        for text in self.aligned.rules(thrown) {
            paths.entry(Verb::Create).or_default().insert(text);
        }
        let areas: Vec<String> = paths
            .get(&Verb::Own)
            .map(|s| {
                own::group_owned(s, self.opts.dir_threshold)
                    .into_iter()
                    .collect()
            })
            .unwrap_or_default();
        for (verb, set) in &paths {
            let kept: BTreeSet<String> = set
                .iter()
                .filter(|p| {
                    self.base_comments.contains_key(&(*verb, (*p).clone()))
                        || !(allowed(*verb, p)
                            // A failed read needs no probe rule where reading is allowed.
                            || (*verb == Verb::Probe
                                && !self.exec_probes.contains(*p)
                                && allowed(Verb::Read, p)))
                })
                // Inside an area the workload owns, nothing needs naming; inside a tool
                // store, not even what the run left there.
                .filter(|p| match verb {
                    Verb::Own => !self
                        .stores
                        .keys()
                        .any(|r| r != *p && covers(&format!("{r}/**"), p)),
                    // A store written by its tool alone is read by everyone: its own rule
                    // does not cover the reads.
                    _ => !areas.iter().any(|a| {
                        area_covers(*verb, a, p)
                            && !(*verb == Verb::Read
                                && self
                                    .stores
                                    .get(a)
                                    .is_some_and(|k| matches!(k.bind, stores::Bind::Tool(_))))
                    }),
                })
                .cloned()
                .collect();
            let mut collapsed = match verb {
                // Never widen exec: running a program that never ran is an attack.
                Verb::Exec => kept.clone(),
                // Areas group by extension, never into `dir/**` (the directory was there).
                Verb::Own => own::group_owned(&kept, self.opts.dir_threshold),
                // New names collapse below a cache or build tree, never right in the
                // workload's start directory or TMPDIR: `create ${TMPDIR}/**` would let any
                // process make (and then own) anything there, as `include tmp` did.
                Verb::Create => {
                    let mut no_top = forbidden.clone();
                    no_top.extend([
                        "${CWD}/\u{0}sbx".to_string(),
                        "${TMPDIR}/\u{0}sbx".to_string(),
                    ]);
                    generalize::collapse(&kept, self.opts.dir_threshold, &no_top)
                }
                _ => generalize::collapse(&kept, self.opts.dir_threshold, &forbidden),
            };
            // The project's own files are input: one area, so that a new source or test file
            // is no violation (docs/learning.md section 0).
            let fresh_area = *verb == Verb::Read
                && self.opts.project_area
                && self.cwd_area_ok
                && collapsed.iter().any(|p| p.starts_with("${CWD}/"));
            if fresh_area {
                collapsed.retain(|p| !p.starts_with("${CWD}/"));
                collapsed.insert(PROJECT_AREA.to_string());
                area_active = true;
            }
            // Failed reads in the project need no probe rule once it is an area.
            if *verb == Verb::Probe && area_active {
                collapsed.retain(|p| !p.starts_with("${CWD}/") || self.exec_probes.contains(p));
            }
            if *verb == Verb::Read && (fresh_area || self.base_project_deny.is_some()) {
                // Every name a rule of the profile names (read, probed, owned, written...):
                // deny rules win, and must not take back what the profile grants.
                let used: Vec<&str> = paths
                    .values()
                    .flatten()
                    .chain(self.secrets.iter().map(|(_, p)| p))
                    .chain(self.exact.iter().map(|(_, p)| p))
                    .filter_map(|p| p.strip_prefix("${CWD}/"))
                    .collect();
                let names: Vec<&str> = match &self.base_project_deny {
                    Some(names) => names.iter().map(String::as_str).collect(),
                    None => PROJECT_SECRETS.to_vec(),
                };
                project_deny = project_secrets_rule(&names, &used);
            }
            // Learn is safe by construction: no glob for writing, creating or owning reaches
            // a persistence place or a hidden name straight in HOME or `/`; such a glob is
            // narrowed to what it was made of, or dropped (the next run then reports it).
            if matches!(verb, Verb::Write | Verb::Create | Verb::Own | Verb::Delete) {
                collapsed = narrow_persistence(collapsed, &kept);
            }
            // A pattern another learned glob subsumes needs no rule; the index asks only the
            // globs that can (20,000 exec probes made the pairwise check take minutes).
            let wide = cover::CoverIndex::new(&collapsed);
            for p in &collapsed {
                let covered = wide.covered(p);
                if covered || (p.contains("**") && allowed(*verb, p)) {
                    continue;
                }
                push(*verb, Pattern::Path(p.clone()), comments_of(*verb, p));
            }
        }
        for (verb, p) in &self.exact {
            if !allowed(*verb, p) {
                push(*verb, Pattern::Path(p.clone()), comments_of(*verb, p));
            }
        }
        for (verb, p) in &self.secrets {
            // A shipped snippet that admits it for every process says why (npm's global
            // config, /usr/etc/npmrc, by convention without credentials).
            if included(*verb, p) {
                continue;
            }
            let mut c = comments_of(*verb, p);
            if !c.iter().any(|l| l.starts_with("WARNING")) {
                c.push(format!(
                    "WARNING: the traced run used a secret place ({} {p}); kept exact, remove it \
                     unless the workload really needs it",
                    verb.name()
                ));
            }
            push(*verb, Pattern::Path(p.clone()), c);
        }
        for (verb, p) in &self.persistence {
            let mut c = comments_of(*verb, p);
            if !c.iter().any(|l| l.starts_with("WARNING")) {
                let did = if *verb == Verb::Delete {
                    "moved away"
                } else {
                    "wrote"
                };
                c.push(format!(
                    "WARNING: persistence: the traced run {did} {p}, which runs later outside \
                     the sandbox (at login, on a schedule, on a git command); kept exact, remove \
                     it unless the workload really needs it"
                ));
            }
            if !allowed(*verb, p) {
                push(*verb, Pattern::Path(p.clone()), c);
            }
        }
        for (verb, proto, addr) in &self.net {
            let text = net_text(*proto, addr);
            if self.base_comments.contains_key(&(*verb, text.clone())) || !allowed(*verb, &text) {
                push(
                    *verb,
                    Pattern::Net {
                        proto: *proto,
                        addr: addr.clone(),
                    },
                    comments_of(*verb, &text),
                );
            }
        }
        // A name a net rule names is implied (`connect tcp NAME:443` admits resolving NAME).
        let named: BTreeSet<&str> = self
            .net
            .iter()
            .filter_map(|(_, _, a)| a.rsplit_once(':').map(|(h, _)| h))
            .collect();
        for name in &self.resolve {
            let kept = self
                .base_comments
                .contains_key(&(Verb::Resolve, name.clone()));
            if kept || (!named.contains(name.as_str()) && !allowed(Verb::Resolve, name)) {
                push(
                    Verb::Resolve,
                    Pattern::Host(name.clone()),
                    comments_of(Verb::Resolve, name),
                );
            }
        }
        for name in &self.syscalls {
            if !allowed(Verb::Syscall, name) {
                push(
                    Verb::Syscall,
                    Pattern::Syscall(name.clone()),
                    comments_of(Verb::Syscall, name),
                );
            }
        }
        rules.extend(self.base_deny.iter().cloned());
        rules.extend(self.base_programs.iter().cloned());
        // Every name a `by` list uses is defined: by an include, the base profile, a shipped
        // snippet's definition copied here, or a program learned from the traces.
        let used: BTreeSet<&String> = rules.iter().flat_map(|r| r.by.iter()).collect();
        let mut defined: BTreeSet<String> = self
            .base_programs
            .iter()
            .filter_map(|r| match &r.pattern {
                Pattern::Program { name, .. } => Some(name.clone()),
                _ => None,
            })
            .collect();
        let included = crate::profile::snippets::resolve(
            &Profile {
                includes: include_names
                    .iter()
                    .map(|n| crate::profile::Include {
                        name: n.clone(),
                        span: Span::default(),
                    })
                    .collect(),
                ..Profile::default()
            },
            "learn",
        )
        .map(|r| r.rules)
        .unwrap_or_default();
        for (r, _) in &included {
            if let Pattern::Program { name, .. } = &r.pattern {
                defined.insert(name.clone());
            }
        }
        // The bindings were learned with the shipped launchers standing outside the chains:
        // a profile without the snippet that names them (`--no-includes`) names them itself.
        let launchers_known = included
            .iter()
            .map(|(r, _)| r)
            .chain(&self.base_programs)
            .any(|r| r.verb == Verb::Launcher);
        let launcher_rules: Vec<Rule> = if used.is_empty() || launchers_known {
            Vec::new()
        } else {
            known_launchers(&[])
                .into_iter()
                .map(|path| Rule {
                    effect: Effect::Allow,
                    verb: Verb::Launcher,
                    pattern: Pattern::Path(path),
                    comments: Vec::new(),
                    span: Span::default(),
                    by: Vec::new(),
                })
                .collect()
        };
        let mut programs = self.programs.clone();
        programs.retain(|name, _| used.contains(name));
        for name in used {
            if !defined.contains(name)
                && !programs.contains_key(name)
                && let Some(paths) = shipped_programs().get(name)
            {
                programs.insert(name.clone(), paths.iter().cloned().collect());
            }
        }
        for (name, paths) in &programs {
            for path in paths {
                rules.push(Rule {
                    effect: Effect::Allow,
                    verb: Verb::Program,
                    pattern: Pattern::Program {
                        name: name.clone(),
                        path: path.clone(),
                    },
                    comments: Vec::new(),
                    span: Span::default(),
                    by: Vec::new(),
                });
            }
        }
        rules.extend(project_deny);
        rules.extend(launcher_rules);
        merge_path_searches(&mut rules);
        rules.sort_by(|a, b| {
            (a.effect, a.verb, &a.pattern, &a.comments).cmp(&(
                b.effect,
                b.verb,
                &b.pattern,
                &b.comments,
            ))
        });
        rules.dedup_by(|a, b| a.effect == b.effect && a.verb == b.verb && a.pattern == b.pattern);

        let mut header = vec![format!(
            "learned by sbx {} from {} trace(s)",
            env!("CARGO_PKG_VERSION"),
            self.traces
        )];
        if let Some((first, last)) = self.recorded {
            // From the traces, not the clock: learning the same traces again gives the same
            // bytes.
            let day = |t: u64| {
                let s = humantime::format_rfc3339_seconds(
                    std::time::UNIX_EPOCH + std::time::Duration::from_secs(t),
                )
                .to_string();
                s.replace('T', " ").replace('Z', " UTC")
            };
            header.push(if first == last {
                format!("recorded: {}", day(first))
            } else {
                format!("recorded: {} to {}", day(first), day(last))
            });
        }
        if self.had_base {
            header.push("widened from a base profile".to_string());
        }
        header.extend(self.commands.iter().map(|c| format!("command: {c}")));
        header.push(format!("dir threshold: {}", self.opts.dir_threshold));

        let names: BTreeSet<String> = includes
            .iter()
            .chain(self.base_includes.iter())
            .cloned()
            .collect();
        let includes = names
            .into_iter()
            .map(|name| Include {
                name,
                span: Span::default(),
            })
            .collect();
        Profile {
            header,
            includes,
            rules,
        }
    }
}

/// `rules` without a glob that reaches a persistence place
/// ([`generalize::glob_reaches_persistence`]): each such glob is replaced by the members of
/// `made_of` (the rules before collapsing) it covers that do not reach one themselves; a glob
/// made so from the start (a shape) is dropped.
fn narrow_persistence(rules: BTreeSet<String>, made_of: &BTreeSet<String>) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for r in rules {
        if !generalize::glob_reaches_persistence(&r) {
            out.insert(r);
            continue;
        }
        out.extend(
            made_of
                .iter()
                .filter(|m| **m != r && generalize::subsumes(&r, m))
                .filter(|m| !generalize::glob_reaches_persistence(m))
                .cloned(),
        );
    }
    out
}

/// The area of the project's files, learned when a run read any of them.
const PROJECT_AREA: &str = "${CWD}/**";

/// Names in the project's top directory that look like credentials: the project area does
/// not cover them (`deny read ${CWD}/{.env,...}`), unless the run used them itself.
const PROJECT_SECRETS: &[&str] = &[
    ".env",
    ".env.*",
    "*.pem",
    "*.key",
    "*.p12",
    "*.pfx",
    "id_rsa*",
    "id_dsa*",
    "id_ecdsa*",
    "id_ed25519*",
    ".netrc",
    ".npmrc",
    ".pypirc",
    ".git-credentials",
    "*credentials*",
    "*secret*",
    "*token*",
];

/// The comment of the project area's deny rule (it marks the rule as learn's own).
const PROJECT_SECRETS_COMMENT: &str =
    "The project's files are read as one area; not the ones that look like credentials.";

/// The names of a project-area deny rule (`deny read ${CWD}/{a,b}` with learn's comment).
fn project_secrets_of(rule: &Rule) -> Option<Vec<String>> {
    let Pattern::Path(p) = &rule.pattern else {
        return None;
    };
    let inner = p.strip_prefix("${CWD}/{")?.strip_suffix('}')?;
    (rule.verb == Verb::Read && rule.comments.iter().any(|c| c == PROJECT_SECRETS_COMMENT))
        .then(|| inner.split(',').map(str::to_string).collect())
}

/// The deny rule that keeps the project's secret-looking top-level names (`names`) out of the
/// project area. It never loses a name: a top-level file the profile names exactly (`used`,
/// relative to `${CWD}`: read, probed, owned, written) is taken out of a name pattern by
/// narrowing the pattern around it ([`secrets::except`]: `token.go` leaves `*token*` as a
/// few patterns that match every other name with `token` in it); a literal name leaves only
/// when the profile names exactly it. A glob the profile names (`create ${CWD}/xtoken*`)
/// takes nothing out: deny rules win over it.
/// See: issue 39 item 7 (made-and-removed `xtoken1` dropped `*token*` from the rule).
fn project_secrets_rule(names: &[&str], used: &[&str]) -> Option<Rule> {
    let used: Vec<&str> = used
        .iter()
        .copied()
        .filter(|u| !u.contains('/') && !has_glob(u))
        .collect();
    let mut out: Vec<String> = Vec::new();
    for pat in names {
        let Ok(g) = crate::profile::parse::glob_builder(pat).build() else {
            continue;
        };
        let m = g.compile_matcher();
        let hits: Vec<&str> = used.iter().copied().filter(|u| m.is_match(u)).collect();
        if hits.is_empty() {
            out.push((*pat).to_string());
        } else if has_glob(pat) {
            match secrets::except(pat, &hits) {
                Some(list) => out.extend(list),
                None => out.push((*pat).to_string()),
            }
        }
    }
    out.dedup();
    if out.is_empty() {
        return None;
    }
    Some(Rule {
        by: Vec::new(),
        effect: Effect::Deny,
        verb: Verb::Read,
        pattern: Pattern::Path(format!("${{CWD}}/{{{}}}", out.join(","))),
        comments: vec![PROJECT_SECRETS_COMMENT.to_string()],
        span: Span::default(),
    })
}

/// The allow path rules of the named shipped snippets (and what they include), per verb, with
/// `{a,b}` expanded. Unknown names and globs that cannot be judged are left out: leaving out
/// coverage only keeps more rules in the learned profile.
fn include_globs(names: &[String]) -> BTreeMap<Verb, Vec<String>> {
    let mut out: BTreeMap<Verb, Vec<String>> = BTreeMap::new();
    if names.is_empty() {
        return out;
    }
    let prof = Profile {
        header: vec![],
        includes: names
            .iter()
            .map(|n| Include {
                name: n.clone(),
                span: Span::default(),
            })
            .collect(),
        rules: vec![],
    };
    let Ok(resolved) = crate::profile::snippets::resolve(&prof, "<includes>") else {
        return out;
    };
    for (rule, _) in &resolved.rules {
        // A rule bound to programs does not cover what others need (uv's cache, written by
        // uv and by the build backends it starts).
        if rule.effect != Effect::Allow || !rule.by.is_empty() {
            continue;
        }
        match &rule.pattern {
            Pattern::Path(p) => {
                if let Some(globs) = generalize::expand_braces(p) {
                    out.entry(rule.verb).or_default().extend(globs);
                }
            }
            // Network rules are matched by their exact text (`udp ${NAMESERVERS}:53`).
            Pattern::Net { proto, addr } => {
                let texts = generalize::expand_braces(addr).unwrap_or_else(|| vec![addr.clone()]);
                out.entry(rule.verb)
                    .or_default()
                    .extend(texts.iter().map(|a| net_text(*proto, a)));
            }
            Pattern::Syscall(_) | Pattern::Host(_) | Pattern::Program { .. } | Pattern::Env(_) => {}
        }
    }
    out
}

/// Shared tool caches whose content later builds trust (cargo unpacks crates into
/// `.cargo/registry/src` and checks out git dependencies into `.cargo/git`): writes there are
/// bound to the programs that made them (a build script rewriting another crate's sources
/// would poison every later build). Matched anywhere in a path, whatever CARGO_HOME is.
const TOOL_CACHES: &[&[u8]] = &[b"/.cargo/registry", b"/.cargo/git"];

/// Is `path` (a path or a pattern) a shared tool cache or inside one?
fn in_tool_cache(path: &[u8]) -> bool {
    TOOL_CACHES.iter().any(|c| {
        path.windows(c.len())
            .enumerate()
            .any(|(i, w)| w == *c && matches!(path.get(i + c.len()), None | Some(b'/')))
    })
}

/// The `program` definitions of every shipped snippet, by name (parsed once).
fn shipped_programs() -> &'static BTreeMap<String, Vec<String>> {
    static PROGRAMS: std::sync::OnceLock<BTreeMap<String, Vec<String>>> =
        std::sync::OnceLock::new();
    PROGRAMS.get_or_init(|| {
        let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for name in crate::profile::snippets::names() {
            let text = crate::profile::snippets::snippet(name).unwrap_or_default();
            let Ok(p) = crate::profile::parse::parse_str(name, text) else {
                continue;
            };
            for r in p.rules {
                if let Pattern::Program { name, path } = r.pattern {
                    out.entry(name).or_default().push(path);
                }
            }
        }
        out
    })
}

/// The PATH searches (`probe /**/NAME`, one per program looked for) as one rule,
/// `probe /**/{cc,gcc,make,...}`: a probe admits nothing that exists, so the one rule admits
/// exactly what the many did, and a build's profile does not list fifty programs a line each.
/// Names with glob characters, and rules with comments or `by`, stay as they are.
fn merge_path_searches(rules: &mut Vec<Rule>) {
    let plain = |n: &str| {
        !n.is_empty() && !n.contains(['/', '*', '?', '[', ']', '{', '}', ',', '\\', '$', ' ', '"'])
    };
    let names_of = |r: &Rule| -> Option<Vec<String>> {
        let Pattern::Path(p) = &r.pattern else {
            return None;
        };
        if r.verb != Verb::Probe || r.effect != Effect::Allow || !r.by.is_empty() {
            return None;
        }
        if !r.comments.is_empty() {
            return None;
        }
        let rest = p.strip_prefix("/**/")?;
        let names: Vec<String> = match rest.strip_prefix('{').and_then(|r| r.strip_suffix('}')) {
            Some(list) => list.split(',').map(str::to_string).collect(),
            None => vec![rest.to_string()],
        };
        names.iter().all(|n| plain(n)).then_some(names)
    };
    let mut names: BTreeSet<String> = BTreeSet::new();
    rules.retain(|r| match names_of(r) {
        Some(n) => {
            names.extend(n);
            false
        }
        None => true,
    });
    let pattern = match names.len() {
        0 => return,
        1 => format!("/**/{}", names.iter().next().map_or("", String::as_str)),
        _ => format!(
            "/**/{{{}}}",
            names.into_iter().collect::<Vec<_>>().join(",")
        ),
    };
    rules.push(Rule {
        effect: Effect::Allow,
        verb: Verb::Probe,
        pattern: Pattern::Path(pattern),
        comments: Vec::new(),
        span: Span::default(),
        by: Vec::new(),
    });
}

/// The `launcher` globs of the shipped snippets and of the base profile.
fn known_launchers(base: &[Rule]) -> Vec<String> {
    static SHIPPED: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    let shipped = SHIPPED.get_or_init(|| {
        crate::profile::snippets::names()
            .iter()
            .filter_map(|name| {
                let text = crate::profile::snippets::snippet(name)?;
                crate::profile::parse::parse_str(name, text).ok()
            })
            .flat_map(|p| p.rules)
            .filter_map(|r| match (r.verb, r.pattern) {
                (Verb::Launcher, Pattern::Path(p)) => Some(p),
                _ => None,
            })
            .collect()
    });
    let own = base.iter().filter_map(|r| match (&r.verb, &r.pattern) {
        (Verb::Launcher, Pattern::Path(p)) => Some(p.clone()),
        _ => None,
    });
    shipped.iter().cloned().chain(own).collect()
}

/// The program names learn may use: the shipped snippets' and the base profile's.
fn known_programs(base: &[Rule]) -> BTreeMap<String, Vec<String>> {
    let mut out = shipped_programs().clone();
    for r in base {
        if let Pattern::Program { name, path } = &r.pattern {
            out.entry(name.clone()).or_default().push(path.clone());
        }
    }
    out
}

/// The text a rule's pattern is keyed by in the learner's maps (paths, `tcp ADDR`, names).
fn rule_key(p: &Pattern) -> String {
    match p {
        Pattern::Path(t) | Pattern::Syscall(t) | Pattern::Host(t) => t.clone(),
        Pattern::Net { proto, addr } => net_text(*proto, addr),
        Pattern::Program { name, path } => format!("{name} {path}"),
        Pattern::Env(name) => format!("env {name}"),
    }
}

fn net_text(proto: Proto, addr: &str) -> String {
    let p = match proto {
        Proto::Tcp => "tcp",
        Proto::Udp => "udp",
        Proto::Unix => "unix",
        Proto::Netlink => "netlink",
    };
    format!("{p} {addr}")
}

/// The verbs an access set asks for: the policy's mapping ([`crate::policy::verbs_of`]: read;
/// write for write/create/truncate/chmod/chown/symlink; delete for delete/rename; read and
/// write for link; exec; stat for stat/chdir; connect; bind for bind/listen; send), with
/// `stat` only when metadata was recorded.
pub fn verbs_of(access: crate::event::AccessSet, metadata: bool) -> Vec<Verb> {
    crate::policy::verbs_of(access)
        .into_iter()
        .filter(|v| metadata || *v != Verb::Stat)
        .collect()
}

/// Shipped snippets that learn adds on its own only where they make the profile shorter (the
/// CLI learns once more with each and keeps it when the rendered profile has fewer lines):
/// `ssl` when the workload read what the snippet covers (the CA bundle, `openssl.cnf`), `tmp`
/// when it wrote under `${TMPDIR}`. Nothing wider than the snippet's documented rules is added.
/// See: docs/real-world.md ("What changed in learn")
pub const SHORTENING_INCLUDES: [&str; 1] = ["ssl"];

/// Is `include NAME` (one of [`SHORTENING_INCLUDES`]) worth trying on a profile learned
/// without it? `covered(verb, pattern)` says whether the snippet alone admits a rule.
/// `ssl`: some read rule is covered. `tmp`: some write rule under `${TMPDIR}/` is covered, and
/// the learning run's TMPDIR is none of `/`, HOME, the start directory or their ancestors
/// (there `${TMPDIR}/**` would cover the home or the project, which learned rules keep apart).
pub fn include_worth_trying(
    name: &str,
    profile: &Profile,
    header: &Header,
    covered: &dyn Fn(Verb, &str) -> bool,
) -> bool {
    let any = |verb: Verb, prefix: &str| {
        profile.rules.iter().any(|r| {
            r.effect == Effect::Allow
                && r.verb == verb
                && matches!(&r.pattern, Pattern::Path(p) if p.starts_with(prefix) && covered(verb, p))
        })
    };
    match name {
        "ssl" => any(Verb::Read, "/"),
        "tmp" => tmpdir_is_private(header) && any(Verb::Write, "${TMPDIR}/"),
        _ => false,
    }
}

/// The header's TMPDIR is an absolute directory that is neither `/` nor HOME nor the start
/// directory nor an ancestor of either.
fn tmpdir_is_private(header: &Header) -> bool {
    let trim = |p: &[u8]| -> Vec<u8> {
        let mut v = p.to_vec();
        while v.len() > 1 && v.ends_with(b"/") {
            v.pop();
        }
        v
    };
    let tmp = trim(&header.tmpdir);
    let covers = |other: &[u8]| {
        let other = trim(other);
        other == tmp || (other.starts_with(&tmp) && other.get(tmp.len()) == Some(&b'/'))
    };
    tmp.starts_with(b"/") && tmp != b"/" && !covers(&header.home) && !covers(&header.cwd)
}

#[cfg(test)]
mod safety_tests;
#[cfg(test)]
mod temp_tests;
#[cfg(test)]
mod tests;

/// Does a profile path pattern contain an unescaped glob metacharacter (`${NAME}` variables
/// are not globs)?
fn has_glob(p: &str) -> bool {
    let mut chars = p.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                chars.next();
            }
            '$' if chars.peek() == Some(&'{') => {
                for c in chars.by_ref() {
                    if c == '}' {
                        break;
                    }
                }
            }
            '*' | '?' | '[' | '{' => return true,
            _ => {}
        }
    }
    false
}
