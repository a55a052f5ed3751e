//! Which learned patterns of one verb another pattern of it already covers, without asking
//! every pair: learn drops a rule that a wider learned glob subsumes, and a trace with 20,000
//! distinct programs (each exec gives a `probe /**/NAME`) made the pairwise check take
//! minutes (issue 39 item 8).
//!
//! Globs are indexed by their literal directory prefix (up to the first segment with a `*`),
//! and those whose last segment is a plain name also by that name: a glob ending in a plain
//! name `N` subsumes only patterns whose last segment is literally `N` (the last segments are
//! always matched against each other, [`generalize::subsumes`]). A pattern asks only the
//! globs filed under its own directory prefixes and its last name, then `subsumes` decides as
//! before. Pure; the answers are those of the pairwise check (tested below).

use std::collections::{BTreeSet, HashMap};

use super::generalize;

/// The globs (patterns with a `*`) of a set, indexed for [`CoverIndex::covered`].
#[derive(Debug, Default)]
pub struct CoverIndex<'a> {
    /// By literal prefix (ending in `/`, or empty): globs ending in a plain name, by the name.
    named: HashMap<&'a str, HashMap<&'a str, Vec<&'a str>>>,
    /// By literal prefix: the other globs.
    other: HashMap<&'a str, Vec<&'a str>>,
}

/// A last segment globset can only match by equal text: no glob, escape or alternation
/// character at all.
fn plain(seg: &str) -> bool {
    !seg.is_empty() && !seg.contains(['*', '?', '[', ']', '{', '}', '\\', ',', '!'])
}

impl<'a> CoverIndex<'a> {
    pub fn new(patterns: &'a BTreeSet<String>) -> CoverIndex<'a> {
        let mut ix = CoverIndex::default();
        for w in patterns.iter().filter(|p| p.contains('*')) {
            let star = w.find('*').unwrap_or(w.len());
            let cut = w[..star].rfind('/').map_or(0, |i| i + 1);
            let prefix = &w[..cut];
            let last = w.rsplit('/').next().unwrap_or(w);
            if plain(last) {
                ix.named
                    .entry(prefix)
                    .or_default()
                    .entry(last)
                    .or_default()
                    .push(w);
            } else {
                ix.other.entry(prefix).or_default().push(w);
            }
        }
        ix
    }

    /// Does another glob of the set subsume `p`?
    pub fn covered(&self, p: &str) -> bool {
        let last = p.rsplit('/').next().unwrap_or(p);
        let name = generalize::literal_segment(last);
        // Every prefix a glob's literal prefix can be: empty, or `p` up to and with a `/`.
        let prefixes = std::iter::once(0).chain(p.match_indices('/').map(|(i, _)| i + 1));
        let covers = |w: &&str| *w != p && generalize::subsumes(w, p);
        prefixes.map(|cut| &p[..cut]).any(|prefix| {
            let named = name
                .as_deref()
                .and_then(|n| self.named.get(prefix).and_then(|by_name| by_name.get(n)));
            named.is_some_and(|ws| ws.iter().any(covers))
                || self
                    .other
                    .get(prefix)
                    .is_some_and(|ws| ws.iter().any(covers))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The pairwise check the index replaces.
    fn pairwise(set: &BTreeSet<String>, p: &str) -> bool {
        set.iter().filter(|w| w.contains('*')).any(|w| {
            let star = w.find('*').unwrap_or(w.len());
            let cut = w[..star].rfind('/').map_or(0, |i| i + 1);
            w != p && p.starts_with(&w[..cut]) && generalize::subsumes(w, p)
        })
    }

    fn set(items: &[&str]) -> BTreeSet<String> {
        items.iter().map(|s| (*s).to_string()).collect()
    }

    #[test]
    fn same_answers_as_pairwise() {
        let s = set(&[
            "/**/node",
            "/**/{node,npm}",
            "/usr/bin/node",
            "/usr/lib/**",
            "/usr/lib/x/y.so",
            "/usr/lib/*.so",
            "/usr/lib/a.so",
            "/opt/*/bin/run",
            "/opt/t1/bin/run",
            "/opt/t1/bin/run2",
            "${CWD}/src/*.rs",
            "${CWD}/src/main.rs",
            "${CWD}/src/a\\*b.rs",
            "/tmp/tmp*",
            "/tmp/tmpabc",
            "/tmp/tmp*x",
            "*",
            "rel",
            "/a/b/",
            "/a/*/",
            "/**",
            "/x/**/y/*",
            "/x/1/2/y/z",
            "/x/y/\\*",
        ]);
        for p in &s {
            assert_eq!(CoverIndex::new(&s).covered(p), pairwise(&s, p), "{p}");
        }
    }

    #[test]
    fn twenty_thousand_probes_stay_separate() {
        let s: BTreeSet<String> = (0..20_000)
            .map(|i| format!("/**/run{i}"))
            .chain(["/**/run1*".to_string()])
            .collect();
        let ix = CoverIndex::new(&s);
        let covered: Vec<&String> = s.iter().filter(|p| ix.covered(p)).collect();
        // `run1*` covers run1, run10..run19, run100.. and nothing else.
        assert_eq!(covered.len(), 1 + 10 + 100 + 1000 + 10_000);
        assert!(covered.iter().all(|p| p.starts_with("/**/run1")));
    }
}
