//! `sbx check`, `sbx diff`, `sbx profiles`, `sbx syscalls`, and loading a profile for enforce.

use std::io::Write;
use std::path::Path;

use super::{CheckArgs, DiffArgs, ProfilesArgs, SyscallsArgs, exit};
use crate::arch::{Arch, Class};
use crate::policy::{CompiledPolicy, LoadError};
use crate::profile::parse::parse_str;
use crate::profile::render::render;
use crate::profile::snippets;
use crate::profile::vars::Env;

/// The variables of this run: `${CWD}` = the current directory, `${HOME}`, `${TMPDIR}`
/// (default /tmp), and every environment variable by name.
pub fn current_env() -> Env {
    let mut env = Env::default();
    for (k, v) in std::env::vars_os() {
        if let (Some(k), Some(v)) = (k.to_str(), v.to_str()) {
            env.vars.insert(k.to_string(), v.to_string());
        }
    }
    env.cwd = std::env::current_dir()
        .map(|d| d.to_string_lossy().into_owned())
        .unwrap_or_default();
    env.home = std::env::var("HOME").unwrap_or_default();
    env.tmpdir = std::env::var("TMPDIR")
        .ok()
        .filter(|t| !t.is_empty())
        .unwrap_or_else(|| "/tmp".into());
    // `${NAMESERVERS}` (tcp/udp rules only) is always the resolv.conf of this machine, never
    // an environment variable of that name: the workload's environment must not widen it.
    let servers: Vec<String> = nameservers().iter().map(ToString::to_string).collect();
    env.vars.insert("NAMESERVERS".into(), servers.join(" "));
    // `${UID}` (learned from `/run/user/<uid>`) is the real uid sbx runs with, like the trace
    // header's, never an environment variable of that name.
    env.vars
        .insert("UID".into(), nix::unistd::getuid().to_string());
    env
}

/// The `nameserver` addresses of this machine's /etc/resolv.conf (none if unreadable).
pub fn nameservers() -> Vec<std::net::IpAddr> {
    crate::dns::nameservers(&std::fs::read_to_string("/etc/resolv.conf").unwrap_or_default())
}

/// Read a profile file.
pub fn read_profile(path: &Path) -> anyhow::Result<String> {
    std::fs::read_to_string(path).map_err(|e| {
        let hint = if e.kind() == std::io::ErrorKind::NotFound {
            " (hint: make one with `sbx record -- CMD` then `sbx learn trace.bin > PROFILE`)"
        } else {
            ""
        };
        anyhow::anyhow!("cannot read profile {}: {e}{hint}", path.display())
    })
}

/// Parse, resolve includes and compile a profile against `env`. Errors carry `file:line:col`;
/// with `context` (`sbx check`) every parse error is shown with its source line, otherwise
/// (enforce) the first one is given on one line.
pub fn load_policy(
    path: &Path,
    text: &str,
    env: &Env,
    context: bool,
) -> anyhow::Result<CompiledPolicy> {
    let name = path.display().to_string();
    CompiledPolicy::load(&name, text, env).map_err(|e| match e {
        LoadError::Parse(p) if context => {
            anyhow::anyhow!("{}", p.render_with_source(text).trim_end())
        }
        LoadError::Parse(p) => {
            let first = p.0.first().map(ToString::to_string).unwrap_or_default();
            let more = p.0.len().saturating_sub(1);
            let more = if more > 0 {
                format!(" (and {more} more error(s))")
            } else {
                String::new()
            };
            anyhow::anyhow!("{first}{more}; `sbx check {name}` shows them in context")
        }
        e => anyhow::anyhow!("{e}"),
    })
}

pub fn run_check(a: CheckArgs) -> anyhow::Result<u8> {
    let text = read_profile(&a.profile)?;
    let name = a.profile.display().to_string();
    // All errors in one pass: the syntax errors, then what the lines without one would fail
    // on (an unknown snippet, an include cycle).
    if let Err(errors) = parse_str(&name, &text) {
        eprintln!("{}", errors.render_with_source(&text).trim_end());
        let bad: std::collections::BTreeSet<u32> = errors.0.iter().map(|e| e.span.line).collect();
        let rest: Vec<&str> = text
            .split('\n')
            .enumerate()
            .map(|(i, l)| {
                let n = u32::try_from(i + 1).unwrap_or(u32::MAX);
                if bad.contains(&n) { "" } else { l }
            })
            .collect();
        if let Ok(p) = parse_str(&name, &rest.join("\n"))
            && let Err(e) = crate::profile::snippets::resolve(&p, &name)
        {
            eprintln!("\n{e}");
        }
        return Ok(exit::INVALID);
    }
    match load_policy(&a.profile, &text, &current_env(), true) {
        Ok(p) => {
            let n = parse_str(&a.profile.display().to_string(), &text)
                .map(|p| p.rules.len())
                .unwrap_or(0);
            let g = p.allowed_syscalls().len();
            println!(
                "{}: ok ({n} rule{}, {g} allowed gated syscall{})",
                a.profile.display(),
                if n == 1 { "" } else { "s" },
                if g == 1 { "" } else { "s" },
            );
            Ok(exit::OK)
        }
        Err(e) => {
            eprintln!("{e:#}");
            Ok(exit::INVALID)
        }
    }
}

pub fn run_diff(a: DiffArgs) -> anyhow::Result<u8> {
    let parse = |p: &Path| -> anyhow::Result<crate::profile::Profile> {
        let text = read_profile(p)?;
        parse_str(&p.display().to_string(), &text)
            .map_err(|e| anyhow::anyhow!("{}", e.render_with_source(&text).trim_end()))
    };
    let (old, new) = (parse(&a.old)?, parse(&a.new)?);
    // The exit status says whether what the profiles allow differs: comments (provenance,
    // learn's WARNINGs) are shown in the diff but do not count.
    let rules_only = |p: &crate::profile::Profile| {
        let mut p = p.clone();
        p.header.clear();
        for r in &mut p.rules {
            r.comments.clear();
        }
        render(&p)
    };
    if rules_only(&old) == rules_only(&new) {
        if render(&old) != render(&new) && super::chatty() {
            eprintln!("sbx: the profiles differ only in comments");
        }
        return Ok(exit::OK);
    }
    // Profiles quote what they name, but comments and C1 or bidi characters in quotes would
    // reach the terminal as they are.
    let safe = |p: &crate::profile::Profile| crate::show::terminal_text(&render(p)).into_owned();
    let (old_text, new_text) = (safe(&old), safe(&new));
    let color = a.color.enabled(&std::io::stdout());
    print!(
        "{}",
        crate::diff::unified(
            &old_text,
            &new_text,
            &a.old.display().to_string(),
            &a.new.display().to_string(),
            color
        )
    );
    Ok(1)
}

pub fn run_profiles(a: ProfilesArgs) -> anyhow::Result<u8> {
    // Write through io::Write: print! panics on a closed pipe.
    // See: tests/trace_cli.rs::syscalls_into_a_closed_pipe_does_not_panic
    let mut out = std::io::stdout().lock();
    match a.name {
        Some(n) => match snippets::snippet(&n) {
            Some(text) => out.write_all(text.as_bytes())?,
            None => {
                return super::usage_error(&format!(
                    "unknown snippet {n:?} (shipped: {})",
                    snippets::names().join(", ")
                ));
            }
        },
        None => {
            for n in snippets::names() {
                let text = snippets::snippet(n).unwrap_or("");
                let about = text
                    .lines()
                    .find_map(|l| l.strip_prefix("# ").filter(|l| !l.trim().is_empty()))
                    .unwrap_or("");
                writeln!(out, "{n:<8} {about}")?;
            }
        }
    }
    Ok(exit::OK)
}

pub fn run_syscalls(a: SyscallsArgs) -> anyhow::Result<u8> {
    let arch = Arch::native();
    let mut out = std::io::stdout().lock();
    for d in arch.table() {
        if a.stopped {
            if matches!(d.class, Class::Checked | Class::Gated | Class::Creds) {
                writeln!(out, "{}", d.name)?;
            }
        } else {
            writeln!(out, "{:<24} {:>4} {:?}", d.name, d.nr, d.class)?;
        }
    }
    Ok(exit::OK)
}
