//! The kernel fence (issue 40): Landlock rights derived from a profile, applied under the
//! ptrace checks by `tracer::landlock`. This module only computes them: pure data in (the
//! resolved rules, the run's variables, an oracle that says which paths exist), data out
//! ([`Fence`]). It never calls the kernel.
//!
//! The fence must be a sound OVER-approximation of the profile: whatever the ptrace layer
//! allows, the fence allows too, so a learned profile never fails because of it. Therefore:
//! - a path glob is cut at its first wildcard segment: the literal directory before it is a
//!   root, and the rule's rights hold beneath the whole root (Landlock rules hold for a
//!   hierarchy); a root that does not exist yet is moved up to its nearest existing ancestor;
//! - `by` lists (rights bound to programs) and `deny` rules are ignored (widened away);
//! - `probe` and `stat` need no right (Landlock does not handle lookups and metadata);
//! - a name made or removed (create, delete, rename, the new name of a write) needs the
//!   right on the directory that holds the name; provenance (what the run created it may
//!   delete) makes every create also a remove; a rename or link across directories needs
//!   `REFER` on both ends and, in the kernel, the moved file must not gain rights: every
//!   root where names change (a "name root") gets the same rights, the union of the rights
//!   of every root that overlaps one of them ([`Fence::even_name_roots`]);
//! - a right whose roots reach `/` is not handled at all (unfenced), and [`Fence::unfenced`]
//!   says so; likewise TCP connect or bind where a rule allows any port.
//!
//! What the verbs need (Landlock names without the `LANDLOCK_ACCESS_FS_` prefix):
//!
//! | verb | beneath the root | on the directory of the name |
//! | --- | --- | --- |
//! | read | `READ_FILE`, `READ_DIR` | |
//! | write | `WRITE_FILE`, `TRUNCATE` (+ the create rights for new names) | create's |
//! | create | (the content of what it made: read, write, truncate) | `MAKE_*`, `REMOVE_*`, `REFER` |
//! | delete | | `REMOVE_*`, `REFER` |
//! | own | everything but `EXECUTE` | as create |
//! | exec | `EXECUTE`, `READ_FILE` (scripts are read by their interpreter) | |
//! | bind unix PATH | | `MAKE_SOCK`, `REMOVE_FILE` |
//! | probe, stat | nothing | |

use std::collections::{BTreeMap, BTreeSet};

use crate::profile::snippets::Resolved;
use crate::profile::vars::{CWD_ANCESTORS, Env, expand, expand_ancestors};
use crate::profile::{Effect, Pattern, Proto, Verb};

/// Landlock's filesystem access rights (the kernel's `LANDLOCK_ACCESS_FS_*` bit values).
pub mod right {
    pub const EXECUTE: u64 = 1 << 0;
    pub const WRITE_FILE: u64 = 1 << 1;
    pub const READ_FILE: u64 = 1 << 2;
    pub const READ_DIR: u64 = 1 << 3;
    pub const REMOVE_DIR: u64 = 1 << 4;
    pub const REMOVE_FILE: u64 = 1 << 5;
    pub const MAKE_CHAR: u64 = 1 << 6;
    pub const MAKE_DIR: u64 = 1 << 7;
    pub const MAKE_REG: u64 = 1 << 8;
    pub const MAKE_SOCK: u64 = 1 << 9;
    pub const MAKE_FIFO: u64 = 1 << 10;
    pub const MAKE_BLOCK: u64 = 1 << 11;
    pub const MAKE_SYM: u64 = 1 << 12;
    pub const REFER: u64 = 1 << 13;
    pub const TRUNCATE: u64 = 1 << 14;

    /// Every right the fence may handle (`IOCTL_DEV` is left to the ptrace layer: sbx does
    /// not stop ioctls on files by path).
    pub const ALL: u64 = (1 << 15) - 1;
    /// Rights that make sense on a regular file (the rest only on directories).
    pub const FILE: u64 = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE;
    /// Making any kind of name.
    pub const MAKE: u64 =
        MAKE_CHAR | MAKE_DIR | MAKE_REG | MAKE_SOCK | MAKE_FIFO | MAKE_BLOCK | MAKE_SYM;
    /// Rights on the directory that holds a name the run makes or removes.
    pub const NAMES: u64 = MAKE | REMOVE_DIR | REMOVE_FILE | REFER;
    /// The content rights of a write.
    pub const CONTENT: u64 = WRITE_FILE | TRUNCATE;

    /// The kernel's name of each right, lowest bit first.
    pub const NAMES_OF: [(u64, &str); 15] = [
        (EXECUTE, "execute"),
        (WRITE_FILE, "write_file"),
        (READ_FILE, "read_file"),
        (READ_DIR, "read_dir"),
        (REMOVE_DIR, "remove_dir"),
        (REMOVE_FILE, "remove_file"),
        (MAKE_CHAR, "make_char"),
        (MAKE_DIR, "make_dir"),
        (MAKE_REG, "make_reg"),
        (MAKE_SOCK, "make_sock"),
        (MAKE_FIFO, "make_fifo"),
        (MAKE_BLOCK, "make_block"),
        (MAKE_SYM, "make_sym"),
        (REFER, "refer"),
        (TRUNCATE, "truncate"),
    ];

    /// `read_file,read_dir` for a set of rights.
    pub fn names(rights: u64) -> String {
        NAMES_OF
            .iter()
            .filter(|(r, _)| rights & r != 0)
            .map(|(_, n)| *n)
            .collect::<Vec<_>>()
            .join(",")
    }
}

/// The dynamic loaders the kernel opens as an exec (Landlock's `EXECUTE`) when it starts a
/// dynamically linked program: every program the profile may exec needs its loader.
pub const LOADERS: &[&str] = &[
    "/lib64/ld-linux-x86-64.so.2",
    "/lib/ld-linux-aarch64.so.1",
    "/lib/ld-linux-x86-64.so.2",
    "/usr/lib64/ld-linux-x86-64.so.2",
    "/usr/lib/ld-linux-aarch64.so.1",
];

/// The fence for one run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Fence {
    /// Filesystem rights handled (refused unless a root grants them).
    pub handled_fs: u64,
    /// Per root (an absolute path that existed when the fence was derived): the rights
    /// granted beneath it. Only rights in `handled_fs`.
    pub roots: BTreeMap<String, u64>,
    /// TCP ports the workload may connect to; `None`: connect is not fenced.
    pub connect: Option<BTreeSet<u16>>,
    /// TCP ports the workload may bind; `None`: bind is not fenced.
    pub bind: Option<BTreeSet<u16>>,
    /// What is left unfenced and why, one line each (for `-v` and the report).
    pub unfenced: Vec<String>,
}

/// What the caller saw at a path: nothing, a directory, or something else.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Absent,
    Dir,
    /// A regular file.
    File,
    /// A device, fifo or socket.
    Special,
}

/// What the fence is derived for besides the rules.
#[derive(Debug, Clone, Default)]
pub struct Extra {
    /// Roots sbx itself needs, with their rights (sbx shares the workload's domain: its
    /// `/proc` reads, /etc/hosts for DNS). Added as if a rule named them.
    pub roots: Vec<(String, u64)>,
}

/// The caller's look at the filesystem (following symlinks; tests pass a map).
pub trait Look {
    /// What is at a path now.
    fn kind(&self, path: &str) -> Kind;
    /// The names in directory `path` now, or `None` if it cannot be listed.
    fn list(&self, path: &str) -> Option<Vec<std::ffi::OsString>>;
}

/// The most names one listed glob grants one by one (`exec /usr/bin/python3*`); past it
/// its directory is granted whole.
const MAX_LISTED: usize = 256;

/// Derive the fence of `resolved` for the run described by `env`, looking at the
/// filesystem through `look`.
pub fn derive(resolved: &Resolved, env: &Env, extra: &Extra, look: &dyn Look) -> Fence {
    let kind = &|p: &str| look.kind(p);
    let exists = |p: &str| kind(p) != Kind::Absent;
    let mut grants: Vec<(String, u64)> = Vec::new();
    // Reads and execs of names matching a glob in one existing directory, granted one by
    // one where the run makes no names (see [`listed_dir`]).
    let mut listed: Vec<(String, String, u64)> = Vec::new();
    let mut connect: Option<BTreeSet<u16>> = Some(BTreeSet::new());
    let mut bind: Option<BTreeSet<u16>> = Some(BTreeSet::new());
    let mut why_connect = None;
    let mut why_bind = None;
    for (rule, _) in &resolved.rules {
        if rule.effect != Effect::Allow {
            continue;
        }
        match &rule.pattern {
            Pattern::Path(p) if p == CWD_ANCESTORS => {
                if matches!(rule.verb, Verb::Probe | Verb::Stat) {
                    continue;
                }
                // Directories: reading one is listing it.
                for dir in expand_ancestors(env, &|_| true) {
                    grants.extend(path_grants(rule.verb, &dir).into_iter().map(|(p, r)| {
                        let r = if rule.verb == Verb::Read {
                            right::READ_DIR
                        } else {
                            r
                        };
                        (p, r)
                    }));
                }
            }
            Pattern::Path(p) => {
                let Ok(expanded) = expand(p, env) else {
                    // compile refused it already; never narrower: the whole tree.
                    grants.push(("/".into(), right::ALL));
                    continue;
                };
                for one in alternatives(&expanded) {
                    if rule.verb == Verb::Own
                        && let Some(area) = home_area(&one, env)
                    {
                        grants.push((area, right::ALL & !right::EXECUTE));
                        continue;
                    }
                    if matches!(rule.verb, Verb::Read | Verb::Exec)
                        && let Some(dir) = listed_dir(&one)
                        && kind(&dir) == Kind::Dir
                    {
                        let r = path_grants(rule.verb, &one).first().map_or(0, |g| g.1);
                        listed.push((one, dir, r));
                        continue;
                    }
                    grants.extend(literal_grants(rule.verb, &one, kind));
                }
            }
            Pattern::Net {
                proto: Proto::Unix,
                addr,
            } if rule.verb == Verb::Bind && !addr.starts_with('@') => {
                if let Ok(expanded) = expand(addr, env) {
                    let (root, whole) = cut(&expanded);
                    let dir = if whole { parent(&root) } else { root };
                    grants.push((dir, right::MAKE_SOCK | right::REMOVE_FILE));
                }
            }
            Pattern::Net {
                proto: Proto::Tcp,
                addr,
            } => {
                let port = crate::profile::parse::parse_inet_addr(addr)
                    .ok()
                    .and_then(|a| a.port);
                let (set, why) = match rule.verb {
                    Verb::Connect => (&mut connect, &mut why_connect),
                    Verb::Bind => {
                        // The run may connect to its own servers on any port.
                        if connect.take().is_some() {
                            why_connect = Some("the run's own servers may listen on any port");
                        }
                        (&mut bind, &mut why_bind)
                    }
                    _ => continue,
                };
                match port {
                    Some(port) => {
                        if let Some(s) = set.as_mut() {
                            s.insert(port);
                        }
                    }
                    None => {
                        if set.take().is_some() || why.is_none() {
                            *why = Some("a rule allows any port");
                        }
                    }
                }
            }
            _ => {}
        }
    }
    for (root, r) in &extra.roots {
        grants.push((root.clone(), *r));
    }
    let mut fence = Fence {
        handled_fs: right::ALL,
        connect,
        bind,
        ..Fence::default()
    };
    if let Some(w) = why_connect.filter(|_| fence.connect.is_none()) {
        fence.unfenced.push(format!("tcp connect: {w}"));
    }
    if let Some(w) = why_bind.filter(|_| fence.bind.is_none()) {
        fence.unfenced.push(format!("tcp bind: {w}"));
    }
    let mut absent = Vec::new();
    for (root, r) in grants {
        match root.strip_prefix(ABSENT) {
            Some(p) => absent.push((existing(&kernel_view(p), &exists), r)),
            None => {
                let root = existing(&kernel_view(&root), &exists);
                *fence.roots.entry(root).or_default() |= r;
            }
        }
    }
    // What the run may make and then read or run: only beneath a root where it makes names.
    let names: Vec<String> = fence.name_roots();
    for (root, r) in absent {
        if names.iter().any(|n| beneath(&root, n)) {
            *fence.roots.entry(root).or_default() |= r;
        }
    }
    for (glob, dir, r) in listed {
        let dir_view = existing(&kernel_view(&dir), &exists);
        let matches = (!names.iter().any(|n| beneath(&dir_view, n)))
            .then(|| listed_matches(&glob, &dir, look))
            .flatten();
        match matches {
            Some(paths) => {
                for p in paths {
                    *fence.roots.entry(kernel_view(&p)).or_default() |= r;
                }
            }
            None => *fence.roots.entry(dir_view).or_default() |= r,
        }
    }
    // The loaders of the programs the profile may exec.
    if fence.roots.values().any(|r| r & right::EXECUTE != 0) {
        for l in LOADERS.iter().filter(|l| exists(l)) {
            *fence.roots.entry((*l).to_string()).or_default() |= right::EXECUTE | right::READ_FILE;
        }
    }
    fence.even_name_roots();
    fence.unhandle_whole_tree();
    fence
}

/// The directory of a glob whose only wildcards are in its last segment, and not `**`
/// (`/usr/bin/python3*`): what it admits now can be listed. A name that appears there later
/// is admitted by the fence only where the run may make names (then the directory is
/// granted whole): the names another process adds during the run are refused (EACCES),
/// as for a literal path that is absent now.
fn listed_dir(glob: &str) -> Option<String> {
    let (dir, last) = glob.rsplit_once('/')?;
    let (root, whole) = cut(glob);
    let (dir_root, dir_whole) = cut(if dir.is_empty() { "/" } else { dir });
    (!whole && dir_whole && root == dir_root && !last.contains("**")).then_some(root)
}

/// The paths in `dir` that `glob` matches now, at most [`MAX_LISTED`]; `None` where the
/// directory cannot be listed, a name is not UTF-8 (it could match), or there are more.
fn listed_matches(glob: &str, dir: &str, look: &dyn Look) -> Option<Vec<String>> {
    let m = crate::profile::parse::glob_builder(glob)
        .build()
        .ok()?
        .compile_matcher();
    let mut out = Vec::new();
    for name in look.list(dir)? {
        let name = name.into_string().ok()?;
        let path = format!("{}/{name}", dir.trim_end_matches('/'));
        if m.is_match(&path) {
            out.push(path);
            if out.len() > MAX_LISTED {
                return None;
            }
        }
    }
    Some(out)
}

/// The `own` areas in HOME ([`home_area`]) that are missing now and are tool stores, which
/// are directories by definition (`own ${HOME}/.npm` on a fresh HOME): the caller makes them
/// before the fence is set, as the tool would on first use, so their rights stay on them
/// and do not move up to HOME. A missing area that could be a file (cargo's
/// `.package-cache` lock) is not made.
pub fn missing_store_areas(resolved: &Resolved, env: &Env, look: &dyn Look) -> Vec<String> {
    let mut out = Vec::new();
    for (rule, _) in &resolved.rules {
        let Pattern::Path(p) = &rule.pattern else {
            continue;
        };
        if rule.effect != Effect::Allow || rule.verb != Verb::Own {
            continue;
        }
        let Ok(expanded) = expand(p, env) else {
            continue;
        };
        for one in alternatives(&expanded) {
            if let Some(area) = home_area(&one, env)
                && look.kind(&area) == Kind::Absent
                && crate::learn::stores::is_store_root(area.as_bytes(), env.home.as_bytes())
                && !out.contains(&area)
            {
                out.push(area);
            }
        }
    }
    out
}

/// [`path_grants`], narrowed where the glob is literal and names what exists: reading a
/// directory lists it (nothing beneath it is read), and writing an existing device, fifo or
/// socket makes no name (nothing can make one again without a rule for it).
fn literal_grants(verb: Verb, glob: &str, kind: &dyn Fn(&str) -> Kind) -> Vec<(String, u64)> {
    let mut g = path_grants(verb, glob);
    let (root, whole) = cut(glob);
    let k = kind(&kernel_view(&root));
    // A path absent now, or a tree whose root is absent now (`read ${PYENV_ROOT}/**` without
    // pyenv), can be read or run only once made: by the run, where a rule lets it make names
    // (kept by `derive` only there), or by another process (not fenced open: a profile
    // learned from a run where the path existed names it as it was).
    if k == Kind::Absent && root != "/" && matches!(verb, Verb::Read | Verb::Exec) {
        for (p, _) in &mut g {
            *p = format!("{ABSENT}{p}");
        }
        return g;
    }
    if !whole {
        return g;
    }
    if verb == Verb::Read
        && k == Kind::Dir
        && let Some((_, r)) = g.first_mut()
    {
        *r = right::READ_DIR;
    }
    // Writing an existing device, fifo, socket or directory (its attributes) makes no name
    // (a directory gone meanwhile would need a create rule to come back).
    if verb == Verb::Write && matches!(k, Kind::Special | Kind::Dir) {
        g.retain(|(_, r)| *r & right::NAMES == 0);
    }
    // An `own` area may be removed and made again (`rm -rf clone && git clone ...`): Landlock
    // rules hold for inodes, so a rule on the area itself would not hold for the new one. Its
    // rights stay on its parent, even when it exists now.
    g
}

/// An `own` area named exactly in HOME, outside the work tree and TMPDIR (`own
/// ${HOME}/.npm`, `own ${HOME}/.cache/pip`): its rights go on the area itself, not on its
/// parent, so owning a tool's cache does not open HOME (its rc files, `~/.ssh`). Only where
/// the area exists when the fence is set (a rule holds for an inode): a missing one moves its
/// rights up to its nearest existing ancestor, as any root does (sbx does not make it: an
/// area may be a file, such as cargo's `.package-cache` lock). A workload that removes an
/// existing area and makes it again is refused by the kernel (EACCES), which tools do not do
/// to their caches (docs/security.md). Areas in the work tree or TMPDIR (a clone the step
/// removes and clones again) keep their rights on the parent.
fn home_area(glob: &str, env: &Env) -> Option<String> {
    let (root, whole) = cut(glob);
    let home = env.home.trim_end_matches('/');
    let tmp = env.tmpdir.trim_end_matches('/');
    let cwd = env.cwd.trim_end_matches('/');
    (whole
        && !home.is_empty()
        && root != home
        && beneath(&root, home)
        && !beneath(&root, cwd)
        && !beneath(cwd, &root)
        && !beneath(&root, tmp)
        && !beneath(tmp, &root)
        && kernel_view(&root) == root)
        .then_some(root)
}

/// Marks a grant for a literal path that is absent now (see [`literal_grants`]).
const ABSENT: &str = "\0absent:";

/// The most alternatives one glob's `{a,b}` groups expand to; past it the glob is cut at
/// its first group instead (never narrower).
const MAX_ALTERNATIVES: usize = 256;

/// The globs a glob's `{a,b}` groups stand for (each group expanded; escapes kept).
pub fn alternatives(glob: &str) -> Vec<String> {
    let mut out = vec![glob.to_string()];
    loop {
        let mut next = Vec::new();
        let mut changed = false;
        for g in &out {
            match first_group(g) {
                Some((start, end, options)) => {
                    changed = true;
                    for o in options {
                        next.push(format!("{}{}{}", &g[..start], o, &g[end + 1..]));
                    }
                }
                None => next.push(g.clone()),
            }
        }
        if next.len() > MAX_ALTERNATIVES {
            return vec![glob.to_string()];
        }
        out = next;
        if !changed {
            return out;
        }
    }
}

/// The first top-level `{...}` group of `g`: its byte range and its options.
fn first_group(g: &str) -> Option<(usize, usize, Vec<String>)> {
    let b = g.as_bytes();
    let mut i = 0;
    let mut start = None;
    let mut depth = 0;
    let mut options = Vec::new();
    let mut from = 0;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 1,
            b'{' => {
                if depth == 0 {
                    start = Some(i);
                    from = i + 1;
                }
                depth += 1;
            }
            b',' if depth == 1 => {
                options.push(g[from..i].to_string());
                from = i + 1;
            }
            b'}' if depth > 0 => {
                depth -= 1;
                if depth == 0 {
                    options.push(g[from..i].to_string());
                    return start.map(|s| (s, i, options));
                }
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// The grants of one path rule: (root, rights) pairs.
fn path_grants(verb: Verb, glob: &str) -> Vec<(String, u64)> {
    let (root, whole) = cut(glob);
    // Names below the root are made in the root's hierarchy; the root itself (a literal
    // path, or an `own` area's top) in its parent.
    let names_at = |top_too: bool| {
        if top_too || whole {
            parent(&root)
        } else {
            root.clone()
        }
    };
    match verb {
        Verb::Read => vec![(root, right::READ_FILE | right::READ_DIR)],
        Verb::Exec => vec![(root, right::EXECUTE | right::READ_FILE)],
        Verb::Write => vec![
            (
                root.clone(),
                right::CONTENT | right::READ_FILE | right::READ_DIR,
            ),
            (names_at(false), right::NAMES),
        ],
        Verb::Create => vec![
            (
                root.clone(),
                right::CONTENT | right::READ_FILE | right::READ_DIR,
            ),
            (names_at(false), right::NAMES),
        ],
        Verb::Delete => vec![(names_at(false), right::NAMES)],
        Verb::Own => vec![
            (root.clone(), right::ALL & !right::EXECUTE),
            (names_at(true), right::NAMES),
        ],
        _ => Vec::new(),
    }
}

/// Cut a path glob at its first wildcard segment: the literal directory before it (escapes
/// removed) and whether the whole glob was literal (then the root is the object itself).
pub fn cut(glob: &str) -> (String, bool) {
    let mut root = String::new();
    let mut whole = true;
    for seg in glob.split('/').filter(|s| !s.is_empty()) {
        match unescape(seg) {
            Some(lit) => {
                root.push('/');
                root.push_str(&lit);
            }
            None => {
                whole = false;
                break;
            }
        }
    }
    if !glob.starts_with('/') {
        // `**/x`: anywhere.
        return ("/".into(), false);
    }
    if root.is_empty() {
        root.push('/');
    }
    (root, whole)
}

/// A glob segment without its escapes, or `None` if it has an unescaped wildcard.
fn unescape(seg: &str) -> Option<String> {
    let mut out = String::with_capacity(seg.len());
    let mut chars = seg.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => out.push(chars.next()?),
            '*' | '?' | '[' | '{' => return None,
            c => out.push(c),
        }
    }
    Some(out)
}

fn parent(p: &str) -> String {
    match p.trim_end_matches('/').rsplit_once('/') {
        Some(("", _)) | None => "/".into(),
        Some((dir, _)) => dir.into(),
    }
}

/// Where the kernel sees a path: `/proc/self/...`, `/proc/PID/...` and `/dev/fd/...` (a
/// link into the workload's own `/proc` entry) stand for `/proc` as a whole, since sbx
/// opens the roots in its own process; `..` segments go up (cut paths are literal).
fn kernel_view(p: &str) -> String {
    if p == "/proc" || p.starts_with("/proc/") || p.starts_with("/dev/fd") {
        return "/proc".into();
    }
    if matches!(p, "/dev/stdin" | "/dev/stdout" | "/dev/stderr") {
        return "/proc".into();
    }
    let mut segs: Vec<&str> = Vec::new();
    for s in p.split('/').filter(|s| !s.is_empty() && *s != ".") {
        if s == ".." {
            segs.pop();
        } else {
            segs.push(s);
        }
    }
    format!("/{}", segs.join("/"))
}

/// `p` or its nearest ancestor that exists.
fn existing(p: &str, exists: &dyn Fn(&str) -> bool) -> String {
    let mut p = p.to_string();
    while p != "/" && !exists(&p) {
        p = parent(&p);
    }
    p
}

fn overlaps(a: &str, b: &str) -> bool {
    beneath(a, b) || beneath(b, a)
}

/// Is `a` at or beneath `b`?
fn beneath(a: &str, b: &str) -> bool {
    b == "/" || a == b || a.strip_prefix(b).is_some_and(|r| r.starts_with('/'))
}

impl Fence {
    /// Give every name root (a root with `REFER`) the union of the rights of all roots that
    /// overlap a name root, so that a file moved between two places where the profile lets
    /// names change never gains rights (the kernel refuses such a move with `EXDEV`).
    fn name_roots(&self) -> Vec<String> {
        self.roots
            .iter()
            .filter(|(_, r)| *r & right::REFER != 0)
            .map(|(p, _)| p.clone())
            .collect()
    }

    fn even_name_roots(&mut self) {
        let names = self.name_roots();
        if names.is_empty() {
            return;
        }
        let union = self
            .roots
            .iter()
            .filter(|(p, _)| names.iter().any(|n| overlaps(p, n)))
            .fold(0, |acc, (_, r)| acc | r);
        for n in &names {
            self.roots.insert(n.clone(), union);
        }
    }

    /// A right granted at `/` is granted everywhere: stop handling it (and say so).
    fn unhandle_whole_tree(&mut self) {
        let Some(&top) = self.roots.get("/") else {
            return;
        };
        if top & right::ALL != 0 {
            self.handled_fs &= !top;
            self.unfenced.push(format!(
                "filesystem rights reaching /: {}",
                right::names(top)
            ));
        }
        let handled = self.handled_fs;
        self.roots.retain(|_, r| {
            *r &= handled;
            *r != 0
        });
    }

    /// Would the fence grant `access` to `path` (absolute, symlinks resolved)? The rights of
    /// every root at or above it add up, as Landlock's rules on a path's ancestors do. An
    /// access is judged by the rights its calls need: a read any read right, a write the
    /// content rights, a create any right to make a name, a delete any right to remove one,
    /// a rename the right to move names between places, an exec the right to run. A guess
    /// for the exit watch of an allowed call ([`crate::sink`]): sbx reports a refusal only
    /// when the call then fails with the fence's errors.
    pub fn admits(&self, path: &[u8], access: crate::event::AccessSet) -> bool {
        use crate::event::Access;
        let Ok(path) = std::str::from_utf8(path) else {
            return false;
        };
        let held = self
            .roots
            .iter()
            .filter(|(root, _)| beneath(path, root))
            .fold(0, |acc, (_, r)| acc | r);
        let need = |a: Access| match a {
            Access::Read => right::READ_FILE | right::READ_DIR,
            Access::Write | Access::Truncate => right::CONTENT,
            Access::Create | Access::Symlink | Access::Link => right::MAKE,
            Access::Delete => right::REMOVE_DIR | right::REMOVE_FILE,
            Access::Rename => right::REFER | right::MAKE,
            Access::Exec => right::EXECUTE,
            _ => 0,
        };
        access.iter().all(|a| {
            let n = need(a) & self.handled_fs;
            n == 0 || held & n != 0
        })
    }

    /// One line per root, for `-v`.
    pub fn describe(&self) -> Vec<String> {
        self.roots
            .iter()
            .map(|(p, r)| format!("{p}: {}", right::names(*r)))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::parse::parse_str;
    use crate::profile::snippets::resolve_with;

    fn env() -> Env {
        Env {
            cwd: "/home/u/proj".into(),
            home: "/home/u".into(),
            tmpdir: "/tmp".into(),
            ..Env::default()
        }
    }

    fn fence_of(text: &str, existing: &[&str]) -> Fence {
        let p = parse_str("t.profile", text).expect("parse");
        let r = resolve_with(&p, "t.profile", &|_| None).expect("resolve");
        let set: BTreeSet<String> = existing.iter().map(|s| s.to_string()).collect();
        derive(&r, &env(), &Extra::default(), &Map(set))
    }

    /// A filesystem of the paths in the set. Names with a dot in their last segment are
    /// files here, the rest directories.
    struct Map(BTreeSet<String>);

    impl Look for Map {
        fn kind(&self, p: &str) -> Kind {
            let last = p.rsplit('/').next().unwrap_or("");
            if !self.0.contains(p) {
                Kind::Absent
            } else if p.starts_with("/dev/") {
                Kind::Special
            } else if (last.contains('.') && !last.starts_with('.'))
                || [".npmrc", "passwd", "make", "sh", "python3"].contains(&last)
            {
                Kind::File
            } else {
                Kind::Dir
            }
        }
        fn list(&self, dir: &str) -> Option<Vec<std::ffi::OsString>> {
            self.0.contains(dir).then(|| {
                self.0
                    .iter()
                    .filter_map(|p| p.strip_prefix(dir)?.strip_prefix('/'))
                    .filter(|rest| !rest.contains('/'))
                    .map(Into::into)
                    .collect()
            })
        }
    }

    const ALL_DIRS: &[&str] = &[
        "/usr",
        "/usr/lib",
        "/usr/bin",
        "/usr/bin/make",
        "/home",
        "/home/u",
        "/home/u/proj",
        "/home/u/proj/build",
        "/home/u/.npmrc",
        "/tmp",
        "/etc",
        "/etc/passwd",
    ];

    #[test]
    fn globs_are_cut_at_their_first_wildcard_segment() {
        assert_eq!(cut("/usr/lib/**"), ("/usr/lib".into(), false));
        assert_eq!(cut("/usr/lib/x*/y"), ("/usr/lib".into(), false));
        assert_eq!(cut("/etc/passwd"), ("/etc/passwd".into(), true));
        assert_eq!(cut("/a/\\*b/c"), ("/a/*b/c".into(), true));
        assert_eq!(cut("/{a,b}/c"), ("/".into(), false));
        assert_eq!(cut("**/x"), ("/".into(), false));
    }

    #[test]
    fn reads_execs_and_writes_map_to_their_rights_beneath_their_roots() {
        let f = fence_of(
            "read /usr/lib/**\nread /etc/passwd\nexec /usr/bin/make\nwrite ${CWD}/build/**\n",
            ALL_DIRS,
        );
        assert_eq!(
            f.roots.get("/usr/lib"),
            Some(&(right::READ_FILE | right::READ_DIR))
        );
        assert_eq!(
            f.roots.get("/etc/passwd"),
            Some(&(right::READ_FILE | right::READ_DIR))
        );
        assert_eq!(
            f.roots.get("/usr/bin/make"),
            Some(&(right::EXECUTE | right::READ_FILE))
        );
        let build = f.roots.get("/home/u/proj/build").copied().unwrap_or(0);
        assert_eq!(
            build & (right::CONTENT | right::NAMES),
            right::CONTENT | right::NAMES
        );
        assert_eq!(build & right::EXECUTE, 0);
        // Nothing for HOME or the project beside build/; an absent literal read opens nothing.
        let f2 = fence_of("read /etc/absent\n", ALL_DIRS);
        assert!(f2.roots.is_empty(), "{:?}", f2.roots);
        // ... unless the run may make it: then where it makes names.
        let f3 = fence_of("exec ${CWD}/build/m\nwrite ${CWD}/build/**\n", ALL_DIRS);
        assert_ne!(
            f3.roots.get("/home/u/proj/build").copied().unwrap_or(0) & right::EXECUTE,
            0,
            "{:?}",
            f3.roots
        );
        assert!(!f.roots.contains_key("/home/u"));
        assert!(!f.roots.contains_key("/home/u/proj"));
        assert_eq!(f.handled_fs, right::ALL);
        assert!(f.unfenced.is_empty(), "{:?}", f.unfenced);
    }

    #[test]
    fn a_literal_write_makes_names_in_its_directory_only() {
        let f = fence_of("write ${HOME}/.npmrc\n", ALL_DIRS);
        assert_eq!(
            f.roots.get("/home/u/.npmrc").copied().unwrap_or(0) & right::CONTENT,
            right::CONTENT
        );
        assert_eq!(
            f.roots.get("/home/u").copied().unwrap_or(0) & right::NAMES,
            right::NAMES
        );
    }

    #[test]
    fn a_root_that_does_not_exist_moves_up_to_its_nearest_existing_ancestor() {
        let f = fence_of("write ${HOME}/.cache/pip/**\n", ALL_DIRS);
        assert!(f.roots.contains_key("/home/u"), "{:?}", f.roots);
        assert!(!f.roots.keys().any(|k| k.contains(".cache")));
    }

    #[test]
    fn deny_rules_by_lists_probes_and_stats_are_widened_away() {
        let f = fence_of(
            "program npm /usr/bin/node\nread ${HOME}/** by npm\ndeny read ${HOME}/.ssh/**\nprobe /opt/**\nstat /srv/**\n",
            ALL_DIRS,
        );
        assert_eq!(
            f.roots.get("/home/u"),
            Some(&(right::READ_FILE | right::READ_DIR))
        );
        assert!(!f.roots.contains_key("/opt") && !f.roots.contains_key("/"));
        assert!(!f.roots.contains_key("/srv"));
    }

    #[test]
    fn missing_stores_in_home_are_made_lock_files_are_not() {
        let text = "own ${HOME}/.npm\nown ${HOME}/.cache/pip\nown ${HOME}/.cargo/.package-cache\n\
                    own ${CWD}/.npm-cache\n";
        let p = parse_str("t.profile", text).expect("parse");
        let r = resolve_with(&p, "t.profile", &|_| None).expect("resolve");
        let fs = Map(ALL_DIRS.iter().map(|s| s.to_string()).collect());
        assert_eq!(
            missing_store_areas(&r, &env(), &fs),
            ["/home/u/.npm", "/home/u/.cache/pip"]
        );
        // Once they exist, their rights are theirs, not HOME's.
        let mut made: Vec<&str> = ALL_DIRS.to_vec();
        made.extend(["/home/u/.npm", "/home/u/.cache", "/home/u/.cache/pip"]);
        let f = fence_of("own ${HOME}/.npm\nown ${HOME}/.cache/pip\n", &made);
        assert_eq!(
            f.roots.get("/home/u").copied().unwrap_or(0) & (right::READ_FILE | right::WRITE_FILE),
            0,
            "{:?}",
            f.roots
        );
    }

    #[test]
    fn a_glob_in_the_last_segment_grants_what_it_matches_now() {
        let fs = [
            ALL_DIRS,
            &["/usr/bin/python3", "/usr/bin/python3.11", "/usr/bin/base64"],
        ]
        .concat();
        let f = fence_of("exec /usr/bin/python3*\n", &fs);
        for p in ["/usr/bin/python3", "/usr/bin/python3.11"] {
            assert_ne!(
                f.roots.get(p).copied().unwrap_or(0) & right::EXECUTE,
                0,
                "{p}"
            );
        }
        assert!(!f.roots.contains_key("/usr/bin/base64"), "{:?}", f.roots);
        assert_eq!(
            f.roots.get("/usr/bin").copied().unwrap_or(0) & right::EXECUTE,
            0
        );
        // Where the run makes names, what it makes later must run: the directory, whole.
        let f = fence_of("exec ${CWD}/build/t*\nown ${CWD}/build\n", ALL_DIRS);
        assert_ne!(
            f.roots.get("/home/u/proj/build").copied().unwrap_or(0) & right::EXECUTE,
            0,
            "{:?}",
            f.roots
        );
        // `**` and wildcards above the last segment are cut as before.
        assert_eq!(listed_dir("/usr/lib/**"), None);
        assert_eq!(listed_dir("/usr/*/bin/x"), None);
        assert_eq!(listed_dir("/usr/bin/x"), None);
        assert_eq!(listed_dir("/usr/bin/x*").as_deref(), Some("/usr/bin"));
    }

    #[test]
    fn a_tree_whose_root_is_absent_is_granted_only_where_the_run_makes_names() {
        // pyenv is not installed (`${HOME}/.pyenv` absent): its tree gives HOME nothing.
        let f = fence_of(
            "read ${HOME}/.pyenv/**\nexec ${HOME}/.pyenv/shims/*\nown ${CWD}/build\n",
            ALL_DIRS,
        );
        assert!(
            f.roots
                .get("/home/u")
                .is_none_or(|r| r & (right::READ_FILE | right::EXECUTE) == 0),
            "{:?}",
            f.roots
        );
        // Beneath a place the run makes names, the same tree is kept (it may make it).
        let f = fence_of("read ${CWD}/venv/lib/**\nown ${CWD}/venv\n", ALL_DIRS);
        assert_ne!(
            f.roots.get("/home/u/proj").copied().unwrap_or(0) & right::READ_FILE,
            0
        );
    }

    #[test]
    fn a_right_reaching_the_root_is_left_unhandled_and_said() {
        let f = fence_of("read /**\nwrite ${CWD}/**\n", ALL_DIRS);
        assert_eq!(f.handled_fs & (right::READ_FILE | right::READ_DIR), 0);
        assert_ne!(f.handled_fs & right::WRITE_FILE, 0);
        assert!(
            f.unfenced.iter().any(|u| u.contains("read_file")),
            "{:?}",
            f.unfenced
        );
        assert!(f.roots.values().all(|r| r & right::READ_FILE == 0));
    }

    #[test]
    fn cwd_ancestors_listing_reaches_the_root_for_reads_only() {
        let f = fence_of("read ${CWD_ANCESTORS}\nstat ${CWD_ANCESTORS}\n", ALL_DIRS);
        assert_eq!(f.handled_fs & right::READ_DIR, 0);
        assert_ne!(f.handled_fs & right::READ_FILE, 0);
        assert_ne!(f.handled_fs & right::WRITE_FILE, 0);
    }

    #[test]
    fn name_roots_get_the_same_rights_so_moves_between_them_gain_nothing() {
        let f = fence_of(
            "write ${TMPDIR}/**\nown ${CWD}/build\nexec ${CWD}/build/tool/**\n",
            &[ALL_DIRS, &["/home/u/proj/build/tool"]].concat(),
        );
        let tmp = f.roots.get("/tmp").copied().unwrap_or(0);
        let build = f.roots.get("/home/u/proj/build").copied().unwrap_or(0);
        let proj = f.roots.get("/home/u/proj").copied().unwrap_or(0);
        assert_eq!(tmp, build);
        assert_eq!(tmp, proj);
        // The exec root inside an area makes the areas executable: the price of soundness.
        assert_ne!(tmp & right::EXECUTE, 0);
        assert_ne!(tmp & right::REFER, 0);
    }

    #[test]
    fn proc_paths_stand_for_proc_and_loaders_follow_exec() {
        let f = fence_of(
            "read /proc/self/status\nexec /usr/bin/make\n",
            &[ALL_DIRS, &["/proc", "/lib64/ld-linux-x86-64.so.2"]].concat(),
        );
        assert!(f.roots.contains_key("/proc"), "{:?}", f.roots);
        assert_ne!(
            f.roots
                .get("/lib64/ld-linux-x86-64.so.2")
                .copied()
                .unwrap_or(0)
                & right::EXECUTE,
            0
        );
    }

    #[test]
    fn an_own_area_in_home_holds_its_own_rights_and_one_in_the_work_tree_its_parents() {
        // A tool's cache in HOME: the area itself, HOME gains nothing (its rc files, ~/.ssh).
        let f = fence_of(
            "own ${HOME}/.npm\n",
            &[ALL_DIRS, &["/home/u/.npm"]].concat(),
        );
        assert_eq!(
            f.roots.get("/home/u/.npm").copied().unwrap_or(0),
            right::ALL & !right::EXECUTE,
            "{:?}",
            f.roots
        );
        assert!(!f.roots.contains_key("/home/u"), "{:?}", f.roots);
        // Missing: its rights move up to HOME, as any missing root's (never narrower).
        let f = fence_of("own ${HOME}/.npm\n", ALL_DIRS);
        assert_eq!(
            f.roots.get("/home/u").copied().unwrap_or(0),
            right::ALL & !right::EXECUTE,
            "{:?}",
            f.roots
        );
        // A clone in the work tree may be removed and cloned again: names beside it.
        let f = fence_of(
            "own ${CWD}/clone\n",
            &[ALL_DIRS, &["/home/u/proj/clone"]].concat(),
        );
        assert_eq!(
            f.roots.get("/home/u/proj").copied().unwrap_or(0) & right::NAMES,
            right::NAMES,
            "{:?}",
            f.roots
        );
    }

    #[test]
    fn alternatives_are_expanded_before_the_cut() {
        assert_eq!(
            alternatives("/{bin,usr/bin}/{sh,bash}"),
            vec!["/bin/sh", "/bin/bash", "/usr/bin/sh", "/usr/bin/bash"]
        );
        assert_eq!(alternatives("/a/\\{b,c}"), vec!["/a/\\{b,c}"]);
        assert_eq!(alternatives("/{,usr/}lib/{a,{b,c}}").len(), 6);
        let f = fence_of(
            "exec /{bin,usr/bin}/{sh,make}\nwrite /dev/null\n",
            &[ALL_DIRS, &["/bin", "/bin/sh", "/dev", "/dev/null"]].concat(),
        );
        assert!(!f.roots.contains_key("/"), "{:?}", f.roots);
        assert!(f.roots.contains_key("/bin/sh") && f.roots.contains_key("/usr/bin/make"));
        // An existing device: written, never made again.
        assert!(!f.roots.contains_key("/dev"), "{:?}", f.roots);
        assert_eq!(f.handled_fs, right::ALL);
    }

    #[test]
    fn tcp_ports_are_fenced_unless_a_rule_allows_any_port() {
        let f = fence_of(
            "connect tcp registry.npmjs.org:443\nconnect tcp 127.0.0.1:8080\n",
            ALL_DIRS,
        );
        assert_eq!(f.connect, Some(BTreeSet::from([443, 8080])));
        assert_eq!(f.bind, Some(BTreeSet::new()));
        let f = fence_of("connect tcp example.org:*\n", ALL_DIRS);
        assert_eq!(f.connect, None);
        assert!(f.unfenced.iter().any(|u| u.contains("tcp connect")));
        let f = fence_of("connect tcp a.org:443\nbind tcp 127.0.0.1:0\n", ALL_DIRS);
        assert_eq!(f.connect, None, "its own servers may listen anywhere");
        assert_eq!(f.bind, Some(BTreeSet::from([0])));
    }
}
