//! Ownership in learn: what the recorded run created (docs/learning.md, "Ownership before
//! names").
//!
//! Enforce lets a run read, write and delete what it created itself, and create names in
//! directories it created (provenance, tracked by inode in `sink/owned.rs`). Learn follows
//! the same model by path over one trace: [`Ownership`] keeps the objects the run created and
//! still holds (`live`), moved by renames and dropped by deletes, so that accesses to them need
//! no rule. What needs rules is where the run made new names in directories it did not
//! create: those **root creations** become
//!
//! - `own P` when the object survived the run under a stable name (`node_modules`, `clone`,
//!   `target`, `.pytest_cache`, `hello.o`): on the next run it may already be there, left by
//!   this one, and the workload reads, rewrites or removes it;
//! - `create SHAPE` when it did not survive (a temp file or directory: `conf21481`,
//!   `Cargo.tomlAFK9OQ`, `pytest-cache-files-3yqw9sdy`) or its name looks random: the next run
//!   uses another name of the same shape ([`transient_shape`]);
//! - `create P` (exact) for a directory too shallow to own (`${HOME}/.cache`): the names made
//!   in it are root creations themselves (`own ${HOME}/.cache/pip`).
//!
//! Pure: paths in, rule texts out.

use std::collections::{BTreeMap, BTreeSet};

use super::generalize::{self, Var};
use super::tempnames;
use crate::profile::Verb;

/// A root creation: a name the run made in a directory it did not create. Names that differ
/// only in random-looking segments (`${TMPDIR}/npm-4711-ab12/x`, `.../npm-4712-cd34/x`) share
/// one entry ([`root_key`]), so memory follows the shapes, not the files.
#[derive(Debug, Clone)]
struct Root {
    /// The first name seen of this shape (generalized when the rules are made).
    path: Vec<u8>,
    dir: bool,
    /// Made in a place too shallow to own.
    shallow: bool,
    pid: i32,
    tid: i32,
    /// How many of these are still there, and whether one went away.
    alive: u32,
    died: bool,
    /// It was renamed onto its sibling whose name it extends (`targetXXXXXX` -> `target`,
    /// a temp name for an atomic replace): the length of that sibling's name.
    temp_for: Option<usize>,
}

/// A root's name with every random-looking segment replaced by its glob: the same for the
/// same name made again with other random parts.
fn root_key(path: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(path.len());
    for (i, seg) in path.split(|&b| b == b'/').enumerate() {
        if i > 0 {
            out.push(b'/');
        }
        match std::str::from_utf8(seg)
            .ok()
            .and_then(generalize::generalize_segment)
        {
            Some(g) => out.extend_from_slice(g.as_bytes()),
            None => out.extend_from_slice(seg),
        }
    }
    out
}

/// The created objects of one trace, by absolute path.
///
/// Memory follows the directories the run made and the names it made in directories it did
/// not make, never every file: a file made inside a created directory is the run's by that
/// directory (its ancestors are looked up), and is not stored. Files stored by name are kept
/// as 64-bit hashes. Known imprecision: such a hashed file below a directory that is later
/// renamed or deleted as a whole is not moved or dropped with it.
#[derive(Debug, Default)]
pub struct Ownership {
    /// Created directories and still there: path -> too shallow to own (names made in it
    /// are root creations themselves).
    dirs: BTreeMap<Vec<u8>, bool>,
    /// Created files not below a created, ownable directory, by hash of their path.
    files: std::collections::HashSet<u64>,
    /// Names below created directories that hold an object the run did not create (renamed
    /// in from outside), by hash: not its own, as enforce (by inode) would see them.
    foreign: std::collections::HashSet<u64>,
    /// Root creations with a stable-looking name (survival decides `own` or `create`).
    roots: BTreeMap<Vec<u8>, Root>,
    /// Root creations with a random-looking name: (directory, name glob) -> is a directory.
    random_roots: BTreeMap<(Vec<u8>, String), bool>,
    /// The name template of each process running mktemp(1), by pid (`wXXXX` of `mktemp -d
    /// DIR/wXXXX`): the random part of what it makes is exactly the template's X's.
    templates: std::collections::HashMap<i32, Vec<u8>>,
    /// Directories among the random roots, by path: their name's glob (for [`Self::exec_rules`]).
    random_dirs: std::collections::HashMap<Vec<u8>, String>,
    /// Programs the run executed below a directory it created: (that directory, the path).
    execs: BTreeSet<(Vec<u8>, Vec<u8>)>,
}

/// The template's last component, if `argv` runs mktemp(1) with one: its last operand
/// that is not an option and ends in at least three `X` (mktemp's own minimum).
fn mktemp_template(argv: &[Vec<u8>]) -> Option<Vec<u8>> {
    let prog = argv.first()?;
    if prog.rsplit(|&b| b == b'/').next() != Some(b"mktemp".as_slice()) {
        return None;
    }
    let t = argv[1..].iter().rev().find(|a| !a.starts_with(b"-"))?;
    let last = t.rsplit(|&b| b == b'/').next()?;
    last.ends_with(b"XXX").then(|| last.to_vec())
}

/// The glob of `name` when mktemp made it from `template` (its last component): the literal
/// part, then one `?` per trailing `X`. `None` when `name` is not of that shape (a
/// `--suffix`, another file of the same process).
fn template_glob(template: &[u8], name: &[u8]) -> Option<String> {
    let xs = template.iter().rev().take_while(|&&b| b == b'X').count();
    let keep = template.len() - xs;
    (xs >= 3
        && name.len() == template.len()
        && name[..keep] == template[..keep]
        && name[keep..].iter().all(u8::is_ascii_alphanumeric))
    .then(|| {
        format!(
            "{}{}",
            generalize::escape_path(&name[..keep]),
            "?".repeat(xs)
        )
    })
}

fn parent(path: &[u8]) -> Option<&[u8]> {
    match path.iter().rposition(|&b| b == b'/') {
        Some(0) | None => None,
        Some(i) => Some(&path[..i]),
    }
}

/// `p` is `dir` or below it.
fn at_or_below(p: &[u8], dir: &[u8]) -> bool {
    p.starts_with(dir) && (p.len() == dir.len() || p[dir.len()] == b'/')
}

fn hash(path: &[u8]) -> u64 {
    use std::hash::{BuildHasher, BuildHasherDefault};
    BuildHasherDefault::<std::collections::hash_map::DefaultHasher>::default().hash_one(path)
}

impl Ownership {
    /// Process `pid` exec'd a program with `argv`: remember its mktemp template, if any.
    pub fn exec(&mut self, pid: i32, argv: &[Vec<u8>]) {
        match mktemp_template(argv) {
            Some(t) => {
                self.templates.insert(pid, t);
            }
            None => {
                self.templates.remove(&pid);
            }
        }
    }

    /// Is some strict ancestor of `path` a created directory that the run owns (not
    /// shallow)?
    fn below_owned_dir(&self, path: &[u8]) -> bool {
        let mut p = path;
        while let Some(d) = parent(p) {
            if self.dirs.get(d) == Some(&false) {
                return true;
            }
            p = d;
        }
        false
    }

    /// Was the object at `path` created by this run (and is it still its own)?
    pub fn owns(&self, path: &[u8]) -> bool {
        let h = hash(path);
        self.dirs.contains_key(path)
            || self.files.contains(&h)
            || (self.below_owned_dir(path) && !self.foreign.contains(&h))
    }

    /// Is `path` a directory the run created?
    pub fn is_dir(&self, path: &[u8]) -> bool {
        self.dirs.contains_key(path)
    }

    /// Would a new name at `path` be made in a directory this run created (and may fill)?
    pub fn parent_owned(&self, path: &[u8]) -> bool {
        parent(path).is_some_and(|d| self.dirs.get(d) == Some(&false))
    }

    /// The run made `path` (a directory when `dir`). `ownable`: the abstracted path is deep
    /// enough and no secret ([`ownable`]); checked by the caller, who knows the variables.
    /// Returns whether it is a root creation (a rule is needed).
    pub fn created(&mut self, path: &[u8], dir: bool, ownable: bool, pid: i32, tid: i32) -> bool {
        let root = !self.parent_owned(path);
        self.foreign.remove(&hash(path));
        if dir {
            self.dirs.insert(path.to_vec(), root && !ownable);
        } else if !self.below_owned_dir(path) {
            self.files.insert(hash(path));
        }
        if root {
            let last = path.rsplit(|&b| b == b'/').next().unwrap_or(path);
            let glob = self
                .templates
                .get(&pid)
                .and_then(|t| template_glob(t, last))
                .or_else(|| std::str::from_utf8(last).ok().and_then(random_name_glob));
            match (glob, parent(path)) {
                (Some(g), Some(d)) => {
                    if dir {
                        self.random_dirs.insert(path.to_vec(), g.clone());
                    }
                    self.random_roots.insert((d.to_vec(), g), dir);
                }
                _ => {
                    let r = self.roots.entry(root_key(path)).or_insert(Root {
                        path: path.to_vec(),
                        dir,
                        shallow: dir && !ownable,
                        pid,
                        tid,
                        alive: 0,
                        died: false,
                        temp_for: None,
                    });
                    r.alive += 1;
                }
            }
        }
        root
    }

    /// `path` was deleted (and everything below it, for a directory).
    pub fn deleted(&mut self, path: &[u8]) {
        let was_root = self.files.remove(&hash(path)) || self.dirs.contains_key(path);
        if was_root && let Some(r) = self.roots.get_mut(&root_key(path)) {
            r.alive = r.alive.saturating_sub(1);
            r.died = true;
        }
        self.foreign.remove(&hash(path));
        let below: Vec<Vec<u8>> = self
            .dirs
            .range(path.to_vec()..)
            .take_while(|(k, _)| k.starts_with(path))
            .filter(|(k, _)| at_or_below(k, path))
            .map(|(k, _)| k.clone())
            .collect();
        for k in below {
            self.dirs.remove(&k);
        }
    }

    /// `from` was renamed to `to`: what the run owned moves along; an object it did not
    /// create stays not its own under the new name (and replaces whatever was there).
    pub fn renamed(&mut self, from: &[u8], to: &[u8]) {
        // A temp name for an atomic replace: `DIR/NAMExxxxxx` renamed onto `DIR/NAME`. The
        // extra part is random whatever it looks like this time (cargo's `targetlzjxqa`).
        if let (Some(fd), Some(td)) = (parent(from), parent(to))
            && fd == td
            && let Some(r) = self.roots.get_mut(&root_key(from))
        {
            let (fl, tl) = (&from[fd.len() + 1..], &to[td.len() + 1..]);
            if fl.len() >= tl.len() + 3
                && !tl.is_empty()
                && fl.starts_with(tl)
                && fl[tl.len()..]
                    .iter()
                    .all(|b| b.is_ascii_alphanumeric() || *b == b'_')
            {
                r.temp_for = Some(tl.len());
            }
        }
        let owned = self.owns(from);
        let was_dir = self.dirs.contains_key(from);
        let moved: Vec<(Vec<u8>, bool)> = self
            .dirs
            .range(from.to_vec()..)
            .take_while(|(k, _)| k.starts_with(from))
            .filter(|(k, _)| at_or_below(k, from))
            .map(|(k, d)| (k.clone(), *d))
            .collect();
        // What was at `to` is gone, but a root creation named `to` is there again (the
        // moved object): `.pytest_cache`, made by renaming pytest's temp directory onto it,
        // survives the run and is no thrown-away name.
        let at_to = self.roots.get(&root_key(to)).map(|r| r.died);
        self.deleted(from);
        self.deleted(to);
        if let Some(died) = at_to
            && let Some(r) = self.roots.get_mut(&root_key(to))
        {
            r.alive += 1;
            r.died = died;
        }
        for (k, shallow) in moved {
            let mut new = to.to_vec();
            new.extend_from_slice(&k[from.len()..]);
            self.dirs.insert(new, shallow);
        }
        if owned && !was_dir && !self.below_owned_dir(to) {
            self.files.insert(hash(to));
        }
        if !owned && self.below_owned_dir(to) {
            self.foreign.insert(hash(to));
        }
    }

    /// The rules the root creations need, as (verb, glob text) with this trace's variables,
    /// and the `exec` rules of programs the run made below them ([`Ownership::defer_exec`]).
    pub fn rules(&self, vars: &[Var], forbidden: &[String]) -> Vec<(Verb, String)> {
        let mut out = Vec::new();
        for (dir, glob) in self.random_roots.keys() {
            let d = generalize::generalize_path(dir, 0, 0, vars, forbidden);
            let exact = generalize::abstract_vars(dir, vars);
            if !generalize::is_secret(&exact) {
                out.push((Verb::Create, format!("{d}/{glob}")));
            }
        }
        for root in self.roots.values() {
            if let Some(shape) = self.shape_of(root, vars, forbidden) {
                out.extend(shape.rules(root));
            }
        }
        out.extend(self.exec_rules(vars, forbidden));
        out.sort();
        out.dedup();
        out
    }

    /// What one root creation becomes.
    fn shape_of(&self, root: &Root, vars: &[Var], forbidden: &[String]) -> Option<RootShape> {
        let path = &root.path;
        let text = generalize::generalize_path(path, root.pid, root.tid, vars, forbidden);
        if generalize::is_secret(&generalize::abstract_vars(path, vars)) {
            return None;
        }
        let (dir_text, last) = text.rsplit_once('/')?;
        let name = path.rsplit(|&b| b == b'/').next().unwrap_or(path);
        // Straight in HOME or `/`: the name itself, never a shape (`create ${HOME}/.*` from a
        // made-and-removed `~/.1` would admit `~/.bash_login`).
        if dir_text == "${HOME}" || dir_text.is_empty() {
            let exact = format!("{dir_text}/{}", generalize::escape_segment(name));
            return Some(RootShape {
                dir_text: dir_text.to_string(),
                shape: generalize::escape_segment(name),
                random: false,
                stable: true,
                text: exact,
            });
        }
        // Thrown away: a generator's exact shape first (`tmp????????`, where the path rules
        // alone say `tmp*`, which admits `tmp` itself).
        let thrown = root.died && root.alive == 0;
        let temp = root
            .temp_for
            .and_then(|k| temp_for_glob(name, k))
            .or_else(|| {
                let name = std::str::from_utf8(name).ok().filter(|_| thrown)?;
                tempnames::temp_glob(name, tempnames::Seen::ThrownAway)
            })
            .or_else(|| mkstemp_in_tmpdir(root, dir_text, last));
        let random = temp.is_some() || last.contains(['*', '?']);
        let mut shape = match temp {
            Some(t) => t,
            None if random => last.to_string(),
            None => transient_shape(last),
        };
        // A shape that would reach a persistence place (`${CWD}/.*` from `.0`, which admits
        // `.npmrc`): the name itself.
        if generalize::glob_reaches_persistence(&format!("{dir_text}/{shape}")) {
            shape = generalize::escape_segment(name);
        }
        Some(RootShape {
            dir_text: dir_text.to_string(),
            stable: !random && shape == last,
            shape,
            random,
            text,
        })
    }

    /// The names of root creations that did not survive and that no generator explained
    /// (their glob text is the literal name), as (directory glob text, name): for aligning
    /// them with other traces' ([`tempnames::Alignment`]).
    pub fn thrown_names(&self, vars: &[Var], forbidden: &[String]) -> Vec<(String, String)> {
        self.roots
            .values()
            .filter(|r| r.died && r.alive == 0)
            .filter_map(|r| {
                let s = self.shape_of(r, vars, forbidden)?;
                let name = s.text.rsplit_once('/')?.1.to_string();
                (!s.random && !name.contains(['*', '?', '[', '{', '\\']))
                    .then_some((s.dir_text, name))
            })
            .collect()
    }

    /// The run executed `path`: when it lies below a directory the run made in a place it
    /// did not own (`${TMPDIR}/go-build344541410/b059/calc.test`), its `exec` rule waits for
    /// the end of the trace, where that directory's name gets its shape
    /// (`exec ${TMPDIR}/go-build[0-9]*/b059/calc.test`). Returns whether it was kept here.
    pub fn defer_exec(&mut self, path: &[u8]) -> bool {
        let Some(root) = self.root_dir_of(path) else {
            return false;
        };
        let root = root.to_vec();
        self.execs.insert((root, path.to_vec()));
        true
    }

    /// The highest directory the run created that holds `path`, below any shallow one.
    fn root_dir_of<'a>(&self, path: &'a [u8]) -> Option<&'a [u8]> {
        let mut found = None;
        let mut p = path;
        while let Some(d) = parent(p) {
            match self.dirs.get(d) {
                Some(false) => found = Some(d),
                _ => break,
            }
            p = d;
        }
        found
    }

    /// The `exec` rules of [`Ownership::defer_exec`]: the created directory's shape, then the
    /// rest of the path as usual.
    fn exec_rules(&self, vars: &[Var], forbidden: &[String]) -> Vec<(Verb, String)> {
        let mut out = Vec::new();
        for (root, path) in &self.execs {
            let full = generalize::generalize_path(path, 0, 0, vars, forbidden);
            let depth = generalize::segments(&generalize::abstract_vars(root, vars)).len();
            let segs = generalize::segments(&full);
            let random = self.random_dirs.get(root).zip(parent(root)).map(|(g, d)| {
                format!(
                    "{}/{g}",
                    generalize::generalize_path(d, 0, 0, vars, forbidden)
                )
            });
            let head = random.or_else(|| {
                let r = self.roots.get(&root_key(root))?;
                let s = self.shape_of(r, vars, forbidden)?;
                Some(if s.random || !s.stable {
                    format!("{}/{}", s.dir_text, s.shape)
                } else {
                    s.text
                })
            });
            let text = match head {
                Some(h) if segs.len() > depth => format!("{h}/{}", segs[depth..].join("/")),
                _ => full,
            };
            out.push((Verb::Exec, text));
        }
        out
    }
}

/// A temp name renamed onto the sibling whose name is its first `keep` bytes (an atomic
/// replace: cargo's `targetXXXXXX` -> `target`): that name, then one `?` per extra byte,
/// whatever the extra bytes look like this time (`targetlzjxqa`, all lower case).
fn temp_for_glob(name: &[u8], keep: usize) -> Option<String> {
    (keep < name.len()).then(|| {
        format!(
            "{}{}",
            generalize::escape_path(&name[..keep]),
            "?".repeat(name.len() - keep)
        )
    })
}

/// A file thrown away directly in TMPDIR with mkstemp's shape (a prefix, then six letters or
/// digits, no extension, 7 to 16 characters): the prefix and six `?` whatever the six look
/// like this time, for a prefix the generator table does not know.
fn mkstemp_in_tmpdir(root: &Root, dir_text: &str, last: &str) -> Option<String> {
    let b = last.as_bytes();
    (dir_text == "${TMPDIR}"
        && root.died
        && root.alive == 0
        && !root.dir
        && (7..=16).contains(&b.len())
        && b.iter().all(u8::is_ascii_alphanumeric)
        && b[..b.len() - 6].iter().any(u8::is_ascii_alphabetic))
    .then(|| format!("{}??????", &last[..last.len() - 6]))
}

/// What a root creation becomes ([`Ownership::shape_of`]).
#[derive(Debug)]
struct RootShape {
    /// The generalized directory and the name's shape in it.
    dir_text: String,
    shape: String,
    /// The name is random (a glob already, or a temp name for an atomic replace).
    random: bool,
    /// Thrown away, it would still be the same name on the next run (`conftest.c`).
    stable: bool,
    /// The generalized path.
    text: String,
}

impl RootShape {
    fn rules(self, root: &Root) -> Vec<(Verb, String)> {
        let mut out = Vec::new();
        let survived = root.alive > 0;
        // A name the run threw away that has no random part (`conftest.c`, `a.txt`) is the
        // same on every run: a run killed before it removed it leaves it for the next one,
        // which then rewrites or removes it. Own it like an output.
        if (root.died && !self.stable) || self.random {
            out.push((Verb::Create, format!("{}/{}", self.dir_text, self.shape)));
        }
        if self.random || (!survived && !self.stable) {
            return out;
        }
        let text = self.text;
        if !root.shallow && (ownable(&text) || !root.dir) {
            // A file left in a shallow place (`${HOME}/.gitconfig`-like) stays exact, like
            // every own rule of a file.
            if ownable(&text) {
                out.push((Verb::Own, text));
            } else {
                out.push((Verb::Create, text.clone()));
                out.push((Verb::Write, text));
            }
        } else {
            out.push((Verb::Create, text));
        }
        out
    }
}

impl Ownership {
    /// Replay what a recorded syscall did to ownership (creates, deletes, renames), as
    /// enforce's provenance would see it: for judging a recorded run against a profile
    /// event by event (decide first, then replay). Every new name counts, deep or not.
    pub fn replay(&mut self, ev: &crate::event::Event) {
        use crate::event::{Access, EventKind, Object, Outcome};
        let EventKind::Syscall(sc) = &ev.kind else {
            return;
        };
        if !matches!(sc.outcome, Outcome::Value(_) | Outcome::Unknown) {
            return;
        }
        let rename = sc.name.starts_with("rename");
        for t in &sc.targets {
            let Object::Path(p) = &t.object else {
                continue;
            };
            if t.access.contains(Access::Create) && !sc.name.starts_with("link") && !rename {
                let dir = sc.name.starts_with("mkdir");
                self.created(p.effective(), dir, true, ev.pid, ev.tid);
            } else if t.access.contains(Access::Delete) && !rename {
                self.deleted(p.effective());
            }
        }
        if rename
            && let [from, to] = sc.targets.as_slice()
            && let (Object::Path(from), Object::Path(to)) = (&from.object, &to.object)
        {
            self.renamed(from.effective(), to.effective());
        }
    }
}

impl crate::policy::Provenance for Ownership {
    fn owns(&self, path: &[u8]) -> bool {
        Ownership::owns(self, path)
    }

    fn absent_in_owned(&self, path: &[u8]) -> bool {
        self.parent_owned(path) && !self.dirs.contains_key(path)
    }
}

/// The glob of a random-looking name the run made, for its `create` rule: the random-segment
/// rules of docs/learning.md section 4, but never a bare `*` or one that starts with `*`
/// when a literal start can be kept (gcc's `cc4IAwp9.s` is `cc*.s`, not `*.s`), and a name
/// random from its first character keeps its length (`????????`): `create ${TMPDIR}/*`
/// would admit any new name there. `None` when the name does not look random (then the
/// root is judged by whether it survived, and a thrown-away one gets [`transient_shape`]).
fn random_name_glob(name: &str) -> Option<String> {
    // A generator's name, by its exact shape (`cc??????.s`, `tmp????????`, nanoid's 21).
    if let Some(g) = tempnames::temp_glob_made(name) {
        return Some(g);
    }
    let g = generalize::generalize_segment(name)?;
    // Found random by the random-segment rules: a generator's reading of it that agrees
    // (`myproj_dk9tg64a-work` -> `myproj_????????-work`, not `myproj_*`, which drops the
    // suffix and admits `myproj_` itself).
    if let Some(t) = tempnames::temp_glob(name, tempnames::Seen::ThrownAway)
        .filter(|t| tempnames::refines(t, &g))
    {
        return Some(t);
    }
    // Python's `tempfile` without a prefix: eight of `[a-z0-9_]` (`u_g4xv_9`), whatever
    // part of it looked random this time (`c8xq2k_a` would give `c*`).
    if name.len() == 8
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
    {
        return Some("????????".to_string());
    }
    if !g.starts_with(['*', '?']) {
        return Some(g);
    }
    let shape = tempnames::cut_shape(name);
    if !shape.starts_with('*') {
        return Some(shape);
    }
    if g == "*" {
        return Some("?".repeat(name.chars().count()));
    }
    Some(g)
}

/// May `text` (an abstracted path) be owned as an area: not a secret place, and deep
/// enough: at least one segment below `${CWD}` or `${TMPDIR}`, two below `${HOME}`
/// (`${HOME}/.cache/pip`, never `${HOME}/.cache`), three below `/`, never under `/proc`,
/// `/sys` or `/dev`.
pub fn ownable(text: &str) -> bool {
    if generalize::is_secret(text) {
        return false;
    }
    let segs: Vec<&str> = text.split('/').collect();
    match segs.first() {
        Some(&"${CWD}") | Some(&"${TMPDIR}") => segs.len() >= 2,
        Some(&"${HOME}") => segs.len() >= 3,
        Some(&"") => segs.len() >= 4 && !matches!(segs[1], "proc" | "sys" | "dev"),
        _ => false,
    }
}

/// The shape of a name the run used and threw away (or that enforce refused to create): the
/// generator's shape when a generator of [`tempnames::GENERATORS`] could have made it
/// (`pytest-cache-files-????????`, `conf[0-9]*`), else the name cut at the last separator
/// before anything random (`out-*.log`), else the name itself (`conftest.c`: no sign of
/// randomness; the same name on every run). See [`tempnames::thrown_shape`].
///
/// A loose shape costs little: `create` admits only names that do not exist yet, and what is
/// made under them is the run's own, nothing else.
pub fn transient_shape(name: &str) -> String {
    tempnames::thrown_shape(name)
}

/// Group `own` rules of files: where at least `threshold` owned files of one directory share
/// an extension (`${CWD}/*.o`), one `own DIR/*.EXT` replaces them. Never for secret-looking
/// extensions, never a `DIR/**`: the directory was there before the run, only its outputs
/// are the run's.
pub fn group_owned(own: &BTreeSet<String>, threshold: usize) -> BTreeSet<String> {
    const KEYS: &[&str] = &[
        "pem", "key", "p12", "pfx", "gpg", "asc", "kdbx", "jks", "env", "ovpn", "ppk",
    ];
    if threshold == 0 {
        return own.clone();
    }
    let mut groups: BTreeMap<(String, String), Vec<&String>> = BTreeMap::new();
    for p in own {
        let Some((dir, last)) = p.rsplit_once('/') else {
            continue;
        };
        if last.contains(['*', '?', '[', '{', '\\']) {
            continue;
        }
        if let Some((stem, ext)) = last.rsplit_once('.')
            && !stem.is_empty()
            && (1..=5).contains(&ext.len())
            && ext.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'-')
            && !KEYS.contains(&ext.to_ascii_lowercase().as_str())
        {
            groups
                .entry((dir.to_string(), ext.to_string()))
                .or_default()
                .push(p);
        }
    }
    let mut out = own.clone();
    for ((dir, ext), members) in groups {
        if members.len() >= threshold {
            for m in members {
                out.remove(m);
            }
            out.insert(format!("{dir}/*.{ext}"));
        }
    }
    group_by_stem(out, threshold, KEYS)
}

/// The second grouping of [`group_owned`]: at least `threshold` owned names of one directory
/// that share a stem of four characters or more before their first dot (autoconf's scratch
/// files `conftest.c`, `conftest.err`, `conftest.o`...) become `own DIR/STEM.*`; never for a
/// key-like extension among them.
fn group_by_stem(own: BTreeSet<String>, threshold: usize, keys: &[&str]) -> BTreeSet<String> {
    // Per (directory, stem): the members, and whether one has a key-like extension.
    let mut groups: BTreeMap<(String, String), (Vec<String>, bool)> = BTreeMap::new();
    for p in &own {
        let Some((dir, last)) = p.rsplit_once('/') else {
            continue;
        };
        let Some((stem, ext)) = last.split_once('.') else {
            continue;
        };
        if stem.len() >= 4 && !last.contains(['*', '?', '[', '{', '\\']) {
            let g = groups
                .entry((dir.to_string(), stem.to_string()))
                .or_default();
            g.0.push(p.clone());
            g.1 |= ext
                .split('.')
                .any(|e| keys.contains(&e.to_ascii_lowercase().as_str()));
        }
    }
    let mut out = own;
    for ((dir, stem), (members, keyed)) in groups {
        if members.len() >= threshold && !keyed {
            for m in &members {
                out.remove(m);
            }
            out.insert(format!("{dir}/{stem}.*"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars() -> Vec<Var> {
        vec![
            ("CWD".into(), b"/w".to_vec()),
            ("HOME".into(), b"/h".to_vec()),
            ("TMPDIR".into(), b"/t".to_vec()),
        ]
    }

    #[test]
    fn shapes_of_thrown_away_names() {
        // The generators' exact shapes (tempnames::GENERATORS), or a cut at a separator.
        for (name, shape) in [
            ("conf21481", "conf[0-9]*"),
            ("Gmab1cde", "Gm??????"),
            ("Gmabcdef", "Gm??????"),
            ("ccabCdef.s", "cc??????.s"),
            ("cc0eRYnn.s", "cc??????.s"),
            ("Cargo.tomlAFK9OQ", "Cargo.toml??????"),
            ("pytest-cache-files-3yqw9sdy", "pytest-cache-files-????????"),
            ("pytest-cache-files-la5ne_rx", "pytest-cache-files-????????"),
            ("pytest-cache-files-qwertyui", "pytest-cache-files-????????"),
            (
                "build-requirements-4n9_vhlp.txt",
                "build-requirements-????????.txt",
            ),
            ("package-lock.json.3516583047", "package-lock.json.[0-9]*"),
            ("conf123.c", "conf[0-9]*.c"),
            ("conftest.c", "conftest.c"),
            ("12345.tmp", "[0-9]*.tmp"),
            ("out-ab12.log", "out-*.log"),
            ("a{b", "a{b"),
        ] {
            assert_eq!(transient_shape(name), shape, "{name}");
        }
    }

    #[test]
    fn mktemp_templates_give_the_exact_shape() {
        let argv = |a: &[&str]| a.iter().map(|s| s.as_bytes().to_vec()).collect::<Vec<_>>();
        assert_eq!(
            mktemp_template(&argv(&["mktemp", "-d", "/w/wXXXX"])),
            Some(b"wXXXX".to_vec())
        );
        assert_eq!(
            mktemp_template(&argv(&["/usr/bin/mktemp", "-p", "/tmp", "build.XXXXXX"])),
            Some(b"build.XXXXXX".to_vec())
        );
        // No template (mktemp's own default), too few X, another program.
        assert_eq!(mktemp_template(&argv(&["mktemp", "-d"])), None);
        assert_eq!(mktemp_template(&argv(&["mktemp", "fooXX"])), None);
        assert_eq!(mktemp_template(&argv(&["mkdir", "wXXXX"])), None);
        assert_eq!(template_glob(b"wXXXX", b"wizQ7"), Some("w????".into()));
        assert_eq!(
            template_glob(b"build.XXXXXX", b"build.aB3xYz"),
            Some("build.??????".into())
        );
        // Not made from this template: another length, prefix or a suffix.
        assert_eq!(template_glob(b"wXXXX", b"wizQ7.d"), None);
        assert_eq!(template_glob(b"wXXXX", b"vizQ7"), None);
        // The run's names from one mktemp process: the learned rule admits the next run's.
        let mut o = Ownership::default();
        o.exec(7, &argv(&["mktemp", "-d", "/w/wXXXX"]));
        assert!(o.created(b"/w/wizQ7", true, true, 7, 7));
        o.deleted(b"/w/wizQ7");
        let rules = o.rules(&[], &[]);
        assert!(
            rules.contains(&(Verb::Create, "/w/w????".to_string())),
            "{rules:?}"
        );
        // Without the template, the literal start would have been kept (`wiz*`).
        let mut o = Ownership::default();
        o.created(b"/w/wizQ7", true, true, 8, 8);
        o.deleted(b"/w/wizQ7");
        assert!(
            !o.rules(&[], &[])
                .contains(&(Verb::Create, "/w/w????".to_string())),
            "the template is what gives the shape"
        );
    }

    #[test]
    fn random_names_keep_their_literal_start_or_length() {
        for (name, glob) in [
            ("cc4IAwp9.s", Some("cc??????.s")),
            ("tmpa_b3xk9z", Some("tmp????????")),
            ("tSoQgW-8_IUyPeharJunJ", Some("?????????????????????")),
            ("3f2a9c1d4e5b6a7f", Some("????????????????")),
            ("conftest.c", None),
            ("c8xq2k_a", Some("????????")),
            ("myproj_dk9tg64a-work", Some("myproj_????????-work")),
            ("myproj__s9k95rm-work", Some("myproj_????????-work")),
            ("sbx-c1wFS8.json", Some("sbx-??????.json")),
            (
                "package-lock.json.3516583047",
                Some("package-lock.json.[0-9]*"),
            ),
            // A reading that would keep random-looking text literally is not taken.
            (
                "2026-12-02T19_25_25_123Z-debug-0.log",
                Some("????????????????????????????????.log"),
            ),
        ] {
            assert_eq!(random_name_glob(name).as_deref(), glob, "{name}");
        }
    }

    #[test]
    fn what_may_be_owned() {
        assert!(ownable("${CWD}/node_modules"));
        assert!(ownable("${TMPDIR}/hpkg-build"));
        assert!(ownable("${HOME}/.cache/pip"));
        assert!(!ownable("${HOME}/.cache"));
        assert!(!ownable("${HOME}/.ssh/x"));
        assert!(!ownable("/tmp/x"));
        assert!(ownable("/var/tmp/x"));
        assert!(!ownable("/proc/self/x"));
        assert!(!ownable("${CWD}"));
    }

    #[test]
    fn a_temp_file_needs_a_create_and_an_output_an_own() {
        let mut o = Ownership::default();
        // configure: a temp file made and removed, an output left behind.
        assert!(o.created(b"/w/conf21481", false, true, 1, 1));
        o.deleted(b"/w/conf21481");
        assert!(o.created(b"/w/config.log", false, true, 1, 1));
        // A build directory and what is made in it.
        assert!(o.created(b"/w/build", true, true, 1, 1));
        assert!(!o.created(b"/w/build/a.o", false, true, 1, 1));
        assert!(o.owns(b"/w/build/a.o"));
        let rules = o.rules(&vars(), &[]);
        assert_eq!(
            rules,
            vec![
                (Verb::Own, "${CWD}/build".to_string()),
                (Verb::Own, "${CWD}/config.log".to_string()),
                (Verb::Create, "${CWD}/conf[0-9]*".to_string()),
            ]
        );
    }

    #[test]
    fn renames_move_ownership() {
        let mut o = Ownership::default();
        o.created(b"/w/pytest-cache-files-3yqw9sdy", true, true, 1, 1);
        o.created(b"/w/pytest-cache-files-3yqw9sdy/v", true, true, 1, 1);
        o.renamed(b"/w/pytest-cache-files-3yqw9sdy", b"/w/.pytest_cache");
        // The target name is new in the project directory: a root creation too.
        o.created(b"/w/.pytest_cache", true, true, 1, 1);
        assert!(o.owns(b"/w/.pytest_cache/v"));
        assert!(!o.owns(b"/w/pytest-cache-files-3yqw9sdy/v"));
        let rules = o.rules(&vars(), &[]);
        assert_eq!(
            rules,
            vec![
                (Verb::Own, "${CWD}/.pytest_cache".to_string()),
                (
                    Verb::Create,
                    "${CWD}/pytest-cache-files-????????".to_string()
                ),
            ]
        );
        // As learn sees a rename (the new name first, then the move): the same rules.
        let mut o = Ownership::default();
        o.created(b"/w/pytest-cache-files-abcdefgh", true, true, 1, 1);
        o.created(b"/w/.pytest_cache", false, true, 1, 1);
        o.renamed(b"/w/pytest-cache-files-abcdefgh", b"/w/.pytest_cache");
        assert_eq!(
            o.rules(&vars(), &[]),
            vec![
                (Verb::Own, "${CWD}/.pytest_cache".to_string()),
                (
                    Verb::Create,
                    "${CWD}/pytest-cache-files-????????".to_string()
                ),
            ]
        );
        // A file the run did not make, renamed over an owned name: not owned.
        o.renamed(b"/w/src.txt", b"/w/.pytest_cache/v");
        assert!(!o.owns(b"/w/.pytest_cache/v"));
    }

    /// cargo makes `target` as `targetXXXXXX` and renames it: the extra part is random even
    /// when it looks like a word (all lower case, 1 run in ~185), so the next run's name
    /// still matches.
    #[test]
    fn a_temp_name_for_an_atomic_replace_keeps_its_length() {
        for temp in ["targetlzjxqa", "targetSaCuuL"] {
            let mut o = Ownership::default();
            let from = format!("/w/{temp}");
            o.created(from.as_bytes(), true, true, 1, 1);
            o.created(format!("{from}/CACHEDIR.TAG").as_bytes(), false, true, 1, 1);
            o.renamed(from.as_bytes(), b"/w/target");
            o.created(b"/w/target", true, true, 1, 1);
            let rules = o.rules(&vars(), &[]);
            assert!(
                rules.contains(&(Verb::Create, "${CWD}/target??????".to_string()))
                    || rules.contains(&(Verb::Create, "${CWD}/target*".to_string())),
                "{temp}: {rules:?}"
            );
            assert!(
                !rules.iter().any(|(_, t)| t.contains(temp)),
                "{temp}: {rules:?}"
            );
        }
    }

    /// make's temp files in TMPDIR (`GmXXXXXX`): six random letters or digits that may all
    /// be lower case; the shape keeps their length.
    #[test]
    fn mkstemp_names_thrown_away_in_tmpdir_keep_their_length() {
        for name in ["Gmabcdef", "GmAb1cDe", "Gm123456"] {
            let mut o = Ownership::default();
            let p = format!("/t/{name}");
            o.created(p.as_bytes(), false, true, 1, 1);
            o.deleted(p.as_bytes());
            let rules = o.rules(&vars(), &[]);
            assert!(
                rules.iter().any(|(v, t)| *v == Verb::Create
                    && (t == "${TMPDIR}/Gm??????" || t == "${TMPDIR}/Gm*")),
                "{name}: {rules:?}"
            );
            assert!(
                !rules.iter().any(|(_, t)| t.contains(name)),
                "{name}: {rules:?}"
            );
        }
    }

    #[test]
    fn shallow_directories_are_not_areas() {
        let mut o = Ownership::default();
        assert!(o.created(b"/h/.cache", true, false, 1, 1));
        // Made inside a shallow directory: a root creation of its own.
        assert!(o.created(b"/h/.cache/pip", true, true, 1, 1));
        let rules = o.rules(&vars(), &[]);
        assert_eq!(
            rules,
            vec![
                (Verb::Own, "${HOME}/.cache/pip".to_string()),
                (Verb::Create, "${HOME}/.cache".to_string()),
            ]
        );
    }

    #[test]
    fn owned_names_group_by_stem() {
        let names: BTreeSet<String> = [
            "c", "err", "o", "i", "sed", "sh", "sym", "make", "one", "two", "dir",
        ]
        .iter()
        .map(|e| format!("${{CWD}}/conftest.{e}"))
        .chain(["${CWD}/conftest".to_string(), "${CWD}/hello.c".to_string()])
        .collect();
        let g = group_owned(&names, 8);
        assert!(g.contains("${CWD}/conftest.*"), "{g:?}");
        assert!(g.contains("${CWD}/conftest"), "{g:?}");
        assert!(g.contains("${CWD}/hello.c"), "{g:?}");
        assert_eq!(g.len(), 3, "{g:?}");
        // Fewer than the threshold, or a key among them: listed.
        let few: BTreeSet<String> = names.iter().take(5).cloned().collect();
        assert_eq!(group_owned(&few, 8), few);
        let mut keyed = names.clone();
        keyed.insert("${CWD}/conftest.pem".to_string());
        assert!(!group_owned(&keyed, 8).contains("${CWD}/conftest.*"));
        // sed's `-t` scratch names group by their extension.
        let t: BTreeSet<String> = (0..9).map(|i| format!("${{CWD}}/lib/h{i}.h-t")).collect();
        assert_eq!(
            group_owned(&t, 8),
            BTreeSet::from(["${CWD}/lib/*.h-t".to_string()])
        );
    }

    #[test]
    fn owned_files_group_by_extension() {
        let own: BTreeSet<String> = (0..9)
            .map(|i| format!("${{CWD}}/f{i}.o"))
            .chain(["${CWD}/build".to_string(), "${CWD}/k1.pem".to_string()])
            .collect();
        let g = group_owned(&own, 8);
        assert!(g.contains("${CWD}/*.o"));
        assert!(g.contains("${CWD}/build"));
        assert!(g.contains("${CWD}/k1.pem"));
        assert_eq!(g.len(), 3);
    }
}
