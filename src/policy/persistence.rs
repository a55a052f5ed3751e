//! Persistence places: files that run later, outside the sandbox (docs/security.md,
//! "Persistence"). Owned areas and what the run created never reach them
//! ([`owner_excluded`]), and learn never covers them with a glob or an area
//! (`learn::generalize::is_persistence_place`, docs/learning.md section 6).
//!
//! Two ways to know one:
//! - **by spelling** ([`owner_excluded`]): a git control path below a `.git` or `NAME.git`
//!   directory (anything git reads as configuration or runs: `config`, `hooks/`, `info/`,
//!   `commondir`, `worktrees/*`, `modules/NAME/...` recursively; only the object store,
//!   refs, logs and a few state files are data), the name `.git` itself (a `gitdir:` pointer
//!   file, or a directory renamed or linked there), shell startup files, `.pth` files and
//!   `sitecustomize`/`usercustomize`, PATH directories (`.local/bin`), autostart, user
//!   services, crontabs, git's user configs, a project's `.npmrc`/`.pypirc`/`.yarnrc`/`.envrc`;
//! - **by what git would read** ([`git_controlled`]): the nearest directory above the path that
//!   git takes for a repository (a `HEAD`, a `commondir`, or `objects` and `refs`), whatever
//!   it is called now (a `.git` renamed away and back, a bare repository, a submodule's git
//!   directory with a `/` in its name), decides with the same table; and making the last
//!   marker of a directory that already holds a config or hooks (so that the config written
//!   first becomes a repository's) counts as writing that config.
//!
//! Pure: paths in, answers out; the filesystem is asked through a closure (the enforce sink
//! passes `lstat`).

/// Entries of a git directory that git reads as data only (file names, at its top).
const GIT_DATA_FILES: &[&str] = &[
    "HEAD",
    "ORIG_HEAD",
    "FETCH_HEAD",
    "MERGE_HEAD",
    "CHERRY_PICK_HEAD",
    "REVERT_HEAD",
    "AUTO_MERGE",
    "BISECT_LOG",
    "MERGE_MSG",
    "MERGE_MODE",
    "SQUASH_MSG",
    "COMMIT_EDITMSG",
    "TAG_EDITMSG",
    "index",
    "packed-refs",
    "description",
    "shallow",
    "gc.log",
    "gc.pid",
    "packed-refs.new",
];

/// Directories of a git directory whose contents are data (objects, refs, reflogs).
const GIT_DATA_DIRS: &[&str] = &["objects", "refs", "logs", "lfs", "rr-cache", "branches"];

/// Shell startup files and tool configs that name programs to run, by file name anywhere.
const PERSISTENT_NAMES: &[&str] = &[
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".bash_logout",
    ".profile",
    ".zshrc",
    ".zshenv",
    ".zprofile",
    ".zlogin",
    ".zlogout",
    ".kshrc",
    ".mkshrc",
    ".cshrc",
    ".tcshrc",
    ".login",
    ".logout",
    ".xinitrc",
    ".xprofile",
    ".xsession",
    ".xsessionrc",
    ".pam_environment",
    ".gitconfig",
    ".npmrc",
    ".pypirc",
    ".yarnrc",
    ".yarnrc.yml",
    ".envrc",
    ".vimrc",
    ".gvimrc",
    ".exrc",
    ".emacs",
];

/// Directories whose files run later (PATH, autostart, user services, git's user config),
/// as a run of segments anywhere in a path.
const PERSISTENT_DIRS: &[&str] = &[
    ".local/bin",
    ".cargo/bin",
    "go/bin",
    ".config/autostart",
    ".config/systemd",
    ".config/git",
    ".config/environment.d",
    ".config/fish",
    ".config/nvim",
    // `authorized_keys`, `rc` (sshd runs it at login), `config` (`ProxyCommand`).
    ".ssh",
    // `runner`, `rustc-wrapper`: run by the next `cargo build`.
    ".cargo/config",
    ".cargo/config.toml",
];

/// Absolute places whose files run later (crontabs, system profile, PATH directories).
const PERSISTENT_ABS: &[&str] = &[
    "/etc/cron.d",
    "/etc/cron.daily",
    "/etc/cron.hourly",
    "/etc/cron.weekly",
    "/etc/cron.monthly",
    "/etc/crontab",
    "/var/spool/cron",
    "/etc/profile",
    "/etc/profile.d",
    "/etc/bash.bashrc",
    "/etc/environment",
    "/etc/ld.so.preload",
    "/etc/systemd",
    "/etc/rc.local",
    "/usr/local/bin",
    "/usr/local/sbin",
];

fn segments(path: &[u8]) -> Vec<&[u8]> {
    path.split(|&b| b == b'/')
        .filter(|s| !s.is_empty())
        .collect()
}

/// A temp file git makes at the top of a git directory (`git init` tests the filesystem
/// with `tXXXXXX`; packs and objects are made as `tmp_*`): read by no git command.
fn git_temp_name(name: &str) -> bool {
    let b = name.as_bytes();
    name.starts_with("tmp_")
        || (b.len() == 7 && b[0] == b't' && b[1..].iter().all(u8::is_ascii_alphanumeric))
}

/// Is a git directory's entry `rest` (the path below it, by segments) something git reads
/// as configuration or runs? Fail closed: all but the data entries.
pub fn git_rest_is_control(rest: &[&[u8]]) -> bool {
    let Some(first) = rest.first() else {
        return false;
    };
    let name = std::str::from_utf8(first).unwrap_or("\u{0}");
    match name {
        // A submodule's git directory, `modules/NAME` (a NAME with a `/` is found on disk,
        // by [`git_controlled`]); the `modules` directory itself holds nothing git runs.
        "modules" => rest.len() > 2 && git_rest_is_control(&rest[2..]),
        // A worktree's administrative directory names its common directory (`commondir`).
        "worktrees" => rest.len() > 1,
        // `git update-server-info` (run by `git gc`) writes the refs list for dumb HTTP
        // through a temp name; the rest of `info/` (attributes, exclude) stays guarded.
        "info" if rest.len() == 2 && (rest[1] == b"refs" || rest[1].starts_with(b"refs_")) => false,
        _ if rest.len() == 1 => {
            !(GIT_DATA_FILES.contains(&name)
                || GIT_DATA_DIRS.contains(&name)
                || name.ends_with(".lock")
                || git_temp_name(name))
        }
        _ => !GIT_DATA_DIRS.contains(&name),
    }
}

/// Is `path` a git control path by its spelling (below a `.git` or `NAME.git` directory), or
/// the name `.git` itself?
pub fn git_control_spelled(path: &[u8]) -> bool {
    let segs = segments(path);
    segs.iter().enumerate().any(|(i, seg)| {
        let gitdir = *seg == b".git" || (seg.len() > 4 && seg.ends_with(b".git"));
        gitdir && ((i + 1 == segs.len() && *seg == b".git") || git_rest_is_control(&segs[i + 1..]))
    })
}

/// Is `path` a persistence place by its spelling, other than git's: a startup file or tool
/// config by name, a `.pth` file or `sitecustomize`/`usercustomize`, or below a PATH,
/// autostart, service or cron directory?
pub fn persistent_spelled(path: &[u8]) -> bool {
    let segs = segments(path);
    let Some(last) = segs.last().copied() else {
        return false;
    };
    let last = String::from_utf8_lossy(last);
    // Python reads `.pth` files and imports `sitecustomize` and `usercustomize` (a module or
    // a package) at start from its site directories: `site-packages` or `dist-packages` (a
    // venv's, the user site, the system's). The same names elsewhere are data: a wheel being
    // unpacked in a tool's cache, pip's build environment in TMPDIR.
    // A site directory inside a tool's cache (`~/.cache/uv/builds-v0/.tmpX/.../site-packages`:
    // uv's build environments) is the cache's: whoever owns the cache already writes what it
    // later links into environments (docs/security.md). pip's isolated build environment
    // (`${TMPDIR}/pip-build-env-XXXXXXXX/overlay/...`) is made for one build and removed.
    let throwaway = |s: &&[u8]| *s == b".cache" || s.starts_with(b"pip-build-env-");
    let in_site = |i: usize| {
        i > 0
            && matches!(segs[i - 1], b"site-packages" | b"dist-packages")
            && !segs[..i].iter().any(throwaway)
    };
    let custom = |s: &[u8]| s.starts_with(b"sitecustomize") || s.starts_with(b"usercustomize");
    if PERSISTENT_NAMES.contains(&last.as_ref())
        || (last.ends_with(".pth") && in_site(segs.len() - 1))
        || segs
            .iter()
            .enumerate()
            .any(|(i, s)| custom(s) && in_site(i))
    {
        return true;
    }
    let under = |p: &[u8], place: &[u8]| {
        p.strip_prefix(place)
            .is_some_and(|r| r.is_empty() || r[0] == b'/')
    };
    if PERSISTENT_ABS.iter().any(|a| under(path, a.as_bytes())) {
        return true;
    }
    PERSISTENT_DIRS.iter().any(|d| {
        let d = d.as_bytes();
        path.windows(d.len() + 1)
            .enumerate()
            .any(|(i, w)| w[0] == b'/' && &w[1..] == d && under(&path[i + 1..], d))
    })
}

/// Paths that neither an `own` area nor provenance (what the run created) may write or
/// create, by spelling: git control paths and the other persistence places. Only a rule that
/// names them with `write` or `create` allows them.
pub fn owner_excluded(path: &[u8]) -> bool {
    git_control_spelled(path) || persistent_spelled(path)
}

/// What a lookup found at a path (not following a final symlink).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Found {
    Nothing,
    Dir,
    Other,
}

/// How many directories above a path [`git_controlled`] looks at.
const GIT_WALK_MAX: usize = 64;

/// Does git take directory `dir` for a repository (or a worktree's or submodule's git
/// directory)? A `HEAD`, a `commondir`, or both `objects` and `refs`: wider than git's own
/// test (which also reads HEAD), so a half-made one counts.
fn is_git_dir(dir: &[u8], look: &dyn Fn(&[u8]) -> Found) -> bool {
    let at = |name: &str| {
        let mut p = dir.to_vec();
        if !p.ends_with(b"/") {
            p.push(b'/');
        }
        p.extend_from_slice(name.as_bytes());
        look(&p)
    };
    at("HEAD") != Found::Nothing
        || at("commondir") != Found::Nothing
        || (at("objects") == Found::Dir && at("refs") == Found::Dir)
}

/// Is a write or create of `path` (absolute) a write of what git would read as a
/// repository's configuration or hooks, judged by what is on disk now: below the nearest
/// directory above it that git takes for a git directory, `path` is a control entry
/// ([`git_rest_is_control`]); or `path` is a marker (`HEAD`, `objects`, `refs`,
/// `commondir`) whose making turns a directory that already holds a control entry
/// (`config`, `hooks`, `info`...) into a git directory. Fail closed where a lookup fails:
/// the closure answers `Other` for what it cannot look at.
pub fn git_controlled(path: &[u8], look: &dyn Fn(&[u8]) -> Found) -> bool {
    let segs = segments(path);
    if segs.is_empty() || !path.starts_with(b"/") {
        return false;
    }
    let join = |n: usize| -> Vec<u8> {
        let mut p = Vec::new();
        for s in &segs[..n] {
            p.push(b'/');
            p.extend_from_slice(s);
        }
        if p.is_empty() {
            p.push(b'/');
        }
        p
    };
    // A marker made last, into a directory with a control entry already there. Not where
    // that directory's config is a control path by spelling (a `.git` directory, a
    // submodule's `.git/modules/NAME`): written only through rules naming it, and `git
    // init` copies its hooks and writes its config before `HEAD`.
    let last = segs[segs.len() - 1];
    let spelled = {
        let mut config = join(segs.len() - 1);
        config.extend_from_slice(b"/config");
        git_control_spelled(&config)
    };
    if !spelled && matches!(last, b"HEAD" | b"objects" | b"refs" | b"commondir") {
        let parent = join(segs.len() - 1);
        let has = |name: &str| {
            let mut p = parent.clone();
            if !p.ends_with(b"/") {
                p.push(b'/');
            }
            p.extend_from_slice(name.as_bytes());
            look(&p) != Found::Nothing
        };
        if [
            "config",
            "config.worktree",
            "hooks",
            "info",
            "commondir",
            "modules",
            "worktrees",
        ]
        .iter()
        .any(|n| has(n))
        {
            return true;
        }
    }
    let lowest = segs.len().saturating_sub(GIT_WALK_MAX);
    for n in (lowest..segs.len()).rev() {
        let dir = join(n);
        if is_git_dir(&dir, look) {
            return git_rest_is_control(&segs[n..]);
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn git_control_paths_by_spelling() {
        for (path, want) in [
            ("/w/.git/hooks/pre-commit", true),
            ("/w/.git/hooks", true),
            ("/w/.git/config", true),
            ("/w/.git/config.lock", false),
            ("/w/.git/config.worktree", true),
            ("/w/.git/commondir", true),
            ("/w/.git/info/exclude", true),
            ("/w/.git/info", true),
            ("/w/.git/info/refs", false),
            ("/w/.git/info/refs_MeGJUq", false),
            ("/w/.git/info/attributes", true),
            ("/w/.git/worktrees/x/commondir", true),
            ("/w/.git/worktrees/x/HEAD", true),
            ("/w/.git/worktrees", false),
            ("/w/.git/modules/sub/config", true),
            ("/w/.git/modules/sub/hooks/post-checkout", true),
            ("/w/.git/modules/sub/modules/deep/config", true),
            ("/w/.git/modules/sub/objects/ab/cdef", false),
            ("/w/.git/modules/sub/HEAD", false),
            ("/w/.git/modules/sub", false),
            ("/w/.git/modules", false),
            ("/w/.git/objects/ab/cdef", false),
            ("/w/.git/refs/heads/main", false),
            ("/w/.git/logs/HEAD", false),
            ("/w/.git/index", false),
            ("/w/.git/HEAD", false),
            ("/w/.git/packed-refs", false),
            ("/w/.git/objects", false),
            ("/w/.git/refs", false),
            ("/w/.git/tm0DszS", false),
            ("/w/.git/tmp_pack_x1", false),
            ("/w/.git/tm0DszSx", true),
            ("/w/.git/rebase-merge/git-rebase-todo", true),
            ("/w/.git/sequencer/todo", true),
            ("/w/.git", true),
            ("/w/sub/.git", true),
            ("/w/repo.git/config", true),
            ("/w/repo.git/hooks/update", true),
            ("/w/repo.git/objects/x", false),
            ("/w/repo.git", false),
            ("/w/.gitignore", false),
            ("/w/.github/workflows/ci.yml", false),
            ("/w/.git/configx/y", true),
        ] {
            assert_eq!(git_control_spelled(path.as_bytes()), want, "{path}");
        }
    }

    #[test]
    fn persistence_places_by_spelling() {
        for (path, want) in [
            ("/home/u/.bashrc", true),
            ("/home/u/.bash_login", true),
            ("/home/u/.gitconfig", true),
            ("/w/.npmrc", true),
            ("/w/.envrc", true),
            ("/home/u/.local/bin/git", true),
            ("/home/u/.local/bin", true),
            ("/home/u/.local/binx/git", false),
            ("/home/u/.local/lib/python3.11/site-packages/evil.pth", true),
            (
                "/w/.venv/lib/python3.11/site-packages/sitecustomize.py",
                true,
            ),
            (
                "/w/.venv/lib/python3.11/site-packages/usercustomize/__init__.py",
                true,
            ),
            ("/w/.venv/lib/python3.11/site-packages/usercustomize", true),
            ("/usr/lib/python3/dist-packages/x.pth", true),
            // Data outside a site directory: a wheel unpacked in uv's cache, pip's isolated
            // build environment.
            (
                "/home/u/.cache/uv/.tmpp8A9xR/distutils-precedence.pth",
                false,
            ),
            ("/tmp/pip-build-env-pihmuxmp/site/sitecustomize.py", false),
            (
                "/home/u/.cache/uv/builds-v0/.tmpZn2XXQ/lib/python3.11/site-packages/x.pth",
                false,
            ),
            (
                "/tmp/pip-build-env-jml44tfj/overlay/lib/python3.11/site-packages/d.pth",
                false,
            ),
            (
                "/w/.venv/lib/python3.11/site-packages/pkg/__init__.py",
                false,
            ),
            ("/home/u/.config/autostart/x.desktop", true),
            ("/home/u/.config/systemd/user/x.service", true),
            ("/home/u/.config/git/config", true),
            ("/home/u/.config/gitx", false),
            ("/var/spool/cron/crontabs/root", true),
            ("/etc/cron.d/job", true),
            ("/usr/local/bin/x", true),
            ("/w/src/profile.rs", false),
            ("/home/u/.ssh/authorized_keys", true),
            ("/w/.cargo/config.toml", true),
            ("/home/u/.cargo/registry/x", false),
            ("/home/u/.cargo/bin/cargo-evil", true),
            ("/home/u/go/bin/gopls", true),
            ("/w/token.go", false),
        ] {
            assert_eq!(persistent_spelled(path.as_bytes()), want, "{path}");
        }
    }

    /// A fake filesystem: path -> what is there.
    fn fs(entries: &[(&str, Found)]) -> impl Fn(&[u8]) -> Found {
        let map: BTreeMap<Vec<u8>, Found> = entries
            .iter()
            .map(|(p, f)| (p.as_bytes().to_vec(), *f))
            .collect();
        move |p: &[u8]| map.get(p).copied().unwrap_or(Found::Nothing)
    }

    #[test]
    fn git_reads_what_is_on_disk_not_the_spelling() {
        use Found::{Dir, Other};
        // `.git` renamed away to `x`: still a git directory by its contents.
        let moved = fs(&[
            ("/w/dep/x", Dir),
            ("/w/dep/x/HEAD", Other),
            ("/w/dep/x/objects", Dir),
            ("/w/dep/x/refs", Dir),
            ("/w/dep/x/hooks", Dir),
        ]);
        assert!(git_controlled(b"/w/dep/x/hooks/post-checkout", &moved));
        assert!(git_controlled(b"/w/dep/x/config", &moved));
        assert!(!git_controlled(b"/w/dep/x/objects/ab/cd", &moved));
        assert!(!git_controlled(b"/w/dep/other.txt", &moved));
        // A submodule whose name has a `/`: the nearest git directory decides.
        let sub = fs(&[("/w/.git/HEAD", Other), ("/w/.git/modules/a/b/HEAD", Other)]);
        assert!(git_controlled(b"/w/.git/modules/a/b/config", &sub));
        assert!(!git_controlled(
            b"/w/.git/modules/a/b/objects/pack/p.pack",
            &sub
        ));
        // A new submodule directory, not a git directory yet: `.git` decides (modules/a/b).
        assert!(git_controlled(b"/w/.git/modules/a/c/config", &sub));
        // A common directory (objects and refs, no HEAD), as `commondir` names one.
        let common = fs(&[("/w/c/objects", Dir), ("/w/c/refs", Dir)]);
        assert!(git_controlled(b"/w/c/config", &common));
        // Config written first, the markers after: the last marker is the write of config.
        let later = fs(&[("/w/y", Dir), ("/w/y/config", Other), ("/w/y/objects", Dir)]);
        assert!(git_controlled(b"/w/y/refs", &later));
        assert!(git_controlled(b"/w/y/HEAD", &later));
        let plain = fs(&[("/w/y", Dir), ("/w/y/objects", Dir)]);
        assert!(!git_controlled(b"/w/y/refs", &plain));
        // `git init`: hooks and config before HEAD, in a `.git` directory.
        let init = fs(&[
            ("/w/.git", Dir),
            ("/w/.git/hooks", Dir),
            ("/w/.git/config", Other),
        ]);
        assert!(!git_controlled(b"/w/.git/HEAD", &init));
        let sub = fs(&[
            ("/w/.git/HEAD", Other),
            ("/w/.git/modules/lib/config", Other),
        ]);
        assert!(!git_controlled(b"/w/.git/modules/lib/objects", &sub));
        // Nothing like a repository: nothing to say.
        assert!(!git_controlled(b"/w/src/config", &fs(&[])));
    }
}
