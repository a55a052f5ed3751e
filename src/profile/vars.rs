//! `${VARS}` in path patterns, and the text encoding of path bytes inside patterns.
//!
//! Enforce expands `${CWD}`, `${HOME}`, `${TMPDIR}` and `${NAME}` (any environment variable the
//! caller put in [`Env::vars`]) with [`expand`]; learn abstracts concrete paths back into
//! variables with [`abstract_path`]. Every substituted value is glob-ESCAPED first, so a `HOME`
//! containing `*` or `[` cannot widen a rule.
//!
//! [`CWD_ANCESTORS`] is no value but a set: the directories above the start directory. It is
//! only ever a whole pattern, which [`expand_ancestors`] turns into one literal glob per
//! ancestor; [`expand`] refuses it, and it is never taken from the environment.
//!
//! Paths are bytes, globs are `str`: [`path_to_text`] maps a path to pattern text losslessly
//! (bytes that are not UTF-8 become one reserved code point each, U+10FF80..=U+10FFFF), and
//! [`text_to_path`] maps back. Policy matching runs candidates through the same mapping.
//!
//! Pure: the caller builds the [`Env`] (from the real environment or a trace header).

use std::borrow::Cow;
use std::collections::BTreeMap;

/// The values variables expand to. The caller fills it (enforce from the process environment,
/// tests by hand). `tmpdir` should default to `/tmp` when `TMPDIR` is unset.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Env {
    /// `${CWD}`: the directory the workload starts in.
    pub cwd: String,
    /// `${HOME}`.
    pub home: String,
    /// `${TMPDIR}`.
    pub tmpdir: String,
    /// Any other `${NAME}`.
    pub vars: BTreeMap<String, String>,
}

impl Env {
    /// The raw value of a variable: the three built-ins first, then `vars`, then a tool
    /// home's default ([`TOOL_HOMES`]: `${PYENV_ROOT}` is `${HOME}/.pyenv` when unset or
    /// empty, as pyenv itself decides).
    pub fn get(&self, name: &str) -> Option<Cow<'_, str>> {
        match name {
            "CWD" => Some(Cow::Borrowed(&self.cwd)),
            "HOME" => Some(Cow::Borrowed(&self.home)),
            "TMPDIR" => Some(Cow::Borrowed(&self.tmpdir)),
            _ => match (self.vars.get(name), tool_home_default(name)) {
                (Some(v), Some(_)) if v.is_empty() => self.home_default(name),
                (Some(v), _) => Some(Cow::Borrowed(v)),
                (None, Some(_)) => self.home_default(name),
                (None, None) => None,
            },
        }
    }

    fn home_default(&self, name: &str) -> Option<Cow<'_, str>> {
        let rel = tool_home_default(name)?;
        let home = self.home.trim_end_matches('/');
        (!home.is_empty()).then(|| Cow::Owned(format!("{home}/{rel}")))
    }
}

/// The tool homes the shipped snippets are rooted in, each an environment variable with the
/// tool's own default beneath `${HOME}`: pyenv's tree, cargo's and rustup's homes. A snippet
/// rule `read ${PYENV_ROOT}/**` holds wherever the run's pyenv is, and, unlike `/**/.pyenv/**`,
/// names one directory the kernel fence can attach (docs/profile-format.md "Variables").
pub const TOOL_HOMES: &[(&str, &str)] = &[
    ("PYENV_ROOT", ".pyenv"),
    ("CARGO_HOME", ".cargo"),
    ("RUSTUP_HOME", ".rustup"),
];

fn tool_home_default(name: &str) -> Option<&'static str> {
    TOOL_HOMES.iter().find(|(n, _)| *n == name).map(|(_, d)| *d)
}

/// Variables whose values are directories sbx treats as roots: absolute, trailing `/` cut.
fn is_root_var(name: &str) -> bool {
    matches!(name, "CWD" | "HOME" | "TMPDIR") || tool_home_default(name).is_some()
}

/// Why a pattern could not be expanded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VarError {
    /// `offset`: the byte of the pattern where `${NAME}` starts (the rule's column is where
    /// the rule starts).
    #[error(
        "undefined variable \"${{{name}}}\" at byte {offset} of the pattern (set it in the environment)"
    )]
    Undefined { name: String, offset: usize },
    #[error("variable \"${{{name}}}\" at byte {offset} of the pattern is empty")]
    Empty { name: String, offset: usize },
    #[error(
        "variable \"${{{name}}}\" at byte {offset} of the pattern is not an absolute path: \"{value}\""
    )]
    NotAbsolute {
        name: String,
        offset: usize,
        value: String,
    },
    #[error("{message} at byte {offset}")]
    Syntax { offset: usize, message: String },
    /// `${CWD_ANCESTORS}` inside a longer pattern, or where one value is needed.
    #[error(
        "\"${{CWD_ANCESTORS}}\" at byte {offset} of the pattern is a set of directories, not a value: write it alone, as the whole pattern of a read, stat or deny rule"
    )]
    Ancestors { offset: usize },
}

/// The pattern that stands for every strict ancestor directory of the start directory
/// (`/`, `/home`, `/home/u` for a start directory `/home/u/proj`), as directories: never
/// their other children, never the start directory itself.
pub const CWD_ANCESTORS: &str = "${CWD_ANCESTORS}";

/// The strict ancestors of `cwd` (absolute; a trailing `/` is ignored), `/` first: for
/// `/home/u/proj`, `/`, `/home`, `/home/u`. None for `/` or a relative path.
pub fn ancestors_of(cwd: &str) -> Vec<&str> {
    let cwd = cwd.trim_end_matches('/');
    if !cwd.starts_with('/') {
        return Vec::new();
    }
    let mut out = vec!["/"];
    out.extend(
        cwd.match_indices('/')
            .skip(1)
            .map(|(i, _)| &cwd[..i])
            .filter(|a| !a.ends_with('/')),
    );
    out
}

/// [`CWD_ANCESTORS`] expanded: one escaped literal glob per ancestor of `${CWD}` for which
/// `keep` holds (the policy leaves out secret places), `/` first.
pub fn expand_ancestors(env: &Env, keep: &dyn Fn(&str) -> bool) -> Vec<String> {
    ancestors_of(&env.cwd)
        .into_iter()
        .filter(|a| keep(a))
        .map(|a| escape_glob(&path_to_text(a.as_bytes())))
        .collect()
}

/// One piece of a pattern: literal text or a variable reference.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Piece<'a> {
    /// Literal pattern text (glob syntax, backslash escapes kept).
    Lit(&'a str),
    /// `${NAME}`, with the byte offset of the `$`.
    Var { name: &'a str, offset: usize },
}

/// Split a pattern into literal text and `${NAME}` references.
///
/// `\X` escapes X (so `\$` is a literal dollar); a `$` not starting `${NAME}` is an error.
pub(crate) fn scan(pattern: &str) -> Result<Vec<Piece<'_>>, VarError> {
    let bytes = pattern.as_bytes();
    let mut pieces = Vec::new();
    let mut lit_start = 0;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => {
                // Skip the escaped character (whole UTF-8 sequence).
                i += 1;
                if let Some(c) = pattern[i..].chars().next() {
                    i += c.len_utf8();
                }
            }
            b'$' => {
                if bytes.get(i + 1) != Some(&b'{') {
                    return Err(VarError::Syntax {
                        offset: i,
                        message:
                            "\"$\" must start \"${NAME}\" (write \"\\$\" for a literal dollar)"
                                .to_string(),
                    });
                }
                let Some(close) = pattern[i + 2..].find('}') else {
                    return Err(VarError::Syntax {
                        offset: i,
                        message: "unclosed \"${\"".to_string(),
                    });
                };
                let name = &pattern[i + 2..i + 2 + close];
                if !valid_var_name(name) {
                    return Err(VarError::Syntax {
                        offset: i,
                        message: format!(
                            "invalid variable name \"{name}\" (expected letters, digits, _)"
                        ),
                    });
                }
                if lit_start < i {
                    pieces.push(Piece::Lit(&pattern[lit_start..i]));
                }
                pieces.push(Piece::Var { name, offset: i });
                i += 2 + close + 1;
                lit_start = i;
            }
            _ => i += 1,
        }
    }
    if lit_start < pattern.len() {
        pieces.push(Piece::Lit(&pattern[lit_start.min(pattern.len())..]));
    }
    Ok(pieces)
}

fn valid_var_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The variable names a pattern uses, in order of first use, without duplicates.
/// A pattern with bad variable syntax yields the names before the error.
pub fn vars_in(pattern: &str) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    let pieces = match scan(pattern) {
        Ok(p) => p,
        Err(_) => {
            // Collect what we can: scan the prefix up to the error.
            let mut end = pattern.len();
            if let Err(VarError::Syntax { offset, .. }) = scan(pattern) {
                end = offset;
            }
            scan(&pattern[..end]).unwrap_or_default()
        }
    };
    for p in pieces {
        if let Piece::Var { name, .. } = p
            && !names.iter().any(|n| n == name)
        {
            names.push(name.to_string());
        }
    }
    names
}

/// Expand every `${NAME}` in `pattern`; each value is glob-escaped (and trailing `/` removed)
/// before it is substituted. `CWD`, `HOME` and `TMPDIR` must be non-empty absolute paths.
pub fn expand(pattern: &str, env: &Env) -> Result<String, VarError> {
    let mut out = String::with_capacity(pattern.len());
    for piece in scan(pattern)? {
        match piece {
            Piece::Lit(s) => out.push_str(s),
            Piece::Var {
                name: "CWD_ANCESTORS",
                offset,
            } => return Err(VarError::Ancestors { offset }),
            Piece::Var { name, offset } => {
                let value = env.get(name).ok_or_else(|| VarError::Undefined {
                    name: name.to_string(),
                    offset,
                })?;
                let builtin = is_root_var(name);
                // An empty value would silently widen a rule (`${X}/**` -> `/**`): fail closed.
                if value.is_empty() {
                    return Err(VarError::Empty {
                        name: name.to_string(),
                        offset,
                    });
                }
                // A pattern starting with a variable is rooted by it.
                if (builtin || offset == 0) && !value.starts_with('/') {
                    return Err(VarError::NotAbsolute {
                        name: name.to_string(),
                        offset,
                        value: value.to_string(),
                    });
                }
                let trimmed = if builtin {
                    value.trim_end_matches('/')
                } else {
                    &value
                };
                out.push_str(&escape_glob(&path_to_text(trimmed.as_bytes())));
            }
        }
    }
    Ok(out)
}

/// Escape glob (and variable) metacharacters so `text` matches only itself.
/// The result is meant for globs built with `backslash_escape(true)`.
pub fn escape_glob(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '\\' | '*' | '?' | '[' | ']' | '{' | '}' | ',' | '$') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// Replace the longest of `${CWD}`, `${HOME}`, `${TMPDIR}` that is a whole-component prefix of
/// `path` by the variable, and escape the rest. For learn: `/home/u/.npm/x` -> `${HOME}/.npm/x`.
pub fn abstract_path(path: &[u8], env: &Env) -> String {
    let text = path_to_text(path);
    let mut best: Option<(&str, usize)> = None;
    for (name, value) in [
        ("CWD", &env.cwd),
        ("HOME", &env.home),
        ("TMPDIR", &env.tmpdir),
    ] {
        let value = value.trim_end_matches('/');
        if value.is_empty() || !value.starts_with('/') {
            continue;
        }
        let whole = text.len() == value.len() || text.as_bytes().get(value.len()) == Some(&b'/');
        if text.starts_with(value) && whole && best.is_none_or(|(_, len)| value.len() > len) {
            best = Some((name, value.len()));
        }
    }
    match best {
        Some((name, len)) => format!("${{{name}}}{}", escape_glob(&text[len..])),
        None => escape_glob(&text),
    }
}

const RAW_FIRST: u32 = 0x10FF80;

/// Whether `c` is one of the reserved code points that stand for a raw non-UTF-8 byte in
/// pattern text (see [`path_to_text`]).
pub fn is_reserved(c: char) -> bool {
    u32::from(c) >= RAW_FIRST
}

fn raw_char(b: u8) -> char {
    // b >= 0x80 here, so the code point is in U+10FF80..=U+10FFFF, all valid scalar values.
    char::from_u32(RAW_FIRST - 0x80 + u32::from(b)).unwrap_or(char::REPLACEMENT_CHARACTER)
}

/// Path bytes -> pattern text, losslessly. Valid UTF-8 without reserved code points is
/// borrowed unchanged (the common case).
pub fn path_to_text(bytes: &[u8]) -> Cow<'_, str> {
    if let Ok(s) = std::str::from_utf8(bytes)
        && !s.chars().any(is_reserved)
    {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(bytes.len() + 8);
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            if is_reserved(c) {
                let mut buf = [0u8; 4];
                for &b in c.encode_utf8(&mut buf).as_bytes() {
                    out.push(raw_char(b));
                }
            } else {
                out.push(c);
            }
        }
        for &b in chunk.invalid() {
            out.push(raw_char(b));
        }
    }
    Cow::Owned(out)
}

/// Pattern text -> path bytes: the inverse of [`path_to_text`].
pub fn text_to_path(text: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len());
    for c in text.chars() {
        if is_reserved(c) {
            let b = u32::from(c) - RAW_FIRST + 0x80;
            out.push(u8::try_from(b).unwrap_or(b'?'));
        } else {
            let mut buf = [0u8; 4];
            out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
        }
    }
    out
}

/// The raw byte a reserved code point stands for, if `c` is one.
pub(crate) fn raw_byte(c: char) -> Option<u8> {
    if is_reserved(c) {
        u8::try_from(u32::from(c) - RAW_FIRST + 0x80).ok()
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env() -> Env {
        let mut vars = BTreeMap::new();
        vars.insert("NPM_PREFIX".to_string(), "/opt/npm".to_string());
        vars.insert("EMPTY".to_string(), String::new());
        Env {
            cwd: "/src/app".to_string(),
            home: "/home/u*[x]".to_string(),
            tmpdir: "/tmp/".to_string(),
            vars,
        }
    }

    #[test]
    fn expand_table() {
        let cases: &[(&str, Result<&str, VarError>)] = &[
            ("/etc/passwd", Ok("/etc/passwd")),
            ("${CWD}/**", Ok("/src/app/**")),
            ("${HOME}/.npm/**", Ok("/home/u\\*\\[x\\]/.npm/**")),
            ("${TMPDIR}/x", Ok("/tmp/x")),
            ("${NPM_PREFIX}/lib", Ok("/opt/npm/lib")),
            // An empty value would widen the rule: refused (see the test below).
            (
                "${EMPTY}/lib",
                Err(VarError::Empty {
                    name: "EMPTY".into(),
                    offset: 0,
                }),
            ),
            ("/a/\\$x", Ok("/a/\\$x")),
            (
                "/a/${NOPE}/x",
                Err(VarError::Undefined {
                    name: "NOPE".into(),
                    offset: 3,
                }),
            ),
        ];
        for (pat, want) in cases {
            let got = expand(pat, &env());
            assert_eq!(got.as_deref(), want.as_ref().map(|s| *s), "pattern {pat}");
        }
    }

    #[test]
    fn expand_rejects_empty_and_relative_builtins() {
        let mut e = env();
        e.home = String::new();
        assert_eq!(
            expand("${HOME}/x", &e),
            Err(VarError::Empty {
                name: "HOME".into(),
                offset: 0,
            })
        );
        e.cwd = "rel".into();
        assert!(matches!(
            expand("${CWD}/x", &e),
            Err(VarError::NotAbsolute { .. })
        ));
    }

    /// Any variable: empty is an error; at the start of a pattern it must be absolute.
    #[test]
    fn expand_rejects_empty_and_relative_user_variables() {
        let mut e = env();
        e.vars.insert("EMPTY".into(), String::new());
        e.vars.insert("REL".into(), "lib".into());
        assert_eq!(
            expand("${EMPTY}/**", &e),
            Err(VarError::Empty {
                name: "EMPTY".into(),
                offset: 0,
            })
        );
        assert!(matches!(
            expand("${REL}/x", &e),
            Err(VarError::NotAbsolute { .. })
        ));
        assert_eq!(expand("/opt/${REL}/x", &e).as_deref(), Ok("/opt/lib/x"));
    }

    #[test]
    fn ancestors_of_the_start_directory() {
        assert_eq!(ancestors_of("/home/u/proj"), ["/", "/home", "/home/u"]);
        assert_eq!(ancestors_of("/home/u/proj/"), ["/", "/home", "/home/u"]);
        assert_eq!(ancestors_of("/a"), ["/"]);
        assert!(ancestors_of("/").is_empty());
        assert!(ancestors_of("rel/x").is_empty());
        assert!(ancestors_of("").is_empty());
        let e = Env {
            cwd: "/w/a*b/proj".into(),
            ..env()
        };
        assert_eq!(expand_ancestors(&e, &|d| d != "/w"), ["/", "/w/a\\*b"]);
        // A set, not a value: never expanded into one string, never from the environment.
        let mut e = env();
        e.vars.insert("CWD_ANCESTORS".into(), "/".into());
        assert_eq!(
            expand("${CWD_ANCESTORS}", &e),
            Err(VarError::Ancestors { offset: 0 })
        );
        assert_eq!(
            expand("/x/${CWD_ANCESTORS}/y", &e),
            Err(VarError::Ancestors { offset: 3 })
        );
    }

    #[test]
    fn syntax_errors() {
        for bad in ["/a/$x", "/a/${x", "/a/${1x}", "/a/${}", "/a/$"] {
            assert!(
                matches!(scan(bad), Err(VarError::Syntax { .. })),
                "{bad} should fail"
            );
        }
    }

    #[test]
    fn vars_in_lists_unique_names() {
        assert_eq!(
            vars_in("${HOME}/${X}/${HOME}/\\${Y}"),
            vec!["HOME".to_string(), "X".to_string()]
        );
        assert_eq!(vars_in("${A}/$oops"), vec!["A".to_string()]);
    }

    #[test]
    fn path_text_round_trip() {
        let cases: &[&[u8]] = &[
            b"/etc/passwd",
            b"/a/\xff\xfe/b",
            "/é/ü".as_bytes(),
            "/\u{10FFAA}".as_bytes(),
        ];
        for &bytes in cases {
            let text = path_to_text(bytes);
            assert_eq!(text_to_path(&text), bytes.to_vec());
        }
        assert!(matches!(path_to_text(b"/etc"), Cow::Borrowed(_)));
        // The raw byte 0xAA and the valid reserved char U+10FFAA map to different text.
        assert_ne!(
            path_to_text(b"/\xaa"),
            path_to_text("/\u{10FFAA}".as_bytes())
        );
    }

    #[test]
    fn abstract_prefers_longest_whole_component() {
        let e = Env {
            cwd: "/home/u/src".into(),
            home: "/home/u".into(),
            tmpdir: "/tmp".into(),
            vars: BTreeMap::new(),
        };
        assert_eq!(abstract_path(b"/home/u/src/a.js", &e), "${CWD}/a.js");
        assert_eq!(abstract_path(b"/home/u/.npm", &e), "${HOME}/.npm");
        assert_eq!(abstract_path(b"/home/user2", &e), "/home/user2");
        assert_eq!(abstract_path(b"/tmp/a*b", &e), "${TMPDIR}/a\\*b");
    }
}
