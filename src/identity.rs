//! Program identity: who a process is, for rights bound to programs (`by npm`, issue 21).
//!
//! A process's identity is the program it runs, and for an interpreter the script it runs:
//! `npm install` runs `/usr/bin/node` on `/usr/lib/node_modules/npm/bin/npm-cli.js`, and an
//! install script runs the same `/usr/bin/node` on `node_modules/x/install.js`. Telling them
//! apart is the point. The identity is:
//!
//! 1. the file the execve named, when the kernel ran an interpreter for it (a `#!` script:
//!    `/usr/bin/npm` is a symlink to `npm-cli.js`, whose `#!/usr/bin/env node` makes `env` the
//!    exe);
//! 2. for a known interpreter (node, python, sh/bash/dash, perl, ruby) run on a script file,
//!    that file ([`script_arg`] picks it out of argv, skipping options);
//! 3. otherwise the executable itself (`sh -c CMD`, `python -c CODE`, `node -e CODE` and
//!    `python -m MODULE` are the interpreter: their code has no file to name).
//!
//! Paths are resolved by the caller (absolute, symlinks followed, as the process sees them):
//! this module only decides which argument names the script. Pure.

/// The interpreter family of an executable, by its file name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Interpreter {
    Node,
    Python,
    Shell,
    Perl,
    Ruby,
}

/// The interpreter `exe` is, judged by its last path component (`/usr/bin/python3.11`,
/// `/opt/hostedtoolcache/node/20.1.0/x64/bin/node`).
pub fn interpreter(exe: &[u8]) -> Option<Interpreter> {
    let name = exe.rsplit(|&b| b == b'/').next().unwrap_or(exe);
    let name = std::str::from_utf8(name).ok()?;
    let versioned = |stem: &str| {
        name.strip_prefix(stem)
            .is_some_and(|v| v.bytes().all(|b| b.is_ascii_digit() || b == b'.'))
    };
    match name {
        "node" | "nodejs" => Some(Interpreter::Node),
        "sh" | "bash" | "dash" | "ash" | "ksh" | "mksh" | "zsh" => Some(Interpreter::Shell),
        _ if versioned("python") || versioned("pypy") => Some(Interpreter::Python),
        _ if versioned("perl") => Some(Interpreter::Perl),
        _ if versioned("ruby") => Some(Interpreter::Ruby),
        _ => None,
    }
}

/// Node options that take the next argument as their value (`--require X`).
const NODE_VALUE_OPTS: &[&str] = &[
    "-r",
    "--require",
    "--import",
    "--loader",
    "--experimental-loader",
    "-C",
    "--conditions",
    "--env-file",
    "--title",
    "--input-type",
    "--stack-size",
    "--max-old-space-size",
    "--inspect-port",
    "--openssl-config",
    "--redirect-warnings",
    "--icu-data-dir",
];

/// The index in `argv` of the script file interpreter `kind` runs, or `None` when it runs
/// code that is not a file (`-c`, `-e`, `-m`, stdin) or no script at all.
pub fn script_arg(kind: Interpreter, argv: &[Vec<u8>]) -> Option<usize> {
    let mut i = 1;
    while i < argv.len() {
        let a = std::str::from_utf8(&argv[i]).ok()?;
        if a == "--" {
            return (i + 1 < argv.len()).then_some(i + 1);
        }
        if a == "-" {
            return None;
        }
        let option = a.starts_with('-') || (kind == Interpreter::Shell && a.starts_with('+'));
        if !option {
            return Some(i);
        }
        match kind {
            Interpreter::Node => {
                if matches!(
                    a,
                    "-e" | "--eval" | "-p" | "--print" | "-i" | "--interactive"
                ) || a.starts_with("--eval=")
                    || a.starts_with("--print=")
                {
                    return None;
                }
                if NODE_VALUE_OPTS.contains(&a) {
                    i += 1;
                }
            }
            Interpreter::Python => {
                if a.starts_with("--") {
                    // --help, --version: no script; --check-hash-based-pycs takes a value.
                    if a == "--check-hash-based-pycs" {
                        i += 1;
                    }
                } else {
                    // A cluster of short flags: `-c` and `-m` end the options with code or
                    // a module; `-W` and `-X` take a value (attached or next).
                    for (k, c) in a.char_indices().skip(1) {
                        match c {
                            'c' | 'm' => return None,
                            'W' | 'X' => {
                                if k + 1 == a.len() {
                                    i += 1;
                                }
                                break;
                            }
                            _ => {}
                        }
                    }
                }
            }
            Interpreter::Shell => {
                if a.starts_with("--") {
                    // bash long options (--norc, --posix) take no value, except --rcfile.
                    if a == "--rcfile" || a == "--init-file" {
                        i += 1;
                    }
                } else {
                    let flags = &a[1..];
                    if flags.contains('c') || flags.contains('s') || flags.contains('i') {
                        return None;
                    }
                    if flags.ends_with('o') || flags.ends_with('O') {
                        i += 1;
                    }
                }
            }
            Interpreter::Perl => {
                let flags = &a[1..];
                if flags.starts_with('e') || flags.starts_with('E') {
                    return None;
                }
                if matches!(a, "-I" | "-M" | "-m" | "-x") {
                    i += 1;
                }
            }
            Interpreter::Ruby => {
                if a.starts_with("-e") {
                    return None;
                }
                if matches!(a, "-I" | "-r" | "-C" | "-E") {
                    i += 1;
                }
            }
        }
        i += 1;
    }
    None
}

/// The identity of a program that just started, when it is not `exe`: the `#!` script the
/// execve named (`exec_file`, resolved), or the script file a known interpreter runs
/// (resolved with `resolve`, which gets the argument as written and answers with the
/// absolute, symlink-free path as the process sees it, or `None` when it does not exist).
pub fn identity(
    exe: &[u8],
    exec_file: Option<&[u8]>,
    argv: &[Vec<u8>],
    resolve: &mut dyn FnMut(&[u8]) -> Option<Vec<u8>>,
) -> Option<Vec<u8>> {
    if let Some(f) = exec_file
        && f != exe
        && f.starts_with(b"/")
    {
        return Some(f.to_vec());
    }
    let kind = interpreter(exe)?;
    let i = script_arg(kind, argv)?;
    resolve(&argv[i]).filter(|p| p.as_slice() != exe)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<Vec<u8>> {
        s.split(' ').map(|a| a.as_bytes().to_vec()).collect()
    }

    #[test]
    fn interpreter_names() {
        let cases: &[(&str, Option<Interpreter>)] = &[
            ("/usr/bin/node", Some(Interpreter::Node)),
            (
                "/opt/hostedtoolcache/node/20.1.0/x64/bin/node",
                Some(Interpreter::Node),
            ),
            ("/usr/bin/python3.11", Some(Interpreter::Python)),
            ("/home/u/venv/bin/python", Some(Interpreter::Python)),
            ("/usr/bin/dash", Some(Interpreter::Shell)),
            ("/usr/bin/perl5.36.0", Some(Interpreter::Perl)),
            ("/usr/bin/ruby3.1", Some(Interpreter::Ruby)),
            ("/usr/bin/python3-config", None),
            ("/usr/bin/nodemon", None),
            ("/usr/bin/git", None),
            ("/usr/bin/shellcheck", None),
        ];
        for (exe, want) in cases {
            assert_eq!(interpreter(exe.as_bytes()), *want, "{exe}");
        }
    }

    #[test]
    fn script_argument_table() {
        use Interpreter::*;
        let cases: &[(Interpreter, &str, Option<usize>)] = &[
            (
                Node,
                "node /usr/lib/node_modules/npm/bin/npm-cli.js install",
                Some(1),
            ),
            (Node, "node --max-old-space-size 4096 build.js", Some(3)),
            (Node, "node -r ts-node/register x.ts", Some(3)),
            (Node, "node --enable-source-maps x.js a", Some(2)),
            (Node, "node -e require('x')", None),
            (Node, "node --eval=1", None),
            (Node, "node -p 1", None),
            (Node, "node", None),
            (Node, "node -- -weird.js", Some(2)),
            (Python, "python3 setup.py build", Some(1)),
            (Python, "python3 -u -W ignore x.py", Some(4)),
            (Python, "python3 -Wignore x.py", Some(2)),
            (Python, "python3 -c import os", None),
            (Python, "python3 -m pip install x", None),
            (Python, "python3 -Bm pip", None),
            (Python, "python3 -", None),
            (Shell, "sh -c npm run x", None),
            (Shell, "sh -ec x", None),
            (Shell, "sh -e ./configure --prefix=/usr", Some(2)),
            (Shell, "bash -o pipefail build.sh", Some(3)),
            (Shell, "bash +x build.sh", Some(2)),
            (Shell, "sh", None),
            (Shell, "sh -s a b", None),
            (Perl, "perl -e print", None),
            (Perl, "perl -w script.pl", Some(2)),
            (Perl, "perl -I lib script.pl", Some(3)),
            (Ruby, "ruby -e 1", None),
            (Ruby, "ruby -I lib x.rb", Some(3)),
        ];
        for (kind, argv, want) in cases {
            assert_eq!(script_arg(*kind, &args(argv)), *want, "{argv}");
        }
    }

    #[test]
    fn identity_prefers_the_script_file() {
        let mut resolve = |a: &[u8]| -> Option<Vec<u8>> {
            match a {
                b"/usr/bin/npm" => Some(b"/usr/lib/node_modules/npm/bin/npm-cli.js".to_vec()),
                b"install.js" => Some(b"/w/node_modules/x/install.js".to_vec()),
                _ => None,
            }
        };
        // `#!/usr/bin/env node`: the exe is env, the execve named the script.
        assert_eq!(
            identity(
                b"/usr/bin/env",
                Some(b"/usr/lib/node_modules/npm/bin/npm-cli.js"),
                &args("/usr/bin/env node /usr/bin/npm install"),
                &mut resolve
            )
            .as_deref(),
            Some(&b"/usr/lib/node_modules/npm/bin/npm-cli.js"[..])
        );
        // env then runs node on the same script.
        assert_eq!(
            identity(
                b"/usr/bin/node",
                Some(b"/usr/bin/node"),
                &args("node /usr/bin/npm install"),
                &mut resolve
            )
            .as_deref(),
            Some(&b"/usr/lib/node_modules/npm/bin/npm-cli.js"[..])
        );
        assert_eq!(
            identity(
                b"/usr/bin/node",
                None,
                &args("node install.js"),
                &mut resolve
            )
            .as_deref(),
            Some(&b"/w/node_modules/x/install.js"[..])
        );
        // Code without a file, a missing script, and a plain program: the exe.
        assert_eq!(
            identity(b"/usr/bin/node", None, &args("node -e x"), &mut resolve),
            None
        );
        assert_eq!(
            identity(b"/usr/bin/node", None, &args("node gone.js"), &mut resolve),
            None
        );
        assert_eq!(
            identity(
                b"/usr/bin/git",
                Some(b"/usr/bin/git"),
                &args("git status"),
                &mut resolve
            ),
            None
        );
    }
}
