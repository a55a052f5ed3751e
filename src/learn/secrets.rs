//! Narrowing a name pattern of the project's secret rule around names the profile uses
//! (docs/learning.md section 0, item 5): `*token*` without `token.go` is a few patterns
//! that together match every other name `*token*` matches, so the deny rule never loses a
//! name it protected (`deploy_token.txt`) because the project has a `token.go`.
//!
//! How: the names of a pattern G other than U, split by their first character (Brzozowski
//! derivatives): those whose first character is not U's first (`[!t]*token*`, `token*`
//! less...), and U's first character followed by the names of G's derivative other than
//! the rest of U. A derivative of a pattern made of literals, `?`, `*` and `[!...]` is a set
//! of its suffixes, so the result stays small: at most a few patterns per character of U.
//!
//! Pure: text in, text out.

/// One element of a name pattern.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Tok {
    Lit(char),
    /// `?`
    Any,
    /// `*`
    Star,
    /// `[!abc]`: one character not among these.
    Not(Vec<char>),
}

type Pat = Vec<Tok>;

/// More patterns than this for one name: keep the name whole instead (fail closed).
const MAX_PATTERNS: usize = 64;

/// Characters a used name may have for narrowing (literal in every pattern position).
fn plain(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')
}

fn parse(pat: &str) -> Option<Pat> {
    let mut out = Vec::new();
    let mut it = pat.chars().peekable();
    while let Some(c) = it.next() {
        match c {
            '*' => out.push(Tok::Star),
            '?' => out.push(Tok::Any),
            '[' => {
                if it.next() != Some('!') {
                    return None;
                }
                let mut set = Vec::new();
                loop {
                    match it.next()? {
                        ']' if !set.is_empty() => break,
                        c if plain(c) => set.push(c),
                        _ => return None,
                    }
                }
                out.push(Tok::Not(set));
            }
            c if plain(c) => out.push(Tok::Lit(c)),
            _ => return None,
        }
    }
    Some(out)
}

fn render(p: &[Tok]) -> String {
    let mut s = String::new();
    for t in p {
        match t {
            Tok::Lit(c) => s.push(*c),
            Tok::Any => s.push('?'),
            Tok::Star => s.push('*'),
            Tok::Not(set) => {
                s.push_str("[!");
                // `-` last: a literal there, never a range.
                let mut set = set.clone();
                set.sort_by_key(|c| *c == '-');
                s.extend(set);
                s.push(']');
            }
        }
    }
    s
}

fn cons(t: Tok, rest: &[Tok]) -> Pat {
    let mut p = Vec::with_capacity(rest.len() + 1);
    p.push(t);
    p.extend_from_slice(rest);
    p
}

/// The names of `p` that start with a character other than `c`.
fn first_not(p: &[Tok], c: char) -> Vec<Pat> {
    match p.split_first() {
        None => vec![],
        Some((Tok::Lit(d), _)) => {
            if *d == c {
                vec![]
            } else {
                vec![p.to_vec()]
            }
        }
        Some((Tok::Any, r)) => vec![cons(Tok::Not(vec![c]), r)],
        Some((Tok::Not(set), r)) => {
            if set.contains(&c) {
                vec![p.to_vec()]
            } else {
                let mut set = set.clone();
                set.push(c);
                vec![cons(Tok::Not(set), r)]
            }
        }
        Some((Tok::Star, r)) => {
            let mut out = vec![cons(Tok::Not(vec![c]), p)];
            out.extend(first_not(r, c));
            out
        }
    }
}

/// The names of `p` that are not empty.
fn nonempty(p: &[Tok]) -> Vec<Pat> {
    match p.split_first() {
        None => vec![],
        Some((Tok::Star, r)) => {
            let mut out = vec![cons(Tok::Any, p)];
            out.extend(nonempty(r));
            out
        }
        Some(_) => vec![p.to_vec()],
    }
}

/// The derivative of `p` by `c`: the rests of its names that start with `c`.
fn derive(p: &[Tok], c: char) -> Vec<Pat> {
    match p.split_first() {
        None => vec![],
        Some((Tok::Lit(d), r)) => {
            if *d == c {
                vec![r.to_vec()]
            } else {
                vec![]
            }
        }
        Some((Tok::Any, r)) => vec![r.to_vec()],
        Some((Tok::Not(set), r)) => {
            if set.contains(&c) {
                vec![]
            } else {
                vec![r.to_vec()]
            }
        }
        Some((Tok::Star, r)) => {
            let mut out = vec![p.to_vec()];
            out.extend(derive(r, c));
            out
        }
    }
}

/// The names of any of `set` other than `u`, each pattern prefixed with `prefix`.
fn without(set: Vec<Pat>, u: &[char], prefix: &mut Pat, out: &mut Vec<Pat>) {
    let Some((&c, rest)) = u.split_first() else {
        for p in &set {
            for q in nonempty(p) {
                out.push([prefix.as_slice(), &q].concat());
            }
        }
        return;
    };
    // The name that is `prefix` itself (shorter than the used name).
    if !prefix.is_empty() && set.iter().any(|p| matches(p, &[])) {
        out.push(prefix.clone());
    }
    let mut next: Vec<Pat> = Vec::new();
    for p in &set {
        for q in first_not(p, c) {
            out.push([prefix.as_slice(), &q].concat());
        }
        next.extend(derive(p, c));
    }
    next.sort();
    next.dedup();
    if next.is_empty() || out.len() > MAX_PATTERNS {
        return;
    }
    prefix.push(Tok::Lit(c));
    without(next, rest, prefix, out);
    prefix.pop();
}

/// Name patterns that together match exactly the names `pat` matches but `used` (literal
/// names, each matched by `pat`). `None` when `pat` or a name has characters this does not
/// handle, or the result would be too long: the caller keeps `pat` whole.
pub fn except(pat: &str, used: &[&str]) -> Option<Vec<String>> {
    let mut set = vec![parse(pat)?];
    for u in used {
        let u: Vec<char> = u.chars().collect();
        if !u.iter().all(|c| plain(*c)) {
            return None;
        }
        let mut next = Vec::new();
        for p in set {
            if matches(&p, &u) {
                without(vec![p], &u, &mut Vec::new(), &mut next);
            } else {
                next.push(p);
            }
        }
        next.sort();
        next.dedup();
        if next.len() > MAX_PATTERNS {
            return None;
        }
        set = next;
    }
    Some(prune(set).iter().map(|p| render(p)).collect())
}

/// `set` without the patterns another one of it already covers (`secret.txsecret*` beside
/// `secret.tx[!t]*`), so the deny rule stays readable.
fn prune(set: Vec<Pat>) -> Vec<Pat> {
    let mut keep: Vec<Pat> = Vec::new();
    for (i, p) in set.iter().enumerate() {
        let covered = set.iter().enumerate().any(|(j, q)| {
            j != i && included(p, q) && (j < i || !included(q, p)) && {
                // A pattern covered only by one dropped before stays.
                j > i || keep.contains(q)
            }
        });
        if !covered {
            keep.push(p.clone());
        }
    }
    keep
}

/// Does every name of `e` match `f`? Explores pairs of derivative sets over the characters
/// the two patterns name, plus one they do not.
fn included(e: &Pat, f: &Pat) -> bool {
    use std::collections::BTreeSet;
    let mut alphabet: BTreeSet<char> = BTreeSet::new();
    for t in e.iter().chain(f.iter()) {
        match t {
            Tok::Lit(c) => {
                alphabet.insert(*c);
            }
            Tok::Not(set) => alphabet.extend(set.iter().copied()),
            Tok::Any | Tok::Star => {}
        }
    }
    // A character no pattern names (`plain` never admits a control character).
    alphabet.insert('\u{1}');
    let start = (BTreeSet::from([e.clone()]), BTreeSet::from([f.clone()]));
    let mut seen = BTreeSet::new();
    let mut todo = vec![start];
    while let Some((es, fs)) = todo.pop() {
        if !seen.insert((es.clone(), fs.clone())) {
            continue;
        }
        if es.iter().any(|p| matches(p, &[])) && !fs.iter().any(|p| matches(p, &[])) {
            return false;
        }
        if seen.len() > 4096 {
            return false;
        }
        for &c in &alphabet {
            let e2: BTreeSet<Pat> = es.iter().flat_map(|p| derive(p, c)).collect();
            if e2.is_empty() {
                continue;
            }
            let f2: BTreeSet<Pat> = fs.iter().flat_map(|p| derive(p, c)).collect();
            todo.push((e2, f2));
        }
    }
    true
}

/// Does `p` match the name `u`?
fn matches(p: &[Tok], u: &[char]) -> bool {
    match (p.split_first(), u.split_first()) {
        (None, None) => true,
        (Some((Tok::Star, r)), _) => matches(r, u) || (!u.is_empty() && matches(p, &u[1..])),
        (None, Some(_)) | (Some(_), None) => false,
        (Some((t, r)), Some((c, ur))) => {
            let one = match t {
                Tok::Lit(d) => d == c,
                Tok::Any => true,
                Tok::Not(set) => !set.contains(c),
                Tok::Star => unreachable!("handled above"),
            };
            one && matches(r, ur)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn matcher(pats: &[String]) -> globset::GlobSet {
        let mut b = globset::GlobSetBuilder::new();
        for p in pats {
            b.add(crate::profile::parse::glob_builder(p).build().unwrap());
        }
        b.build().unwrap()
    }

    #[test]
    fn a_used_name_leaves_and_nothing_else_does() {
        let out = except("*token*", &["token.go"]).unwrap();
        let m = matcher(&out);
        assert!(!m.is_match("token.go"));
        for name in [
            "deploy_token.txt",
            "token",
            "token.g",
            "token.go2",
            "xtoken.go",
            "tokens",
        ] {
            assert!(m.is_match(name), "{name} in {out:?}");
        }
        assert!(!m.is_match("tok.go"));
        let out = except("*secret*", &["secrets.rs", "secret"]).unwrap();
        let m = matcher(&out);
        assert!(!m.is_match("secrets.rs") && !m.is_match("secret"));
        assert!(m.is_match("app_secret.json") && m.is_match("secrets.rs~"));
        let out = except(".env.*", &[".env.example"]).unwrap();
        let m = matcher(&out);
        assert!(!m.is_match(".env.example") && m.is_match(".env.production"));
        assert!(except("*token*", &["a b"]).is_none());
    }

    fn name() -> impl Strategy<Value = String> {
        proptest::string::string_regex("[a-z.]{0,7}").unwrap()
    }

    proptest! {
        /// The narrowed patterns match exactly what the pattern matched but the used names.
        #[test]
        fn except_is_exact(
            pat in prop::sample::select(vec!["*token*", "*.pem", ".env.*", "id_rsa*", "*e*e*", "?a*"]),
            fills in prop::collection::vec(prop::collection::vec(name(), 3), 1..3),
            probes in prop::collection::vec(name(), 1..40),
        ) {
            let g = crate::profile::parse::glob_builder(pat).build().unwrap().compile_matcher();
            // Used names made from the pattern, each `*` or `?` filled in.
            let made: Vec<String> = fills
                .iter()
                .map(|f| {
                    let mut i = 0;
                    pat.chars()
                        .map(|c| match c {
                            '*' => { i += 1; f[(i - 1) % 3].clone() }
                            '?' => { i += 1; f[(i - 1) % 3].chars().next().unwrap_or('q').to_string() }
                            c => c.to_string(),
                        })
                        .collect()
                })
                .collect();
            let used: Vec<&str> = made.iter().map(String::as_str).filter(|u| g.is_match(u)).collect();
            prop_assume!(!used.is_empty());
            let Some(out) = except(pat, &used) else { return Ok(()); };
            let m = matcher(&out);
            let near: Vec<String> = used
                .iter()
                .flat_map(|u| {
                    let n = u.len();
                    [format!("{u}x"), format!("x{u}"), u[n.min(1)..].to_string(), u[..n.saturating_sub(1)].to_string()]
                })
                .collect();
            for p in probes.iter().chain(near.iter()).map(String::as_str).chain(used.iter().copied()) {
                let want = g.is_match(p) && !used.contains(&p);
                prop_assert_eq!(m.is_match(p), want, "{} in {:?}", p, out);
            }
        }
    }
}
