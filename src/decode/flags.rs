//! Flag bits to names, for display (`sbx show`, reports): open/at/clone flags, modes, socket
//! families and types, signals.
//!
//! Pure tables of Linux values defined here (no libc calls outside tests, where they are
//! checked against libc's constants on the native architecture). The values are the generic
//! ones shared by x86_64 and aarch64, except four open flags that aarch64 places differently:
//! [`open_flags_for`] takes the architecture, [`open_flags`] assumes x86_64. Unknown bits are
//! printed in hex so nothing is hidden.

use crate::arch::Arch;

/// `AT_FDCWD`: "relative to the current directory" in a dirfd argument.
pub const AT_FDCWD: i32 = -100;

pub const O_ACCMODE: u64 = 0o3;
pub const O_RDONLY: u64 = 0o0;
pub const O_WRONLY: u64 = 0o1;
pub const O_RDWR: u64 = 0o2;
pub const O_CREAT: u64 = 0o100;
pub const O_EXCL: u64 = 0o200;
pub const O_NOCTTY: u64 = 0o400;
pub const O_TRUNC: u64 = 0o1000;
pub const O_APPEND: u64 = 0o2000;
pub const O_NONBLOCK: u64 = 0o4000;
pub const O_DSYNC: u64 = 0o10000;
pub const O_ASYNC: u64 = 0o20000;
pub const O_NOATIME: u64 = 0o1_000_000;
pub const O_CLOEXEC: u64 = 0o2_000_000;
/// `__O_SYNC`; `O_SYNC` is `__O_SYNC | O_DSYNC`.
pub const O_SYNC_BIT: u64 = 0o4_000_000;
pub const O_SYNC: u64 = O_SYNC_BIT | O_DSYNC;
pub const O_PATH: u64 = 0o10_000_000;
/// `__O_TMPFILE`; `O_TMPFILE` is `__O_TMPFILE | O_DIRECTORY`.
pub const O_TMPFILE_BIT: u64 = 0o20_000_000;

/// The four open flags whose values differ between architectures live with the other
/// architecture facts.
pub use crate::arch::{ArchOpenFlags, OPEN_AARCH64, OPEN_X86_64};

pub const AT_SYMLINK_NOFOLLOW: u64 = 0x100;
pub const AT_REMOVEDIR: u64 = 0x200;
pub const AT_SYMLINK_FOLLOW: u64 = 0x400;
pub const AT_NO_AUTOMOUNT: u64 = 0x800;
pub const AT_EMPTY_PATH: u64 = 0x1000;
pub const AT_STATX_FORCE_SYNC: u64 = 0x2000;
pub const AT_STATX_DONT_SYNC: u64 = 0x4000;
pub const AT_RECURSIVE: u64 = 0x8000;

/// `CSIGNAL`: the low byte of clone flags is the exit signal.
pub const CSIGNAL: u64 = 0xff;
pub const CLONE_VM: u64 = 0x100;
pub const CLONE_VFORK: u64 = 0x4000;
pub const CLONE_THREAD: u64 = 0x10000;

const CLONE_NAMES: &[(u64, &str)] = &[
    (CLONE_VM, "CLONE_VM"),
    (0x200, "CLONE_FS"),
    (0x400, "CLONE_FILES"),
    (0x800, "CLONE_SIGHAND"),
    (0x1000, "CLONE_PIDFD"),
    (0x2000, "CLONE_PTRACE"),
    (CLONE_VFORK, "CLONE_VFORK"),
    (0x8000, "CLONE_PARENT"),
    (CLONE_THREAD, "CLONE_THREAD"),
    (0x20000, "CLONE_NEWNS"),
    (0x40000, "CLONE_SYSVSEM"),
    (0x80000, "CLONE_SETTLS"),
    (0x100000, "CLONE_PARENT_SETTID"),
    (0x200000, "CLONE_CHILD_CLEARTID"),
    (0x400000, "CLONE_DETACHED"),
    (0x800000, "CLONE_UNTRACED"),
    (0x1000000, "CLONE_CHILD_SETTID"),
    (0x2000000, "CLONE_NEWCGROUP"),
    (0x4000000, "CLONE_NEWUTS"),
    (0x8000000, "CLONE_NEWIPC"),
    (0x10000000, "CLONE_NEWUSER"),
    (0x20000000, "CLONE_NEWPID"),
    (0x40000000, "CLONE_NEWNET"),
    (0x80000000, "CLONE_IO"),
    (0x100000000, "CLONE_CLEAR_SIGHAND"),
    (0x200000000, "CLONE_INTO_CGROUP"),
];

const AT_NAMES: &[(u64, &str)] = &[
    (AT_SYMLINK_NOFOLLOW, "AT_SYMLINK_NOFOLLOW"),
    // 0x200 is also AT_EACCESS (faccessat) and AT_HANDLE_FID; REMOVEDIR is the common one.
    (AT_REMOVEDIR, "AT_REMOVEDIR"),
    (AT_SYMLINK_FOLLOW, "AT_SYMLINK_FOLLOW"),
    (AT_NO_AUTOMOUNT, "AT_NO_AUTOMOUNT"),
    (AT_EMPTY_PATH, "AT_EMPTY_PATH"),
    (AT_STATX_FORCE_SYNC, "AT_STATX_FORCE_SYNC"),
    (AT_STATX_DONT_SYNC, "AT_STATX_DONT_SYNC"),
    (AT_RECURSIVE, "AT_RECURSIVE"),
];

/// `names` of the bits set in `bits`, `|`-joined in table order, then any leftover bits in
/// hex; `zero` when nothing is set. A table entry may have several bits: it matches only when
/// all are set, and its bits are then consumed.
fn join(bits: u64, names: &[(u64, &str)], mut parts: Vec<String>, zero: &str) -> String {
    let mut left = bits;
    for &(mask, name) in names {
        if mask != 0 && left & mask == mask {
            parts.push(name.to_string());
            left &= !mask;
        }
    }
    if left != 0 {
        parts.push(format!("{left:#x}"));
    }
    if parts.is_empty() {
        zero.to_string()
    } else {
        parts.join("|")
    }
}

/// Open flags on x86_64: `O_RDONLY|O_CLOEXEC`, `O_WRONLY|O_CREAT|O_TRUNC`.
pub fn open_flags(bits: u64) -> String {
    open_flags_for(Arch::X86_64, bits)
}

/// Open flags with `arch`'s values for O_DIRECT, O_LARGEFILE, O_DIRECTORY and O_NOFOLLOW.
pub fn open_flags_for(arch: Arch, bits: u64) -> String {
    let a = ArchOpenFlags::of(arch);
    let mode = match bits & O_ACCMODE {
        O_RDONLY => "O_RDONLY",
        O_WRONLY => "O_WRONLY",
        O_RDWR => "O_RDWR",
        _ => "O_ACCMODE",
    };
    let names = [
        (O_CREAT, "O_CREAT"),
        (O_EXCL, "O_EXCL"),
        (O_NOCTTY, "O_NOCTTY"),
        (O_TRUNC, "O_TRUNC"),
        (O_APPEND, "O_APPEND"),
        (O_NONBLOCK, "O_NONBLOCK"),
        // Composites before their parts.
        (O_SYNC, "O_SYNC"),
        (O_DSYNC, "O_DSYNC"),
        (O_ASYNC, "O_ASYNC"),
        (a.direct, "O_DIRECT"),
        (a.largefile, "O_LARGEFILE"),
        (O_TMPFILE_BIT | a.directory, "O_TMPFILE"),
        (a.directory, "O_DIRECTORY"),
        (a.nofollow, "O_NOFOLLOW"),
        (O_NOATIME, "O_NOATIME"),
        (O_CLOEXEC, "O_CLOEXEC"),
        (O_PATH, "O_PATH"),
        (O_SYNC_BIT, "__O_SYNC"),
        (O_TMPFILE_BIT, "__O_TMPFILE"),
    ];
    join(bits & !O_ACCMODE, &names, vec![mode.to_string()], "")
}

/// `*at` flags: `AT_SYMLINK_NOFOLLOW|AT_EMPTY_PATH`, `0` when none.
pub fn at_flags(bits: u64) -> String {
    join(bits, AT_NAMES, Vec::new(), "0")
}

/// A dirfd argument (an `int` in the low 32 bits): `AT_FDCWD` or the number.
pub fn dirfd(word: u64) -> String {
    let fd = u32::try_from(word & 0xffff_ffff).unwrap_or(0).cast_signed();
    if fd == AT_FDCWD {
        "AT_FDCWD".to_string()
    } else {
        fd.to_string()
    }
}

/// clone(2) flags: `CLONE_VM|CLONE_VFORK|SIGCHLD` (the low byte is the exit signal).
/// `CLONE_NEWTIME` (0x80, clone3/unshare only) overlaps the signal byte and is not named.
pub fn clone_flags(bits: u64) -> String {
    let sig = i32::try_from(bits & CSIGNAL).unwrap_or(0);
    let mut s = join(bits & !CSIGNAL, CLONE_NAMES, Vec::new(), "");
    if sig != 0 {
        if !s.is_empty() {
            s.push('|');
        }
        s.push_str(&signal_name(sig));
    }
    if s.is_empty() { "0".to_string() } else { s }
}

/// `CLONE_NEWTIME`: unshare/setns only (in clone's flags this bit is part of the signal).
pub const CLONE_NEWTIME: u64 = 0x80;

/// unshare(2) flags and setns(2)'s nstype: `CLONE_NEWNS|CLONE_NEWUSER`, `0` for none.
pub fn ns_flags(bits: u64) -> String {
    let mut names = vec![(CLONE_NEWTIME, "CLONE_NEWTIME")];
    names.extend_from_slice(CLONE_NAMES);
    join(bits, &names, Vec::new(), "0")
}

const MOUNT_NAMES: &[(u64, &str)] = &[
    (1, "MS_RDONLY"),
    (2, "MS_NOSUID"),
    (4, "MS_NODEV"),
    (8, "MS_NOEXEC"),
    (16, "MS_SYNCHRONOUS"),
    (32, "MS_REMOUNT"),
    (64, "MS_MANDLOCK"),
    (128, "MS_DIRSYNC"),
    (256, "MS_NOSYMFOLLOW"),
    (1024, "MS_NOATIME"),
    (2048, "MS_NODIRATIME"),
    (4096, "MS_BIND"),
    (8192, "MS_MOVE"),
    (16384, "MS_REC"),
    (32768, "MS_SILENT"),
    (1 << 16, "MS_POSIXACL"),
    (1 << 17, "MS_UNBINDABLE"),
    (1 << 18, "MS_PRIVATE"),
    (1 << 19, "MS_SLAVE"),
    (1 << 20, "MS_SHARED"),
    (1 << 21, "MS_RELATIME"),
    (1 << 22, "MS_KERNMOUNT"),
    (1 << 23, "MS_I_VERSION"),
    (1 << 24, "MS_STRICTATIME"),
    (1 << 25, "MS_LAZYTIME"),
];
/// `MS_MGC_VAL`: the old magic in the high 16 bits of mount flags, ignored by the kernel.
const MS_MGC_VAL: u64 = 0xc0ed_0000;
const MS_MGC_MSK: u64 = 0xffff_0000;

/// mount(2) flags: `MS_BIND|MS_REC`, `0` for none (the legacy `MS_MGC_VAL` magic is named).
pub fn mount_flags(bits: u64) -> String {
    let bits = bits & 0xffff_ffff;
    if bits & MS_MGC_MSK == MS_MGC_VAL {
        join(
            bits & !MS_MGC_MSK,
            MOUNT_NAMES,
            vec!["MS_MGC_VAL".to_string()],
            "",
        )
    } else {
        join(bits, MOUNT_NAMES, Vec::new(), "0")
    }
}

/// umount2(2) flags: `MNT_DETACH|UMOUNT_NOFOLLOW`, `0` for none.
pub fn umount_flags(bits: u64) -> String {
    const NAMES: &[(u64, &str)] = &[
        (1, "MNT_FORCE"),
        (2, "MNT_DETACH"),
        (4, "MNT_EXPIRE"),
        (8, "UMOUNT_NOFOLLOW"),
    ];
    join(bits & 0xffff_ffff, NAMES, Vec::new(), "0")
}

/// A ptrace(2) request (`PTRACE_ATTACH`), the number for unknown ones. 12..=19 and 31..=33
/// are the x86 register requests (EIO on aarch64).
pub fn ptrace_request(req: u64) -> String {
    let name = match req {
        0 => "PTRACE_TRACEME",
        1 => "PTRACE_PEEKTEXT",
        2 => "PTRACE_PEEKDATA",
        3 => "PTRACE_PEEKUSER",
        4 => "PTRACE_POKETEXT",
        5 => "PTRACE_POKEDATA",
        6 => "PTRACE_POKEUSER",
        7 => "PTRACE_CONT",
        8 => "PTRACE_KILL",
        9 => "PTRACE_SINGLESTEP",
        12 => "PTRACE_GETREGS",
        13 => "PTRACE_SETREGS",
        14 => "PTRACE_GETFPREGS",
        15 => "PTRACE_SETFPREGS",
        16 => "PTRACE_ATTACH",
        17 => "PTRACE_DETACH",
        18 => "PTRACE_GETFPXREGS",
        19 => "PTRACE_SETFPXREGS",
        24 => "PTRACE_SYSCALL",
        31 => "PTRACE_SYSEMU",
        32 => "PTRACE_SYSEMU_SINGLESTEP",
        33 => "PTRACE_SINGLEBLOCK",
        0x4200 => "PTRACE_SETOPTIONS",
        0x4201 => "PTRACE_GETEVENTMSG",
        0x4202 => "PTRACE_GETSIGINFO",
        0x4203 => "PTRACE_SETSIGINFO",
        0x4204 => "PTRACE_GETREGSET",
        0x4205 => "PTRACE_SETREGSET",
        0x4206 => "PTRACE_SEIZE",
        0x4207 => "PTRACE_INTERRUPT",
        0x4208 => "PTRACE_LISTEN",
        0x4209 => "PTRACE_PEEKSIGINFO",
        0x420a => "PTRACE_GETSIGMASK",
        0x420b => "PTRACE_SETSIGMASK",
        0x420c => "PTRACE_SECCOMP_GET_FILTER",
        0x420d => "PTRACE_SECCOMP_GET_METADATA",
        0x420e => "PTRACE_GET_SYSCALL_INFO",
        0x420f => "PTRACE_GET_RSEQ_CONFIGURATION",
        0x4210 => "PTRACE_SET_SYSCALL_USER_DISPATCH_CONFIG",
        0x4211 => "PTRACE_GET_SYSCALL_USER_DISPATCH_CONFIG",
        _ => return format!("{req:#x}"),
    };
    name.to_string()
}

/// `personality(0xffffffff)` asks for the current persona without changing it.
pub const PERSONALITY_QUERY: u64 = 0xffff_ffff;

/// A personality(2) value: the execution domain in the low byte (`PER_LINUX`,
/// `PER_LINUX32`) and the flag bits (`PER_LINUX|ADDR_NO_RANDOMIZE`); `0xffffffff` is a query.
pub fn personality(bits: u64) -> String {
    const FLAGS: &[(u64, &str)] = &[
        (0x0020000, "UNAME26"),
        (0x0040000, "ADDR_NO_RANDOMIZE"),
        (0x0080000, "FDPIC_FUNCPTRS"),
        (0x0100000, "MMAP_PAGE_ZERO"),
        (0x0200000, "ADDR_COMPAT_LAYOUT"),
        (0x0400000, "READ_IMPLIES_EXEC"),
        (0x0800000, "ADDR_LIMIT_32BIT"),
        (0x1000000, "SHORT_INODE"),
        (0x2000000, "WHOLE_SECONDS"),
        (0x4000000, "STICKY_TIMEOUTS"),
        (0x8000000, "ADDR_LIMIT_3GB"),
    ];
    let bits = bits & 0xffff_ffff;
    if bits == PERSONALITY_QUERY {
        return "0xffffffff (query)".to_string();
    }
    let domain = match bits & 0xff {
        0 => "PER_LINUX".to_string(),
        8 => "PER_LINUX32".to_string(),
        d => format!("{d:#x}"),
    };
    join(bits & !0xff, FLAGS, vec![domain], "")
}

/// A bpf(2) command (`BPF_PROG_LOAD`), the number for unknown ones.
pub fn bpf_cmd(cmd: u64) -> String {
    const NAMES: [&str; 37] = [
        "BPF_MAP_CREATE",
        "BPF_MAP_LOOKUP_ELEM",
        "BPF_MAP_UPDATE_ELEM",
        "BPF_MAP_DELETE_ELEM",
        "BPF_MAP_GET_NEXT_KEY",
        "BPF_PROG_LOAD",
        "BPF_OBJ_PIN",
        "BPF_OBJ_GET",
        "BPF_PROG_ATTACH",
        "BPF_PROG_DETACH",
        "BPF_PROG_TEST_RUN",
        "BPF_PROG_GET_NEXT_ID",
        "BPF_MAP_GET_NEXT_ID",
        "BPF_PROG_GET_FD_BY_ID",
        "BPF_MAP_GET_FD_BY_ID",
        "BPF_OBJ_GET_INFO_BY_FD",
        "BPF_PROG_QUERY",
        "BPF_RAW_TRACEPOINT_OPEN",
        "BPF_BTF_LOAD",
        "BPF_BTF_GET_FD_BY_ID",
        "BPF_TASK_FD_QUERY",
        "BPF_MAP_LOOKUP_AND_DELETE_ELEM",
        "BPF_MAP_FREEZE",
        "BPF_BTF_GET_NEXT_ID",
        "BPF_MAP_LOOKUP_BATCH",
        "BPF_MAP_LOOKUP_AND_DELETE_BATCH",
        "BPF_MAP_UPDATE_BATCH",
        "BPF_MAP_DELETE_BATCH",
        "BPF_LINK_CREATE",
        "BPF_LINK_UPDATE",
        "BPF_LINK_GET_FD_BY_ID",
        "BPF_LINK_GET_NEXT_ID",
        "BPF_ENABLE_STATS",
        "BPF_ITER_CREATE",
        "BPF_LINK_DETACH",
        "BPF_PROG_BIND_MAP",
        "BPF_TOKEN_CREATE",
    ];
    usize::try_from(cmd & 0xffff_ffff)
        .ok()
        .and_then(|i| NAMES.get(i))
        .map_or_else(|| cmd.to_string(), |n| (*n).to_string())
}

/// A uid or gid argument (`uid_t`, 32 bits): decimal, `-1` ("leave unchanged").
pub fn id(word: u64) -> String {
    match word & 0xffff_ffff {
        0xffff_ffff => "-1".to_string(),
        v => v.to_string(),
    }
}

/// A mode argument in octal (`0644`, `04755`), with the file type when set (`S_IFREG|0644`).
pub fn mode(bits: u64) -> String {
    const TYPES: &[(u64, &str)] = &[
        (0o140000, "S_IFSOCK"),
        (0o120000, "S_IFLNK"),
        (0o100000, "S_IFREG"),
        (0o060000, "S_IFBLK"),
        (0o040000, "S_IFDIR"),
        (0o020000, "S_IFCHR"),
        (0o010000, "S_IFIFO"),
    ];
    let fmt = bits & 0o170000;
    let perm = bits & !0o170000;
    match TYPES.iter().find(|(t, _)| *t == fmt) {
        Some((_, name)) => format!("{name}|0{perm:03o}"),
        None => format!("0{perm:03o}"),
    }
}

/// An address family name (`AF_INET`), `AF_UNKNOWN` for numbers not in the table.
pub fn socket_family(family: u16) -> &'static str {
    match family {
        0 => "AF_UNSPEC",
        1 => "AF_UNIX",
        2 => "AF_INET",
        3 => "AF_AX25",
        4 => "AF_IPX",
        5 => "AF_APPLETALK",
        6 => "AF_NETROM",
        7 => "AF_BRIDGE",
        8 => "AF_ATMPVC",
        9 => "AF_X25",
        10 => "AF_INET6",
        11 => "AF_ROSE",
        12 => "AF_DECnet",
        13 => "AF_NETBEUI",
        14 => "AF_SECURITY",
        15 => "AF_KEY",
        16 => "AF_NETLINK",
        17 => "AF_PACKET",
        19 => "AF_ECONET",
        20 => "AF_ATMSVC",
        21 => "AF_RDS",
        22 => "AF_SNA",
        23 => "AF_IRDA",
        24 => "AF_PPPOX",
        25 => "AF_WANPIPE",
        26 => "AF_LLC",
        27 => "AF_IB",
        28 => "AF_MPLS",
        29 => "AF_CAN",
        30 => "AF_TIPC",
        31 => "AF_BLUETOOTH",
        32 => "AF_IUCV",
        33 => "AF_RXRPC",
        34 => "AF_ISDN",
        35 => "AF_PHONET",
        36 => "AF_IEEE802154",
        37 => "AF_CAIF",
        38 => "AF_ALG",
        39 => "AF_NFC",
        40 => "AF_VSOCK",
        41 => "AF_KCM",
        42 => "AF_QIPCRTR",
        43 => "AF_SMC",
        44 => "AF_XDP",
        45 => "AF_MCTP",
        _ => "AF_UNKNOWN",
    }
}

pub const SOCK_NONBLOCK: u64 = 0o4000;
pub const SOCK_CLOEXEC: u64 = 0o2_000_000;

/// A socket type argument: `SOCK_STREAM|SOCK_CLOEXEC`.
pub fn socket_type(bits: u64) -> String {
    let base = match bits & 0xf {
        1 => "SOCK_STREAM".to_string(),
        2 => "SOCK_DGRAM".to_string(),
        3 => "SOCK_RAW".to_string(),
        4 => "SOCK_RDM".to_string(),
        5 => "SOCK_SEQPACKET".to_string(),
        6 => "SOCK_DCCP".to_string(),
        10 => "SOCK_PACKET".to_string(),
        n => format!("{n:#x}"),
    };
    join(
        bits & !0xf,
        &[
            (SOCK_NONBLOCK, "SOCK_NONBLOCK"),
            (SOCK_CLOEXEC, "SOCK_CLOEXEC"),
        ],
        vec![base],
        "",
    )
}

/// A signal name (`SIGKILL`, `SIGRTMIN+3`), or the number for anything else.
pub fn signal_name(sig: i32) -> String {
    const NAMES: [&str; 32] = [
        "0",
        "SIGHUP",
        "SIGINT",
        "SIGQUIT",
        "SIGILL",
        "SIGTRAP",
        "SIGABRT",
        "SIGBUS",
        "SIGFPE",
        "SIGKILL",
        "SIGUSR1",
        "SIGSEGV",
        "SIGUSR2",
        "SIGPIPE",
        "SIGALRM",
        "SIGTERM",
        "SIGSTKFLT",
        "SIGCHLD",
        "SIGCONT",
        "SIGSTOP",
        "SIGTSTP",
        "SIGTTIN",
        "SIGTTOU",
        "SIGURG",
        "SIGXCPU",
        "SIGXFSZ",
        "SIGVTALRM",
        "SIGPROF",
        "SIGWINCH",
        "SIGIO",
        "SIGPWR",
        "SIGSYS",
    ];
    match usize::try_from(sig) {
        Ok(n) if (1..32).contains(&n) => NAMES[n].to_string(),
        // glibc reserves 32 and 33; SIGRTMIN as the kernel sees it is 32.
        Ok(32) => "SIGRTMIN".to_string(),
        Ok(n) if (33..=64).contains(&n) => format!("SIGRTMIN+{}", n - 32),
        _ => sig.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    macro_rules! table {
        ($name:ident, $f:expr, [$(($input:expr, $want:expr)),* $(,)?]) => {
            #[test]
            fn $name() {
                $(
                    let input = $input;
                    assert_eq!($f(input), $want, "input {input:?}");
                )*
            }
        };
    }

    table!(
        open_flags_names,
        open_flags,
        [
            (0, "O_RDONLY"),
            (O_CLOEXEC, "O_RDONLY|O_CLOEXEC"),
            (O_WRONLY | O_CREAT | O_TRUNC, "O_WRONLY|O_CREAT|O_TRUNC"),
            (O_RDWR | O_APPEND | O_NONBLOCK, "O_RDWR|O_APPEND|O_NONBLOCK"),
            (0o3, "O_ACCMODE"),
            (O_SYNC, "O_RDONLY|O_SYNC"),
            (O_DSYNC, "O_RDONLY|O_DSYNC"),
            (
                0o200_000 | 0o400_000 | O_CLOEXEC,
                "O_RDONLY|O_DIRECTORY|O_NOFOLLOW|O_CLOEXEC"
            ),
            (O_TMPFILE_BIT | 0o200_000 | O_RDWR, "O_RDWR|O_TMPFILE"),
            (O_PATH | 0o100_000, "O_RDONLY|O_LARGEFILE|O_PATH"),
            (O_RDONLY | 0x8000_0000, "O_RDONLY|0x80000000"),
        ]
    );

    #[test]
    fn open_flags_follow_the_arch() {
        assert_eq!(
            open_flags_for(Arch::Aarch64, 0o40000),
            "O_RDONLY|O_DIRECTORY"
        );
        assert_eq!(open_flags_for(Arch::X86_64, 0o40000), "O_RDONLY|O_DIRECT");
        assert_eq!(
            open_flags_for(Arch::Aarch64, 0o100_000),
            "O_RDONLY|O_NOFOLLOW"
        );
        assert_eq!(
            open_flags_for(Arch::Aarch64, O_TMPFILE_BIT | 0o40000 | O_WRONLY),
            "O_WRONLY|O_TMPFILE"
        );
    }

    table!(
        ns_flags_names,
        ns_flags,
        [
            (0, "0"),
            (0x10000000, "CLONE_NEWUSER"),
            (0x20000 | 0x10000000, "CLONE_NEWNS|CLONE_NEWUSER"),
            (0x80 | 0x40000000, "CLONE_NEWTIME|CLONE_NEWNET"),
            (0x400 | 0x1, "CLONE_FILES|0x1"),
        ]
    );

    table!(
        mount_flags_names,
        mount_flags,
        [
            (0, "0"),
            (0x1000 | 0x4000, "MS_BIND|MS_REC"),
            (1 | 2 | 4 | 8, "MS_RDONLY|MS_NOSUID|MS_NODEV|MS_NOEXEC"),
            (1 << 18 | 0x4000, "MS_REC|MS_PRIVATE"),
            (0xc0ed_0000 | 1, "MS_MGC_VAL|MS_RDONLY"),
            (1 << 30, "0x40000000"),
        ]
    );

    table!(
        umount_flags_names,
        umount_flags,
        [
            (0, "0"),
            (2, "MNT_DETACH"),
            (1 | 8, "MNT_FORCE|UMOUNT_NOFOLLOW"),
            (16, "0x10")
        ]
    );

    table!(
        ptrace_requests,
        ptrace_request,
        [
            (0, "PTRACE_TRACEME"),
            (2, "PTRACE_PEEKDATA"),
            (16, "PTRACE_ATTACH"),
            (0x4206, "PTRACE_SEIZE"),
            (0x420e, "PTRACE_GET_SYSCALL_INFO"),
            (99, "0x63"),
        ]
    );

    table!(
        personalities,
        personality,
        [
            (0, "PER_LINUX"),
            (0x0040000, "PER_LINUX|ADDR_NO_RANDOMIZE"),
            (8 | 0x0400000, "PER_LINUX32|READ_IMPLIES_EXEC"),
            (0xffff_ffff, "0xffffffff (query)"),
            (0x10, "0x10"),
        ]
    );

    table!(
        bpf_cmds,
        bpf_cmd,
        [
            (0, "BPF_MAP_CREATE"),
            (5, "BPF_PROG_LOAD"),
            (36, "BPF_TOKEN_CREATE"),
            (37, "37")
        ]
    );

    table!(
        ids,
        id,
        [
            (0, "0"),
            (1000, "1000"),
            (0xffff_ffff, "-1"),
            (u64::MAX, "-1")
        ]
    );

    table!(
        at_flags_names,
        at_flags,
        [
            (0, "0"),
            (AT_SYMLINK_NOFOLLOW, "AT_SYMLINK_NOFOLLOW"),
            (
                AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW,
                "AT_SYMLINK_NOFOLLOW|AT_EMPTY_PATH"
            ),
            (AT_REMOVEDIR, "AT_REMOVEDIR"),
            (AT_SYMLINK_FOLLOW, "AT_SYMLINK_FOLLOW"),
            (AT_RECURSIVE | 0x1, "AT_RECURSIVE|0x1"),
        ]
    );

    table!(
        dirfd_names,
        dirfd,
        [
            ((-100i64).cast_unsigned(), "AT_FDCWD"),
            (0xffff_ff9c, "AT_FDCWD"),
            (3, "3"),
            (0xffff_ffff, "-1"),
        ]
    );

    table!(
        clone_flag_names,
        clone_flags,
        [
            (0, "0"),
            (17, "SIGCHLD"),
            (CLONE_VM | CLONE_VFORK | 17, "CLONE_VM|CLONE_VFORK|SIGCHLD"),
            (
                0x3d0f00,
                "CLONE_VM|CLONE_FS|CLONE_FILES|CLONE_SIGHAND|CLONE_THREAD|CLONE_SYSVSEM|CLONE_SETTLS|CLONE_PARENT_SETTID|CLONE_CHILD_CLEARTID"
            ),
            (0x1000_0000 | 0x2000_0000, "CLONE_NEWUSER|CLONE_NEWPID"),
            (0x4000_0000_0000, "0x400000000000"),
        ]
    );

    table!(
        mode_names,
        mode,
        [
            (0o644, "0644"),
            (0o4755, "04755"),
            (0, "0000"),
            (0o100_600, "S_IFREG|0600"),
            (0o020_666, "S_IFCHR|0666"),
        ]
    );

    table!(
        socket_type_names,
        socket_type,
        [
            (1, "SOCK_STREAM"),
            (2 | SOCK_CLOEXEC, "SOCK_DGRAM|SOCK_CLOEXEC"),
            (
                1 | SOCK_NONBLOCK | SOCK_CLOEXEC,
                "SOCK_STREAM|SOCK_NONBLOCK|SOCK_CLOEXEC"
            ),
            (0xe, "0xe"),
        ]
    );

    table!(
        signal_names,
        signal_name,
        [
            (9, "SIGKILL"),
            (17, "SIGCHLD"),
            (31, "SIGSYS"),
            (32, "SIGRTMIN"),
            (35, "SIGRTMIN+3"),
            (0, "0"),
            (-5, "-5"),
            (99, "99"),
        ]
    );

    #[test]
    fn families() {
        assert_eq!(socket_family(1), "AF_UNIX");
        assert_eq!(socket_family(2), "AF_INET");
        assert_eq!(socket_family(10), "AF_INET6");
        assert_eq!(socket_family(16), "AF_NETLINK");
        assert_eq!(socket_family(999), "AF_UNKNOWN");
    }

    /// Our constants against libc's on the architecture the tests run on.
    #[test]
    fn constants_match_libc() {
        let a = ArchOpenFlags::of(Arch::native());
        let open: &[(u64, libc::c_int)] = &[
            (O_WRONLY, libc::O_WRONLY),
            (O_RDWR, libc::O_RDWR),
            (O_CREAT, libc::O_CREAT),
            (O_EXCL, libc::O_EXCL),
            (O_NOCTTY, libc::O_NOCTTY),
            (O_TRUNC, libc::O_TRUNC),
            (O_APPEND, libc::O_APPEND),
            (O_NONBLOCK, libc::O_NONBLOCK),
            (O_DSYNC, libc::O_DSYNC),
            (O_ASYNC, libc::O_ASYNC),
            (O_SYNC, libc::O_SYNC),
            (O_NOATIME, libc::O_NOATIME),
            (O_CLOEXEC, libc::O_CLOEXEC),
            (O_PATH, libc::O_PATH),
            (O_TMPFILE_BIT | a.directory, libc::O_TMPFILE),
            (a.direct, libc::O_DIRECT),
            (a.directory, libc::O_DIRECTORY),
            (a.nofollow, libc::O_NOFOLLOW),
            (AT_SYMLINK_NOFOLLOW, libc::AT_SYMLINK_NOFOLLOW),
            (AT_REMOVEDIR, libc::AT_REMOVEDIR),
            (AT_SYMLINK_FOLLOW, libc::AT_SYMLINK_FOLLOW),
            (AT_NO_AUTOMOUNT, libc::AT_NO_AUTOMOUNT),
            (AT_EMPTY_PATH, libc::AT_EMPTY_PATH),
            (AT_STATX_FORCE_SYNC, libc::AT_STATX_FORCE_SYNC),
            (AT_STATX_DONT_SYNC, libc::AT_STATX_DONT_SYNC),
            (SOCK_NONBLOCK, libc::SOCK_NONBLOCK),
            (SOCK_CLOEXEC, libc::SOCK_CLOEXEC),
            (CLONE_VM, libc::CLONE_VM),
            (CLONE_VFORK, libc::CLONE_VFORK),
            (CLONE_THREAD, libc::CLONE_THREAD),
            (CLONE_NEWTIME, libc::CLONE_NEWTIME),
        ];
        for &(ours, theirs) in open {
            assert_eq!(ours, u64::try_from(theirs).expect("positive"), "{ours:#o}");
        }
        // libc's O_LARGEFILE is 0 on 64-bit targets; the kernel value is ours.
        assert_eq!(i64::from(AT_FDCWD), i64::from(libc::AT_FDCWD));
        for (bits, name) in CLONE_NAMES {
            let libc_val: Option<libc::c_int> = match *name {
                "CLONE_FS" => Some(libc::CLONE_FS),
                "CLONE_FILES" => Some(libc::CLONE_FILES),
                "CLONE_SIGHAND" => Some(libc::CLONE_SIGHAND),
                "CLONE_PIDFD" => Some(libc::CLONE_PIDFD),
                "CLONE_PTRACE" => Some(libc::CLONE_PTRACE),
                "CLONE_PARENT" => Some(libc::CLONE_PARENT),
                "CLONE_NEWNS" => Some(libc::CLONE_NEWNS),
                "CLONE_SYSVSEM" => Some(libc::CLONE_SYSVSEM),
                "CLONE_SETTLS" => Some(libc::CLONE_SETTLS),
                "CLONE_PARENT_SETTID" => Some(libc::CLONE_PARENT_SETTID),
                "CLONE_CHILD_CLEARTID" => Some(libc::CLONE_CHILD_CLEARTID),
                "CLONE_UNTRACED" => Some(libc::CLONE_UNTRACED),
                "CLONE_CHILD_SETTID" => Some(libc::CLONE_CHILD_SETTID),
                "CLONE_NEWCGROUP" => Some(libc::CLONE_NEWCGROUP),
                "CLONE_NEWUTS" => Some(libc::CLONE_NEWUTS),
                "CLONE_NEWIPC" => Some(libc::CLONE_NEWIPC),
                "CLONE_NEWUSER" => Some(libc::CLONE_NEWUSER),
                "CLONE_NEWPID" => Some(libc::CLONE_NEWPID),
                "CLONE_NEWNET" => Some(libc::CLONE_NEWNET),
                "CLONE_IO" => Some(libc::CLONE_IO),
                _ => None,
            };
            if let Some(v) = libc_val {
                assert_eq!(*bits, u64::from(v.cast_unsigned()), "{name}");
            }
        }
        for fam in [
            libc::AF_UNIX,
            libc::AF_INET,
            libc::AF_INET6,
            libc::AF_NETLINK,
            libc::AF_PACKET,
            libc::AF_VSOCK,
            libc::AF_ALG,
            libc::AF_XDP,
        ] {
            let f = u16::try_from(fam).expect("small");
            assert_ne!(socket_family(f), "AF_UNKNOWN", "{fam}");
        }
        assert_eq!(
            socket_family(u16::try_from(libc::AF_INET6).expect("small")),
            "AF_INET6"
        );
        let named: &[(u64, String)] = &[
            (libc::MS_BIND, mount_flags(libc::MS_BIND)),
            (libc::MS_REC, mount_flags(libc::MS_REC)),
            (libc::MS_PRIVATE, mount_flags(libc::MS_PRIVATE)),
            (libc::MS_LAZYTIME, mount_flags(libc::MS_LAZYTIME)),
            (libc::MS_NOSYMFOLLOW, mount_flags(libc::MS_NOSYMFOLLOW)),
        ];
        for (bits, name) in named {
            assert!(name.starts_with("MS_"), "{bits:#x}: {name}");
        }
        assert_eq!(mount_flags(libc::MS_RDONLY), "MS_RDONLY");
        assert_eq!(mount_flags(libc::MS_MOVE), "MS_MOVE");
        assert_eq!(mount_flags(libc::MS_SHARED), "MS_SHARED");
        let umnt = |f: libc::c_int| umount_flags(u64::from(f.cast_unsigned()));
        assert_eq!(umnt(libc::MNT_DETACH), "MNT_DETACH");
        assert_eq!(umnt(libc::MNT_FORCE), "MNT_FORCE");
        assert_eq!(umnt(libc::UMOUNT_NOFOLLOW), "UMOUNT_NOFOLLOW");
        let req = |r: libc::c_uint| ptrace_request(u64::from(r));
        assert_eq!(req(libc::PTRACE_ATTACH), "PTRACE_ATTACH");
        assert_eq!(req(libc::PTRACE_PEEKDATA), "PTRACE_PEEKDATA");
        assert_eq!(req(libc::PTRACE_SEIZE), "PTRACE_SEIZE");
        assert_eq!(req(libc::PTRACE_LISTEN), "PTRACE_LISTEN");
        assert_eq!(
            req(libc::PTRACE_GET_SYSCALL_INFO),
            "PTRACE_GET_SYSCALL_INFO"
        );
        let pers = |p: libc::c_int| personality(u64::from(p.cast_unsigned()));
        assert_eq!(pers(libc::ADDR_NO_RANDOMIZE), "PER_LINUX|ADDR_NO_RANDOMIZE");
        assert_eq!(pers(libc::READ_IMPLIES_EXEC), "PER_LINUX|READ_IMPLIES_EXEC");
        for (sig, name) in [
            (libc::SIGKILL, "SIGKILL"),
            (libc::SIGCHLD, "SIGCHLD"),
            (libc::SIGSYS, "SIGSYS"),
            (libc::SIGPWR, "SIGPWR"),
            (libc::SIGSTKFLT, "SIGSTKFLT"),
        ] {
            assert_eq!(signal_name(sig), name);
        }
    }
}
