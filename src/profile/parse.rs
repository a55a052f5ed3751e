//! Profile text -> [`Profile`] (the grammar is in docs/profile-format.md).
//!
//! The parser reads one line at a time, collects every error instead of stopping at the first,
//! and reports each as `file:line:col: message`; [`ParseError::render_with_source`] adds the
//! source line and a caret. Path patterns are validated with globset (after masking `${VARS}`)
//! so a profile that parses also compiles, given its variables.
//!
//! Pure: takes the text, never reads files.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use globset::GlobBuilder;

use super::vars::{self, Piece};
use super::{Effect, Include, Pattern, Profile, Proto, Rule, Span, Verb};
use crate::arch::{Arch, Class};

/// One error in a profile, with its location.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}:{}:{}: {kind}", span.line, span.col)]
pub struct ParseError {
    pub file: String,
    pub span: Span,
    pub kind: ParseErrorKind,
}

/// What is wrong. Displayed as the message part of `file:line:col: message`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParseErrorKind {
    UnknownVerb {
        found: String,
        suggestion: Option<&'static str>,
    },
    MissingObject {
        verb: Verb,
    },
    /// A path verb got something else, or a network verb a path.
    WrongObject {
        verb: Verb,
        found: String,
    },
    BadGlob {
        pattern: String,
        message: String,
    },
    BadVar {
        pattern: String,
        message: String,
    },
    BadNetAddr {
        addr: String,
        message: String,
    },
    BadPort {
        port: String,
    },
    RelativePath {
        path: String,
    },
    TrailingGarbage {
        found: String,
    },
    BadQuote {
        message: String,
    },
    BadInclude {
        found: String,
    },
    MissingInclude,
    BadSyscall {
        found: String,
    },
    UnknownSyscall {
        found: String,
    },
    NotGated {
        found: String,
    },
    BadNetlink {
        message: String,
    },
    /// `deny include`.
    DenyInclude,
    /// A `program` line that is not `program NAME PATH-GLOB`, or a bad name.
    BadProgram {
        message: String,
    },
    /// A `by` list that is missing, malformed, or on a rule that cannot be scoped.
    BadBy {
        message: String,
    },
}

impl fmt::Display for ParseErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use ParseErrorKind::*;
        match self {
            UnknownVerb { found, suggestion } => {
                let all: Vec<&str> = Verb::ALL.iter().map(|v| v.name()).collect();
                write!(
                    f,
                    "unknown verb {found:?} (expected one of {}, or include, deny)",
                    all.join(", ")
                )?;
                if let Some(s) = suggestion {
                    write!(f, "; did you mean {s:?}?")?;
                }
                Ok(())
            }
            MissingObject { verb } => match verb {
                Verb::Connect | Verb::Bind | Verb::Send => write!(
                    f,
                    "missing object after {:?} (expected tcp HOST:PORT, udp HOST:PORT or unix PATH)",
                    verb.name()
                ),
                Verb::Syscall => write!(f, "missing syscall name after \"syscall\""),
                Verb::Resolve => write!(f, "missing host name after \"resolve\""),
                _ => write!(f, "missing path after {:?}", verb.name()),
            },
            WrongObject { verb, found } => match verb {
                Verb::Connect | Verb::Bind | Verb::Send => write!(
                    f,
                    "unknown protocol {found:?} after {:?} (expected tcp, udp or unix)",
                    verb.name()
                ),
                _ => write!(f, "{:?} takes a path, found {found:?}", verb.name()),
            },
            BadGlob { pattern, message } => write!(f, "bad glob {pattern:?}: {message}"),
            BadVar { pattern, message } => write!(f, "bad variable in {pattern:?}: {message}"),
            BadNetAddr { addr, message } => write!(f, "bad network address {addr:?}: {message}"),
            BadPort { port } => write!(f, "bad port {port:?} (expected 0..=65535 or *)"),
            RelativePath { path } => write!(
                f,
                "relative path {path:?} (a path must start with \"/\", \"${{VAR}}\" or \"**\")"
            ),
            TrailingGarbage { found } => write!(
                f,
                "unexpected {found:?} after the rule (quote paths with spaces, comments need \" #\")"
            ),
            BadQuote { message } => write!(f, "{message}"),
            BadInclude { found } => write!(
                f,
                "bad include name {found:?} (expected a snippet name: letters, digits, _ . -)"
            ),
            MissingInclude => write!(f, "missing snippet name after \"include\""),
            BadNetlink { message } => write!(f, "{message}"),
            BadSyscall { found } => write!(
                f,
                "bad syscall name {found:?} (expected lowercase letters, digits, _)"
            ),
            UnknownSyscall { found } => write!(
                f,
                "unknown syscall {found:?} (not in sbx's x86_64 or aarch64 table; see `sbx syscalls`)"
            ),
            NotGated { found } => write!(
                f,
                "{found:?} is not a gated syscall: path and network rules decide it, a `syscall` rule would allow nothing (see `sbx syscalls`)"
            ),
            DenyInclude => write!(f, "\"deny\" cannot apply to \"include\""),
            BadProgram { message } | BadBy { message } => write!(f, "{message}"),
        }
    }
}

impl ParseError {
    /// The one-line message plus the source line and a caret under the span.
    pub fn render_with_source(&self, text: &str) -> String {
        let mut out = self.to_string();
        let line_idx = usize::try_from(self.span.line.saturating_sub(1)).unwrap_or(usize::MAX);
        let Some(line) = text.lines().nth(line_idx) else {
            return out;
        };
        let line = line.strip_suffix('\r').unwrap_or(line);
        let col = usize::try_from(self.span.col.saturating_sub(1)).unwrap_or(0);
        let start = line.char_indices().nth(col).map_or(line.len(), |(i, _)| i);
        let len = usize::try_from(self.span.len).unwrap_or(1);
        let end = (start + len).min(line.len());
        let width = line.get(start..end).map_or(1, |s| s.chars().count()).max(1);
        let gutter = self.span.line.to_string();
        let pad = " ".repeat(gutter.len());
        out.push('\n');
        out.push_str(&format!("{pad} |\n{gutter} | {line}\n{pad} | "));
        out.push_str(&" ".repeat(col));
        out.push_str(&"^".repeat(width));
        out
    }
}

/// All the errors of one profile text (never empty when returned by [`parse_str`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseErrors(pub Vec<ParseError>);

impl fmt::Display for ParseErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, e) in self.0.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{e}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ParseErrors {}

impl ParseErrors {
    /// Every error with its source line and caret, separated by blank lines.
    pub fn render_with_source(&self, text: &str) -> String {
        self.0
            .iter()
            .map(|e| e.render_with_source(text))
            .collect::<Vec<_>>()
            .join("\n\n")
    }
}

/// The host of a tcp/udp rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostPat {
    Ip(IpAddr),
    /// A host name glob (normalized, see [`crate::dns::check_name_pattern`]): admits the
    /// addresses DNS or /etc/hosts gave for a matching name during the run.
    Name(String),
    /// `${NAMESERVERS}`: the `nameserver` addresses of /etc/resolv.conf at enforce time.
    Nameservers,
}

/// The variable standing for the name servers of /etc/resolv.conf in a tcp/udp rule.
pub const NAMESERVERS: &str = "${NAMESERVERS}";

/// A network address `HOST:PORT` of a tcp/udp rule. `None` means `*`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InetAddr {
    pub host: Option<HostPat>,
    pub port: Option<u16>,
}

/// Parse `HOST:PORT` (`1.2.3.4:80`, `[::1]:*`, `*:53`, `registry.npmjs.org:443`,
/// `*.npmjs.org:443`, `${NAMESERVERS}:53`).
pub fn parse_inet_addr(text: &str) -> Result<InetAddr, ParseErrorKind> {
    let bad = |message: &str| ParseErrorKind::BadNetAddr {
        addr: text.to_string(),
        message: message.to_string(),
    };
    let Some((host, port)) = text.rsplit_once(':') else {
        return Err(bad("expected HOST:PORT"));
    };
    let port = match port {
        "*" => None,
        p if !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) => {
            Some(p.parse::<u16>().map_err(|_| ParseErrorKind::BadPort {
                port: p.to_string(),
            })?)
        }
        p => {
            return Err(ParseErrorKind::BadPort {
                port: p.to_string(),
            });
        }
    };
    let host = if host == "*" {
        None
    } else if let Some(inner) = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        Some(HostPat::Ip(IpAddr::V6(inner.parse::<Ipv6Addr>().map_err(
            |_| bad("expected an IPv6 address inside the brackets"),
        )?)))
    } else if host.contains(':') {
        return Err(bad("IPv6 addresses must be written in brackets: [::1]:80"));
    } else if let Ok(v4) = host.parse::<Ipv4Addr>() {
        Some(HostPat::Ip(IpAddr::V4(v4)))
    } else if host.is_empty() {
        return Err(bad("missing host (use * for any)"));
    } else if host == NAMESERVERS {
        Some(HostPat::Nameservers)
    } else if host.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        return Err(bad("not an IPv4 address"));
    } else {
        Some(HostPat::Name(
            crate::dns::check_name_pattern(host)
                .map_err(|m| bad(&format!("bad host name: {m}")))?,
        ))
    };
    Ok(InetAddr { host, port })
}

/// The globset options every path pattern is built with: `*` and `?` stop at `/`, `\` escapes,
/// `{,x}` may have an empty alternative.
pub fn glob_builder(pattern: &str) -> GlobBuilder<'_> {
    let mut b = GlobBuilder::new(pattern);
    b.literal_separator(true)
        .backslash_escape(true)
        .empty_alternates(true);
    b
}

/// Check a path pattern: variable syntax, absoluteness, glob syntax (vars masked). The
/// ancestor set `${CWD_ANCESTORS}` is refused here: only [`check_rule_path`] admits it.
pub fn check_path_pattern(text: &str) -> Result<(), ParseErrorKind> {
    let pieces = vars::scan(text).map_err(|e| ParseErrorKind::BadVar {
        pattern: text.to_string(),
        message: e.to_string(),
    })?;
    refuse_ancestors(text, &pieces)?;
    if !(text.starts_with('/') || text.starts_with("${") || text.starts_with("**")) {
        return Err(ParseErrorKind::RelativePath {
            path: text.to_string(),
        });
    }
    check_glob_masked(text, &pieces)
}

/// `${CWD_ANCESTORS}` is a set, not a value: refused inside any pattern but the whole
/// object of a path rule.
fn refuse_ancestors(text: &str, pieces: &[Piece<'_>]) -> Result<(), ParseErrorKind> {
    match pieces
        .iter()
        .find(|p| matches!(p, Piece::Var { name, .. } if *name == "CWD_ANCESTORS"))
    {
        Some(&Piece::Var { offset, .. }) => Err(ParseErrorKind::BadVar {
            pattern: text.to_string(),
            message: vars::VarError::Ancestors { offset }.to_string(),
        }),
        _ => Ok(()),
    }
}

/// Check the object of a path rule: [`check_path_pattern`], or the ancestor set
/// `${CWD_ANCESTORS}` alone, which only `read` and `stat` rules may allow (listing a
/// directory above the project, looking at it) and any deny rule but `own` may refuse.
pub fn check_rule_path(effect: Effect, verb: Verb, text: &str) -> Result<(), ParseErrorKind> {
    if text != vars::CWD_ANCESTORS {
        return check_path_pattern(text);
    }
    let ok = match effect {
        Effect::Allow => matches!(verb, Verb::Read | Verb::Stat),
        Effect::Deny => verb != Verb::Own,
    };
    if ok {
        return Ok(());
    }
    Err(ParseErrorKind::BadVar {
        pattern: text.to_string(),
        message: format!(
            "the directories above the start directory may only be read (listed) or looked at: \"{}{}\" is not allowed (use \"read {text}\" or \"stat {text}\")",
            if effect == Effect::Deny { "deny " } else { "" },
            verb.name()
        ),
    })
}

fn check_glob_masked(text: &str, pieces: &[Piece<'_>]) -> Result<(), ParseErrorKind> {
    let masked: String = pieces
        .iter()
        .map(|p| match p {
            Piece::Lit(s) => *s,
            Piece::Var { .. } => "v",
        })
        .collect();
    glob_builder(&masked)
        .build()
        .map(|_| ())
        .map_err(|e| ParseErrorKind::BadGlob {
            pattern: text.to_string(),
            message: e.kind().to_string(),
        })
}

/// Check the object of a `unix` rule: a path pattern, or `@` + an abstract-name glob.
pub fn check_unix_pattern(text: &str) -> Result<(), ParseErrorKind> {
    match text.strip_prefix('@') {
        Some(rest) => {
            let pieces = vars::scan(rest).map_err(|e| ParseErrorKind::BadVar {
                pattern: text.to_string(),
                message: e.to_string(),
            })?;
            refuse_ancestors(text, &pieces)?;
            check_glob_masked(text, &pieces)
        }
        None => check_path_pattern(text),
    }
}

/// An `env` rule's variable name glob: letters, digits, `_`, and the wildcards `*` `?`.
pub fn valid_env_pattern(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 128
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '*' | '?'))
}

/// A program name of `program` lines and `by` lists: a letter, then letters, digits, `_.+-`.
pub fn valid_program_name(s: &str) -> bool {
    s.len() <= 64
        && s.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '+' | '-'))
}

fn valid_include_name(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
}

fn valid_syscall_name(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
}

/// A whitespace-separated word of a line, quotes and escapes decoded.
#[derive(Debug)]
struct Token {
    text: String,
    /// 1-based column in characters.
    col: u32,
    /// Length in bytes of the source text (with quotes).
    len: u32,
}

/// A line split into tokens and an optional trailing comment.
#[derive(Debug)]
struct Line {
    tokens: Vec<Token>,
    comment: Option<String>,
}

fn to_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

fn tokenize(line: &str) -> Result<Line, (u32, u32, ParseErrorKind)> {
    let mut tokens = Vec::new();
    let mut comment = None;
    let col_of = |byte: usize| to_u32(line[..byte].chars().count() + 1);
    let bytes = line.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b' ' || bytes[i] == b'\t' {
            i += 1;
            continue;
        }
        let start = i;
        if bytes[i] == b'#' {
            let rest = &line[i + 1..];
            comment = Some(rest.strip_prefix(' ').unwrap_or(rest).to_string());
            break;
        }
        if bytes[i] == b'"' {
            let mut out: Vec<u8> = Vec::new();
            i += 1;
            let mut closed = false;
            while i < bytes.len() {
                match bytes[i] {
                    b'"' => {
                        closed = true;
                        i += 1;
                        break;
                    }
                    b'\\' => {
                        let esc_start = i;
                        let bad = |msg: String| {
                            (
                                col_of(esc_start),
                                2,
                                ParseErrorKind::BadQuote { message: msg },
                            )
                        };
                        match bytes.get(i + 1) {
                            Some(b'\\') => out.push(b'\\'),
                            Some(b'"') => out.push(b'"'),
                            Some(b'n') => out.push(b'\n'),
                            Some(b't') => out.push(b'\t'),
                            Some(b'r') => out.push(b'\r'),
                            Some(b'x') => {
                                let hex = line.get(i + 2..i + 4).unwrap_or("");
                                let v = (hex.len() == 2)
                                    .then(|| u8::from_str_radix(hex, 16).ok())
                                    .flatten()
                                    .ok_or_else(|| {
                                        bad(format!(
                                            "bad escape \"\\x{hex}\" (expected two hex digits)"
                                        ))
                                    })?;
                                if v == 0 {
                                    return Err(bad("a path cannot contain NUL (\\x00)".into()));
                                }
                                out.push(v);
                                i += 2;
                            }
                            other => {
                                let shown = other.map_or(String::new(), |&b| {
                                    line[i + 1..].chars().next().map_or(String::new(), |c| {
                                        let _ = b;
                                        c.to_string()
                                    })
                                });
                                return Err(bad(format!(
                                    "unknown escape \"\\{shown}\" (use \\\\ \\\" \\n \\t \\r \\xNN)"
                                )));
                            }
                        }
                        i += 2;
                    }
                    b => {
                        out.push(b);
                        i += 1;
                    }
                }
            }
            if !closed {
                return Err((
                    col_of(start),
                    to_u32(line.len() - start),
                    ParseErrorKind::BadQuote {
                        message: "unterminated quoted string".to_string(),
                    },
                ));
            }
            if i < bytes.len() && bytes[i] != b' ' && bytes[i] != b'\t' {
                return Err((
                    col_of(i),
                    1,
                    ParseErrorKind::BadQuote {
                        message: "expected a space after the closing quote".to_string(),
                    },
                ));
            }
            tokens.push(Token {
                text: vars::path_to_text(&out).into_owned(),
                col: col_of(start),
                len: to_u32(i - start),
            });
        } else {
            while i < bytes.len() && bytes[i] != b' ' && bytes[i] != b'\t' {
                if bytes[i] == b'"' {
                    return Err((
                        col_of(i),
                        1,
                        ParseErrorKind::BadQuote {
                            message: "a quote inside a word (quote the whole word)".to_string(),
                        },
                    ));
                }
                i += 1;
            }
            let raw = &line[start..i];
            tokens.push(Token {
                text: vars::path_to_text(raw.as_bytes()).into_owned(),
                col: col_of(start),
                len: to_u32(i - start),
            });
        }
    }
    Ok(Line { tokens, comment })
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != *cb);
            cur.push(sub.min(prev[j + 1] + 1).min(cur[j] + 1));
        }
        prev = cur;
    }
    prev[b.len()]
}

fn suggest_verb(found: &str) -> Option<&'static str> {
    Verb::ALL
        .iter()
        .map(|v| v.name())
        .chain(["include", "deny"])
        .map(|n| (edit_distance(found, n), n))
        .filter(|(d, _)| *d <= 2)
        .min()
        .map(|(_, n)| n)
}

enum Parsed {
    Include(Include),
    Rule(Rule),
}

fn parse_tokens(tokens: &[Token], line_no: u32) -> Result<Parsed, (Span, ParseErrorKind)> {
    let span_of = |t: &Token| Span {
        line: line_no,
        col: t.col,
        len: t.len,
    };
    let first = &tokens[0];
    let garbage = |t: &Token| {
        (
            span_of(t),
            ParseErrorKind::TrailingGarbage {
                found: t.text.clone(),
            },
        )
    };
    if first.text == "include" {
        let Some(name) = tokens.get(1) else {
            return Err((span_of(first), ParseErrorKind::MissingInclude));
        };
        if !valid_include_name(&name.text) {
            return Err((
                span_of(name),
                ParseErrorKind::BadInclude {
                    found: name.text.clone(),
                },
            ));
        }
        if let Some(extra) = tokens.get(2) {
            return Err(garbage(extra));
        }
        return Ok(Parsed::Include(Include {
            name: name.text.clone(),
            span: Span {
                line: line_no,
                col: first.col,
                len: name.col - first.col + name.len,
            },
        }));
    }
    let (effect, verb_idx) = if first.text == "deny" {
        (Effect::Deny, 1)
    } else {
        (Effect::Allow, 0)
    };
    let Some(verb_tok) = tokens.get(verb_idx) else {
        return Err((
            span_of(first),
            ParseErrorKind::UnknownVerb {
                found: String::new(),
                suggestion: None,
            },
        ));
    };
    if verb_tok.text == "include" {
        return Err((span_of(verb_tok), ParseErrorKind::DenyInclude));
    }
    let Some(verb) = Verb::from_name(&verb_tok.text) else {
        return Err((
            span_of(verb_tok),
            ParseErrorKind::UnknownVerb {
                found: verb_tok.text.clone(),
                suggestion: suggest_verb(&verb_tok.text),
            },
        ));
    };
    let Some(obj) = tokens.get(verb_idx + 1) else {
        return Err((span_of(verb_tok), ParseErrorKind::MissingObject { verb }));
    };
    let mut last = obj;
    let pattern = match verb {
        Verb::Own
        | Verb::Read
        | Verb::Write
        | Verb::Create
        | Verb::Delete
        | Verb::Exec
        | Verb::Probe
        | Verb::Stat
        | Verb::Launcher => {
            if verb == Verb::Launcher && effect == Effect::Deny {
                return Err((
                    span_of(verb_tok),
                    ParseErrorKind::BadProgram {
                        message: "\"deny\" cannot apply to \"launcher\" (it names programs, it allows nothing)".into(),
                    },
                ));
            }
            if matches!(obj.text.as_str(), "tcp" | "udp" | "unix" | "netlink") {
                return Err((
                    span_of(obj),
                    ParseErrorKind::WrongObject {
                        verb,
                        found: obj.text.clone(),
                    },
                ));
            }
            check_rule_path(effect, verb, &obj.text).map_err(|k| (span_of(obj), k))?;
            Pattern::Path(obj.text.clone())
        }
        Verb::Connect | Verb::Bind | Verb::Send => {
            let proto = match obj.text.as_str() {
                "tcp" => Proto::Tcp,
                "udp" => Proto::Udp,
                "unix" => Proto::Unix,
                "netlink" => Proto::Netlink,
                _ => {
                    return Err((
                        span_of(obj),
                        ParseErrorKind::WrongObject {
                            verb,
                            found: obj.text.clone(),
                        },
                    ));
                }
            };
            let Some(addr) = tokens.get(verb_idx + 2) else {
                return Err((span_of(obj), ParseErrorKind::MissingObject { verb }));
            };
            last = addr;
            match proto {
                Proto::Unix => check_unix_pattern(&addr.text),
                Proto::Tcp | Proto::Udp => parse_inet_addr(&addr.text).map(|_| ()),
                Proto::Netlink => super::netlink_protocol(&addr.text)
                    .map(|_| ())
                    .map_err(|message| ParseErrorKind::BadNetlink { message }),
            }
            .map_err(|k| (span_of(addr), k))?;
            Pattern::Net {
                proto,
                addr: addr.text.clone(),
            }
        }
        Verb::Resolve => {
            let name = crate::dns::check_name_pattern(&obj.text).map_err(|message| {
                (
                    span_of(obj),
                    ParseErrorKind::BadNetAddr {
                        addr: obj.text.clone(),
                        message: format!("bad host name: {message}"),
                    },
                )
            })?;
            Pattern::Host(name)
        }
        // `net_admin` is no syscall: a root workload keeps CAP_NET_ADMIN (network
        // configuration through netlink and ioctls, which sbx does not stop).
        Verb::Syscall if obj.text == "net_admin" => Pattern::Syscall(obj.text.clone()),
        Verb::Syscall => {
            if !valid_syscall_name(&obj.text) {
                return Err((
                    span_of(obj),
                    ParseErrorKind::BadSyscall {
                        found: obj.text.clone(),
                    },
                ));
            }
            // The name must be a gated syscall of one of the architectures (profiles are
            // portable): a typo or a checked syscall (`syscall openat`) would be a rule that
            // allows nothing while looking like it does.
            let known = [Arch::X86_64, Arch::Aarch64]
                .iter()
                .filter_map(|a| a.by_name(&obj.text))
                .map(|d| d.class)
                .collect::<Vec<_>>();
            if known.is_empty() {
                return Err((
                    span_of(obj),
                    ParseErrorKind::UnknownSyscall {
                        found: obj.text.clone(),
                    },
                ));
            }
            // `clone` stands for namespace clones (the other clones are not gated).
            if obj.text != "clone" && !known.contains(&Class::Gated) {
                return Err((
                    span_of(obj),
                    ParseErrorKind::NotGated {
                        found: obj.text.clone(),
                    },
                ));
            }
            Pattern::Syscall(obj.text.clone())
        }
        Verb::Env => {
            if effect == Effect::Deny {
                return Err((
                    span_of(verb_tok),
                    ParseErrorKind::BadBy {
                        message: "\"deny\" cannot apply to \"env\" (write env NAME by PROGRAMS: who may see the variable)".into(),
                    },
                ));
            }
            if !valid_env_pattern(&obj.text) {
                return Err((
                    span_of(obj),
                    ParseErrorKind::BadBy {
                        message: format!(
                            "bad environment variable name {:?} (letters, digits, _, and * or ? as wildcards)",
                            obj.text
                        ),
                    },
                ));
            }
            Pattern::Env(obj.text.clone())
        }
        Verb::Program => {
            if effect == Effect::Deny {
                return Err((
                    span_of(verb_tok),
                    ParseErrorKind::BadProgram {
                        message: "\"deny\" cannot apply to \"program\" (it names programs, it allows nothing)".into(),
                    },
                ));
            }
            if !valid_program_name(&obj.text) {
                return Err((
                    span_of(obj),
                    ParseErrorKind::BadProgram {
                        message: format!(
                            "bad program name {:?} (expected a letter, then letters, digits, _ . + -)",
                            obj.text
                        ),
                    },
                ));
            }
            let Some(path) = tokens.get(verb_idx + 2) else {
                return Err((
                    span_of(obj),
                    ParseErrorKind::BadProgram {
                        message: format!("missing path after \"program {}\"", obj.text),
                    },
                ));
            };
            last = path;
            check_path_pattern(&path.text).map_err(|k| (span_of(path), k))?;
            Pattern::Program {
                name: obj.text.clone(),
                path: path.text.clone(),
            }
        }
    };
    let used = tokens
        .iter()
        .position(|t| std::ptr::eq(t, last))
        .map_or(tokens.len(), |p| p + 1);
    let mut by = Vec::new();
    if let Some(kw) = tokens.get(used)
        && kw.text == "by"
    {
        let bad = |t: &Token, message: String| (span_of(t), ParseErrorKind::BadBy { message });
        if effect == Effect::Deny || matches!(verb, Verb::Program | Verb::Launcher) {
            return Err(bad(
                kw,
                format!(
                    "\"by\" cannot apply to {} (only allow rules are held by programs)",
                    if effect == Effect::Deny {
                        "a deny rule".to_string()
                    } else {
                        format!("{:?}", verb.name())
                    }
                ),
            ));
        }
        let Some(list) = tokens.get(used + 1) else {
            return Err(bad(
                kw,
                "missing program names after \"by\" (by NAME,NAME...)".into(),
            ));
        };
        for name in list.text.split(',') {
            if !valid_program_name(name) {
                return Err(bad(
                    list,
                    format!(
                        "bad program name {name:?} in the \"by\" list (by NAME,NAME..., names defined by `program` lines)"
                    ),
                ));
            }
            if !by.iter().any(|n| n == name) {
                by.push(name.to_string());
            }
        }
        by.sort();
        last = list;
        if let Some(extra) = tokens.get(used + 2) {
            return Err(garbage(extra));
        }
    } else if let Some(extra) = tokens.get(used) {
        return Err(garbage(extra));
    }
    if verb == Verb::Env && by.is_empty() {
        return Err((
            span_of(last),
            ParseErrorKind::BadBy {
                message: "an env rule needs a \"by\" list: env NAME by PROGRAM,... (the programs that may see the variable)".into(),
            },
        ));
    }
    Ok(Parsed::Rule(Rule {
        effect,
        verb,
        pattern,
        by,
        comments: Vec::new(),
        span: Span {
            line: line_no,
            col: first.col,
            len: last.col.saturating_sub(first.col) + last.len,
        },
    }))
}

/// Parse a whole profile. `file` names it in errors. Returns every error found.
pub fn parse_str(file: &str, text: &str) -> Result<Profile, ParseErrors> {
    let mut profile = Profile::default();
    let mut errors = Vec::new();
    let mut pending: Vec<String> = Vec::new();
    // The leading comment block is the header unless it runs straight into a rule.
    let mut header_open = true;
    for (idx, raw_line) in text.split('\n').enumerate() {
        let line_no = to_u32(idx + 1);
        let line = raw_line.strip_suffix('\r').unwrap_or(raw_line);
        let parsed = match tokenize(line) {
            Ok(l) => l,
            Err((col, len, kind)) => {
                errors.push(ParseError {
                    file: file.to_string(),
                    span: Span {
                        line: line_no,
                        col,
                        len,
                    },
                    kind,
                });
                pending.clear();
                header_open = false;
                continue;
            }
        };
        if parsed.tokens.is_empty() {
            match parsed.comment {
                Some(c) => pending.push(c),
                None => {
                    if header_open && !pending.is_empty() {
                        profile.header = std::mem::take(&mut pending);
                        header_open = false;
                    }
                }
            }
            continue;
        }
        match parse_tokens(&parsed.tokens, line_no) {
            Ok(Parsed::Include(inc)) => {
                if header_open {
                    profile.header = std::mem::take(&mut pending);
                    header_open = false;
                }
                // Comments above an include are not kept (see docs/profile-format.md).
                pending.clear();
                profile.includes.push(inc);
            }
            Ok(Parsed::Rule(mut rule)) => {
                header_open = false;
                rule.comments = std::mem::take(&mut pending);
                rule.comments.extend(parsed.comment);
                profile.rules.push(rule);
            }
            Err((span, kind)) => {
                header_open = false;
                pending.clear();
                errors.push(ParseError {
                    file: file.to_string(),
                    span,
                    kind,
                });
            }
        }
    }
    if header_open {
        profile.header = pending;
    }
    if errors.is_empty() {
        Ok(profile)
    } else {
        Err(ParseErrors(errors))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `syscall net_admin` is the one name that is no syscall: a root workload keeps
    /// CAP_NET_ADMIN.
    #[test]
    fn net_admin_is_a_pseudo_syscall() {
        let got = parse_str("t", "syscall net_admin\n").expect("parses");
        assert_eq!(got.rules[0].pattern, Pattern::Syscall("net_admin".into()));
        assert!(parse_str("t", "syscall net_admins\n").is_err());
    }

    fn p(text: &str) -> Profile {
        match parse_str("t.profile", text) {
            Ok(p) => p,
            Err(e) => panic!("parse failed: {e}"),
        }
    }

    fn first_error(text: &str) -> String {
        match parse_str("t.profile", text) {
            Ok(_) => panic!("expected an error for {text:?}"),
            Err(e) => e.0[0].to_string(),
        }
    }

    macro_rules! error {
        ($($name:ident: $text:expr => $msg:expr;)*) => {
            $(
                #[test]
                fn $name() {
                    let got = first_error($text);
                    assert!(got.contains($msg), "got {got:?}, want it to contain {:?}", $msg);
                }
            )*
        };
    }

    error! {
        unknown_verb: "raed /etc/passwd" => "t.profile:1:1: unknown verb \"raed\" (expected one of own, read, write,";
        unknown_verb_suggests: "\n  raed /etc/passwd" => "t.profile:2:3: unknown verb \"raed\"";
        suggestion_text: "raed /x" => "did you mean \"read\"?";
        missing_object: "read" => "t.profile:1:1: missing path after \"read\"";
        missing_net_addr: "connect tcp" => "missing object after \"connect\"";
        bad_glob: "read /a/[b" => "t.profile:1:6: bad glob \"/a/[b\"";
        bad_var_lone_dollar: "read /a/$b" => "bad variable in \"/a/$b\"";
        bad_var_unclosed: "read ${HOME/x" => "unclosed";
        bad_var_name: "read ${1X}/x" => "invalid variable name";
        relative: "read etc/passwd" => "relative path \"etc/passwd\"";
        relative_star: "read */x" => "relative path";
        bad_port: "connect tcp 1.2.3.4:99999" => "bad port \"99999\"";
        bad_port_word: "connect tcp 1.2.3.4:http" => "bad port \"http\"";
        bad_host: "connect tcp exa_mple/x:80" => "bad host name";
        bad_host_label: "connect tcp a..b:80" => "empty label";
        bad_resolve: "resolve a.**.b" => "only allowed as the first label";
        missing_resolve: "resolve" => "missing host name";
        bare_ipv6: "connect tcp ::1:80" => "must be written in brackets";
        bad_ipv6: "connect tcp [zz::1]:80" => "IPv6 address inside";
        no_port: "connect udp 1.2.3.4" => "bad network address";
        bad_proto: "connect sctp 1.2.3.4:1" => "unknown protocol \"sctp\"";
        path_for_net: "connect /run/x.sock" => "unknown protocol \"/run/x.sock\"";
        net_for_path: "read tcp 1.2.3.4:80" => "\"read\" takes a path";
        trailing: "read /etc/passwd extra" => "t.profile:1:18: unexpected \"extra\"";
        trailing_include: "include base more" => "unexpected \"more\"";
        unterminated: "read \"/a b" => "unterminated quoted string";
        bad_escape: "read \"/a\\q\"" => "unknown escape \"\\q\"";
        bad_hex: "read \"/a\\xZZ\"" => "bad escape";
        quote_in_word: "read /a\"b\"" => "a quote inside a word";
        bad_include: "include ../x" => "bad include name";
        missing_include: "include" => "missing snippet name";
        deny_include: "deny include base" => "cannot apply to \"include\"";
        deny_by: "deny read /x by npm" => "cannot apply to a deny rule";
        by_missing: "read /x by" => "missing program names after \"by\"";
        by_bad_name: "read /x by npm,/usr/bin/npm" => "bad program name \"/usr/bin/npm\"";
        by_then_garbage: "read /x by npm more" => "unexpected \"more\"";
        program_by: "program npm /x by npm" => "cannot apply to \"program\"";
        program_no_path: "program npm" => "missing path after \"program npm\"";
        program_bad_name: "program 1npm /x" => "bad program name \"1npm\"";
        program_relative: "program npm bin/npm" => "relative path";
        launcher_by: "launcher /usr/bin/make by npm" => "cannot apply to \"launcher\"";
        deny_launcher: "deny launcher /usr/bin/make" => "cannot apply to \"launcher\"";
        launcher_relative: "launcher bin/make" => "relative path";
        launcher_net: "launcher tcp 1.2.3.4:1" => "\"launcher\" takes a path";
        deny_program: "deny program npm /x" => "cannot apply to \"program\"";
        env_without_by: "env NPM_TOKEN" => "an env rule needs a \"by\" list";
        ancestors_with_suffix: "read ${CWD_ANCESTORS}/x" => "is a set of directories, not a value";
        ancestors_inside: "read /a/${CWD_ANCESTORS}" => "t.profile:1:6: bad variable in";
        ancestors_written: "write ${CWD_ANCESTORS}" => "may only be read (listed) or looked at";
        ancestors_created: "create ${CWD_ANCESTORS}" => "\"create\" is not allowed";
        ancestors_owned: "own ${CWD_ANCESTORS}" => "may only be read";
        ancestors_deny_owned: "deny own ${CWD_ANCESTORS}" => "\"deny own\" is not allowed";
        ancestors_exec: "exec ${CWD_ANCESTORS}" => "may only be read";
        ancestors_program: "program p ${CWD_ANCESTORS}" => "is a set of directories";
        ancestors_unix: "connect unix ${CWD_ANCESTORS}" => "is a set of directories";
        ancestors_abstract: "connect unix @${CWD_ANCESTORS}" => "is a set of directories";
        env_bad_name: "env NPM-TOKEN by npm" => "bad environment variable name";
        deny_env: "deny env NPM_TOKEN by npm" => "cannot apply to \"env\"";
        bad_syscall: "syscall Ptrace" => "bad syscall name";
        unknown_syscall: "syscall nosuchcall" => "unknown syscall \"nosuchcall\"";
        unknown_number: "syscall syscall_999" => "unknown syscall";
        not_gated: "syscall openat" => "\"openat\" is not a gated syscall";
        bad_unix: "connect unix rel/sock" => "relative path";
    }

    /// `${CWD_ANCESTORS}` alone is the object of read and stat rules and of deny rules.
    #[test]
    fn ancestor_set_rules() {
        for text in [
            "read ${CWD_ANCESTORS}\n",
            "stat ${CWD_ANCESTORS}\n",
            "deny read ${CWD_ANCESTORS}\n",
            "deny write ${CWD_ANCESTORS}\n",
            "read ${CWD_ANCESTORS} by npm\n",
        ] {
            let got = p(text);
            assert_eq!(
                got.rules[0].pattern,
                Pattern::Path("${CWD_ANCESTORS}".into()),
                "{text}"
            );
            assert_eq!(crate::profile::render::render(&got), text);
        }
    }

    #[test]
    fn documented_example_parses_and_is_canonical() {
        let doc = include_str!("../../docs/profile-format.md");
        let example = doc
            .split("```text\n")
            .nth(1)
            .and_then(|s| s.split("```").next())
            .unwrap_or("");
        let parsed = parse_str("example", example).map_err(|e| e.render_with_source(example));
        let parsed = parsed.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(parsed.header.len(), 2);
        assert_eq!(parsed.rules.len(), 12);
        assert_eq!(super::super::render::render(&parsed), example);
    }

    #[test]
    fn by_lists_are_sorted_and_deduplicated() {
        let p = p("program npm /usr/lib/npm-cli.js\nconnect tcp *:443 by npm,git,npm\n");
        assert_eq!(p.rules[1].by, vec!["git".to_string(), "npm".to_string()]);
        assert!(p.rules[0].by.is_empty());
        assert_eq!(
            p.rules[0].pattern,
            Pattern::Program {
                name: "npm".into(),
                path: "/usr/lib/npm-cli.js".into()
            }
        );
    }

    #[test]
    fn collects_all_errors() {
        let text = "raed /x\nread /ok\nwrite rel\nconnect tcp 1.2.3.4:x\n";
        let errs = parse_str("f", text).err().map(|e| e.0).unwrap_or_default();
        let lines: Vec<u32> = errs.iter().map(|e| e.span.line).collect();
        assert_eq!(lines, vec![1, 3, 4]);
    }

    #[test]
    fn caret_rendering() {
        let text = "read /ok\n  raed /etc/passwd\n";
        let errs = parse_str("npm.profile", text)
            .err()
            .map(|e| e.0)
            .unwrap_or_default();
        assert_eq!(
            errs[0].render_with_source(text),
            "npm.profile:2:3: unknown verb \"raed\" (expected one of own, read, write, create, \
             delete, exec, probe, stat, connect, bind, send, syscall, resolve, program, launcher, env, or include, deny); did you mean \"read\"?\n  |\n2 |   raed /etc/passwd\n  |   ^^^^"
        );
    }

    #[test]
    fn parses_rules_header_and_comments() {
        let text = "# learned by sbx\n# from: npm ci\n\ninclude base\n\n# why\ndeny read ${HOME}/.ssh/** # never\nread /etc/passwd\n\n# floating\n\nconnect tcp [::1]:*\nbind udp *:53\nsend unix @/tmp/.X11-unix/*\nsyscall ptrace\nread \"/a b/\\xff\"\n";
        let got = p(text);
        assert_eq!(got.header, vec!["learned by sbx", "from: npm ci"]);
        assert_eq!(got.includes.len(), 1);
        assert_eq!(got.includes[0].name, "base");
        assert_eq!(
            got.includes[0].span,
            Span {
                line: 4,
                col: 1,
                len: 12
            }
        );
        let r = &got.rules[0];
        assert_eq!(r.effect, Effect::Deny);
        assert_eq!(r.verb, Verb::Read);
        assert_eq!(r.pattern, Pattern::Path("${HOME}/.ssh/**".into()));
        assert_eq!(r.comments, vec!["why", "never"]);
        assert_eq!(
            r.span,
            Span {
                line: 7,
                col: 1,
                len: 25
            }
        );
        assert!(got.rules[1].comments.is_empty());
        assert_eq!(got.rules[2].comments, vec!["floating"]);
        assert_eq!(
            got.rules[2].pattern,
            Pattern::Net {
                proto: Proto::Tcp,
                addr: "[::1]:*".into()
            }
        );
        assert_eq!(
            got.rules[4].pattern,
            Pattern::Net {
                proto: Proto::Unix,
                addr: "@/tmp/.X11-unix/*".into()
            }
        );
        assert_eq!(got.rules[5].pattern, Pattern::Syscall("ptrace".into()));
        let Pattern::Path(raw) = &got.rules[6].pattern else {
            panic!("path expected")
        };
        assert_eq!(vars::text_to_path(raw), b"/a b/\xff".to_vec());
    }

    #[test]
    fn leading_comments_run_into_rule_are_rule_comments() {
        let got = p("# about passwd\nread /etc/passwd\n");
        assert!(got.header.is_empty());
        assert_eq!(got.rules[0].comments, vec!["about passwd"]);
        let only = p("# just a header\n# two\n");
        assert_eq!(only.header, vec!["just a header", "two"]);
    }

    #[test]
    fn inet_addr_table() {
        let v4 = |a, b, c, d| Some(HostPat::Ip(IpAddr::V4(Ipv4Addr::new(a, b, c, d))));
        let name = |n: &str| Some(HostPat::Name(n.into()));
        let cases: &[(&str, Option<InetAddr>)] = &[
            (
                "127.0.0.1:8080",
                Some(InetAddr {
                    host: v4(127, 0, 0, 1),
                    port: Some(8080),
                }),
            ),
            (
                "*:53",
                Some(InetAddr {
                    host: None,
                    port: Some(53),
                }),
            ),
            (
                "[::1]:*",
                Some(InetAddr {
                    host: Some(HostPat::Ip(IpAddr::V6(Ipv6Addr::LOCALHOST))),
                    port: None,
                }),
            ),
            (
                "*:*",
                Some(InetAddr {
                    host: None,
                    port: None,
                }),
            ),
            (
                "Registry.npmjs.org:443",
                Some(InetAddr {
                    host: name("registry.npmjs.org"),
                    port: Some(443),
                }),
            ),
            (
                "*.npmjs.org:*",
                Some(InetAddr {
                    host: name("*.npmjs.org"),
                    port: None,
                }),
            ),
            (
                "${NAMESERVERS}:53",
                Some(InetAddr {
                    host: Some(HostPat::Nameservers),
                    port: Some(53),
                }),
            ),
            ("1.2.3:80", None),
            ("1.2.3.4:", None),
            (":80", None),
            ("a..b:80", None),
            ("a/b:80", None),
            ("a.**.b:80", None),
        ];
        for (text, want) in cases {
            assert_eq!(parse_inet_addr(text).ok(), *want, "{text}");
        }
    }
}
