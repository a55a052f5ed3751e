//! Temp names by evidence (docs/learning.md sections 0 and 4): the shapes of the names that
//! real runtimes' temp-name generators make, as one table of data ([`GENERATORS`]), and what
//! learn makes of a name one of them could have made.
//!
//! A generator puts a random run of a fixed alphabet and length (a decimal number of up to
//! ten digits for Go and autoconf) between a prefix and a suffix its caller chose. Learn never
//! guesses where the randomness starts (the retired rule "at the first digit or lower-to-upper
//! change" failed for every random run that starts with letters: pytest's
//! `pytest-cache-files-la5ne_rx` was learned as `pytest-cache-files-la*`). It asks which
//! generator could have made the name, keeps the caller's prefix and suffix literally and
//! writes one `?` per random character (`pytest-cache-files-????????`), or `[0-9]*` for a
//! decimal run, whose length varies (`go-build[0-9]*`). A `?` admits every character a
//! generator can put there; classes (`[a-z0-9_]`) would be tighter by a little and much
//! harder to review.
//!
//! How much evidence a row needs ([`Seen`]): a tool's own prefix (`pytest-cache-files-`,
//! `go-build`, `tmp_obj_`) is enough wherever the name appears; a short prefix (`cc`, `Gm`,
//! `conf`) needs a name the run created, and a random-looking run (a digit among letters,
//! mixed case, an `_` in Python's alphabet); a caller's prefix of any kind (Python's, mkstemp's,
//! Go's) needs a name the run created and threw away (deleted, renamed away or refused by
//! enforce), and, when the prefix is empty, a random-looking run. What no row explains is cut
//! at the last separator before anything random ([`cut_shape`]), and names that differ between
//! traces are aligned ([`align`], [`Alignment`]).
//!
//! Pure: names in, glob text out. Names are glob-escaped with `generalize::escape_segment`.

use std::collections::{BTreeMap, BTreeSet};

use super::generalize::escape_segment;

/// The characters a generator draws its random run from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Alphabet {
    /// `[A-Za-z0-9]`: glibc's and gnulib's `mkstemp`/`mkdtemp`/`mktemp(1)` (libuv's
    /// `fs.mkdtemp` calls glibc's), the Rust `tempfile` crate (`fastrand::alphanumeric`).
    Alnum,
    /// `[a-z0-9_]`: Python's `tempfile._RandomNameSequence`.
    PyLower,
    /// `[A-Za-z0-9_-]`: nanoid's URL-safe alphabet.
    Nanoid,
    /// `[0-9]`: Go's `os.MkdirTemp`/`CreateTemp` (a `uint32` in decimal) and autoconf's `$$`.
    Digits,
}

impl Alphabet {
    pub fn admits(self, b: u8) -> bool {
        match self {
            Alphabet::Alnum => b.is_ascii_alphanumeric(),
            Alphabet::PyLower => b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_',
            Alphabet::Nanoid => b.is_ascii_alphanumeric() || b == b'_' || b == b'-',
            Alphabet::Digits => b.is_ascii_digit(),
        }
    }

    /// Does this random run look random, not like a word: a digit among letters or mixed case
    /// (`[A-Za-z0-9]`), a digit or `_` (Python), both cases (nanoid's 21 characters: a name
    /// that long without a dot is rarely a word, while one nanoid in 80 has neither a digit
    /// nor `-_`), three digits or more (a number). Random runs lack it now and then (six lower-case letters:
    /// 0.5% of `mkstemp`'s, eight letters: 6% of Python's): then only a thrown-away name is
    /// recognized.
    pub fn signed(self, run: &[u8]) -> bool {
        let has = |f: fn(&u8) -> bool| run.iter().any(f);
        let digit = has(u8::is_ascii_digit);
        let lower = has(u8::is_ascii_lowercase);
        let upper = has(u8::is_ascii_uppercase);
        match self {
            Alphabet::Alnum => (digit && (lower || upper)) || (lower && upper),
            Alphabet::PyLower => digit || run.contains(&b'_'),
            Alphabet::Nanoid => lower && upper,
            Alphabet::Digits => run.len() >= 3,
        }
    }
}

/// The literal part before the random run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Prefix {
    /// Chosen by the caller: nothing, or text that ends in a separator (`-`, `_`, `.`) or in a
    /// character outside the alphabet (else where the run starts would be a guess).
    Caller,
    /// Exactly this.
    Exact(&'static str),
    /// This, then lower-case words, ending in `-` (pip's `pip-build-env-`, `pip-unpack-`): the
    /// glob keeps the family only (`pip-*-????????`), since the kind varies with the code path.
    Family(&'static str),
}

/// The literal part after the random run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Suffix {
    /// Chosen by the caller: nothing, or text that starts with `.`, `-`, `_`, `+` or `~`
    /// outside the alphabet (a letter too after a decimal run: autoconf's `conf$$subs.awk`).
    Caller,
    /// Exactly this.
    Exact(&'static str),
}

/// How much evidence a row needs before a name of its shape is taken as its output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Seen {
    /// Wherever the name appears (any path segment): the prefix is the tool's own.
    Anywhere,
    /// A name the run created.
    Created,
    /// A name the run created and threw away (deleted, renamed away) or that enforce refused
    /// to create.
    ThrownAway,
}

/// One generator of temp names.
#[derive(Debug)]
pub struct Generator {
    /// Who makes such names (and where that is written).
    pub who: &'static str,
    pub prefix: Prefix,
    pub alphabet: Alphabet,
    /// The length of the random run (a range for decimal numbers).
    pub len: (usize, usize),
    pub suffix: Suffix,
    /// The least evidence needed ([`Seen::ThrownAway`] is always enough).
    pub seen: Seen,
    /// Short of a thrown-away name, the run must also look random ([`Alphabet::signed`]).
    pub signed: bool,
}

const fn row(
    who: &'static str,
    prefix: Prefix,
    alphabet: Alphabet,
    len: (usize, usize),
    suffix: Suffix,
    seen: Seen,
    signed: bool,
) -> Generator {
    Generator {
        who,
        prefix,
        alphabet,
        len,
        suffix,
        seen,
        signed,
    }
}

use Alphabet::{Alnum, Digits, Nanoid, PyLower};
use Prefix::{Caller, Exact, Family};
use Seen::{Anywhere, Created, ThrownAway};

const NONE: Suffix = Suffix::Exact("");
const ANY: Suffix = Suffix::Caller;

/// The temp-name generators of the runtimes and tools learn has met, with the exact shape of
/// their names. Rows with a prefix or suffix of their own come first; the runtimes' generic
/// rows (the caller's prefix) last. docs/learning.md section 4 lists the same table.
#[rustfmt::skip]
pub const GENERATORS: &[Generator] = &[
    // Python `tempfile` with its default prefix (`mkdtemp()`, `TemporaryDirectory()`).
    row("Python tempfile, default prefix", Exact("tmp"), PyLower, (8, 8), ANY, Created, true),
    // pytest 8 makes its cache as `mkdtemp(prefix="pytest-cache-files-")`, then renames it.
    row("pytest cache", Exact("pytest-cache-files-"), PyLower, (8, 8), NONE, Anywhere, false),
    // `python -m build`: `NamedTemporaryFile(prefix="build-requirements-", suffix=".txt")`.
    row("python -m build", Exact("build-requirements-"), PyLower, (8, 8), ANY, Anywhere, false),
    // pip's `TempDirectory(kind=...)`: `mkdtemp(prefix=f"pip-{kind}-")`.
    row("pip temp directories", Family("pip-"), PyLower, (8, 8), NONE, Created, false),
    // pip writes RECORD, INSTALLER... as `NamedTemporaryFile(prefix=NAME, suffix=".tmp")`.
    row("pip atomic writes", Caller, PyLower, (8, 8), Suffix::Exact(".tmp"), Anywhere, false),
    // coreutils `mktemp` without a template: `tmp.XXXXXXXXXX`.
    row("mktemp(1) default", Exact("tmp."), Alnum, (10, 10), NONE, Created, true),
    // The Rust `tempfile` crate's default prefix (`NamedTempFile::new`, `tempdir()`).
    row("Rust tempfile, default prefix", Exact(".tmp"), Alnum, (6, 6), ANY, Created, true),
    // git writes loose objects as `tmp_obj_XXXXXX` (mkstemp), then renames them.
    row("git objects", Exact("tmp_obj_"), Alnum, (6, 6), NONE, Anywhere, false),
    // gcc's `make_temp_file`: `ccXXXXXX` + suffix (`.s`, `.o`, `.res`, `.cdtor.o`).
    row("gcc", Exact("cc"), Alnum, (6, 6), ANY, Created, true),
    // GNU make 4.4's temp files (jobserver fifo, `.ONESHELL` scripts): `GmXXXXXX`.
    row("make", Exact("Gm"), Alnum, (6, 6), NONE, Created, true),
    // binutils `ar` writes the new archive as `stXXXXXX` beside it, then renames it.
    row("ar", Exact("st"), Alnum, (6, 6), NONE, Anywhere, true),
    // rustc's scratch directories inside `target/debug/build/*/`.
    row("rustc", Exact("rmeta"), Alnum, (6, 6), NONE, Anywhere, true),
    row("rustc", Exact("rustc"), Alnum, (6, 6), NONE, Anywhere, true),
    // cargo creates `target` as `targetXXXXXX` and renames it (tempfile's Builder).
    row("cargo target", Exact("target"), Alnum, (6, 6), NONE, Anywhere, true),
    // cargo rewrites Cargo.toml through `Cargo.tomlXXXXXX` (tempfile's Builder).
    row("cargo Cargo.toml", Exact("Cargo.toml"), Alnum, (6, 6), NONE, Created, true),
    // coreutils `ln -f`/`ln -sf` make the new link as `CuXXXXXX`, then rename it over.
    row("coreutils ln", Exact("Cu"), Alnum, (6, 6), NONE, Anywhere, true),
    // autoconf's `conf$$` (the shell's pid): `conf21481`, `conf21481.sh`, `conf21481subs.awk`.
    row("autoconf", Exact("conf"), Digits, (1, 7), ANY, Created, true),
    // Go's build directory: `os.MkdirTemp("", "go-build")`.
    row("go build", Exact("go-build"), Digits, (1, 10), NONE, Anywhere, false),
    // nanoid's default: 21 URL-safe characters (JS test runners' temp directories).
    row("nanoid", Caller, Nanoid, (21, 21), ANY, Created, true),
    // The runtimes' generic generators, with the caller's prefix and suffix.
    row("Python tempfile", Caller, PyLower, (8, 8), ANY, ThrownAway, true),
    row("mkstemp, mkdtemp, Node fs.mkdtemp", Caller, Alnum, (6, 6), ANY, ThrownAway, true),
    row("Rust tempfile Builder", Caller, Alnum, (6, 6), ANY, ThrownAway, true),
    // (A `uint32` in decimal has 3 digits or more but once in 43 million draws; a shorter
    // number is more likely a counter in a name.)
    row("Go os.MkdirTemp, os.CreateTemp", Caller, Digits, (3, 10), ANY, ThrownAway, true),
];

/// One way a generator could have made a name: `name[..start]` + random + `name[end..]`.
#[derive(Debug, Clone, Copy)]
struct Split {
    start: usize,
    end: usize,
}

/// Is `sep` a character that may begin a caller's suffix?
fn suffix_start(b: u8) -> bool {
    matches!(b, b'.' | b'-' | b'_' | b'+' | b'~')
}

/// Where the suffix may start (the random run ends there), for generator `g`.
fn suffix_starts(g: &Generator, name: &[u8]) -> Vec<usize> {
    match g.suffix {
        Suffix::Exact(s) => name
            .strip_suffix(s.as_bytes())
            .map(|rest| vec![rest.len()])
            .unwrap_or_default(),
        Suffix::Caller => {
            let mut out = vec![name.len()];
            for (i, &b) in name.iter().enumerate().skip(1) {
                let fits = (suffix_start(b) || (g.alphabet == Digits && b.is_ascii_alphabetic()))
                    && !g.alphabet.admits(b);
                if fits && name.len() - i <= 24 {
                    out.push(i);
                }
            }
            out
        }
    }
}

/// The random run ending at `end` (its start), if the generator's alphabet and length allow.
fn run_start(g: &Generator, name: &[u8], end: usize) -> Option<usize> {
    let (lo, hi) = g.len;
    let start = if g.alphabet == Digits {
        // A decimal run is as long as its digits go.
        name[..end]
            .iter()
            .rposition(|b| !b.is_ascii_digit())
            .map_or(0, |i| i + 1)
    } else {
        end.checked_sub(lo)?
    };
    let n = end - start;
    ((lo..=hi).contains(&n) && name[start..end].iter().all(|&b| g.alphabet.admits(b)))
        .then_some(start)
}

/// Does the literal start fit the generator's prefix?
fn prefix_fits(g: &Generator, p: &[u8]) -> bool {
    match g.prefix {
        Exact(s) => p == s.as_bytes(),
        Family(s) => {
            p.len() > s.len() + 1
                && p.starts_with(s.as_bytes())
                && p.ends_with(b"-")
                && p[s.len()..]
                    .iter()
                    .all(|b| b.is_ascii_lowercase() || *b == b'-')
        }
        // A caller's prefix before a fixed suffix (pip's `RECORD` + random + `.tmp`) is any
        // non-empty text; before a caller's suffix it must not end in the alphabet.
        Caller if matches!(g.suffix, Suffix::Exact(s) if !s.is_empty()) => !p.is_empty(),
        Caller => p
            .last()
            .is_none_or(|&b| !g.alphabet.admits(b) || matches!(b, b'-' | b'_' | b'.')),
    }
}

/// The ways generator `g` could have made `name`, with `seen` as the evidence.
fn splits(g: &Generator, name: &[u8], seen: Seen) -> Vec<Split> {
    if seen < g.seen {
        return Vec::new();
    }
    let mut out = Vec::new();
    for end in suffix_starts(g, name) {
        let Some(start) = run_start(g, name, end) else {
            continue;
        };
        let run = &name[start..end];
        let signed = g.alphabet.signed(run);
        // Short of a thrown-away name, a row may want the run to look random; a caller's
        // empty prefix always does (`conftest.c` is no `????????.c`).
        let looks = signed || !g.signed || seen == ThrownAway;
        let bare = g.prefix == Caller && start == 0;
        if prefix_fits(g, &name[..start]) && looks && (!bare || signed) {
            out.push(Split { start, end });
        }
    }
    out
}

/// The glob of `name` (literal, unescaped) under generator `g` split at `s`.
fn render(g: &Generator, name: &[u8], s: Split) -> String {
    let random = if g.alphabet == Digits {
        "[0-9]*".to_string()
    } else {
        "?".repeat(s.end - s.start)
    };
    // A family's kind differs with the code path (pip's `pip-install-`, `pip-wheel-`...): the
    // family, not the kind this run happened to use.
    let prefix = match g.prefix {
        Family(p) => format!("{}*-", escape_segment(p.as_bytes())),
        _ => escape_segment(&name[..s.start]),
    };
    format!("{prefix}{random}{}", escape_segment(&name[s.end..]))
}

/// The glob of a name one of [`GENERATORS`] could have made, given what is known of it
/// (`seen`), or `None`. A reading whose `?`s cover another's run and its two-letter prefix
/// wins ([`Reading::beats`]); otherwise rows of a tool's own come first, then a decimal run
/// where the random part is all digits, then the longest run (whose `?`s admit the shorter
/// reading's names too).
pub fn temp_glob(name: &str, seen: Seen) -> Option<String> {
    best_reading(name, seen).map(|r| r.glob)
}

/// The glob of a name the run made, before learn knows whether the run threw it away: the
/// reading of a made name ([`Seen::Created`]), unless a thrown-away name's reading covers it
/// ([`Reading::covers`]: Python's prefix-less `st4dk6kn` is `????????`, which admits the next
/// name whether ar or Python made it, where `st??????` admits only ar's).
pub fn temp_glob_made(name: &str) -> Option<String> {
    let made = best_reading(name, Created);
    match (made, best_reading(name, ThrownAway)) {
        (Some(m), Some(t)) if t.covers(&m) => Some(t.glob),
        (m, _) => m.map(|m| m.glob),
    }
}

fn best_reading(name: &str, seen: Seen) -> Option<Reading> {
    let b = name.as_bytes();
    if b.is_empty() || !name.is_ascii() {
        return None;
    }
    let mut best: Option<Reading> = None;
    for g in GENERATORS {
        for s in splits(g, b, seen) {
            let all_digits = b[s.start..s.end].iter().all(u8::is_ascii_digit);
            let r = Reading {
                own: g.prefix != Caller || g.suffix != ANY,
                fits_digits: (g.alphabet == Digits) == all_digits,
                digits: g.alphabet == Digits,
                split: s,
                glob: String::new(),
            };
            if best.as_ref().is_none_or(|b| r.beats(b)) {
                best = Some(Reading {
                    glob: render(g, b, s),
                    ..r
                });
            }
        }
    }
    best
}

/// One generator's reading of a name, as [`temp_glob`] weighs it.
struct Reading {
    own: bool,
    fits_digits: bool,
    digits: bool,
    split: Split,
    glob: String,
}

impl Reading {
    /// Does this reading's `?` run cover all of `other`'s and at most two literal characters
    /// more: its glob admits every name the other's admits, and a random run draws a
    /// two-letter prefix such as gcc's `cc` once in about 1,400 names, while a longer literal
    /// (`build-requirements-` under a nanoid's 21) is no accident. Only runs of `?`s compare.
    fn covers(&self, other: &Reading) -> bool {
        let (a, b) = (self.split, other.split);
        let more = (b.start.saturating_sub(a.start)) + (a.end.saturating_sub(b.end));
        !self.digits
            && !other.digits
            && a.start <= b.start
            && a.end >= b.end
            && (1..=2).contains(&more)
    }

    /// Is this reading better than `other`: the wider where one covers the other (a thrown-
    /// away `cc1a2b3c` is Python's `????????` as much as gcc's `cc??????`, and only the first
    /// admits the next name of both), else a tool's own row, then a decimal run where the run
    /// is all digits, then the longer run.
    fn beats(&self, other: &Reading) -> bool {
        if self.covers(other) {
            return true;
        }
        if other.covers(self) {
            return false;
        }
        let key = |r: &Reading| (r.own, r.fits_digits, r.split.end - r.split.start);
        key(self) > key(other)
    }
}

/// Separators between the words of a name.
fn is_sep(b: u8) -> bool {
    matches!(b, b'-' | b'_' | b'.' | b'+' | b'~' | b',' | b':' | b' ')
}

/// The shape of a thrown-away name that no generator explains: cut at the last separator
/// before anything that could be random, keeping a short extension
/// (1-5 letters or digits with a letter: `pytest-cache-files-la5ne_rx` ->
/// `pytest-cache-files-*`, `out-ab12.log` -> `out-*.log`); a leading dot is no separator.
/// "Could be random" starts at the first digit or lower-to-upper change, or else anywhere in
/// a last word of six characters or more (`cache-abcdefg` -> `cache-*`; `hello-world` stays). Without a separator before it, the literal start up to
/// there is kept (`conf21481` -> `conf*`; the last six of a longer stem are taken as
/// mkstemp's: `Xyab1cde` -> `Xy*`), a name random from its first character keeps its length
/// (`a1b2c3` -> `??????`), and a name with no sign of randomness is kept (`conftest.c`: the
/// same name on every run).
pub fn cut_shape(name: &str) -> String {
    let b = name.as_bytes();
    if name.contains(['*', '?', '[', '{', '\\']) || !name.is_ascii() {
        return name.to_string();
    }
    // An extension: 1-5 letters or digits with a letter (`.log`, configure's `.er1`).
    let ext_at = name
        .rfind('.')
        .filter(|&i| i > 0)
        .filter(|&i| (1..=5).contains(&(b.len() - i - 1)))
        .filter(|&i| b[i + 1..].iter().all(u8::is_ascii_alphanumeric))
        .filter(|&i| b[i + 1..].iter().any(u8::is_ascii_alphabetic));
    let stem = &b[..ext_at.unwrap_or(b.len())];
    let ext = &name[ext_at.unwrap_or(b.len())..];
    let evidence = (0..stem.len()).find(|&i| {
        stem[i].is_ascii_digit()
            || (i > 0 && stem[i - 1].is_ascii_lowercase() && stem[i].is_ascii_uppercase())
    });
    let before = evidence.unwrap_or(stem.len());
    // A separator with a word before it: not a leading dot (`.tst` is no `.*`).
    // Without a digit or case change, a word after the separator shorter than any
    // generator's run is a word (`new-file.txt`, `hello-world` stay as they are).
    let sep = stem[..before]
        .iter()
        .rposition(|&c| is_sep(c))
        .filter(|&i| stem[..i].iter().any(u8::is_ascii_alphanumeric))
        .filter(|&i| evidence.is_some() || stem.len() - i > 6);
    if let Some(sep) = sep {
        if sep + 1 == stem.len() {
            return name.to_string();
        }
        return format!("{}*{ext}", escape_segment(&stem[..=sep]));
    }
    let Some(mut cut) = evidence else {
        return name.to_string();
    };
    if cut == 0 {
        return format!("{}{ext}", "?".repeat(stem.len()));
    }
    let ends_in_number = stem[cut..].iter().all(u8::is_ascii_digit);
    if !ends_in_number
        && stem.len() >= 8
        && stem.len() - cut < 6
        && stem[stem.len() - 6..].iter().all(u8::is_ascii_alphanumeric)
    {
        cut = stem.len() - 6;
    }
    format!("{}*{ext}", escape_segment(&stem[..cut]))
}

/// The literal text of a glob before its first and after its last glob character.
fn literal_ends(glob: &str) -> (&str, &str) {
    let first = glob.find(['*', '?', '[']).unwrap_or(glob.len());
    let last = glob.rfind(['*', '?', ']']).map_or(glob.len(), |i| i + 1);
    (&glob[..first], &glob[last.max(first)..])
}

/// Does a generator's reading `table` of a name refine the random-segment rules' glob
/// `random` of it: its literal start is the rules' or shorter (the rules see randomness only
/// from a digit-letter mix on: `myproj__s9k95rm-work` is `myproj__*` to them, Python's
/// `myproj_` + `_s9k95rm`), and its literal end has no digits (a caller's suffix: `-work`,
/// `.json`), not a date or counter the rules took as random
/// (`[0-9]*-12-02T19_25_25_123Z-debug-0.log` is no refinement of `*.log`).
pub fn refines(table: &str, random: &str) -> bool {
    let (tp, ts) = literal_ends(table);
    let (rp, _) = literal_ends(random);
    rp.starts_with(tp) && !ts.bytes().any(|b| b.is_ascii_digit())
}

/// The shape of a name the run threw away: a generator's ([`temp_glob`]), else [`cut_shape`].
pub fn thrown_shape(name: &str) -> String {
    if name.contains(['*', '?', '[', '{', '\\']) {
        return name.to_string();
    }
    temp_glob(name, ThrownAway).unwrap_or_else(|| cut_shape(name))
}

/// The lengths of the fixed-length generators, shortest first.
fn run_lengths() -> BTreeSet<usize> {
    GENERATORS
        .iter()
        .filter(|g| g.len.0 == g.len.1)
        .map(|g| g.len.0)
        .collect()
}

/// Two names of one place that differ between two traces, aligned into one glob: their
/// common literal start and end, one `?` per character between. Both must be ASCII, of the
/// same length, and differ only in characters a generator uses (`[A-Za-z0-9_-]`).
///
/// The random runs of two names share a first or last character now and then (1 in 37 for
/// Python's); so the end is taken back to where a suffix may start (`.txt`), and the start
/// back to a generator's run length where one fits (`pytest-cache-files-qabc...` and
/// `pytest-cache-files-qxyz...` give eight `?`, not seven), else to the last separator. A name
/// shorter than six characters is not aligned from its first character (`??`).
pub fn align(a: &str, b: &str) -> Option<String> {
    let (x, y) = (a.as_bytes(), b.as_bytes());
    if a == b || x.len() != y.len() || !a.is_ascii() || !b.is_ascii() {
        return None;
    }
    if a.contains(['*', '?', '[', '{', '\\']) || b.contains(['*', '?', '[', '{', '\\']) {
        return None;
    }
    let n = x.len();
    let mut s = x.iter().zip(y).take_while(|(p, q)| p == q).count();
    let mut e = x
        .iter()
        .rev()
        .zip(y.iter().rev())
        .take_while(|(p, q)| p == q)
        .count();
    e = e.min(n - s);
    let differ = &[&x[s..n - e], &y[s..n - e]];
    if !differ.iter().all(|d| d.iter().all(|&c| Nanoid.admits(c))) {
        return None;
    }
    // The run ends where a suffix may start.
    while e > 0 && Nanoid.admits(x[n - e]) && x[n - e] != b'-' {
        e -= 1;
    }
    let end = n - e;
    let fits = |st: usize| {
        x[st..end]
            .iter()
            .chain(&y[st..end])
            .all(|&c| Nanoid.admits(c))
    };
    let table = run_lengths()
        .into_iter()
        .filter_map(|l| end.checked_sub(l))
        .find(|&st| st <= s && fits(st));
    s = match table {
        Some(st) => st,
        None => x[..s].iter().rposition(|&c| is_sep(c)).map_or(0, |i| i + 1),
    };
    if s == 0 && n < 6 {
        return None;
    }
    Some(format!(
        "{}{}{}",
        escape_segment(&x[..s]),
        "?".repeat(end - s),
        escape_segment(&x[end..])
    ))
}

/// At most this many names per place are kept for [`Alignment`] (the smallest, so that the
/// result does not depend on the order of the traces).
const ALIGN_CAP: usize = 64;

/// Thrown-away names per place over several traces, aligned when the traces are done.
#[derive(Debug, Default)]
pub struct Alignment {
    /// Place (glob text of the directory) -> name (escaped text) -> the traces that made it.
    names: BTreeMap<String, BTreeMap<String, BTreeSet<usize>>>,
    traces: usize,
}

impl Alignment {
    /// The thrown-away names of one more trace, as (directory glob text, name).
    pub fn add_trace(&mut self, names: Vec<(String, String)>) {
        let t = self.traces;
        self.traces += 1;
        Self::add(&mut self.names, names, t);
    }

    fn add(
        into: &mut BTreeMap<String, BTreeMap<String, BTreeSet<usize>>>,
        names: Vec<(String, String)>,
        trace: usize,
    ) {
        for (dir, name) in names {
            let m = into.entry(dir).or_default();
            m.entry(name).or_default().insert(trace);
            if m.len() > ALIGN_CAP {
                m.pop_last();
            }
        }
    }

    /// `create` globs (`DIR/GLOB`) for names of one place that different traces made and
    /// the other did not, with `current` as one more trace.
    pub fn rules(&self, current: Vec<(String, String)>) -> BTreeSet<String> {
        let mut names = self.names.clone();
        Self::add(&mut names, current, self.traces);
        let mut out = BTreeSet::new();
        for (dir, m) in &names {
            for (i, (a, ta)) in m.iter().enumerate() {
                for (b, tb) in m.iter().skip(i + 1) {
                    // Made by different traces, each missing from the other's.
                    if ta.is_disjoint(tb)
                        && let Some(g) = align(a, b)
                    {
                        out.insert(format!("{dir}/{g}"));
                    }
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generator_table_shapes() {
        let cases: &[(&str, Seen, Option<&str>)] = &[
            // A tool's own prefix, wherever it is seen.
            (
                "pytest-cache-files-la5ne_rx",
                Anywhere,
                Some("pytest-cache-files-????????"),
            ),
            (
                "pytest-cache-files-abcdefgh",
                Anywhere,
                Some("pytest-cache-files-????????"),
            ),
            ("pytest-cache-files", ThrownAway, None),
            (
                "build-requirements-4n9_vhlp.txt",
                Anywhere,
                Some("build-requirements-????????.txt"),
            ),
            ("build-requirements.txt", ThrownAway, None),
            ("go-build344541410", Anywhere, Some("go-build[0-9]*")),
            ("tmp_obj_aBc12Z", Anywhere, Some("tmp_obj_??????")),
            ("RECORDgnccdr_s.tmp", Anywhere, Some("RECORD????????.tmp")),
            ("stKa5yVH", Anywhere, Some("st??????")),
            ("strings", ThrownAway, None),
            ("standard", Anywhere, None),
            // Short prefixes: a created name that looks random, or a thrown-away one.
            ("ccHtruy3.s", Anywhere, None),
            ("ccHtruy3.s", Created, Some("cc??????.s")),
            // Python's tempfile with no prefix, thrown away, can draw `cc` + 6: its shape wins
            // (gcc's would not admit the next name).
            ("cc1a2b3c", ThrownAway, Some("????????")),
            ("cc1a2b3c", Created, Some("cc??????")),
            ("stab01cd", ThrownAway, Some("????????")),
            ("stab01cd", Created, Some("st??????")),
            ("Gmab01cd", ThrownAway, Some("Gm??????")),
            ("ccabcdef.cdtor.o", Created, None),
            ("ccabcdef.cdtor.o", ThrownAway, Some("cc??????.cdtor.o")),
            ("Gmabcdef", ThrownAway, Some("Gm??????")),
            ("conf21481", Created, Some("conf[0-9]*")),
            ("conf21481subs.awk", Created, Some("conf[0-9]*subs.awk")),
            ("conf123.c", ThrownAway, Some("conf[0-9]*.c")),
            ("confdefs.h", ThrownAway, None),
            ("tmpa_b3xk9z", Created, Some("tmp????????")),
            ("tmp.AbC123xyz0", Created, Some("tmp.??????????")),
            ("Cargo.tomlAFK9OQ", Created, Some("Cargo.toml??????")),
            ("pip-build-env-abcdefgh", Created, Some("pip-*-????????")),
            ("pip-build-env-abcdefgh", Anywhere, None),
            (
                "tSoQgW-8_IUyPeharJunJ",
                Created,
                Some("?????????????????????"),
            ),
            ("contributing_guide-md", Created, None),
            ("CONTRIBUTING.md", Created, None),
            // A caller's prefix: only thrown away, and a bare run must look random.
            ("xdist-abcdefgh", Created, None),
            ("xdist-abcdefgh", ThrownAway, Some("xdist-????????")),
            ("node-X9aQ2b", ThrownAway, Some("node-??????")),
            // A caller's prefix that ends in the alphabet: where the run starts is unknown.
            ("node-jsX9aQ2", ThrownAway, None),
            (
                "myproj_utrmzpnv-work",
                ThrownAway,
                Some("myproj_????????-work"),
            ),
            ("x-AbCdEf", ThrownAway, Some("x-??????")),
            ("gotest-1234567890", ThrownAway, Some("gotest-[0-9]*")),
            ("a9x_bq2z", ThrownAway, Some("????????")),
            ("conftest.c", ThrownAway, None),
            ("parser.c", ThrownAway, None),
            ("index.js", ThrownAway, None),
        ];
        for (name, seen, want) in cases {
            assert_eq!(temp_glob(name, *seen).as_deref(), *want, "{name} {seen:?}");
        }
    }

    #[test]
    fn a_made_name_takes_the_reading_that_covers_a_short_tool_prefix() {
        // Python's prefix-less names that start like ar's or gcc's: the wider reading.
        assert_eq!(temp_glob_made("st4dk6kn").as_deref(), Some("????????"));
        assert_eq!(temp_glob_made("cc1a2b3c").as_deref(), Some("????????"));
        // Names only the tool makes stay the tool's (mixed case is not Python's).
        assert_eq!(temp_glob_made("ccHtruy3.s").as_deref(), Some("cc??????.s"));
        assert_eq!(temp_glob_made("stAb01cd").as_deref(), Some("st??????"));
        // A long own prefix is never covered (nanoid's 21 would swallow it).
        assert_eq!(
            temp_glob_made("build-requirements-4n9_vhlp.txt").as_deref(),
            Some("build-requirements-????????.txt")
        );
        assert_eq!(temp_glob_made("index.js"), None);
    }

    /// docs/learning.md section 4 lists the table: every tool's prefix is there.
    #[test]
    fn the_documented_table_names_every_prefix() {
        let doc = include_str!("../../docs/learning.md");
        for g in GENERATORS {
            let named = match g.prefix {
                Exact(p) => format!("`{p}`"),
                Family(p) => format!("`{p}"),
                Caller => continue,
            };
            assert!(doc.contains(&named), "{} ({named}) missing", g.who);
        }
    }

    #[test]
    fn thrown_away_names_no_generator_explains_are_cut_at_a_separator() {
        for (name, shape) in [
            ("pytest-cache-files-la5ne_r", "pytest-cache-files-*"),
            ("out-ab12.log", "out-*.log"),
            ("hello-world", "hello-world"),
            ("new-file.txt", "new-file.txt"),
            ("cache-abcdefg", "cache-*"),
            ("conf21481x", "conf*"),
            ("Xyab1cde", "Xy*"),
            ("1a2b3", "?????"),
            ("a1b2c", "a*"),
            ("conftest.c", "conftest.c"),
            ("a{b", "a{b"),
            ("trailing-", "trailing-"),
            // configure's stable names: a dot file, an extension with a digit.
            (".tst", ".tst"),
            ("conftest.er1", "conftest.er1"),
            ("conftest2.o", "conftest*.o"),
        ] {
            assert_eq!(cut_shape(name), shape, "{name}");
        }
    }

    #[test]
    fn names_of_two_traces_are_aligned() {
        for (a, b, want) in [
            (
                "pytest-cache-files-qabc_e1x",
                "pytest-cache-files-qzzzzz9k",
                Some("pytest-cache-files-????????"),
            ),
            (
                "Cargo.tomlAFK9OQ",
                "Cargo.tomlQZxq1b",
                Some("Cargo.toml??????"),
            ),
            ("out.abcdefghij", "out.klmnopqrst", Some("out.??????????")),
            ("r-abcdefgp.txt", "r-klmnopqp.txt", Some("r-????????.txt")),
            ("x.abc", "x.abd", Some("x.???")),
            ("ab", "cd", None),
            ("hello.o", "hello.o", None),
            ("hello.o", "hello.oo", None),
            ("a+b.c", "a~c.c", None),
        ] {
            assert_eq!(align(a, b).as_deref(), want, "{a} {b}");
        }
    }

    #[test]
    fn alignment_pairs_names_of_different_traces_only() {
        let mut al = Alignment::default();
        let d = "${CWD}".to_string();
        al.add_trace(vec![
            (d.clone(), "out.abcdefghij".into()),
            (d.clone(), "same.abcd".into()),
        ]);
        let rules = al.rules(vec![
            (d.clone(), "out.klmnopqrst".into()),
            (d.clone(), "same.abcd".into()),
            (d.clone(), "out.uvwxyzabcd".into()),
        ]);
        assert!(rules.contains("${CWD}/out.??????????"), "{rules:?}");
        // A name both traces made is no random name; two names of one trace are not aligned
        // with each other (only with the other trace's).
        assert!(!rules.iter().any(|r| r.contains("same")), "{rules:?}");
        assert_eq!(rules.len(), 1, "{rules:?}");
    }
}
