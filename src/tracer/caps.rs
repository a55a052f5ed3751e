//! What the process may do, found by asking the kernel rather than guessed from the uid
//! (issue 41): a root without CAP_SYS_ADMIN (a container's root) may not install a seccomp
//! filter or enter a Landlock domain without no_new_privs.

/// `CAP_SYS_ADMIN`.
const CAP_SYS_ADMIN: u32 = 21;

/// `struct __user_cap_header_struct`.
#[repr(C)]
pub(super) struct Header {
    pub version: u32,
    pub pid: i32,
}

/// `struct __user_cap_data_struct` (two of them in version 3).
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub(super) struct Data {
    pub effective: u32,
    pub permitted: u32,
    pub inheritable: u32,
}

/// `_LINUX_CAPABILITY_VERSION_3`.
pub(super) const VERSION_3: u32 = 0x2008_0522;

/// The calling thread's capability sets (`capget`), with the header to give back to
/// `capset`. Raw syscalls only: also used in the forked child.
pub(super) fn get() -> Option<(Header, [Data; 2])> {
    let mut hdr = Header {
        version: VERSION_3,
        pid: 0,
    };
    let mut data = [Data::default(); 2];
    // SAFETY: `hdr` and `data` are live and laid out as capability version 3 expects (a
    // header and two data words); the kernel writes at most the two entries.
    if unsafe { libc::syscall(libc::SYS_capget, &raw mut hdr, data.as_mut_ptr()) } != 0 {
        return None;
    }
    Some((hdr, data))
}

/// Is `cap` in the calling thread's effective set?
pub fn effective(cap: u32) -> bool {
    get().is_some_and(|(_, data)| {
        data.get((cap / 32) as usize)
            .is_some_and(|d| d.effective & (1u32 << (cap % 32)) != 0)
    })
}

/// May this process install a seccomp filter or enter a Landlock domain without
/// no_new_privs? Only with CAP_SYS_ADMIN in its effective set.
pub fn may_skip_no_new_privs() -> bool {
    effective(CAP_SYS_ADMIN)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_answer_follows_the_effective_set_not_the_uid() {
        // A non-root test run has no CAP_SYS_ADMIN; a root run normally has it, but a root
        // run without it (setpriv --bounding-set=-sys_admin) must say no.
        let status = std::fs::read_to_string("/proc/self/status").unwrap();
        let eff = status
            .lines()
            .find_map(|l| l.strip_prefix("CapEff:"))
            .map(|v| u64::from_str_radix(v.trim(), 16).unwrap())
            .unwrap();
        assert_eq!(may_skip_no_new_privs(), eff & (1 << 21) != 0);
    }
}
