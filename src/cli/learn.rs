//! `sbx learn`: stream traces through the learner and render the profile.

use std::collections::BTreeSet;
use std::path::Path;

use anyhow::Context;

use super::{LearnArgs, exit};
use crate::arch::Class;
use crate::event::{EventKind, Object, PathObj};
use crate::learn::{LearnOptions, Learner, SHORTENING_INCLUDES, include_worth_trying};
use crate::policy::{CompiledPolicy, Decision};
use crate::profile::parse::parse_str;
use crate::profile::render::render;
use crate::profile::snippets;
use crate::profile::vars::Env;
use crate::profile::{Include, Profile, Span, Verb};

/// Shipped snippets chosen by what the trace executed.
fn detect_includes(exec_names: &BTreeSet<String>, dns: bool) -> Vec<String> {
    let mut inc = vec!["base".to_string()];
    if dns {
        inc.push("dns".into());
    }
    let has = |f: &dyn Fn(&str) -> bool| exec_names.iter().any(|n| f(n));
    if has(&|n| n == "sh" || n == "bash" || n == "dash") {
        inc.push("shell".into());
    }
    if has(&|n| n == "node" || n == "npm" || n == "npx") {
        inc.push("node".into());
    }
    if has(&|n| n.starts_with("python")) {
        inc.push("python".into());
    }
    if has(&|n| n == "git" || n.starts_with("git-")) {
        inc.push("git".into());
    }
    if has(&|n| n == "cargo" || n == "rustc") {
        inc.push("cargo".into());
    }
    if has(&|n| n == "pnpm" || n == "pnpx" || n == "pnpm.cjs") {
        inc.push("pnpm".into());
    }
    if has(&|n| n == "uv" || n == "uvx") {
        inc.push("uv".into());
    }
    if has(&|n| n == "yarn" || n == "yarnpkg" || n == "yarn.js") {
        inc.push("yarn".into());
    }
    inc
}

/// The literal directory a glob starts with: the text before its first unescaped glob
/// metacharacter, cut at the last `/` (escapes removed).
fn literal_dir(glob: &str) -> String {
    let mut lit = String::new();
    let mut it = glob.chars();
    let mut complete = true;
    while let Some(c) = it.next() {
        match c {
            '\\' => lit.extend(it.next()),
            '*' | '?' | '[' | '{' => {
                complete = false;
                break;
            }
            c => lit.push(c),
        }
    }
    if complete {
        return lit;
    }
    match lit.rfind('/') {
        Some(i) => lit[..i].to_string(),
        None => String::new(),
    }
}

/// The `already_allowed` predicate: a rule the includes already admit is not repeated.
/// A literal rule is decided exactly. For a glob, the includes must admit unseen names at two
/// depths below its literal directory: that holds for `dir/**`-style include rules, which are
/// the ones that make learned globs redundant. (A wrong "covered" would only cost a false alarm
/// at enforce time, never a wider profile.)
fn already_allowed(includes: &[String], env: Env) -> anyhow::Result<crate::learn::AllowedFn> {
    let prof = Profile {
        header: vec![],
        includes: includes
            .iter()
            .map(|n| Include {
                name: n.clone(),
                span: Span::default(),
            })
            .collect(),
        rules: vec![],
    };
    let resolved = snippets::resolve(&prof, "<includes>")?;
    let policy = CompiledPolicy::compile(&resolved, &env)?;
    Ok(Box::new(move |verb, pattern| {
        use crate::event::Access;
        // A probe (a failed read or exec) is covered only when both would be admitted.
        let accesses: &[Access] = match verb {
            Verb::Own => &[Access::Read, Access::Write, Access::Delete],
            Verb::Create => &[Access::Create],
            Verb::Read => &[Access::Read],
            Verb::Probe => &[Access::Read, Access::Exec],
            Verb::Write => &[Access::Write],
            Verb::Delete => &[Access::Delete],
            Verb::Exec => &[Access::Exec],
            Verb::Stat => &[Access::Stat],
            _ => return false,
        };
        let Ok(glob) = crate::profile::vars::expand(pattern, &env) else {
            return false;
        };
        let dir = literal_dir(&glob);
        let is_literal = dir.len() == glob.len() && !glob.contains('\\');
        let samples: Vec<String> = if is_literal {
            vec![dir]
        } else {
            vec![
                format!("{dir}/.sbx-sample-q7"),
                format!("{dir}/.sbx-sample-q7/z9/.sbx-sample"),
            ]
        };
        samples.iter().all(|p| {
            let obj = Object::Path(PathObj {
                literal: vec![],
                abs: p.as_bytes().to_vec(),
                resolved: None,
            });
            accesses.iter().all(
                |&a| match policy.decide(crate::event::AccessSet::of(a), &obj) {
                    Decision::Allow => true,
                    Decision::AllowIfAbsent => verb == Verb::Probe,
                    Decision::Deny { .. } => false,
                },
            )
        })
    }))
}

pub fn run(a: LearnArgs) -> anyhow::Result<u8> {
    // First pass over headers and exec events: the variables and the includes to use.
    let mut first_header = None;
    let mut exec_names = BTreeSet::new();
    // The workload talked to a DNS server (an answer was read): `include dns`.
    let mut dns = false;
    // The tool homes (PYENV_ROOT...) the runs' execs show, for what the snippets cover.
    let mut homes = std::collections::BTreeMap::new();
    for t in &a.traces {
        // See: tests/trace_cli.rs::learn_warns_once_about_a_truncated_trace
        let mut seen = crate::learn::homes::Homes::default();
        let h = super::show::scan(t, false, |_, ev| {
            match &ev.kind {
                EventKind::Exec(x) => {
                    let name = x.path.rsplit(|&b| b == b'/').next().unwrap_or(&x.path);
                    exec_names.insert(String::from_utf8_lossy(name).into_owned());
                }
                EventKind::Resolved(r) => {
                    dns |= matches!(r.source, crate::event::ResolveSource::Dns(_));
                }
                _ => {}
            }
            seen.observe(ev);
            Ok(())
        })?;
        for (k, v) in seen.values() {
            homes.entry(k).or_insert(v);
        }
        first_header.get_or_insert(h);
    }
    let mut includes = if a.no_includes {
        vec![]
    } else if a.includes.is_empty() {
        detect_includes(&exec_names, dns)
    } else {
        a.includes.clone()
    };
    for n in &includes {
        anyhow::ensure!(
            snippets::snippet(n).is_some(),
            "unknown snippet {n:?} (shipped: {})",
            snippets::names().join(", ")
        );
    }
    let h = first_header.context("no trace given")?;
    let env = Env {
        cwd: String::from_utf8_lossy(&h.cwd).into_owned(),
        home: String::from_utf8_lossy(&h.home).into_owned(),
        tmpdir: String::from_utf8_lossy(&h.tmpdir).into_owned(),
        vars: homes,
    };
    let base = match &a.base {
        Some(p) => {
            let text = super::profile::read_profile(p)?;
            Some(
                parse_str(&p.display().to_string(), &text)
                    .map_err(|e| anyhow::anyhow!("{}", e.render_with_source(&text).trim_end()))?,
            )
        }
        None => None,
    };
    let arch = h.arch;
    // The traces are folded once; the includes only decide what the profile leaves out.
    let mut learner = Learner::new(LearnOptions {
        dir_threshold: a.threshold,
        already_allowed: None,
        includes: includes.clone(),
        base,
        // An unknown number (`syscall_N`) is never allowed, so no rule is learned for it.
        is_gated: Some(Box::new(move |name: &str| {
            arch.by_name(name)
                .is_some_and(|d| matches!(d.class, Class::Gated | Class::Spawn))
        })),
        nameservers: super::profile::nameservers(),
        answers_are_queries: true,
        project_area: true,
        scope: !a.no_scope,
    });
    for t in &a.traces {
        let mut begun = false;
        let mut evidence = crate::learn::evidence::Evidence::default();
        super::show::for_each_event(t, |h, ev| {
            if !begun {
                learner.begin_trace(h);
                evidence = crate::learn::evidence::Evidence::for_run(&h.home, &h.cwd);
                begun = true;
            }
            learner.observe(ev);
            evidence.observe(ev);
            Ok(())
        })?;
        // See: tests/trace_cli.rs::learn_says_when_the_evidence_is_thin
        for w in evidence.warnings() {
            eprintln!("sbx: warning: {}: {w}", t.display());
        }
        if !begun {
            learner.begin_trace(super::show::open_trace(t)?.header());
        }
    }
    let finish = |includes: &[String]| -> anyhow::Result<Profile> {
        let allowed = if includes.is_empty() {
            None
        } else {
            Some(already_allowed(includes, env.clone())?)
        };
        Ok(learner.finish_with(includes, allowed.as_ref()))
    };
    let mut profile = finish(&includes)?;
    let mut text = render(&profile);
    if a.includes.is_empty() && !a.no_includes {
        // `ssl` and `tmp` only where they make the profile shorter. See: docs/real-world.md
        for name in SHORTENING_INCLUDES {
            // A snippet that does not compile here (`tmp` when TMPDIR is above HOME) is not
            // a candidate.
            let Ok(covered) = already_allowed(&[name.to_string()], env.clone()) else {
                continue;
            };
            if !include_worth_trying(name, &profile, &h, &*covered) {
                continue;
            }
            let mut more = includes.clone();
            more.push(name.to_string());
            let candidate = finish(&more)?;
            let candidate_text = render(&candidate);
            if candidate_text.lines().count() < text.lines().count() {
                includes = more;
                profile = candidate;
                text = candidate_text;
            }
        }
    }
    if a.annotate {
        text = super::explain::annotate(&text, &a.traces, a.base.as_deref())?;
    }
    write_output(a.output.as_deref(), &text)?;
    Ok(exit::OK)
}

/// Write to a file (atomically, via a temp file in the same directory) or stdout.
pub fn write_output(path: Option<&Path>, text: &str) -> anyhow::Result<()> {
    match path {
        Some(p) => OutputFile::create(p)?.write(text),
        None => {
            use std::io::Write;
            std::io::stdout().write_all(text.as_bytes())?;
            Ok(())
        }
    }
}

/// An output file (a profile, a report) opened before the work that fills it, so a path that
/// cannot be written is found before anything runs, and written atomically at the end: into a
/// temporary file with a unique name beside it, renamed over it. A device, a pipe or a link
/// (`-o /dev/null`, `-o /dev/stdout`) is written in place: a rename over it would replace the
/// device node itself. Errors name the path the user gave.
/// See: tests/trace_cli.rs::outputs_that_are_not_files_are_written_in_place
#[derive(Debug)]
pub struct OutputFile {
    path: std::path::PathBuf,
    /// `None`: written in place.
    tmp: Option<tempfile::NamedTempFile>,
}

impl OutputFile {
    pub fn create(p: &Path) -> anyhow::Result<OutputFile> {
        if !super::replaceable(p) {
            std::fs::OpenOptions::new()
                .write(true)
                .open(p)
                .with_context(|| format!("cannot write {}", p.display()))?;
            return Ok(OutputFile {
                path: p.to_path_buf(),
                tmp: None,
            });
        }
        let dir = p
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let name = p.file_name().and_then(|f| f.to_str()).unwrap_or("out");
        // 0666 less the umask, as a plain create would make it (tempfile's default is 0600).
        let tmp = tempfile::Builder::new()
            .prefix(&format!(".{name}."))
            .suffix(".sbx-tmp")
            .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666))
            .tempfile_in(dir)
            .map_err(|e| {
                // tempfile's error names its temporary file: name the user's path instead.
                let text = e.to_string();
                let why = text.split(" at path ").next().unwrap_or(&text).to_string();
                anyhow::anyhow!("cannot write {}: {why}", p.display())
            })?;
        Ok(OutputFile {
            path: p.to_path_buf(),
            tmp: Some(tmp),
        })
    }

    pub fn write(self, text: &str) -> anyhow::Result<()> {
        use std::io::Write;
        let p = &self.path;
        match self.tmp {
            None => {
                std::fs::write(p, text).with_context(|| format!("cannot write {}", p.display()))
            }
            Some(mut tmp) => {
                tmp.write_all(text.as_bytes())
                    .and_then(|()| tmp.flush())
                    .with_context(|| format!("cannot write {}", p.display()))?;
                tmp.persist(p)
                    .map(drop)
                    .map_err(|e| e.error)
                    .with_context(|| format!("cannot write {}", p.display()))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literal_dir_of_globs() {
        assert_eq!(
            literal_dir("/usr/lib/x86_64-linux-gnu/libc.so.*"),
            "/usr/lib/x86_64-linux-gnu"
        );
        assert_eq!(literal_dir("/etc/passwd"), "/etc/passwd");
        assert_eq!(literal_dir("/a/b\\*c/**"), "/a/b*c");
        assert_eq!(literal_dir("/a/b\\*c/d*"), "/a/b*c");
    }

    #[test]
    fn includes_cover_globs_below_their_trees() {
        let env = Env {
            cwd: "/w".into(),
            home: "/h".into(),
            tmpdir: "/tmp".into(),
            vars: Default::default(),
        };
        let f = already_allowed(&["base".into()], env).unwrap();
        assert!(f(Verb::Read, "/usr/lib/x86_64-linux-gnu/libc.so.*"));
        assert!(f(Verb::Read, "/etc/ld.so.cache"));
        assert!(!f(Verb::Read, "/etc/*"));
        assert!(!f(Verb::Write, "/usr/lib/x86_64-linux-gnu/libc.so.*"));
        assert!(!f(Verb::Read, "${CWD}/in.txt"));
    }
}
