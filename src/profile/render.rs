//! [`Profile`] -> canonical text.
//!
//! Layout: the header comments, a blank line, the includes sorted by name, then the `deny`
//! rules (kept together at the top so a reviewer sees them), then the allow rules grouped by
//! verb; inside a group rules are sorted by pattern. A rule's comments stay directly above it.
//! Equal profiles render byte-identically, and `parse_str(render(p))` equals `p` up to spans
//! and order (see [`Profile::canonical`]).
//!
//! Pure: no I/O.

use std::borrow::Cow;
use std::fmt::Write as _;

use super::vars::raw_byte;
use super::{Effect, Pattern, Profile, Proto, Rule, Span};

impl Profile {
    /// A copy with every span zeroed, order kept.
    pub fn without_spans(&self) -> Profile {
        let mut p = self.clone();
        for inc in &mut p.includes {
            inc.span = Span::default();
        }
        for r in &mut p.rules {
            r.span = Span::default();
        }
        p
    }

    /// A copy without spans, includes and rules in render order: two profiles that render to
    /// the same text have equal canonical forms.
    pub fn canonical(&self) -> Profile {
        let mut p = self.without_spans();
        p.includes.sort_by(|a, b| a.name.cmp(&b.name));
        p.rules.sort_by(|a, b| sort_key(a).cmp(&sort_key(b)));
        p
    }
}

fn sort_key(r: &Rule) -> (u8, super::Verb, &Pattern, &[String], &[String]) {
    // Program definitions first (they name what `by` lists use), then deny rules.
    let group = match (r.effect, r.verb) {
        (_, super::Verb::Program | super::Verb::Launcher) => 0,
        (Effect::Deny, _) => 1,
        (Effect::Allow, _) => 2,
    };
    (group, r.verb, &r.pattern, &r.by, &r.comments)
}

/// Quote a word if the profile tokenizer would not read it back unchanged.
pub fn quote_if_needed(text: &str) -> Cow<'_, str> {
    let plain = !text.is_empty()
        && !text.starts_with('#')
        && !text
            .chars()
            .any(|c| c.is_whitespace() || c.is_control() || c == '"' || raw_byte(c).is_some());
    if plain {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c.is_control() && c.is_ascii() => {
                let _ = write!(out, "\\x{:02x}", u32::from(c));
            }
            c => match raw_byte(c) {
                Some(b) => {
                    let _ = write!(out, "\\x{b:02x}");
                }
                None => out.push(c),
            },
        }
    }
    out.push('"');
    Cow::Owned(out)
}

/// The rule as one line, without its comments: `deny read ${HOME}/.ssh/**`.
pub fn render_rule(r: &Rule) -> String {
    let mut out = String::new();
    if r.effect == Effect::Deny {
        out.push_str("deny ");
    }
    out.push_str(r.verb.name());
    out.push(' ');
    match &r.pattern {
        Pattern::Path(p) => out.push_str(&quote_if_needed(p)),
        Pattern::Net { proto, addr } => {
            out.push_str(match proto {
                Proto::Tcp => "tcp ",
                Proto::Udp => "udp ",
                Proto::Unix => "unix ",
                Proto::Netlink => "netlink ",
            });
            out.push_str(&quote_if_needed(addr));
        }
        Pattern::Syscall(name) | Pattern::Host(name) => out.push_str(&quote_if_needed(name)),
        Pattern::Program { name, path } => {
            out.push_str(name);
            out.push(' ');
            out.push_str(&quote_if_needed(path));
        }
        Pattern::Env(name) => out.push_str(name),
    }
    if !r.by.is_empty() {
        out.push_str(" by ");
        out.push_str(&r.by.join(","));
    }
    out
}

fn push_comment(out: &mut String, text: &str) {
    for line in text.split('\n') {
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line.is_empty() {
            out.push_str("#\n");
        } else {
            out.push_str("# ");
            out.push_str(line);
            out.push('\n');
        }
    }
}

/// Render a profile canonically (see the module doc).
pub fn render(p: &Profile) -> String {
    let canon = p.canonical();
    let mut sections: Vec<String> = Vec::new();
    if !canon.header.is_empty() {
        let mut s = String::new();
        for h in &canon.header {
            push_comment(&mut s, h);
        }
        sections.push(s);
    }
    if !canon.includes.is_empty() {
        let mut s = String::new();
        for inc in &canon.includes {
            s.push_str("include ");
            s.push_str(&inc.name);
            s.push('\n');
        }
        sections.push(s);
    }
    let mut current: Option<(Effect, Option<super::Verb>)> = None;
    for r in &canon.rules {
        // Deny rules form one section; allow rules one section per verb.
        let group = match r.effect {
            Effect::Deny => (Effect::Deny, None),
            Effect::Allow => (Effect::Allow, Some(r.verb)),
        };
        if current != Some(group) {
            sections.push(String::new());
            current = Some(group);
        }
        if let Some(s) = sections.last_mut() {
            for c in &r.comments {
                push_comment(s, c);
            }
            s.push_str(&render_rule(r));
            s.push('\n');
        }
    }
    sections.join("\n")
}

#[cfg(test)]
mod tests {
    use super::super::parse::{check_path_pattern, parse_str};
    use super::super::vars::path_to_text;
    use super::super::{Include, Verb};
    use super::*;
    use proptest::prelude::*;

    fn rule(effect: Effect, verb: Verb, pattern: Pattern, comments: &[&str]) -> Rule {
        Rule {
            effect,
            verb,
            pattern,
            comments: comments.iter().map(|s| s.to_string()).collect(),
            span: Span::default(),
            by: Vec::new(),
        }
    }

    #[test]
    fn renders_canonical_layout() {
        let p = Profile {
            header: vec!["learned by sbx".into(), String::new()],
            includes: vec![
                Include {
                    name: "node".into(),
                    span: Span::default(),
                },
                Include {
                    name: "base".into(),
                    span: Span::default(),
                },
            ],
            rules: vec![
                rule(
                    Effect::Allow,
                    Verb::Write,
                    Pattern::Path("${CWD}/out/**".into()),
                    &[],
                ),
                rule(
                    Effect::Allow,
                    Verb::Read,
                    Pattern::Path("/etc/b".into()),
                    &["why b"],
                ),
                rule(
                    Effect::Allow,
                    Verb::Read,
                    Pattern::Path("/a b/\u{10FFFF}".into()),
                    &[],
                ),
                rule(
                    Effect::Deny,
                    Verb::Read,
                    Pattern::Path("${HOME}/.ssh/**".into()),
                    &["WARNING: secrets"],
                ),
                rule(
                    Effect::Allow,
                    Verb::Connect,
                    Pattern::Net {
                        proto: Proto::Tcp,
                        addr: "127.0.0.1:8080".into(),
                    },
                    &[],
                ),
                rule(
                    Effect::Allow,
                    Verb::Syscall,
                    Pattern::Syscall("ptrace".into()),
                    &[],
                ),
            ],
        };
        let want = "# learned by sbx\n#\n\ninclude base\ninclude node\n\n\
                    # WARNING: secrets\ndeny read ${HOME}/.ssh/**\n\n\
                    read \"/a b/\\xff\"\n# why b\nread /etc/b\n\n\
                    write ${CWD}/out/**\n\n\
                    connect tcp 127.0.0.1:8080\n\n\
                    syscall ptrace\n";
        assert_eq!(render(&p), want);
        let back = parse_str("x", want).map_err(|e| e.to_string());
        assert_eq!(back.map(|b| b.canonical()), Ok(p.canonical()));
    }

    #[test]
    fn quoting_table() {
        let cases = [
            ("/etc/passwd", "/etc/passwd"),
            ("/a b", "\"/a b\""),
            ("/a\"b", "\"/a\\\"b\""),
            ("/a\\*", "/a\\*"),
            ("/a b\\*", "\"/a b\\\\*\""),
            ("#x", "\"#x\""),
            ("/a\tb\n", "\"/a\\tb\\n\""),
            ("/\u{7f}", "\"/\\x7f\""),
            ("/é", "/é"),
        ];
        for (text, want) in cases {
            assert_eq!(quote_if_needed(text), want, "{text:?}");
        }
    }

    #[test]
    fn render_is_order_independent() {
        let a = parse_str("a", "read /b\nread /a\ninclude z\ninclude y\n");
        let b = parse_str("b", "include y\nread /a\ninclude z\nread /b\n");
        assert_eq!(
            a.map(|p| render(&p)).map_err(|e| e.to_string()),
            b.map(|p| render(&p)).map_err(|e| e.to_string())
        );
    }

    fn segment() -> impl Strategy<Value = String> {
        prop_oneof![
            "[a-zA-Z0-9._#é\" -]{1,6}",
            Just("*".to_string()),
            Just("**".to_string()),
            Just("?x".to_string()),
            Just("{a,b c}".to_string()),
            Just("[ab]".to_string()),
            Just("\\*".to_string()),
            Just("\\$".to_string()),
            (0x80u8..=0xff).prop_map(|b| path_to_text(&[b]).into_owned()),
        ]
    }

    fn path() -> impl Strategy<Value = String> {
        (
            prop_oneof![Just(""), Just("${HOME}"), Just("${CWD}"), Just("**")],
            prop::collection::vec(segment(), 1..4),
        )
            .prop_map(|(prefix, segs)| format!("{prefix}/{}", segs.join("/")))
            .prop_filter("valid glob", |p| check_path_pattern(p).is_ok())
    }

    fn pattern_for(verb: Verb) -> BoxedStrategy<Pattern> {
        match verb {
            Verb::Connect | Verb::Bind | Verb::Send => prop_oneof![
                prop::sample::select(vec![
                    "1.2.3.4:80",
                    "*:53",
                    "[::1]:*",
                    "*:*",
                    "registry.npmjs.org:443",
                    "*.example.org:*",
                    "${NAMESERVERS}:53"
                ])
                .prop_map(|a| {
                    Pattern::Net {
                        proto: Proto::Tcp,
                        addr: a.to_string(),
                    }
                }),
                prop::sample::select(vec!["10.0.0.1:5353", "*:53"]).prop_map(|a| Pattern::Net {
                    proto: Proto::Udp,
                    addr: a.to_string()
                }),
                path().prop_map(|a| Pattern::Net {
                    proto: Proto::Unix,
                    addr: a
                }),
                "@[a-z/ ]{1,8}".prop_map(|a| Pattern::Net {
                    proto: Proto::Unix,
                    addr: a
                }),
            ]
            .boxed(),
            // Only gated syscall names parse (see parse.rs).
            Verb::Syscall => prop::sample::select(
                crate::arch::Arch::X86_64
                    .table()
                    .iter()
                    .filter(|d| d.class == crate::arch::Class::Gated)
                    .map(|d| d.name.to_string())
                    .collect::<Vec<_>>(),
            )
            .prop_map(Pattern::Syscall)
            .boxed(),
            Verb::Resolve => "(\\*\\*\\.)?([a-z0-9*-]{1,8}\\.){0,3}[a-z]{1,6}"
                .prop_filter("valid name", |n| {
                    crate::dns::check_name_pattern(n).is_ok_and(|c| &c == n)
                })
                .prop_map(Pattern::Host)
                .boxed(),
            Verb::Env => "[A-Z_][A-Z0-9_*?]{0,8}".prop_map(Pattern::Env).boxed(),
            Verb::Program => ("[a-z][a-z0-9_.+-]{0,8}", path())
                .prop_map(|(name, path)| Pattern::Program { name, path })
                .boxed(),
            _ => path().prop_map(Pattern::Path).boxed(),
        }
    }

    fn any_rule() -> impl Strategy<Value = Rule> {
        (
            prop::sample::select(Verb::ALL.to_vec()),
            any::<bool>(),
            prop::collection::vec("[ -~]{0,12}", 0..3),
            prop::collection::btree_set("[a-z][a-z0-9_.+-]{0,6}", 0..3),
        )
            .prop_flat_map(|(verb, deny, comments, by)| {
                // `program` lines are never denied; only allow rules (not gated syscalls,
                // not program lines) carry a `by` list.
                let deny = deny && !matches!(verb, Verb::Program | Verb::Launcher | Verb::Env);
                let mut by: Vec<String> = if deny || matches!(verb, Verb::Program | Verb::Launcher)
                {
                    Vec::new()
                } else {
                    by.into_iter().collect()
                };
                // An env rule always names who may see the variable.
                if verb == Verb::Env && by.is_empty() {
                    by.push("npm".into());
                }
                pattern_for(verb).prop_map(move |pattern| Rule {
                    by: by.clone(),
                    effect: if deny { Effect::Deny } else { Effect::Allow },
                    verb,
                    pattern,
                    comments: comments.clone(),
                    span: Span::default(),
                })
            })
    }

    fn any_profile() -> impl Strategy<Value = Profile> {
        (
            prop::collection::vec("[ -~]{0,16}", 0..3),
            prop::collection::vec("[a-z][a-z0-9_.-]{0,8}", 0..3),
            prop::collection::vec(any_rule(), 0..8),
        )
            .prop_map(|(header, includes, rules)| Profile {
                header,
                includes: includes
                    .into_iter()
                    .map(|name| Include {
                        name,
                        span: Span::default(),
                    })
                    .collect(),
                rules,
            })
    }

    proptest! {
        #[test]
        fn round_trip(p in any_profile()) {
            let text = render(&p);
            let back = parse_str("rt", &text).map_err(|e| e.render_with_source(&text));
            prop_assert_eq!(back.clone().map(|b| b.canonical()), Ok(p.canonical()), "text:\n{}", text);
            // Rendering the parsed profile gives the same bytes.
            prop_assert_eq!(back.map(|b| render(&b)), Ok(text));
        }
    }
}
