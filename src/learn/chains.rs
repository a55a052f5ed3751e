//! Exec chains in learn: per process, the programs a right it uses must be bound to
//! (docs/learning.md "Rights bound to programs"), by the rule enforce applies
//! (`crate::policy::Scope`): the launchers that start a chain (the CI shell, `make`, `env`:
//! `launcher` lines) stand outside it, and from the first program that is not a launcher
//! every program down to the process is on the list. `bash -c 'npm ci'` binds npm's
//! registry to `npm`, never to `bash,npm`; an install script's `sh` after npm is on it.
//!
//! Pure data: fork shares the parent's chain, exec makes a new one. Never touches ptrace.

use std::collections::BTreeSet;
use std::rc::Rc;

/// The programs a process's rights are bound to.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Chain {
    /// Only launchers ran so far: `names` is the last of them (it holds the lists that name
    /// it), and the next program starts the chain afresh.
    launching: bool,
    names: BTreeSet<String>,
    /// The program the process runs now (its last exec).
    last: String,
}

impl Chain {
    /// The chain of a process that exec'd program `name` (`launcher`: a launcher line
    /// matches it), after `before` (`None`: the workload's first program).
    pub fn exec(before: Option<&Chain>, name: String, launcher: bool) -> Rc<Chain> {
        let fresh = before.is_none_or(|c| c.launching);
        let mut names = if fresh {
            BTreeSet::new()
        } else {
            before.map(|c| c.names.clone()).unwrap_or_default()
        };
        names.insert(name.clone());
        Rc::new(Chain {
            launching: fresh && launcher,
            names,
            last: name,
        })
    }

    /// The program the process runs now.
    pub fn runs(&self) -> &str {
        &self.last
    }

    /// The program names a right this process used is bound to.
    pub fn names(&self) -> &BTreeSet<String> {
        &self.names
    }

    /// Only launchers ran on this chain: the step itself, not a program it started.
    pub fn launching(&self) -> bool {
        self.launching
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(chain: &[(&str, bool)]) -> Rc<Chain> {
        let mut c: Option<Rc<Chain>> = None;
        for (name, launcher) in chain {
            c = Some(Chain::exec(c.as_deref(), (*name).to_string(), *launcher));
        }
        c.expect("a program ran")
    }

    fn names(c: &Chain) -> Vec<&str> {
        c.names().iter().map(String::as_str).collect()
    }

    #[test]
    fn launchers_above_the_first_program_are_not_bound() {
        let c = run(&[("bash", true), ("npm", false)]);
        assert_eq!(names(&c), ["npm"]);
        assert!(!c.launching());
        let c = run(&[
            ("bash", true),
            ("make", true),
            ("sh", true),
            ("cargo", false),
        ]);
        assert_eq!(names(&c), ["cargo"]);
    }

    #[test]
    fn below_the_first_program_every_program_is_bound() {
        // An install script's shell and its program, and npm run by it again.
        let c = run(&[
            ("bash", true),
            ("npm", false),
            ("dash", true),
            ("install.js", false),
        ]);
        assert_eq!(names(&c), ["dash", "install.js", "npm"]);
        let c = run(&[
            ("bash", true),
            ("npm", false),
            ("dash", true),
            ("npm", false),
        ]);
        assert_eq!(names(&c), ["dash", "npm"]);
        assert_eq!(c.runs(), "npm");
    }

    #[test]
    fn a_launcher_alone_binds_to_itself() {
        let c = run(&[("bash", true), ("npx", true)]);
        assert!(c.launching());
        assert_eq!(names(&c), ["npx"]);
    }
}
