//! The profile snippets shipped in `profiles/` and the resolution of `include NAME`.
//!
//! Snippets are embedded with `include_str!`, so `include node` works without any file next to
//! the binary. [`resolve`] flattens a profile and everything it includes (recursively, each
//! snippet once, cycles and unknown names are errors with `file:line:col`) into one list of
//! rules that remember the file they came from.
//!
//! Pure: the snippet texts are compiled in; [`resolve_with`] takes any lookup for tests.

use std::collections::BTreeSet;

use super::parse::{ParseErrors, parse_str};
use super::{Profile, Rule, Span};

/// Every shipped snippet: (name, text). Sorted by name.
const SNIPPETS: &[(&str, &str)] = &[
    ("base", include_str!("../../profiles/base.profile")),
    ("cargo", include_str!("../../profiles/cargo.profile")),
    ("dns", include_str!("../../profiles/dns.profile")),
    ("git", include_str!("../../profiles/git.profile")),
    ("node", include_str!("../../profiles/node.profile")),
    ("pnpm", include_str!("../../profiles/pnpm.profile")),
    ("python", include_str!("../../profiles/python.profile")),
    ("shell", include_str!("../../profiles/shell.profile")),
    ("ssl", include_str!("../../profiles/ssl.profile")),
    ("tmp", include_str!("../../profiles/tmp.profile")),
    ("uv", include_str!("../../profiles/uv.profile")),
    ("yarn", include_str!("../../profiles/yarn.profile")),
];

const NAMES: &[&str] = &[
    "base", "cargo", "dns", "git", "node", "pnpm", "python", "shell", "ssl", "tmp", "uv", "yarn",
];

/// The text of the shipped snippet `name` (`base`, `node`...).
pub fn snippet(name: &str) -> Option<&'static str> {
    SNIPPETS.iter().find(|(n, _)| *n == name).map(|(_, t)| *t)
}

/// The names of all shipped snippets, sorted.
pub fn names() -> &'static [&'static str] {
    NAMES
}

/// The file a rule came from: the profile's own name or `NAME.profile` for a snippet.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Origin {
    pub file: String,
}

/// A profile with its includes flattened: included rules first (depth first, in include
/// order, each snippet once), then the profile's own rules.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Resolved {
    pub rules: Vec<(Rule, Origin)>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}:{}:{}: {kind}", span.line, span.col)]
pub struct ResolveError {
    /// The file containing the failing `include`.
    pub file: String,
    pub span: Span,
    pub kind: ResolveErrorKind,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ResolveErrorKind {
    #[error("unknown snippet {name:?} (shipped: {})", NAMES.join(", "))]
    Unknown { name: String },
    #[error("include cycle: {}", chain.join(" -> "))]
    Cycle { chain: Vec<String> },
    #[error("snippet {name:?} does not parse: {errors}")]
    Parse { name: String, errors: ParseErrors },
}

/// Flatten `p` (read from `file`) and its includes against the shipped snippets.
pub fn resolve(p: &Profile, file: &str) -> Result<Resolved, ResolveError> {
    resolve_with(p, file, &|name| snippet(name).map(str::to_string))
}

/// [`resolve`] with another snippet lookup (tests, or snippets from a directory).
pub fn resolve_with(
    p: &Profile,
    file: &str,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<Resolved, ResolveError> {
    let mut r = Resolver {
        lookup,
        stack: vec![file.to_string()],
        done: BTreeSet::new(),
        out: Resolved::default(),
    };
    r.includes(p, file)?;
    r.own_rules(p, file);
    Ok(r.out)
}

struct Resolver<'a> {
    lookup: &'a dyn Fn(&str) -> Option<String>,
    /// Names being resolved (the root file first), to detect cycles.
    stack: Vec<String>,
    done: BTreeSet<String>,
    out: Resolved,
}

impl Resolver<'_> {
    fn includes(&mut self, p: &Profile, file: &str) -> Result<(), ResolveError> {
        for inc in &p.includes {
            let err = |kind| ResolveError {
                file: file.to_string(),
                span: inc.span,
                kind,
            };
            if self.stack[1..].contains(&inc.name) {
                let mut chain = self.stack[1..].to_vec();
                chain.push(inc.name.clone());
                return Err(err(ResolveErrorKind::Cycle { chain }));
            }
            if self.done.contains(&inc.name) {
                continue;
            }
            let Some(text) = (self.lookup)(&inc.name) else {
                return Err(err(ResolveErrorKind::Unknown {
                    name: inc.name.clone(),
                }));
            };
            let sub_file = format!("{}.profile", inc.name);
            let sub = parse_str(&sub_file, &text).map_err(|errors| {
                err(ResolveErrorKind::Parse {
                    name: inc.name.clone(),
                    errors,
                })
            })?;
            self.stack.push(inc.name.clone());
            self.includes(&sub, &sub_file)?;
            self.stack.pop();
            self.own_rules(&sub, &sub_file);
            self.done.insert(inc.name.clone());
        }
        Ok(())
    }

    fn own_rules(&mut self, p: &Profile, file: &str) {
        for rule in &p.rules {
            self.out.rules.push((
                rule.clone(),
                Origin {
                    file: file.to_string(),
                },
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::Pattern;

    #[test]
    fn every_shipped_snippet_parses_and_is_listed() {
        assert_eq!(SNIPPETS.len(), NAMES.len());
        for (name, text) in SNIPPETS {
            assert!(names().contains(name), "{name} not listed");
            let parsed = parse_str(&format!("{name}.profile"), text);
            assert!(
                parsed.is_ok(),
                "{}",
                parsed
                    .err()
                    .map(|e| e.render_with_source(text))
                    .unwrap_or_default()
            );
        }
        let mut sorted = NAMES.to_vec();
        sorted.sort_unstable();
        assert_eq!(sorted, NAMES);
    }

    #[test]
    fn every_profile_file_is_embedded() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/profiles");
        let mut on_disk: Vec<String> = std::fs::read_dir(dir)
            .map(|rd| {
                rd.filter_map(|e| e.ok())
                    .filter_map(|e| {
                        e.file_name()
                            .to_str()
                            .and_then(|n| n.strip_suffix(".profile"))
                            .map(str::to_string)
                    })
                    .collect()
            })
            .unwrap_or_default();
        on_disk.sort();
        assert_eq!(on_disk, NAMES);
    }

    #[test]
    fn every_rule_is_commented_and_no_secrets() {
        for (name, text) in SNIPPETS {
            let p = parse_str(name, text).unwrap_or_default();
            for r in &p.rules {
                assert!(
                    !r.comments.is_empty(),
                    "{name}: rule at line {} has no comment",
                    r.span.line
                );
                if let Pattern::Path(path) = &r.pattern
                    && r.effect == crate::profile::Effect::Allow
                {
                    {
                        for bad in [
                            "${HOME}/**",
                            "/etc/shadow",
                            "/etc/**",
                            "/**",
                            ".ssh",
                            ".aws",
                            "/etc/ssl/**",
                        ] {
                            assert_ne!(path.as_str(), bad, "{name} allows {path}");
                            assert!(
                                !(bad.starts_with('.') && path.contains(bad)),
                                "{name} allows {path}"
                            );
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn shipped_snippets_resolve_without_cycles() {
        for name in names() {
            let p = parse_str("main", &format!("include {name}\n")).unwrap_or_default();
            let r = resolve(&p, "main");
            assert!(r.is_ok(), "{name}: {:?}", r.err().map(|e| e.to_string()));
        }
    }

    #[test]
    fn resolve_flattens_once_with_origins() {
        let p = parse_str("app.profile", "include node\ninclude shell\nread /app\n")
            .unwrap_or_default();
        let r = resolve(&p, "app.profile").map_err(|e| e.to_string());
        let r = r.unwrap_or_default();
        let base_rules = parse_str("b", snippet("base").unwrap_or(""))
            .unwrap_or_default()
            .rules
            .len();
        let from_base = r
            .rules
            .iter()
            .filter(|(_, o)| o.file == "base.profile")
            .count();
        assert!(base_rules > 0);
        assert_eq!(from_base, base_rules, "base included exactly once");
        let last = r
            .rules
            .last()
            .map(|(rule, o)| (rule.pattern.clone(), o.file.clone()));
        assert_eq!(
            last,
            Some((Pattern::Path("/app".into()), "app.profile".into()))
        );
        // Base comes before node's own rules (depth first).
        let first_node = r.rules.iter().position(|(_, o)| o.file == "node.profile");
        let last_base = r.rules.iter().rposition(|(_, o)| o.file == "base.profile");
        assert!(last_base < first_node);
    }

    #[test]
    fn unknown_and_cycle_errors() {
        let p = parse_str("app.profile", "read /x\ninclude nope\n").unwrap_or_default();
        let e = resolve(&p, "app.profile")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            e.starts_with("app.profile:2:1: unknown snippet \"nope\" (shipped: base,"),
            "{e}"
        );

        let lookup = |name: &str| match name {
            "a" => Some("include b\n".to_string()),
            "b" => Some("read /b\ninclude a\n".to_string()),
            _ => None,
        };
        let p = parse_str("main", "include a\n").unwrap_or_default();
        let e = resolve_with(&p, "main", &lookup)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert_eq!(e, "b.profile:2:1: include cycle: a -> b -> a");

        let self_cycle = |name: &str| (name == "s").then(|| "include s\n".to_string());
        let p = parse_str("main", "include s\n").unwrap_or_default();
        let e = resolve_with(&p, "main", &self_cycle)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert_eq!(e, "s.profile:1:1: include cycle: s -> s");
    }

    /// See: docs/real-world.md pip: pip opens ~/.cache (the directory) once it exists and
    /// reads its own cache back; the python snippet admits those, nothing else in ~/.cache.
    #[test]
    fn python_admits_pip_cache_only() {
        use crate::event::{Access, AccessSet, Object, PathObj};
        use crate::policy::{CompiledPolicy, Decision};
        use crate::profile::vars::Env;
        let env = Env {
            cwd: "/srv/p".into(),
            home: "/home/runner".into(),
            tmpdir: "/tmp".into(),
            vars: Default::default(),
        };
        let pol = CompiledPolicy::load("p.profile", "include python\n", &env);
        assert!(pol.is_ok(), "{:?}", pol.err().map(|e| e.to_string()));
        let Ok(pol) = pol else { return };
        let read = |p: &str| {
            let obj = Object::Path(PathObj {
                literal: vec![],
                abs: p.as_bytes().to_vec(),
                resolved: None,
            });
            matches!(
                pol.decide(AccessSet::of(Access::Read), &obj),
                Decision::Allow
            )
        };
        let cases = [
            ("/home/runner/.cache", true),
            ("/home/runner/.cache/pip", true),
            ("/home/runner/.cache/pip/http/x", true),
            (
                "/home/runner/.cache/pip/wheels/a8/d7/fe/0/origin.json",
                true,
            ),
            ("/home/runner/.cache/other/x", false),
            ("/home/runner/.cache/gh/token", false),
            ("/home/runner/.config/pip/pip.conf", false),
            ("/home/runner/.pypirc", false),
            ("/home/runner/.ssh/id_rsa", false),
        ];
        for (path, want) in cases {
            assert_eq!(read(path), want, "{path}");
        }
        let write = |p: &str| {
            let obj = Object::Path(PathObj {
                literal: vec![],
                abs: p.as_bytes().to_vec(),
                resolved: None,
            });
            matches!(
                pol.decide(AccessSet::of(Access::Write), &obj),
                Decision::Allow
            )
        };
        for (path, want) in [
            ("/home/runner/.cache", true),
            ("/home/runner/.cache/pip", true),
            ("/home/runner/.cache/pip/wheels/x.whl", true),
            ("/home/runner/.cache/x", false),
            ("/home/runner/.bashrc", false),
            ("/home/runner/.config/pip/pip.conf", false),
        ] {
            assert_eq!(write(path), want, "write {path}");
        }
    }
}
