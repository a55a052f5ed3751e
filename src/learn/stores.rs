//! Tool stores (docs/learning.md "Tool stores"): the caches and package stores that package
//! managers and build tools keep between runs, recognized by where they are, not by what one
//! run found in them. A run that used a store owns it whether it found it warm or cold: a
//! profile learned from a warm run (everything read back) must admit a cold one (everything
//! written), and the reverse.
//!
//! Each kind names its poisoning risk: whoever may write a store can plant what later runs of
//! the tool trust. Writes are bound to programs (`own ROOT by ...`): to the tool itself where
//! the kind names it (cargo), else to the programs that used the store in the recorded runs.
//!
//! Pure: paths in, store roots out. Never touches ptrace.

/// How a store's `own` rule is bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bind {
    /// To the programs that used the store in the recorded runs.
    Users,
    /// Read by every program (compilers read the sources), written by the named program
    /// (a shipped snippet's `program` name) and whoever wrote there in the recorded runs.
    Tool(&'static str),
}

/// Where a store's root ends in a path's segments (given HOME's), if the path is in one.
type FindRoot = fn(segs: &[&[u8]], home: &[&[u8]]) -> Option<usize>;

/// One kind of store.
#[derive(Debug)]
pub struct Kind {
    /// What it is, for warnings (`npm's cache`).
    pub what: &'static str,
    pub bind: Bind,
    /// The comment above the learned rule: what it is and its poisoning risk.
    pub comment: &'static str,
    /// Where the store's root ends in `path`'s segments, if `path` is in such a store.
    find: FindRoot,
}

/// The kinds, most specific first (a store inside `~/.cache` is that store, not an XDG one).
pub const KINDS: &[Kind] = &[
    Kind {
        what: "npm's cache",
        bind: Bind::Users,
        comment: "npm's cache (the directory of its _cacache, wherever npm_config_cache puts it): npm's own store, owned warm or cold. Poisoning risk: whoever writes it can plant tarballs later installs trust (npm checks them against package-lock.json's integrity, not against the registry)",
        find: npm_cache,
    },
    Kind {
        what: "cargo's registry or git checkouts",
        bind: Bind::Tool("cargo"),
        comment: "cargo's registry or git checkouts (wherever CARGO_HOME is): read by everything that compiles, written by cargo. Poisoning risk: a build script rewriting another crate's sources here would poison every later build",
        find: cargo_store,
    },
    Kind {
        what: "rustup's toolchains",
        bind: Bind::Tool("cargo"),
        comment: "rustup's home (RUSTUP_HOME, ${HOME}/.rustup by default: toolchains, settings): read and run by everything that builds, written by rustup (cargo's proxies). Poisoning risk: a changed toolchain binary runs in every later build",
        find: rustup_home,
    },
    Kind {
        what: "Go's module cache",
        bind: Bind::Users,
        comment: "Go's module cache (GOMODCACHE, go/pkg/mod by default): the tool's own store, owned warm or cold. Poisoning risk: whoever writes it can change module sources later builds compile (go verifies go.sum only when it downloads)",
        find: go_modules,
    },
    Kind {
        what: "a package manager's store",
        bind: Bind::Users,
        comment: "a package manager's store (pnpm's content store, yarn's berry cache, uv's Python installs): the tool's own store, owned warm or cold. Poisoning risk: whoever writes it can plant packages later installs link or copy into projects",
        find: data_store,
    },
    Kind {
        what: "a tool's cache in the project",
        bind: Bind::Users,
        comment: "a test or lint tool's own cache in the project (.pytest_cache, .mypy_cache, .ruff_cache, .tox...): owned warm or cold. Poisoning risk: whoever writes it can change what the next run of the tool trusts (a test run's last-failed list, a lint result)",
        find: project_cache,
    },
    Kind {
        what: "a tool's cache",
        bind: Bind::Users,
        comment: "a tool's own cache (${HOME}/.cache/TOOL, the XDG layout): owned warm or cold. Poisoning risk: whoever writes it can plant what later runs of the tool read back (packages, wheels, build outputs)",
        find: xdg_cache,
    },
];

/// The store `path` (absolute) is in, given HOME: (its kind, the length of its root in
/// bytes, `path[..len]`).
pub fn store_of(path: &[u8], home: &[u8]) -> Option<(&'static Kind, usize)> {
    if !path.starts_with(b"/") {
        return None;
    }
    let segs: Vec<&[u8]> = path[1..].split(|&b| b == b'/').collect();
    let home_segs: Vec<&[u8]> = match home.strip_prefix(b"/") {
        Some(h) if !h.is_empty() => h
            .strip_suffix(b"/")
            .unwrap_or(h)
            .split(|&b| b == b'/')
            .collect(),
        _ => Vec::new(),
    };
    KINDS.iter().find_map(|k| {
        let n = (k.find)(&segs, &home_segs)?;
        // The root is the first `n` segments: `/` and the separators before them.
        let len = segs[..n].iter().map(|s| s.len() + 1).sum::<usize>();
        Some((k, len))
    })
}

/// Is `area` (absolute) the root of a store, given HOME: a directory by definition (npm's
/// cache `~/.npm`, `~/.cache/pip`, cargo's `registry`), never a file such as cargo's
/// `.package-cache` lock. Asked of a name inside it; npm's layout (`D/_cacache`) only for a
/// directory named for npm's cache (`~/.npm`, a `.npm-cache`), since any could hold one.
pub fn is_store_root(area: &[u8], home: &[u8]) -> bool {
    let area = area.strip_suffix(b"/").unwrap_or(area);
    let name = area.rsplit(|&b| b == b'/').next().unwrap_or(area);
    let has = |n: &[u8]| name.windows(n.len()).any(|w| w == n);
    let npm = name == b".npm" || has(b"npm-cache") || has(b"npm_cache");
    let inside: &[&[u8]] = if npm { &[b"_cacache/x", b"x"] } else { &[b"x"] };
    inside.iter().any(|inside| {
        let probe = [area, b"/", inside].concat();
        store_of(&probe, home).is_some_and(|(_, len)| len == area.len())
    })
}

/// The first index `i` where `segs[i..]` starts with `run`.
fn find_run(segs: &[&[u8]], run: &[&[u8]]) -> Option<usize> {
    (0..segs.len()).find(|&i| segs[i..].starts_with(run))
}

/// `D/_cacache/...`: the root is D.
fn npm_cache(segs: &[&[u8]], _home: &[&[u8]]) -> Option<usize> {
    find_run(segs, &[b"_cacache"]).filter(|&i| i >= 1)
}

/// `.../.cargo/registry/...`, `.../cargo/git/...`: the root is `registry` or `git`.
fn cargo_store(segs: &[&[u8]], _home: &[&[u8]]) -> Option<usize> {
    (1..segs.len().saturating_sub(1)).find_map(|i| {
        let home_dir = matches!(segs[i], b".cargo" | b"cargo");
        let store = matches!(segs[i + 1], b"registry" | b"git");
        (home_dir && store).then_some(i + 2)
    })
}

/// `.../.rustup/...`, `.../rustup/toolchains/...`: the root is the rustup home.
fn rustup_home(segs: &[&[u8]], _home: &[&[u8]]) -> Option<usize> {
    (1..segs.len()).find_map(|i| {
        let dot = segs[i] == b".rustup" && i + 1 < segs.len();
        let plain = segs[i] == b"rustup" && segs.get(i + 1) == Some(&&b"toolchains"[..]);
        (dot || plain).then_some(i + 1)
    })
}

/// `.../go/pkg/mod/...`: the root is `mod`.
fn go_modules(segs: &[&[u8]], _home: &[&[u8]]) -> Option<usize> {
    find_run(segs, &[b"go", b"pkg", b"mod"]).map(|i| i + 3)
}

/// Below HOME: `.local/share/{pnpm,uv}`, `.yarn/berry`; anywhere: a `.pnpm-store`.
fn data_store(segs: &[&[u8]], home: &[&[u8]]) -> Option<usize> {
    if let Some(i) = find_run(segs, &[b".pnpm-store"]).filter(|&i| i >= 1) {
        return Some(i + 1);
    }
    let rest = below(segs, home)?;
    let h = home.len();
    match rest {
        [b".local", b"share", b"pnpm" | b"uv", ..] => Some(h + 3),
        [b".yarn", b"berry", ..] => Some(h + 2),
        _ => None,
    }
}

/// The cache directories test, lint and build tools keep in the project they run in.
const PROJECT_CACHES: &[&[u8]] = &[
    b".pytest_cache",
    b".mypy_cache",
    b".ruff_cache",
    b".hypothesis",
    b".tox",
    b".nox",
    b".parcel-cache",
    b".turbo",
    b".eslintcache",
];

/// `.../.pytest_cache/...` & co, `.../node_modules/.cache/...`, `.../node_modules/.vite/...`:
/// the root is the cache directory.
fn project_cache(segs: &[&[u8]], _home: &[&[u8]]) -> Option<usize> {
    (1..segs.len()).find_map(|i| {
        let named = PROJECT_CACHES.contains(&segs[i]);
        let in_modules = segs[i - 1] == b"node_modules" && matches!(segs[i], b".cache" | b".vite");
        (named || in_modules).then_some(i + 1)
    })
}

/// `${HOME}/.cache/TOOL/...`: the root is TOOL's directory (only with something below it:
/// the directory a run made and left empty is no evidence of a store).
fn xdg_cache(segs: &[&[u8]], home: &[&[u8]]) -> Option<usize> {
    match below(segs, home)? {
        [b".cache", tool, _, ..] if !tool.is_empty() => Some(home.len() + 2),
        _ => None,
    }
}

/// The segments of `segs` below HOME (`None` outside HOME or without one).
fn below<'a>(segs: &'a [&'a [u8]], home: &[&[u8]]) -> Option<&'a [&'a [u8]]> {
    (!home.is_empty() && segs.starts_with(home)).then(|| &segs[home.len()..])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn store_roots_are_directories_lock_files_are_not() {
        let home = b"/home/u";
        for area in [
            "/home/u/.npm",
            "/home/u/.cache/pip",
            "/home/u/.cargo/registry",
        ] {
            assert!(is_store_root(area.as_bytes(), home), "{area}");
        }
        for area in [
            "/home/u/.cargo/.package-cache",
            "/home/u/.cache",
            "/home/u/.npmrc",
        ] {
            assert!(!is_store_root(area.as_bytes(), home), "{area}");
        }
    }

    fn root(path: &str, home: &str) -> Option<(&'static str, String)> {
        store_of(path.as_bytes(), home.as_bytes()).map(|(k, n)| (k.what, path[..n].to_string()))
    }

    #[test]
    fn stores_are_found_wherever_their_tool_puts_them() {
        let h = "/home/u";
        let cases = [
            (
                "/w/proj/.npm-cache/_cacache/index-v5/98/ab",
                Some(("npm's cache", "/w/proj/.npm-cache")),
            ),
            (
                "/home/u/.npm/_cacache/content-v2/sha512/42",
                Some(("npm's cache", "/home/u/.npm")),
            ),
            (
                "/usr/local/cargo/registry/cache/x/serde-1.0.0.crate",
                Some((
                    "cargo's registry or git checkouts",
                    "/usr/local/cargo/registry",
                )),
            ),
            (
                "/home/u/.cargo/git/db/x",
                Some(("cargo's registry or git checkouts", "/home/u/.cargo/git")),
            ),
            (
                "/home/u/.rustup/settings.toml",
                Some(("rustup's toolchains", "/home/u/.rustup")),
            ),
            (
                "/usr/local/rustup/toolchains/1.95-x86_64/bin/rustc",
                Some(("rustup's toolchains", "/usr/local/rustup")),
            ),
            (
                "/home/u/go/pkg/mod/cache/download/x",
                Some(("Go's module cache", "/home/u/go/pkg/mod")),
            ),
            (
                "/home/u/.local/share/pnpm/store/v10/files/00/x",
                Some(("a package manager's store", "/home/u/.local/share/pnpm")),
            ),
            (
                "/w/proj/.pnpm-store/v10/x",
                Some(("a package manager's store", "/w/proj/.pnpm-store")),
            ),
            (
                "/home/u/.yarn/berry/cache/x.zip",
                Some(("a package manager's store", "/home/u/.yarn/berry")),
            ),
            (
                "/w/proj/.pytest_cache/v/cache/nodeids",
                Some(("a tool's cache in the project", "/w/proj/.pytest_cache")),
            ),
            (
                "/w/proj/.pytest_cache",
                Some(("a tool's cache in the project", "/w/proj/.pytest_cache")),
            ),
            (
                "/w/proj/node_modules/.vite/deps/x.js",
                Some((
                    "a tool's cache in the project",
                    "/w/proj/node_modules/.vite",
                )),
            ),
            (
                "/home/u/.cache/uv/wheels-v5/x",
                Some(("a tool's cache", "/home/u/.cache/uv")),
            ),
            (
                "/home/u/.cache/yarn/v6/npm-x/package.json",
                Some(("a tool's cache", "/home/u/.cache/yarn")),
            ),
        ];
        for (path, want) in cases {
            let want = want.map(|(w, r)| (w, r.to_string()));
            assert_eq!(root(path, h), want, "{path}");
        }
    }

    #[test]
    fn other_places_are_no_stores() {
        let h = "/home/u";
        for path in [
            "/home/u/.cache",
            "/home/u/.cache/uv",
            "/home/u/.local/share/keyrings/login.keyring",
            "/home/u/.local/bin/tool",
            "/home/u/.ssh/id_rsa",
            "/w/proj/src/registry/git.rs",
            "/_cacache/x",
            "/w/proj/cargo.toml",
            "/w/proj/node_modules/.bin/vite",
            "/w/proj/src/.cache/x",
            "/other/.cache/uv/x",
        ] {
            assert_eq!(root(path, h), None, "{path}");
        }
        // Without a HOME, nothing is found below it.
        assert_eq!(root("/home/u/.cache/uv/x", ""), None);
        assert_eq!(root("/home/u/.cache/uv/x", "/"), None);
    }
}
