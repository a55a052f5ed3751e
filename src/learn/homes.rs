//! The tool homes of a recorded run (`${PYENV_ROOT}`, `${CARGO_HOME}`, `${RUSTUP_HOME}`:
//! [`crate::profile::vars::TOOL_HOMES`]), by evidence. The shipped snippets are rooted in
//! them, and learn must judge what a snippet covers with the values enforce will have. A
//! trace keeps the names of the workload's environment, not its values (values may be
//! secrets), so a value is taken from what only that home holds, where the variable was set
//! in the environment sbx started the run with (the first exec's: rustup's proxies set
//! `CARGO_HOME` for the toolchains they run, which enforce never sees):
//!
//! - `PYENV_ROOT`: pyenv's own command `X/libexec/pyenv` ran (every shim runs it);
//! - `RUSTUP_HOME`: a toolchain's program `X/toolchains/T/bin/N` ran;
//! - `CARGO_HOME`: the run touched `X/registry/{index,cache,src}/...` or cargo's locks
//!   `X/.package-cache`, `X/.global-cache` (rustup's proxies in `~/.cargo/bin` may live in
//!   another home than the one cargo uses: no evidence).
//!
//! A variable that was unset keeps its default (`${HOME}/.pyenv`), as the tools do; one set
//! without evidence too (the run did not use that home).
//!
//! Pure: paths and environment names in, values out.

use std::collections::BTreeMap;

use crate::profile::vars::{TOOL_HOMES, path_to_text};

/// What learn gathers from a trace's events to infer its tool homes.
#[derive(Debug, Clone, Default)]
pub struct Homes {
    /// The tool-home variables set in the first exec's environment (`None`: no exec yet).
    set: Option<Vec<&'static str>>,
    found: BTreeMap<&'static str, Vec<u8>>,
}

impl Homes {
    /// An exec of `path` (and its script identity) with environment names `env_names`.
    pub fn exec(&mut self, path: &[u8], program: Option<&[u8]>, env_names: &[Vec<u8>]) {
        if self.set.is_none() {
            self.set = Some(
                TOOL_HOMES
                    .iter()
                    .map(|(n, _)| *n)
                    .filter(|n| env_names.iter().any(|e| e == n.as_bytes()))
                    .collect(),
            );
        }
        for p in std::iter::once(path).chain(program) {
            if let Some(x) = before(p, &[b"libexec", b"pyenv"], true) {
                self.found.entry("PYENV_ROOT").or_insert_with(|| x.to_vec());
            }
            if let Some(x) = toolchain_home(p) {
                self.found
                    .entry("RUSTUP_HOME")
                    .or_insert_with(|| x.to_vec());
            }
        }
    }

    /// A path the run touched.
    pub fn path(&mut self, path: &[u8]) {
        let has = |n: &[u8]| path.windows(n.len()).any(|w| w == n);
        if self.found.contains_key("CARGO_HOME")
            || !(has(b"/registry/") || has(b"/.package-cache") || has(b"/.global-cache"))
        {
            return;
        }
        let x = [&b"index"[..], b"cache", b"src"]
            .iter()
            .find_map(|d| before(path, &[b"registry", d], false))
            .or_else(|| before(path, &[b".package-cache"], true))
            .or_else(|| before(path, &[b".global-cache"], true));
        if let Some(x) = x {
            self.found.insert("CARGO_HOME", x.to_vec());
        }
    }

    /// One event of the run: its exec or the paths its call touched.
    pub fn observe(&mut self, ev: &crate::event::Event) {
        use crate::event::{EventKind, Object};
        match &ev.kind {
            EventKind::Exec(x) => self.exec(&x.path, x.program.as_deref(), &x.env_names),
            EventKind::Syscall(s) => {
                for t in &s.targets {
                    if let Object::Path(p) = &t.object {
                        self.path(&p.abs);
                    }
                }
            }
            _ => {}
        }
    }

    /// The run's tool homes laid over `vars` (another machine's or the current process's
    /// variables): a home the run set and used takes its value, one the run left unset is
    /// removed (its default applies, as it did in the run), one set but unused stays.
    pub fn apply(&self, vars: &mut BTreeMap<String, String>) {
        let set = self.set.as_deref().unwrap_or_default();
        for (n, _) in TOOL_HOMES {
            if self.set.is_some() && !set.contains(n) {
                vars.remove(*n);
            }
        }
        vars.extend(self.values());
    }

    /// The values found for variables that were set.
    pub fn values(&self) -> BTreeMap<String, String> {
        let set = self.set.as_deref().unwrap_or_default();
        self.found
            .iter()
            .filter(|(n, _)| set.contains(n))
            .map(|(n, v)| (n.to_string(), path_to_text(v).into_owned()))
            .collect()
    }
}

/// The directory `X` of absolute `path` = `X/tail[0]/tail[1]/...`: the segments `tail` follow
/// X (at the end of the path when `end`); X is never `/`.
fn before<'p>(path: &'p [u8], tail: &[&[u8]], end: bool) -> Option<&'p [u8]> {
    if !path.starts_with(b"/") {
        return None;
    }
    let segs: Vec<&[u8]> = path.split(|&b| b == b'/').collect();
    let mut at = 0;
    for i in 2..segs.len() {
        at += 1 + segs[i - 1].len();
        let rest = &segs[i..];
        if rest.len() >= tail.len()
            && rest.iter().zip(tail).all(|(a, b)| a == b)
            && (!end || rest.len() == tail.len())
        {
            return Some(&path[..at]);
        }
    }
    None
}

/// `X` of `X/toolchains/T/bin/N`.
fn toolchain_home(path: &[u8]) -> Option<&[u8]> {
    let segs: Vec<&[u8]> = path.split(|&b| b == b'/').collect();
    let n = segs.len();
    (n >= 6 && segs[n - 4] == b"toolchains" && segs[n - 2] == b"bin").then(|| {
        let x_len: usize = segs[..n - 4].iter().map(|s| s.len() + 1).sum::<usize>() - 1;
        &path[..x_len]
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(n: &[&str]) -> Vec<Vec<u8>> {
        n.iter().map(|s| s.as_bytes().to_vec()).collect()
    }

    #[test]
    fn a_set_variable_takes_the_home_its_tool_used() {
        let mut h = Homes::default();
        h.exec(
            b"/usr/bin/bash",
            None,
            &names(&["PATH", "PYENV_ROOT", "RUSTUP_HOME", "CARGO_HOME"]),
        );
        // A shim, then pyenv itself; a plugin's shim directory is no evidence.
        h.exec(
            b"/root/.pyenv/plugins/pyenv-virtualenv/shims/python",
            None,
            &[],
        );
        h.exec(b"/root/.pyenv/libexec/pyenv", None, &[]);
        // rustup's proxy in another home than the one cargo uses.
        h.exec(b"/root/.cargo/bin/cargo", None, &[]);
        h.exec(
            b"/opt/rust/.rustup/toolchains/stable-x86_64/bin/cargo",
            None,
            &[],
        );
        h.path(b"/site/home/.cargo/registry/index/index.crates.io-1949cf8c6b5b557f/config.json");
        let v = h.values();
        assert_eq!(
            v.get("PYENV_ROOT").map(String::as_str),
            Some("/root/.pyenv")
        );
        assert_eq!(
            v.get("RUSTUP_HOME").map(String::as_str),
            Some("/opt/rust/.rustup")
        );
        assert_eq!(
            v.get("CARGO_HOME").map(String::as_str),
            Some("/site/home/.cargo")
        );
    }

    #[test]
    fn an_unset_variable_keeps_its_default_whatever_ran() {
        let mut h = Homes::default();
        h.exec(b"/usr/bin/bash", None, &names(&["PATH"]));
        // rustup's proxy sets CARGO_HOME for the toolchain: not the run's environment.
        h.exec(
            b"/r/.rustup/toolchains/s/bin/cargo",
            None,
            &names(&["CARGO_HOME"]),
        );
        h.path(b"/srv/cargo/registry/cache/x.crate");
        assert!(h.values().is_empty(), "{:?}", h.values());
    }

    #[test]
    fn the_runs_homes_replace_the_machines() {
        let mut h = Homes::default();
        h.exec(
            b"/usr/bin/bash",
            None,
            &names(&["PATH", "CARGO_HOME", "PYENV_ROOT"]),
        );
        h.path(b"/ci/cargo/registry/src/x/lib.rs");
        let mut vars: BTreeMap<String, String> = [
            ("CARGO_HOME", "/here/cargo"),
            ("RUSTUP_HOME", "/here/rustup"),
            ("PYENV_ROOT", "/here/pyenv"),
            ("UID", "0"),
        ]
        .into_iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
        h.apply(&mut vars);
        let get = |n: &str| vars.get(n).map(String::as_str);
        assert_eq!(get("CARGO_HOME"), Some("/ci/cargo"), "set and used");
        assert_eq!(get("RUSTUP_HOME"), None, "unset in the run: its default");
        assert_eq!(get("PYENV_ROOT"), Some("/here/pyenv"), "set, unused");
        assert_eq!(get("UID"), Some("0"));
    }

    #[test]
    fn evidence_is_a_whole_layout_never_the_root() {
        assert_eq!(
            before(b"/libexec/pyenv", &[b"libexec", b"pyenv"], true),
            None
        );
        assert_eq!(
            before(b"/x/libexec/pyenv/y", &[b"libexec", b"pyenv"], true),
            None
        );
        assert_eq!(
            before(b"/x/libexec/pyenv", &[b"libexec", b"pyenv"], true),
            Some(&b"/x"[..])
        );
        assert_eq!(toolchain_home(b"/toolchains/s/bin/cargo"), None);
        assert_eq!(
            toolchain_home(b"/h/.rustup/toolchains/s/bin/cargo"),
            Some(&b"/h/.rustup"[..])
        );
        assert_eq!(toolchain_home(b"/h/.rustup/toolchains/s/lib/x"), None);
    }
}
