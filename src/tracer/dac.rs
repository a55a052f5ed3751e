//! Did the file permissions refuse a tracee's call, rather than the kernel fence? The exit watch
//! of enforce ([`crate::sink`]) reports an allowed call that fails with EACCES on a path the
//! fence may not grant as a disagreement between the fence and the ptrace layer. But EACCES
//! is also what the permissions (DAC: mode bits, ACLs, capabilities) answer: a non-root
//! workload's loader probing `LD_LIBRARY_PATH` entries under `/root`, a test of a read-only
//! file. Before it reports, sbx asks the kernel the same question with the tracee's
//! filesystem credentials and no fence: `faccessat2(AT_EACCESS)` in a short-lived thread of
//! sbx that took the tracee's fsuid, fsgid, groups and effective capabilities (per-thread
//! credentials, set with the raw calls, never glibc's process-wide wrappers). If that check is
//! refused too, the permissions refused the call; if sbx cannot take the credentials (a
//! non-root sbx, a tracee with other groups), the refusal is reported: a false report names
//! itself a bug, a missed one would be silent.
//!
//! EXDEV is the fence's answer to a rename it cannot allow (REFER), and the kernel's to a
//! rename across mounts: the second is told by the mount ids of the paths' parents.

use std::ffi::CString;

use crate::event::{Access, AccessSet};

/// A tracee's filesystem credentials, from `/proc/TID/status`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FsCreds {
    pub fsuid: u32,
    pub fsgid: u32,
    pub groups: Vec<u32>,
    /// `CapEff`.
    pub cap_eff: u64,
}

/// Parse a `/proc/TID/status` text: the 4th field of `Uid:` and `Gid:`, `Groups:`, `CapEff:`.
pub fn parse_status(status: &str) -> Option<FsCreds> {
    let field = |key: &str| status.lines().find_map(|l| l.strip_prefix(key));
    let fourth = |key: &str| -> Option<u32> { field(key)?.split_whitespace().nth(3)?.parse().ok() };
    let mut groups: Vec<u32> = field("Groups:")?
        .split_whitespace()
        .map(str::parse)
        .collect::<Result<_, _>>()
        .ok()?;
    groups.sort_unstable();
    Some(FsCreds {
        fsuid: fourth("Uid:")?,
        fsgid: fourth("Gid:")?,
        groups,
        cap_eff: u64::from_str_radix(field("CapEff:")?.trim(), 16).ok()?,
    })
}

/// The credentials of tracee `tid`.
pub fn fs_creds(tid: i32) -> Option<FsCreds> {
    parse_status(&std::fs::read_to_string(format!("/proc/{tid}/status")).ok()?)
}

/// What the permissions check for `access` on `path`: the path itself (read, write, run) or
/// its parent directory (make, remove, rename a name in it).
pub fn question(path: &[u8], access: AccessSet) -> Option<(Vec<u8>, i32)> {
    let mut mode = 0;
    let mut in_parent = false;
    for a in access.iter() {
        match a {
            Access::Read => mode |= libc::R_OK,
            Access::Write | Access::Truncate => mode |= libc::W_OK,
            Access::Exec => mode |= libc::X_OK,
            Access::Create | Access::Delete | Access::Rename | Access::Link | Access::Symlink => {
                in_parent = true;
            }
            _ => {}
        }
    }
    if in_parent {
        let cut = path.iter().rposition(|&b| b == b'/')?;
        let parent = if cut == 0 { &b"/"[..] } else { &path[..cut] };
        return Some((parent.to_vec(), libc::W_OK | libc::X_OK));
    }
    (mode != 0).then(|| (path.to_vec(), mode))
}

/// Would the permissions alone refuse tracee `tid` the `access` to `path` (EACCES)? `false`
/// where that cannot be known.
pub fn refuses(tid: i32, path: &[u8], access: AccessSet) -> bool {
    let (Some(creds), Some((at, mode))) = (fs_creds(tid), question(path, access)) else {
        return false;
    };
    let Ok(at) = CString::new(at) else {
        return false;
    };
    std::thread::spawn(move || as_tracee(&creds) && eacces(&at, mode))
        .join()
        .unwrap_or(false)
}

/// Take `creds` for this thread only. `false` if any part could not be taken.
fn as_tracee(c: &FsCreds) -> bool {
    // SAFETY: getgroups with a null list only counts; then fills a buffer of that size.
    let n = unsafe { libc::getgroups(0, std::ptr::null_mut()) };
    let mut own = vec![0 as libc::gid_t; usize::try_from(n).unwrap_or(0)];
    // SAFETY: `own` holds `n` entries.
    let n = unsafe { libc::getgroups(n, own.as_mut_ptr()) };
    own.truncate(usize::try_from(n).unwrap_or(0));
    own.sort_unstable();
    if own != c.groups {
        // SAFETY: the raw setgroups changes this thread's credentials only (glibc's wrapper
        // would change every thread of sbx); the list is valid for its length.
        let r = unsafe {
            libc::syscall(
                libc::SYS_setgroups,
                c.groups.len(),
                c.groups.as_ptr() as *const libc::gid_t,
            )
        };
        if r != 0 {
            return false;
        }
    }
    // SAFETY: raw setfsgid/setfsuid change this thread's filesystem ids; each returns the
    // previous id, and a second call with an invalid id (-1) reads the current one.
    let taken = unsafe {
        libc::syscall(libc::SYS_setfsgid, c.fsgid);
        libc::syscall(libc::SYS_setfsuid, c.fsuid);
        libc::syscall(libc::SYS_setfsgid, u32::MAX) == i64::from(c.fsgid)
            && libc::syscall(libc::SYS_setfsuid, u32::MAX) == i64::from(c.fsuid)
    };
    taken && with_caps(c.cap_eff)
}

/// Make this thread's effective capabilities `eff` (at most what it may have).
fn with_caps(eff: u64) -> bool {
    let mut head = libc_cap_header();
    let mut data = [CapData::default(); 2];
    // SAFETY: capget fills two data structs for the version-3 header of this thread (pid 0).
    if unsafe { libc::syscall(libc::SYS_capget, &mut head, data.as_mut_ptr()) } != 0 {
        return false;
    }
    let cur = u64::from(data[0].effective) | (u64::from(data[1].effective) << 32);
    if cur == eff {
        return true;
    }
    let permitted = u64::from(data[0].permitted) | (u64::from(data[1].permitted) << 32);
    if eff & !permitted != 0 {
        return false;
    }
    data[0].effective = u32::try_from(eff & 0xffff_ffff).unwrap_or(0);
    data[1].effective = u32::try_from(eff >> 32).unwrap_or(0);
    let mut head = libc_cap_header();
    // SAFETY: capset of this thread (pid 0) with the sets just read, effective lowered.
    unsafe { libc::syscall(libc::SYS_capset, &mut head, data.as_ptr()) == 0 }
}

#[repr(C)]
struct CapHeader {
    version: u32,
    pid: i32,
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

fn libc_cap_header() -> CapHeader {
    CapHeader {
        version: 0x2008_0522, // _LINUX_CAPABILITY_VERSION_3
        pid: 0,
    }
}

/// `faccessat(path, mode, AT_EACCESS)` fails with EACCES (or EPERM).
fn eacces(path: &CString, mode: i32) -> bool {
    // SAFETY: a NUL-terminated path; faccessat only reads it.
    let r = unsafe { libc::faccessat(libc::AT_FDCWD, path.as_ptr(), mode, libc::AT_EACCESS) };
    r != 0
        && matches!(
            std::io::Error::last_os_error().raw_os_error(),
            Some(libc::EACCES | libc::EPERM)
        )
}

/// Do the parent directories of `paths` sit on different mounts (a rename between them fails
/// with EXDEV whatever the fence says)? `false` where a mount id cannot be read.
pub fn across_mounts(paths: &[&[u8]]) -> bool {
    let ids: Vec<u64> = paths
        .iter()
        .filter_map(|p| {
            let cut = p.iter().rposition(|&b| b == b'/')?;
            mount_id(if cut == 0 { b"/" } else { &p[..cut] })
        })
        .collect();
    ids.len() == paths.len() && ids.windows(2).any(|w| w[0] != w[1])
}

/// The mount id of `path` (statx `STX_MNT_ID`, Linux 5.8).
fn mount_id(path: &[u8]) -> Option<u64> {
    let c = CString::new(path).ok()?;
    let mut stx = std::mem::MaybeUninit::<libc::statx>::zeroed();
    // SAFETY: a NUL-terminated path and a statx buffer the call fills.
    let r = unsafe {
        libc::statx(
            libc::AT_FDCWD,
            c.as_ptr(),
            libc::AT_SYMLINK_NOFOLLOW,
            libc::STATX_MNT_ID,
            stx.as_mut_ptr(),
        )
    };
    // SAFETY: statx succeeded, so the buffer is filled.
    let stx = (r == 0).then(|| unsafe { stx.assume_init() })?;
    (stx.stx_mask & libc::STATX_MNT_ID != 0).then_some(stx.stx_mnt_id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_gives_the_filesystem_credentials() {
        let s = "Name:\tcat\nUid:\t1000\t1000\t1000\t1001\nGid:\t100\t100\t100\t101\n\
                 Groups:\t27 4 \nCapInh:\t0000000000000000\nCapEff:\t000001ffffffffff\n";
        assert_eq!(
            parse_status(s),
            Some(FsCreds {
                fsuid: 1001,
                fsgid: 101,
                groups: vec![4, 27],
                cap_eff: 0x1ff_ffff_ffff,
            })
        );
        let none = "Uid:\t0\t0\t0\t0\nGid:\t0\t0\t0\t0\nGroups:\t\nCapEff:\t0000000000000000\n";
        assert_eq!(parse_status(none).map(|c| c.groups), Some(vec![]));
        assert_eq!(parse_status("Uid:\t0\t0\n"), None);
    }

    #[test]
    fn names_are_checked_in_their_directory_contents_in_place() {
        let q = |p: &str, a: Access| question(p.as_bytes(), AccessSet::of(a));
        assert_eq!(
            q("/a/b", Access::Read),
            Some((b"/a/b".to_vec(), libc::R_OK))
        );
        assert_eq!(
            q("/a/b", Access::Create),
            Some((b"/a".to_vec(), libc::W_OK | libc::X_OK))
        );
        assert_eq!(
            q("/b", Access::Delete),
            Some((b"/".to_vec(), libc::W_OK | libc::X_OK))
        );
        assert_eq!(q("/a/b", Access::Stat), None);
    }

    #[test]
    fn a_refusal_of_the_permissions_is_told_from_an_allowed_access() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("f");
        std::fs::write(&f, "x").unwrap();
        let me = i32::try_from(std::process::id()).unwrap();
        let p = f.as_os_str().as_encoded_bytes();
        assert!(!refuses(me, p, AccessSet::of(Access::Read)));
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o000)).unwrap();
        // Root reads a 000 file (CAP_DAC_OVERRIDE); anyone else is refused.
        let root = nix::unistd::geteuid().is_root();
        assert_eq!(refuses(me, p, AccessSet::of(Access::Read)), !root);
        // A missing file is no refusal (ENOENT).
        let gone = d.path().join("gone");
        assert!(!refuses(
            me,
            gone.as_os_str().as_encoded_bytes(),
            AccessSet::of(Access::Read)
        ));
    }

    #[test]
    #[cfg_attr(
        target_arch = "aarch64",
        ignore = "the aarch64 unit tests run under qemu-user, whose statx gives no mount id"
    )]
    fn a_rename_across_mounts_is_told_by_the_mount_ids() {
        let d = tempfile::tempdir().unwrap();
        let (a, b) = (d.path().join("a"), d.path().join("b"));
        let (a, b) = (
            a.as_os_str().as_encoded_bytes(),
            b.as_os_str().as_encoded_bytes(),
        );
        assert!(!across_mounts(&[a, b]));
        assert!(across_mounts(&[b"/proc/self/x", a]));
        // A path whose directory is missing: unknown, so no excuse.
        assert!(!across_mounts(&[b"/nonexistent-sbx/x", a]));
    }

    #[test]
    fn the_check_takes_the_tracees_credentials() {
        if !nix::unistd::geteuid().is_root() {
            return;
        }
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("f");
        std::fs::write(&f, "x").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o600)).unwrap();
        std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let mut nobody = std::process::Command::new("setpriv")
            .args([
                "--reuid=65534",
                "--regid=65534",
                "--clear-groups",
                "sleep",
                "30",
            ])
            .spawn()
            .unwrap();
        let pid = i32::try_from(nobody.id()).unwrap();
        // Wait until setpriv has dropped to nobody and run sleep.
        for _ in 0..200 {
            if fs_creds(pid).is_some_and(|c| c.fsuid == 65534)
                && std::fs::read_link(format!("/proc/{pid}/exe"))
                    .is_ok_and(|e| e.ends_with("sleep"))
            {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let p = f.as_os_str().as_encoded_bytes();
        let me = i32::try_from(std::process::id()).unwrap();
        let refused = refuses(pid, p, AccessSet::of(Access::Read));
        let in_dir = refuses(pid, p, AccessSet::of(Access::Create));
        nobody.kill().unwrap();
        nobody.wait().unwrap();
        assert!(refused, "nobody may not read root's 0600 file");
        assert!(in_dir, "nor make names in root's 0755 directory");
        assert!(!refuses(me, p, AccessSet::of(Access::Read)), "root may");
    }
}
