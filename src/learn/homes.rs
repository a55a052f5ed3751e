//! The tool homes of a recorded run (`${PYENV_ROOT}`, `${CARGO_HOME}`, `${RUSTUP_HOME}`:
//! [`crate::profile::vars::TOOL_HOMES`]), by evidence. The shipped snippets are rooted in
//! them, and learn must judge what a snippet covers with the values enforce will have. A
//! trace keeps the names of the workload's environment, not its values (values may be
//! secrets), so a value is taken from the paths the run executed: where the variable was
//! set, the directory of its default name that the programs ran from (`/root/.pyenv` from
//! `/root/.pyenv/shims/python3`, `/opt/rust/.rustup` from its toolchains' `cargo`). A
//! variable that was unset keeps its default (`${HOME}/.pyenv`), as the tools do.
//!
//! Pure: exec paths and environment names in, values out.

use std::collections::BTreeMap;

use crate::profile::vars::{TOOL_HOMES, path_to_text};

/// What one exec of the run shows: the file that ran, its identity (a script), and the
/// names of its environment.
#[derive(Debug, Clone, Default)]
pub struct ExecSeen {
    pub path: Vec<u8>,
    pub program: Option<Vec<u8>>,
    pub env_names: Vec<Vec<u8>>,
}

/// The tool homes the run's execs show, by variable name: only a variable set in the
/// environment of the run's first exec (what sbx was started with, which enforce expands
/// the snippets with; rustup's proxies set `CARGO_HOME` for the toolchains they run, which
/// enforce never sees), valued by the first executed path that has a directory of its
/// default name (the whole path up to it; never `/`).
pub fn infer(execs: &[ExecSeen]) -> BTreeMap<String, String> {
    let set: Vec<&str> = TOOL_HOMES
        .iter()
        .map(|(name, _)| *name)
        .filter(|name| {
            execs
                .first()
                .is_some_and(|x| x.env_names.iter().any(|n| n == name.as_bytes()))
        })
        .collect();
    let mut found: BTreeMap<&str, String> = BTreeMap::new();
    for x in execs {
        for path in std::iter::once(&x.path).chain(&x.program) {
            for (name, dir) in TOOL_HOMES {
                if found.contains_key(name) {
                    continue;
                }
                if let Some(root) = root_named(path, dir.as_bytes()) {
                    found.insert(name, path_to_text(root).into_owned());
                }
            }
        }
    }
    found
        .into_iter()
        .filter(|(n, _)| set.contains(n))
        .map(|(n, v)| (n.to_string(), v))
        .collect()
}

/// The prefix of absolute `path` through its first directory named `dir`.
fn root_named<'p>(path: &'p [u8], dir: &[u8]) -> Option<&'p [u8]> {
    if !path.starts_with(b"/") {
        return None;
    }
    let mut end = 0;
    for seg in path.split(|&b| b == b'/').skip(1) {
        end += 1 + seg.len();
        if seg == dir && end < path.len() {
            return Some(&path[..end]);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seen(path: &str, names: &[Vec<u8>]) -> ExecSeen {
        ExecSeen {
            path: path.as_bytes().to_vec(),
            program: None,
            env_names: names.to_vec(),
        }
    }

    #[test]
    fn a_set_variable_takes_the_directory_the_programs_ran_from() {
        let env = vec![
            b"PATH".to_vec(),
            b"PYENV_ROOT".to_vec(),
            b"RUSTUP_HOME".to_vec(),
        ];
        let homes = infer(&[
            seen("/usr/bin/bash", &env),
            seen("/root/.pyenv/libexec/pyenv", &env),
            seen("/root/.pyenv/versions/3.11.7/bin/python3.11", &env),
            seen("/opt/rust/.rustup/toolchains/stable/bin/cargo", &env),
            // CARGO_HOME is not set: its default stays, whatever ran, even where a program
            // of the run set it for its children (rustup's proxies do).
            seen("/srv/.cargo/bin/cargo", &[b"CARGO_HOME".to_vec()]),
        ]);
        assert_eq!(
            homes.get("PYENV_ROOT").map(String::as_str),
            Some("/root/.pyenv")
        );
        assert_eq!(
            homes.get("RUSTUP_HOME").map(String::as_str),
            Some("/opt/rust/.rustup")
        );
        assert_eq!(homes.get("CARGO_HOME"), None);
    }

    #[test]
    fn no_evidence_no_value() {
        let env = vec![b"PYENV_ROOT".to_vec()];
        // Set, but nothing ran from a `.pyenv` (a name alone, or the directory itself).
        let homes = infer(&[seen("/usr/bin/python3", &env), seen("/x/.pyenv", &env)]);
        assert!(homes.is_empty(), "{homes:?}");
        assert_eq!(root_named(b"relative/.pyenv/x", b".pyenv"), None);
    }

    #[test]
    fn the_script_identity_counts_too() {
        let env = vec![b"CARGO_HOME".to_vec()];
        let homes = infer(&[ExecSeen {
            path: b"/usr/bin/bash".to_vec(),
            program: Some(b"/ci/.cargo/bin/cargo-wrapper".to_vec()),
            env_names: env,
        }]);
        assert_eq!(
            homes.get("CARGO_HOME").map(String::as_str),
            Some("/ci/.cargo")
        );
    }
}
