//! Exec chains in enforce: per process, the programs it and its ancestors ran since the
//! workload's first exec, and the [`Scope`] (the `by` lists) that chain satisfies.
//!
//! Fork keeps the parent's chain, threads share their process's, exec appends the new
//! program's identity ([`crate::identity`]) and narrows the scope. A decision costs one map
//! lookup (no extra stop). Chains are shared links, so a deep tree costs one link per exec.

use std::rc::Rc;

use crate::policy::{CompiledPolicy, Scope};

/// One program of a chain, newest first through `parent`.
#[derive(Debug)]
struct Link {
    label: String,
    identity: Vec<u8>,
    parent: Option<Rc<Link>>,
}

#[derive(Debug, Clone)]
struct Entry {
    scope: Scope,
    chain: Option<Rc<Link>>,
}

/// The chains of the live processes, by pid.
#[derive(Debug, Default)]
pub struct Chains {
    procs: crate::tid::TidMap<Entry>,
}

/// How many programs a violation line names before `...`.
const SHOWN: usize = 6;

impl Chains {
    /// The scope of process `pid`: what its chain holds. A process sbx never saw start holds
    /// no scoped right (fail closed).
    pub fn scope(&self, pid: i32) -> Scope {
        self.procs.get(&pid).map_or(Scope::NONE, |e| e.scope)
    }

    /// `child` was forked by `parent` (not a thread): same chain.
    pub fn fork(&mut self, parent: i32, child: i32) {
        if let Some(e) = self.procs.get(&parent).cloned() {
            self.procs.insert(child, e);
        }
    }

    /// Process `pid` exec'd the program `identity` (labelled `label`); `root`: it is the
    /// workload's first process, whose chain starts here.
    pub fn exec(
        &mut self,
        policy: &CompiledPolicy,
        pid: i32,
        root: bool,
        identity: &[u8],
        label: String,
    ) {
        let base = match self.procs.get(&pid) {
            Some(e) => e.clone(),
            None if root => Entry {
                scope: Scope::ROOT,
                chain: None,
            },
            None => Entry {
                scope: Scope::NONE,
                chain: None,
            },
        };
        let scope = if policy.has_scopes() {
            base.scope
                .exec(policy.program_mask(identity), policy.is_launcher(identity))
        } else {
            base.scope
        };
        let chain = Some(Rc::new(Link {
            label,
            identity: identity.to_vec(),
            parent: base.chain,
        }));
        self.procs.insert(pid, Entry { scope, chain });
    }

    /// The program identities of `pid`'s chain, oldest first (for the diff's `by` lists).
    pub fn identities(&self, pid: i32) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        let mut link = self.procs.get(&pid).and_then(|e| e.chain.as_deref());
        while let Some(l) = link {
            out.push(l.identity.clone());
            link = l.parent.as_deref();
        }
        out.reverse();
        out
    }

    /// The process is gone.
    pub fn exit(&mut self, pid: i32) {
        self.procs.remove(&pid);
    }

    /// `node build.js <- sh <- npm`: the programs of `pid`'s chain, newest first, repeats
    /// (an `env` running the same script) folded; empty when unknown.
    pub fn text(&self, pid: i32) -> String {
        let mut out: Vec<&str> = Vec::new();
        let mut link = self.procs.get(&pid).and_then(|e| e.chain.as_deref());
        let mut more = false;
        while let Some(l) = link {
            if out.last() != Some(&l.label.as_str()) {
                if out.len() == SHOWN {
                    more = true;
                    break;
                }
                out.push(&l.label);
            }
            link = l.parent.as_deref();
        }
        let mut s = out.join(" <- ");
        if more {
            s.push_str(" <- ...");
        }
        s
    }
}

/// A program's label in a chain: its `program` name when the policy defines one, else the
/// executable's file name, followed by the script's for an interpreter (`node build.js`).
pub fn label(policy: &CompiledPolicy, exe: &[u8], identity: &[u8]) -> String {
    if let Some(name) = policy.program_name(identity) {
        return name.to_string();
    }
    let base = |p: &[u8]| {
        String::from_utf8_lossy(p.rsplit(|&b| b == b'/').next().unwrap_or(p)).into_owned()
    };
    if identity == exe {
        base(exe)
    } else {
        format!("{} {}", base(exe), base(identity))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::vars::Env;

    fn policy(text: &str) -> CompiledPolicy {
        let env = Env {
            cwd: "/w".into(),
            home: "/home/u".into(),
            tmpdir: "/tmp".into(),
            vars: Default::default(),
        };
        CompiledPolicy::load("t.profile", text, &env).expect("profile")
    }

    #[test]
    fn chains_narrow_at_exec_and_fork_keeps_them() {
        let p = policy(
            "program npm /usr/lib/node_modules/npm/bin/npm-cli.js\nread /home/u/.npmrc by npm\n",
        );
        let npm = b"/usr/lib/node_modules/npm/bin/npm-cli.js".as_slice();
        let mut c = Chains::default();
        c.exec(&p, 10, true, npm, label(&p, b"/usr/bin/env", npm));
        c.exec(&p, 10, false, npm, label(&p, b"/usr/bin/node", npm));
        assert!(c.scope(10).holds(0));
        c.fork(10, 11);
        assert!(c.scope(11).holds(0), "a fork keeps npm's place");
        c.exec(&p, 11, false, b"/usr/bin/dash", "sh".into());
        assert!(!c.scope(11).holds(0), "sh is not npm");
        c.fork(11, 12);
        c.exec(&p, 12, false, npm, label(&p, b"/usr/bin/node", npm));
        assert!(
            !c.scope(12).holds(0),
            "npm started by sh: the chain passes through sh"
        );
        assert_eq!(c.text(12), "npm <- sh <- npm");
        assert!(!c.scope(99).holds(0), "unknown processes hold nothing");
        c.exit(10);
        assert_eq!(c.text(10), "");
    }

    /// The CI step's shell starts the chain without narrowing it; below npm, the same shell
    /// is an ordinary program (an install script's).
    #[test]
    fn a_launcher_starts_a_chain_without_narrowing_it() {
        let p = policy(
            "include base\nprogram npm /usr/lib/node_modules/npm/bin/npm-cli.js\n\
             read /home/u/.npmrc by npm\n",
        );
        let npm = b"/usr/lib/node_modules/npm/bin/npm-cli.js".as_slice();
        let bash = b"/usr/bin/bash".as_slice();
        let mut c = Chains::default();
        c.exec(&p, 10, true, bash, "bash".into());
        assert!(
            !c.scope(10).holds(0),
            "the shell itself holds nothing bound"
        );
        c.fork(10, 11);
        c.exec(&p, 11, false, npm, label(&p, b"/usr/bin/node", npm));
        assert!(c.scope(11).holds(0), "bash -c 'npm ci' is npm's chain");
        c.fork(11, 12);
        c.exec(&p, 12, false, bash, "bash".into());
        assert!(!c.scope(12).holds(0), "a shell below npm is no launcher");
        c.exec(&p, 12, false, npm, label(&p, b"/usr/bin/node", npm));
        assert!(!c.scope(12).holds(0));
        assert_eq!(c.text(12), "npm <- bash <- npm <- bash");
    }

    #[test]
    fn labels_name_scripts() {
        let p = policy("read /x\n");
        assert_eq!(label(&p, b"/usr/bin/node", b"/w/build.js"), "node build.js");
        assert_eq!(label(&p, b"/usr/bin/git", b"/usr/bin/git"), "git");
    }
}
