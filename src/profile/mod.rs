//! The profile: a reviewed, text allowlist of what a workload may do (design.md section 7).
//!
//! This module owns the AST. `parse` turns text into a [`Profile`] (with `file:line:col`
//! errors), `render` turns a [`Profile`] back into canonical text, `vars` expands and abstracts
//! `${VARS}`, `snippets` resolves `include NAME` against the shipped `profiles/`.
//! Pure: no I/O except what callers pass in.

use serde::{Deserialize, Serialize};

/// A parsed profile. Rules keep the order of the text; `render` sorts them canonically.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Profile {
    /// Leading `#` comment lines (provenance), without the `# ` prefix.
    pub header: Vec<String>,
    pub includes: Vec<Include>,
    pub rules: Vec<Rule>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Include {
    pub name: String,
    pub span: Span,
}

/// Where something is in the profile text: 1-based line and column, length in bytes.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
)]
pub struct Span {
    pub line: u32,
    pub col: u32,
    pub len: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Effect {
    Allow,
    Deny,
}

/// What a rule allows or denies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Verb {
    /// An area the workload owns (its output, its tool's cache): read, write, create and
    /// delete the path and everything below it. Never exec, and never a write to a git hook
    /// or a git config inside it ([`crate::policy::owner_excluded`]).
    Own,
    /// Open for reading (and readlink-free content reads).
    Read,
    /// Create, truncate, modify content or attributes (chmod/chown/utimes/xattr).
    Write,
    /// Make a new name that did not exist (O_CREAT of an absent file, mkdir, symlink, mknod,
    /// the new name of a link or rename). What the run created is then its own for the rest
    /// of the run (enforce tracks it by inode). A `write` or `own` rule also allows it.
    Create,
    /// unlink, rmdir, the source of a rename.
    Delete,
    /// execve/execveat of a path.
    Exec,
    /// An open of a path that does not exist (ENOENT): admitted only while it does not exist.
    Probe,
    /// Metadata (stat/access/readlink...): checked only with `--metadata`.
    Stat,
    Connect,
    /// bind and listen.
    Bind,
    /// Unconnected datagrams (sendto/sendmsg with an address).
    Send,
    /// A gated syscall by name.
    Syscall,
    /// A DNS query for a host name (a name glob; `connect tcp NAME:PORT` implies it).
    Resolve,
    /// Not a right: `program NAME PATH-GLOB` names a program for `by` lists (issue 21).
    Program,
    /// Not a right: `launcher PATH-GLOB` names programs that only start the step's real
    /// programs (the CI shell, `make`, `env`): at the start of an exec chain they do not
    /// narrow what the programs they start hold (docs/profile-format.md).
    Launcher,
    /// `env NAME-GLOB by PROGRAMS`: the environment variables only those programs may see;
    /// sbx removes them from every other program's environment at its exec.
    Env,
}

impl Verb {
    pub const ALL: [Verb; 16] = [
        Verb::Own,
        Verb::Read,
        Verb::Write,
        Verb::Create,
        Verb::Delete,
        Verb::Exec,
        Verb::Probe,
        Verb::Stat,
        Verb::Connect,
        Verb::Bind,
        Verb::Send,
        Verb::Syscall,
        Verb::Resolve,
        Verb::Program,
        Verb::Launcher,
        Verb::Env,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Verb::Own => "own",
            Verb::Read => "read",
            Verb::Write => "write",
            Verb::Create => "create",
            Verb::Delete => "delete",
            Verb::Exec => "exec",
            Verb::Probe => "probe",
            Verb::Stat => "stat",
            Verb::Connect => "connect",
            Verb::Bind => "bind",
            Verb::Send => "send",
            Verb::Syscall => "syscall",
            Verb::Resolve => "resolve",
            Verb::Program => "program",
            Verb::Launcher => "launcher",
            Verb::Env => "env",
        }
    }

    pub fn from_name(s: &str) -> Option<Verb> {
        Verb::ALL.into_iter().find(|v| v.name() == s)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Proto {
    Tcp,
    Udp,
    Unix,
    /// Netlink sockets (talking to the kernel): the object is the netlink protocol by name
    /// (`route`, `audit`...), number, or `*`.
    Netlink,
}

/// Netlink protocol names (linux/netlink.h) and numbers.
pub const NETLINK_PROTOCOLS: &[(&str, u16)] = &[
    ("route", 0),
    ("usersock", 2),
    ("firewall", 3),
    ("sock_diag", 4),
    ("nflog", 5),
    ("xfrm", 6),
    ("selinux", 7),
    ("iscsi", 8),
    ("audit", 9),
    ("fib_lookup", 10),
    ("connector", 11),
    ("netfilter", 12),
    ("ip6_fw", 13),
    ("dnrtmsg", 14),
    ("kobject_uevent", 15),
    ("generic", 16),
    ("scsitransport", 18),
    ("ecryptfs", 19),
    ("rdma", 20),
    ("crypto", 21),
    ("smc", 22),
];

/// The name of a netlink protocol number (`route`), its number if unnamed, `?` if unknown.
pub fn netlink_name(protocol: Option<u16>) -> String {
    match protocol {
        None => "?".into(),
        Some(p) => NETLINK_PROTOCOLS
            .iter()
            .find(|(_, n)| *n == p)
            .map(|(name, _)| (*name).to_string())
            .unwrap_or_else(|| p.to_string()),
    }
}

/// The protocol of a netlink rule object: `Ok(None)` for `*`, else the number.
pub fn netlink_protocol(text: &str) -> Result<Option<u16>, String> {
    if text == "*" {
        return Ok(None);
    }
    if let Some(&(_, n)) = NETLINK_PROTOCOLS.iter().find(|(name, _)| *name == text) {
        return Ok(Some(n));
    }
    text.parse::<u16>().map(Some).map_err(|_| {
        format!(
            "unknown netlink protocol {text:?} (expected *, a number, or one of {})",
            NETLINK_PROTOCOLS
                .iter()
                .map(|(n, _)| *n)
                .collect::<Vec<_>>()
                .join(", ")
        )
    })
}

/// The object part of a rule, still unexpanded (`${HOME}/.cache/**`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Pattern {
    /// A path glob (globset syntax) that may contain `${VAR}`s.
    Path(String),
    /// `tcp|udp HOST:PORT` (HOST and PORT may be `*`; IPv6 in brackets) or `unix PATH-GLOB`
    /// (`@name` for abstract sockets).
    Net { proto: Proto, addr: String },
    /// A syscall name (for `syscall`).
    Syscall(String),
    /// A host name glob (for `resolve`): `registry.npmjs.org`, `*.npmjs.org`, `**.example`.
    Host(String),
    /// `program NAME PATH-GLOB`: the program identities (docs/profile-format.md) that `NAME`
    /// stands for in `by` lists. Several lines may name the same program.
    Program { name: String, path: String },
    /// An environment variable name glob (`NPM_TOKEN`, `*_TOKEN`), for `env`.
    Env(String),
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rule {
    pub effect: Effect,
    pub verb: Verb,
    pub pattern: Pattern,
    /// Comment lines directly above the rule (e.g. a `WARNING` from learn), without `# `.
    pub comments: Vec<String>,
    pub span: Span,
    /// `by NAME,...`: the right is held only by processes whose whole exec chain runs
    /// programs of the list (names defined by `program` lines). Empty: every process.
    pub by: Vec<String>,
}

pub mod parse;
pub mod render;
pub mod snippets;
pub mod vars;
