//! Version numbers in the paths of installed packages and toolchains (docs/learning.md
//! section 4): `/opt/hostedtoolcache/node/20.20.2/x64`, `~/.nvm/versions/node/v20.20.2`,
//! `site-packages/requests-2.32.3.dist-info`, `node_modules/.pnpm/lodash@4.17.21`,
//! `.cargo/registry/src/*/serde-1.0.228`, `.rustup/toolchains/1.95-x86_64-unknown-linux-gnu`.
//! A runner image update or a patch bump of a dependency changes them; a learned profile must
//! still admit the next run. Each version becomes `[0-9]*` (`v[0-9]*` with its `v`), the rest
//! of the segment stays literal: `requests-[0-9]*.dist-info`, `serde-[0-9]*`, `v[0-9]*`,
//! `[0-9]*-x86_64-unknown-linux-gnu`.
//!
//! Only below the places where packages and toolchains are installed ([`VERSION_TREES`],
//! `/opt`): elsewhere a dotted number is a name or changes only with a distribution upgrade
//! (`/usr/lib/python3.11`, `/usr/lib/x86_64-linux-gnu/perl/5.36.0`), or is an address
//! (`/run/app/10.0.0.1.sock`).
//!
//! See: issue 20 item 5 (version numbers are noise where packages live).

use super::{escape_segment, is_random_token, push_short_extension, random_cut};

/// Runs of whole path segments below which installed packages and toolchains live, with a
/// version in their names: package directories (`node_modules`, `site-packages`,
/// `dist-packages`), registries and caches (`.cargo/registry`, `.cargo/git`, `go/pkg/mod`,
/// `.m2/repository`, `.gradle/caches`, `.npm`, `.cache/pip`, `.cache/yarn`, `.yarn/cache`,
/// `.nuget/packages`, `.gem`) and toolchain managers (`.rustup/toolchains`, `.pyenv/versions`,
/// `.nvm/versions`, `.rbenv/versions`, `.asdf/installs`, `mise/installs`, `.volta/tools`,
/// `.sdkman/candidates`, GitHub's tool cache `hostedtoolcache` and a self-hosted runner's
/// `_work/_tool`). `cargo/registry`, `cargo/git` and `rustup/toolchains` without the dot are
/// `CARGO_HOME=/usr/local/cargo` and `RUSTUP_HOME=/usr/local/rustup` of the Rust container
/// images. `/opt` (add-on software, [`in_opt`]) is matched separately.
pub(super) const VERSION_TREES: &[&[&str]] = &[
    &["node_modules"],
    &["site-packages"],
    &["dist-packages"],
    &[".cargo", "registry"],
    &[".cargo", "git"],
    &["cargo", "registry"],
    &["cargo", "git"],
    &[".rustup", "toolchains"],
    &["rustup", "toolchains"],
    &[".pyenv", "versions"],
    &[".nvm", "versions"],
    &[".rbenv", "versions"],
    &[".asdf", "installs"],
    &["mise", "installs"],
    &[".volta", "tools"],
    &[".sdkman", "candidates"],
    &["hostedtoolcache"],
    &["_work", "_tool"],
    &["go", "pkg", "mod"],
    &[".m2", "repository"],
    &[".gradle", "caches"],
    &[".npm"],
    &[".cache", "pip"],
    &[".cache", "yarn"],
    &[".yarn", "cache"],
    &[".nuget", "packages"],
    &[".gem"],
];

/// Is the path (its segments, the first empty for an absolute path) under `/opt`?
fn in_opt(segs: &[&str]) -> bool {
    segs.len() > 2 && segs[0].is_empty() && segs[1] == "opt"
}

/// The index of the first segment of `segs` that lies below a [`VERSION_TREES`] run or `/opt`
/// (every later segment does too), or `None` when the path is in no such tree.
pub(super) fn tree_start(segs: &[&str]) -> Option<usize> {
    let opt = in_opt(segs).then_some(2);
    let tree = (0..segs.len()).find_map(|j| {
        VERSION_TREES
            .iter()
            .find(|t| segs[j..].starts_with(t))
            .map(|t| j + t.len())
    });
    match (opt, tree) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
    .filter(|i| *i < segs.len())
}

/// Qualifiers of a pre-release or release tag after a version (`1.0.0-beta.1`, `2.0.0.dev0`,
/// `1.0.post1`, `5.3.0-SNAPSHOT`, `5.6.15.Final`, `3.2.0.RELEASE`), compared case-insensitively
/// with the digits after them removed (`rc1`, `beta2`).
const PRERELEASE_WORDS: &[&str] = &[
    "alpha", "beta", "rc", "pre", "preview", "dev", "post", "canary", "next", "nightly",
    "snapshot", "final", "release", "ga",
];

/// Is `t` (an alphanumeric token) a [`PRERELEASE_WORDS`] word, optionally followed by digits?
fn prerelease_word(t: &str) -> bool {
    let letters = t.trim_end_matches(|c: char| c.is_ascii_digit());
    PRERELEASE_WORDS
        .iter()
        .any(|w| letters.eq_ignore_ascii_case(w))
}

fn run(b: &[u8], from: usize, f: impl Fn(u8) -> bool) -> usize {
    b[from.min(b.len())..].iter().take_while(|c| f(**c)).count()
}

/// The end (exclusive) of a version that starts at byte `i` of `seg`, or `None`:
/// - it starts the segment or follows a byte that is not alphanumeric (so `python3.11`,
///   `es2015` and `x86_64` hold none), with an optional `v` (`v20.20.2`, `sys@v0.21.0`);
/// - a dotted sequence of at least two numbers (`1.95`, `20.20.2`; not `gcc/12`, `utf-8`);
/// - letters and digits glued to it (`2.0.0rc1`, `1.1.1w`, `3.13.0a7`);
/// - then any chain of tags: after `-`, `.`, `_` or `~` a [`PRERELEASE_WORDS`] word with
///   optional digits (`-beta.1` once a word was seen, `.dev0`, `-SNAPSHOT`) or a random-looking
///   token ([`is_random_token`]: Go's pseudo-versions `v0.0.0-20240416160154-fe59bbe5cc7f`,
///   pnpm's old peer hashes), and after `+` build metadata up to the next `.`
///   (`0.11.0+wasi-snapshot-preview1`, `v2.0.0+incompatible`).
///
/// What follows (`-x86_64-unknown-linux-gnu`, `.dist-info`, `.crate`, `-jre`) is not part of
/// it.
fn version_at(seg: &str, i: usize) -> Option<usize> {
    let b = seg.as_bytes();
    if i > 0 && b[i - 1].is_ascii_alphanumeric() {
        return None;
    }
    let mut j = i + usize::from(b.get(i) == Some(&b'v'));
    let n = run(b, j, |c| c.is_ascii_digit());
    if n == 0 {
        return None;
    }
    j += n;
    let mut dotted = false;
    while b.get(j) == Some(&b'.') {
        let n = run(b, j + 1, |c| c.is_ascii_digit());
        if n == 0 {
            break;
        }
        j += 1 + n;
        dotted = true;
    }
    if !dotted {
        return None;
    }
    j += run(b, j, |c| c.is_ascii_alphanumeric());
    let mut word_seen = false;
    loop {
        match b.get(j) {
            Some(b'+') => {
                let n = run(b, j + 1, |c| c.is_ascii_alphanumeric() || c == b'-');
                if n == 0 {
                    break;
                }
                j += 1 + n;
            }
            Some(b'-' | b'.' | b'_' | b'~') => {
                let n = run(b, j + 1, |c| c.is_ascii_alphanumeric());
                let t = &seg[j + 1..j + 1 + n];
                let word = n > 0 && prerelease_word(t);
                let number = word_seen && n > 0 && t.bytes().all(|c| c.is_ascii_digit());
                if !(word || number || is_random_token(t)) {
                    break;
                }
                word_seen |= word;
                j += 1 + n;
            }
            _ => break,
        }
    }
    Some(j)
}

/// The glob of a segment below a package or toolchain tree whose name holds a version, or
/// `None` when it holds none: every version ([`version_at`]) becomes `[0-9]*` (`v[0-9]*`),
/// the rest stays literal (`requests-[0-9]*.dist-info`, `react-dom@[0-9]*_react@[0-9]*`).
///
/// Why `[0-9]*` and not `*`: it survives any bump (every version starts with a digit, and `*`
/// does not cross `/`) but not a sibling package whose name extends the prefix
/// (`requests-oauthlib-2.0.0.dist-info`, `serde-value-0.7.0`) nor a named toolchain
/// (`stable-x86_64-unknown-linux-gnu`). Why not one glob per component
/// (`[0-9]*.[0-9]*.[0-9]*`): versions gain and lose components (`1.95` and `1.95.0`,
/// `2.32` and `2.32.1`) and tags (`1.0.0-rc.1`).
///
/// Versioned shared objects keep their own rule (`libssl.so.*`); a random token before the
/// first version leaves the segment to the random-segment rules (it is cut there); one right
/// after a version is part of it, a later one cuts the rest (`x-[0-9]*-linux-*.gz`).
pub(super) fn version_glob(seg: &str) -> Option<String> {
    if seg.contains('*') || super::versioned_so(seg).is_some() {
        return None;
    }
    let b = seg.as_bytes();
    let mut out = String::new();
    let mut literal = 0; // start of the literal piece not yet written
    let mut i = 0;
    while i < b.len() {
        let Some(end) = version_at(seg, i) else {
            i += 1;
            continue;
        };
        let piece = &seg[literal..i];
        if let Some(cut) = random_cut(piece) {
            return (literal > 0).then(|| cut_at(out, seg, literal, literal + cut));
        }
        out.push_str(&escape_segment(piece.as_bytes()));
        out.push_str(if b[i] == b'v' { "v[0-9]*" } else { "[0-9]*" });
        literal = end;
        i = end;
    }
    if literal == 0 {
        return None;
    }
    let tail = &seg[literal..];
    match random_cut(tail) {
        Some(cut) => Some(cut_at(out, seg, literal, literal + cut)),
        None => {
            out.push_str(&escape_segment(tail.as_bytes()));
            Some(out)
        }
    }
}

/// `out` (the glob of `seg` up to byte `from`), the literal bytes from `from` up to `cut`,
/// then `*` and a short extension: what the random-segment rules do at a random token.
fn cut_at(mut out: String, seg: &str, from: usize, cut: usize) -> String {
    out.push_str(&escape_segment(&seg.as_bytes()[from..cut]));
    if !out.ends_with('*') {
        out.push('*');
    }
    push_short_extension(&mut out, seg, cut);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// See: issue 20 item 5 (a runner image update or a patch bump broke learned profiles).
    #[test]
    fn version_glob_table() {
        let cases: &[(&str, Option<&str>)] = &[
            // Only a version.
            ("20.20.2", Some("[0-9]*")),
            ("3.11.7", Some("[0-9]*")),
            ("v20.20.2", Some("v[0-9]*")),
            ("1.95", Some("[0-9]*")),
            ("2024.2.2", Some("[0-9]*")),
            // A name and a version, and what follows it.
            (
                "requests-2.32.3.dist-info",
                Some("requests-[0-9]*.dist-info"),
            ),
            ("serde-1.0.228", Some("serde-[0-9]*")),
            ("serde-1.0.228.crate", Some("serde-[0-9]*.crate")),
            ("lodash@4.17.21", Some("lodash@[0-9]*")),
            ("sys@v0.21.0", Some("sys@v[0-9]*")),
            (
                "1.95-x86_64-unknown-linux-gnu",
                Some("[0-9]*-x86_64-unknown-linux-gnu"),
            ),
            (
                "1.95.0-x86_64-unknown-linux-gnu",
                Some("[0-9]*-x86_64-unknown-linux-gnu"),
            ),
            ("guava-33.0.0-jre.jar", Some("guava-[0-9]*-jre.jar")),
            ("33.0.0-jre", Some("[0-9]*-jre")),
            ("node-v20.20.2-linux-x64", Some("node-v[0-9]*-linux-x64")),
            ("base64-0.22.1", Some("base64-[0-9]*")),
            ("pip-24.0.dist-info", Some("pip-[0-9]*.dist-info")),
            (
                "foo-1.0-py3.12.egg-info",
                Some("foo-[0-9]*-py3.12.egg-info"),
            ),
            // Pre-release and build tags belong to the version.
            ("1.0.0-beta.1", Some("[0-9]*")),
            ("foo-1.0.0-rc.1.crate", Some("foo-[0-9]*.crate")),
            ("numpy-2.0.0rc1.dist-info", Some("numpy-[0-9]*.dist-info")),
            ("Django-5.1a1.dist-info", Some("Django-[0-9]*.dist-info")),
            ("x-2.0.0.dev0.dist-info", Some("x-[0-9]*.dist-info")),
            ("x-1.0.post1.dist-info", Some("x-[0-9]*.dist-info")),
            ("demo-5.3.0-SNAPSHOT.jar", Some("demo-[0-9]*.jar")),
            (
                "hibernate-core-5.6.15.Final.jar",
                Some("hibernate-core-[0-9]*.jar"),
            ),
            ("openssl-1.1.1w", Some("openssl-[0-9]*")),
            ("wasi-0.11.0+wasi-snapshot-preview1", Some("wasi-[0-9]*")),
            (
                "wasi-0.11.0+wasi-snapshot-preview1.crate",
                Some("wasi-[0-9]*.crate"),
            ),
            ("v2.0.0+incompatible.zip", Some("v[0-9]*.zip")),
            ("v0.0.0-20240416160154-fe59bbe5cc7f", Some("v[0-9]*")),
            (
                "v0.0.0-20240416160154-fe59bbe5cc7f.zip",
                Some("v[0-9]*.zip"),
            ),
            ("v0.21.0.mod", Some("v[0-9]*.mod")),
            // pnpm: every version of the segment, peer suffixes and old peer hashes.
            (
                "react-dom@18.2.0_react@18.2.0",
                Some("react-dom@[0-9]*_react@[0-9]*"),
            ),
            (
                "react-dom@18.2.0(react@18.2.0)",
                Some("react-dom@[0-9]*(react@[0-9]*)"),
            ),
            (
                "react-dom@18.2.0_hsa3ix5bt4z6zonlqwpqvhx2gm",
                Some("react-dom@[0-9]*"),
            ),
            ("@babel+core@7.24.0", Some("@babel+core@[0-9]*")),
            // yarn's cache: the version, then the random rest.
            (
                "lodash-npm-4.17.21-6382451519-eb835a2e51.zip",
                Some("lodash-npm-[0-9]*.zip"),
            ),
            // A random token right after the version is part of it; a later one cuts the
            // rest, as the random rules do.
            ("x-1.2.3-qx3kz9wq.tar.gz", Some("x-[0-9]*.tar.gz")),
            ("x-1.2.3-linux-qx3kz9wq.tar.gz", Some("x-[0-9]*-linux-*.gz")),
            // Not versions: single numbers, numbers glued to a name, no dotted number.
            ("gcc", None),
            ("12", None),
            ("python3.11", None),
            ("python3", None),
            ("es2015", None),
            ("x86_64", None),
            ("x86_64-linux-gnu", None),
            ("utf-8", None),
            ("ts4.8", None),
            ("node", None),
            ("x64", None),
            ("stable-x86_64-unknown-linux-gnu", None),
            ("nightly-2024-05-01-x86_64-unknown-linux-gnu", None),
            ("index.crates.io-1949cf8c6b5b557f", None),
            ("modules-2", None),
            ("cpython-311.pyc", None),
            ("v8", None),
            ("dev1.2", None),
            // Versioned shared objects keep their rule (generalize_segment).
            ("libssl.so.3", None),
            ("libssl.so.3.0.2", None),
            ("ld-linux-x86-64.so.2", None),
            ("libpython3.12.so.1.0", None),
            // A random token before the version: the random rules decide (`foo-*`).
            ("foo-a3xk9z-1.2.3", None),
            // Already a glob.
            ("serde-*", None),
        ];
        for (seg, want) in cases {
            assert_eq!(version_glob(seg).as_deref(), *want, "{seg}");
        }
    }

    /// Every version glob matches the name it came from and the name after a bump, and not a
    /// sibling package whose name extends the prefix.
    #[test]
    fn version_globs_survive_bumps() {
        let cases: &[(&str, &[&str], &[&str])] = &[
            (
                "requests-2.32.3.dist-info",
                &["requests-2.32.4.dist-info", "requests-2.33.dist-info"],
                &["requests-oauthlib-2.0.0.dist-info", "requests.dist-info"],
            ),
            (
                "serde-1.0.228",
                &["serde-1.0.229", "serde-2.0.0-rc.1", "serde-1.1.0"],
                &["serde-value-0.7.0", "serde_derive-1.0.228"],
            ),
            (
                "1.95-x86_64-unknown-linux-gnu",
                &["1.96.1-x86_64-unknown-linux-gnu"],
                &[
                    "stable-x86_64-unknown-linux-gnu",
                    "1.95-aarch64-unknown-linux-gnu",
                ],
            ),
            ("20.20.2", &["20.21.0", "22.1.0"], &["latest"]),
            ("v20.20.2", &["v22.0.0"], &["vendor"]),
            (
                "lodash@4.17.21",
                &["lodash@4.17.22"],
                &["lodash.merge@4.6.2"],
            ),
        ];
        for (name, bumps, others) in cases {
            let g = version_glob(name).unwrap();
            let m = crate::profile::parse::glob_builder(&g)
                .build()
                .unwrap()
                .compile_matcher();
            assert!(m.is_match(name), "{g} vs {name}");
            for b in *bumps {
                assert!(m.is_match(b), "{g} should match {b}");
            }
            for o in *others {
                assert!(!m.is_match(o), "{g} should not match {o}");
            }
        }
    }

    #[test]
    fn tree_start_table() {
        let cases: &[(&str, Option<usize>)] = &[
            ("/opt/hostedtoolcache/node/20.20.2/x64", Some(2)),
            ("/opt", None),
            ("/opt/x", Some(2)),
            ("${HOME}/.pyenv/versions/3.11.7/bin/python3.11", Some(3)),
            ("${HOME}/.nvm/versions/node/v20.20.2/bin/node", Some(3)),
            (
                "${HOME}/.rustup/toolchains/1.95-x86_64-unknown-linux-gnu/bin/rustc",
                Some(3),
            ),
            ("/usr/local/rustup/toolchains/1.95-x/bin/rustc", Some(5)),
            (
                "${HOME}/.cargo/registry/src/i/serde-1.0.228/src/lib.rs",
                Some(3),
            ),
            (
                "${CWD}/node_modules/.pnpm/lodash@4.17.21/node_modules/lodash",
                Some(2),
            ),
            (
                "${CWD}/.venv/lib/python3.12/site-packages/x-1.0.dist-info",
                Some(5),
            ),
            ("${HOME}/go/pkg/mod/golang.org/x/sys@v0.21.0/unix", Some(4)),
            ("/home/runner/_work/_tool/node/20.20.2/x64", Some(5)),
            ("${HOME}/.cache/pip/wheels/x", Some(3)),
            // The tree itself is not below it; nothing else is a tree.
            ("${CWD}/node_modules", None),
            ("/usr/lib/python3.11/os.py", None),
            ("/usr/lib/x86_64-linux-gnu/perl/5.36.0/x.pm", None),
            ("${HOME}/.cache/x/1.2.3", None),
            ("${HOME}/cargo/x/1.2.3", None),
            ("${CWD}/dist/1.2.3/app.js", None),
            ("/run/app/10.0.0.1.sock", None),
            ("/usr/opt/1.2.3", None),
        ];
        for (path, want) in cases {
            let segs: Vec<&str> = path.split('/').collect();
            assert_eq!(tree_start(&segs), *want, "{path}");
        }
    }
}
