//! Syscall tables as data, one per architecture, selected at run time by [`Arch`].
//!
//! Every syscall number of an architecture is in exactly one [`Class`] (design.md section 3),
//! and carries a [`Sem`] that tells `decode` how to turn its raw argument words into
//! [`crate::event::Target`]s. Tables are compiled for every supported architecture because
//! `show` and `learn` may read a trace recorded on another one. Nothing here touches the
//! running system: register access lives in `tracer/regs.rs`.

pub mod aarch64;
pub mod args;
pub mod x86_64;

use serde::{Deserialize, Serialize};

use crate::event::AccessSet;

/// A supported architecture.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Arch {
    X86_64,
    Aarch64,
}

/// `AUDIT_ARCH_X86_64` (EM_X86_64 | __AUDIT_ARCH_64BIT | __AUDIT_ARCH_LE).
pub const AUDIT_ARCH_X86_64: u32 = 62 | 0x8000_0000 | 0x4000_0000;
/// `AUDIT_ARCH_AARCH64` (EM_AARCH64 | __AUDIT_ARCH_64BIT | __AUDIT_ARCH_LE).
pub const AUDIT_ARCH_AARCH64: u32 = 183 | 0x8000_0000 | 0x4000_0000;
/// `AUDIT_ARCH_I386` (EM_386 | __AUDIT_ARCH_LE): the `int 0x80` ABI on x86_64.
pub const AUDIT_ARCH_I386: u32 = 3 | 0x4000_0000;
/// `AUDIT_ARCH_ARM` (EM_ARM | __AUDIT_ARCH_LE): the compat arm32 ABI on aarch64.
pub const AUDIT_ARCH_ARM: u32 = 40 | 0x4000_0000;

impl Arch {
    /// The architecture sbx was compiled for.
    pub fn native() -> Arch {
        #[cfg(target_arch = "x86_64")]
        {
            Arch::X86_64
        }
        #[cfg(target_arch = "aarch64")]
        {
            Arch::Aarch64
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Arch::X86_64 => "x86_64",
            Arch::Aarch64 => "aarch64",
        }
    }

    /// Its open flags that differ from the other architecture's (O_DIRECT, O_LARGEFILE,
    /// O_DIRECTORY, O_NOFOLLOW).
    pub fn open_flags(self) -> ArchOpenFlags {
        match self {
            Arch::X86_64 => OPEN_X86_64,
            Arch::Aarch64 => OPEN_AARCH64,
        }
    }

    /// seccompiler's name for it.
    pub fn seccomp_target(self) -> seccompiler::TargetArch {
        match self {
            Arch::X86_64 => seccompiler::TargetArch::x86_64,
            Arch::Aarch64 => seccompiler::TargetArch::aarch64,
        }
    }

    /// The ELF machine (`e_machine`) of its programs: EM_X86_64, EM_AARCH64.
    pub fn elf_machine(self) -> u16 {
        match self {
            Arch::X86_64 => 62,
            Arch::Aarch64 => 183,
        }
    }

    /// The `AUDIT_ARCH_*` value the kernel reports for this ABI in seccomp data.
    pub fn audit_arch(self) -> u32 {
        match self {
            Arch::X86_64 => AUDIT_ARCH_X86_64,
            Arch::Aarch64 => AUDIT_ARCH_AARCH64,
        }
    }

    /// The machine code of the syscall instruction, for injecting a syscall into a stopped
    /// tracee (the guard mapping of the race defence, design.md section 5): x86_64 `syscall`
    /// (`0f 05`), aarch64 `svc #0` (`0xd4000001`, stored little-endian). Afterwards the program
    /// counter is just past it: to run it again, move the PC back by its length.
    pub fn syscall_insn(self) -> &'static [u8] {
        match self {
            Arch::X86_64 => &[0x0f, 0x05],
            Arch::Aarch64 => &[0x01, 0x00, 0x00, 0xd4],
        }
    }

    /// The smallest user address space, in bits, that a supported kernel configuration gives a
    /// process: the race defence's guard window must lie below `1 << bits`. x86_64: 47
    /// (4-level paging; 5-level paging maps above only on request). aarch64: 39 (4 KiB pages
    /// with 3 levels, as on Raspberry Pi OS and Android kernels; 48 is common, 52 only on
    /// request; the EXPERT-only 36-bit configuration is not supported).
    pub fn min_user_va_bits(self) -> u32 {
        match self {
            Arch::X86_64 => 47,
            Arch::Aarch64 => 39,
        }
    }

    /// The table of this architecture, sorted by number.
    pub fn table(self) -> &'static [SyscallDef] {
        match self {
            Arch::X86_64 => x86_64::TABLE,
            Arch::Aarch64 => aarch64::TABLE,
        }
    }

    /// The definition of syscall `nr`, if the table knows it.
    pub fn by_nr(self, nr: u64) -> Option<&'static SyscallDef> {
        let t = self.table();
        t.binary_search_by_key(&nr, |d| u64::from(d.nr))
            .ok()
            .map(|i| &t[i])
    }

    /// The definition of syscall `name`, if the table knows it.
    pub fn by_name(self, name: &str) -> Option<&'static SyscallDef> {
        self.table().iter().find(|d| d.name == name)
    }
}

/// The class of a syscall: whether and why the workload is stopped on it (design.md section 3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Class {
    /// Pure compute or I/O on an fd already held: always allowed in-kernel.
    Free,
    /// Reads or changes content, executes, or talks to the network: stopped and decoded.
    Checked,
    /// Reveals metadata only: stopped only with `--metadata`.
    Metadata,
    /// Rare and dangerous: stopped in record, refused in-kernel in enforce unless allowed.
    Gated,
    /// Changes the process credentials (setuid family): stopped so sbx can refresh the uid/gid
    /// it attributes to later events; never refused.
    Creds,
    /// Can unmap or re-protect the guard region of the race defence (mprotect, munmap...):
    /// stopped only when the address argument may touch that region.
    Memory,
    /// Process creation: clone/fork/vfork are followed through ptrace events; clone3 answers
    /// ENOSYS in-kernel (glibc falls back to clone, whose flags the filter can see).
    Spawn,
    /// Receives that can carry a DNS answer (recvfrom with a source address, recvmsg,
    /// recvmmsg): stopped only when host names matter (record; enforce of a profile with
    /// named hosts or `resolve` rules), and only for their exit, where the answer is read.
    /// Never refused.
    Answer,
}

/// How a symlink in the final path component is treated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Follow {
    /// The final component is followed (open without O_NOFOLLOW, stat, chmod, truncate...).
    Yes,
    /// The final component itself is acted on (lstat, unlink, rmdir, rename, mkdir...).
    No,
    /// Followed unless argument `arg` has any bit of `nofollow` (AT_SYMLINK_NOFOLLOW).
    UnlessFlag { arg: u8, nofollow: u64 },
    /// Not followed unless argument `arg` has any bit of `follow` (linkat's AT_SYMLINK_FOLLOW).
    IfFlag { arg: u8, follow: u64 },
}

/// How two-path syscalls act on their paths.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TwoKind {
    /// rename/renameat/renameat2: delete (+read) on the old path, write/create on the new.
    Rename,
    /// link/linkat: read+write on the old path (hard links have no canonical name), create on
    /// the new.
    Link,
}

/// Which socket operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SockOp {
    Connect,
    Bind,
    /// listen(fd, backlog): no address argument; the bound address is looked up by fd.
    Listen,
    /// sendto(fd, buf, len, flags, addr, addrlen): an address only for unconnected sends.
    SendTo,
    /// sendmsg(fd, msghdr, flags): the address is msg_name.
    SendMsg,
    /// sendmmsg(fd, mmsghdr[], vlen, flags).
    SendMmsg,
    /// recvfrom(fd, buf, len, flags, addr, addrlen).
    RecvFrom,
    /// recvmsg(fd, msghdr, flags).
    RecvMsg,
    /// recvmmsg(fd, mmsghdr[], vlen, flags, timeout).
    RecvMmsg,
    /// socket(domain, type, protocol): decoded for show; netlink/packet are decided by policy.
    Socket,
}

/// Decoding semantics: where the objects of a syscall are in its arguments.
///
/// Argument positions are 0-based indexes into the six argument words. `dirfd: None` means the
/// path is relative to the cwd (AT_FDCWD implied).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Sem {
    /// Nothing to decode beyond the raw words.
    Raw,
    /// open/openat/creat/openat2. `flags: None` means creat (O_CREAT|O_WRONLY|O_TRUNC);
    /// `how: true` means argument `flags` points to a `struct open_how` (openat2).
    Open {
        dirfd: Option<u8>,
        path: u8,
        flags: Option<u8>,
        how: bool,
    },
    /// execve/execveat.
    Exec {
        dirfd: Option<u8>,
        path: u8,
        argv: u8,
        envp: u8,
        flags: Option<u8>,
    },
    /// One path with a fixed access (unlink, mkdir, chmod, truncate, stat family...).
    /// `empty_path_flag`: the argument whose AT_EMPTY_PATH bit makes the call act on the dirfd.
    Path {
        dirfd: Option<u8>,
        path: u8,
        access: AccessSet,
        follow: Follow,
        empty_path_flag: Option<u8>,
    },
    /// rename and link families.
    TwoPath {
        kind: TwoKind,
        olddirfd: Option<u8>,
        old: u8,
        newdirfd: Option<u8>,
        new: u8,
        follow: Follow,
    },
    /// symlink(target, newdirfd, linkpath): the target is plain text; the link is created.
    Symlink {
        target: u8,
        newdirfd: Option<u8>,
        new: u8,
    },
    /// An operation on an fd with a fixed access (fchmod, fchown, fchdir, fsetxattr...).
    Fd { fd: u8, access: AccessSet },
    /// Socket operations.
    Sock { op: SockOp },
    /// The arguments of a gated or creds syscall, one [`Arg`] per argument the syscall takes
    /// (their number is its arity: `show` prints no more). Paths and strings are read at the
    /// stop and recorded as targets without access (a chroot is learned as `syscall chroot`,
    /// not as a read of its directory); everything else is named from the raw word by `show`.
    Args(&'static [Arg]),
}

/// One argument of a [`Sem::Args`] syscall.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Arg {
    /// A pointer or a word with no further meaning here: hex.
    Hex,
    /// A C `int` (a pid, a clock id, a command number): signed decimal.
    Int,
    /// A size or count: unsigned decimal.
    Size,
    /// A file descriptor, with its path when known.
    Fd,
    /// A dirfd: `AT_FDCWD` or the number.
    Dirfd,
    /// A user or group id: decimal, `-1` for "unchanged".
    Id,
    /// A path, resolved like the paths of checked syscalls (absolute, normalized, symlinks
    /// followed as `follow` says, relative to the dirfd in argument `dirfd` or the cwd) and
    /// recorded as an [`crate::event::Object::Path`] target with no access. NULL is allowed
    /// (`acct(NULL)`).
    Path { dirfd: Option<u8>, follow: Follow },
    /// A NUL-terminated string that names no file (a file system type, a key type, module
    /// parameters): recorded as an [`crate::event::Object::Text`] target. NULL is allowed.
    Str,
    /// mount's source: a path with MS_BIND or MS_MOVE in argument 3, else a string (a device
    /// or a file system name such as `proc`).
    MountSource,
    /// mount flags (`MS_RDONLY|MS_NOSUID`...).
    MountFlags,
    /// umount2 flags (`MNT_DETACH`...).
    UmountFlags,
    /// clone flags with the exit signal in the low byte (`CLONE_NEWNS|SIGCHLD`).
    CloneFlags,
    /// unshare flags and setns' nstype: `CLONE_*` names, CLONE_NEWTIME included, no signal.
    NsFlags,
    /// A ptrace request (`PTRACE_ATTACH`).
    PtraceRequest,
    /// A personality value (`PER_LINUX|ADDR_NO_RANDOMIZE`).
    Personality,
    /// A bpf command (`BPF_PROG_LOAD`).
    BpfCmd,
    /// A signal number: its name.
    Signal,
    /// setgroups' list: as many gids as argument 0 says (bounded), recorded as an
    /// [`crate::event::Object::Ids`] target.
    GidList,
}

/// One row of an architecture's table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SyscallDef {
    pub name: &'static str,
    pub nr: u32,
    pub class: Class,
    pub sem: Sem,
}

/// Cross-table checks: the two tables against each other and against the kernel's own lists.
/// The four open flags whose values differ between architectures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ArchOpenFlags {
    pub direct: u64,
    pub largefile: u64,
    pub directory: u64,
    pub nofollow: u64,
}

/// x86_64 (and the asm-generic values).
pub const OPEN_X86_64: ArchOpenFlags = ArchOpenFlags {
    direct: 0o40000,
    largefile: 0o100_000,
    directory: 0o200_000,
    nofollow: 0o400_000,
};
/// aarch64 (arch/arm64/include/uapi/asm/fcntl.h).
pub const OPEN_AARCH64: ArchOpenFlags = ArchOpenFlags {
    direct: 0o200_000,
    largefile: 0o400_000,
    directory: 0o40000,
    nofollow: 0o100_000,
};

impl ArchOpenFlags {
    pub fn of(arch: Arch) -> ArchOpenFlags {
        arch.open_flags()
    }
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet, HashMap};
    use std::path::Path;

    use super::*;

    const ARCHES: [Arch; 2] = [Arch::X86_64, Arch::Aarch64];

    /// Every name x86_64 has and aarch64 lacks: (name, the aarch64 syscall that does the same
    /// job, why). A replacement must have the same class, so a profile or a filter written in
    /// terms of classes means the same thing on both architectures.
    const X86_64_ONLY: &[(&str, Option<&str>, &str)] = &[
        (
            "open",
            Some("openat"),
            "legacy path form; generic ABI keeps only *at",
        ),
        ("creat", Some("openat"), "open(O_CREAT|O_WRONLY|O_TRUNC)"),
        ("stat", Some("newfstatat"), "legacy path form"),
        ("lstat", Some("newfstatat"), "AT_SYMLINK_NOFOLLOW"),
        ("access", Some("faccessat"), "legacy path form"),
        ("rename", Some("renameat"), "legacy path form"),
        ("mkdir", Some("mkdirat"), "legacy path form"),
        ("rmdir", Some("unlinkat"), "unlinkat(AT_REMOVEDIR)"),
        ("link", Some("linkat"), "legacy path form"),
        ("unlink", Some("unlinkat"), "legacy path form"),
        ("symlink", Some("symlinkat"), "legacy path form"),
        ("readlink", Some("readlinkat"), "legacy path form"),
        ("chmod", Some("fchmodat"), "legacy path form"),
        ("chown", Some("fchownat"), "legacy path form"),
        ("lchown", Some("fchownat"), "AT_SYMLINK_NOFOLLOW"),
        ("mknod", Some("mknodat"), "legacy path form"),
        ("utime", Some("utimensat"), "legacy time-setting forms"),
        ("utimes", Some("utimensat"), "legacy time-setting forms"),
        ("futimesat", Some("utimensat"), "legacy time-setting forms"),
        ("fork", Some("clone"), "clone(SIGCHLD)"),
        (
            "vfork",
            Some("clone"),
            "clone(CLONE_VM|CLONE_VFORK|SIGCHLD)",
        ),
        ("pipe", Some("pipe2"), "flags-less form"),
        ("dup2", Some("dup3"), "flags-less form"),
        ("poll", Some("ppoll"), "timeout-only form"),
        ("select", Some("pselect6"), "timeout-only form"),
        ("pause", Some("rt_sigsuspend"), "legacy"),
        ("alarm", Some("setitimer"), "legacy"),
        ("time", Some("gettimeofday"), "legacy (the vDSO answers it)"),
        ("getpgrp", Some("getpgid"), "getpgid(0)"),
        ("getdents", Some("getdents64"), "32-bit d_off form"),
        ("epoll_create", Some("epoll_create1"), "flags-less form"),
        ("epoll_wait", Some("epoll_pwait"), "sigmask-less form"),
        ("inotify_init", Some("inotify_init1"), "flags-less form"),
        ("signalfd", Some("signalfd4"), "flags-less form"),
        ("eventfd", Some("eventfd2"), "flags-less form"),
        ("ustat", None, "obsolete, never in the generic ABI"),
        ("sysfs", None, "obsolete, never in the generic ABI"),
        ("uselib", None, "a.out loading, never in the generic ABI"),
        ("_sysctl", None, "removed; never in the generic ABI"),
        ("modify_ldt", None, "x86 segment descriptors"),
        ("arch_prctl", None, "x86 FS/GS bases and CPUID faulting"),
        ("iopl", None, "x86 I/O port privilege"),
        ("ioperm", None, "x86 I/O port bitmap"),
        (
            "set_thread_area",
            None,
            "x86 TLS descriptors (aarch64 uses TPIDR_EL0)",
        ),
        ("get_thread_area", None, "x86 TLS descriptors"),
        ("uretprobe", None, "x86 uprobe trampoline only"),
        ("uprobe", None, "x86 uprobe trampoline only"),
        ("create_module", None, "not implemented"),
        ("get_kernel_syms", None, "not implemented"),
        ("query_module", None, "not implemented"),
        ("getpmsg", None, "not implemented"),
        ("putpmsg", None, "not implemented"),
        ("afs_syscall", None, "not implemented"),
        ("tuxcall", None, "not implemented"),
        ("security", None, "not implemented"),
        ("vserver", None, "not implemented"),
        ("epoll_ctl_old", None, "not implemented"),
        ("epoll_wait_old", None, "not implemented"),
    ];

    /// Names whose argument order differs between the architectures, the arguments that move,
    /// and why that is harmless: their `Sem` must not decode the arguments that move (raw, or
    /// [`Arg::Hex`] in both positions).
    const ARG_ORDER_DIFFERS: &[(&str, &[usize], &str)] = &[(
        "clone",
        &[3, 4],
        "tls and child_tid are arguments 4 and 3 on x86_64, 3 and 4 on aarch64 \
         (CONFIG_CLONE_BACKWARDS); flags stay argument 0, the only one the filter reads",
    )];

    /// Gated rows that answer ENOSYS on every supported kernel: their arguments mean nothing.
    const NOT_IMPLEMENTED: &[&str] = &[
        "create_module",
        "get_kernel_syms",
        "query_module",
        "nfsservctl",
        "getpmsg",
        "putpmsg",
        "afs_syscall",
        "tuxcall",
        "security",
        "epoll_ctl_old",
        "epoll_wait_old",
        "vserver",
    ];

    fn names(arch: Arch) -> BTreeSet<&'static str> {
        arch.table().iter().map(|d| d.name).collect()
    }

    /// The argument indexes a `Sem` reads.
    fn sem_args(sem: &Sem) -> Vec<u8> {
        let follow_arg = |f: &Follow| match *f {
            Follow::UnlessFlag { arg, .. } | Follow::IfFlag { arg, .. } => Some(arg),
            Follow::Yes | Follow::No => None,
        };
        match sem {
            Sem::Raw | Sem::Sock { .. } => vec![],
            Sem::Args(args) => {
                let mut out: Vec<u8> = (0..args.len())
                    .map(|i| u8::try_from(i).unwrap_or(u8::MAX))
                    .collect();
                for a in *args {
                    if let Arg::Path { dirfd, follow } = a {
                        out.extend(dirfd);
                        out.extend(follow_arg(follow));
                    }
                }
                out
            }
            Sem::Open {
                dirfd, path, flags, ..
            } => [*dirfd, Some(*path), *flags]
                .into_iter()
                .flatten()
                .collect(),
            Sem::Exec {
                dirfd,
                path,
                argv,
                envp,
                flags,
            } => [*dirfd, Some(*path), Some(*argv), Some(*envp), *flags]
                .into_iter()
                .flatten()
                .collect(),
            Sem::Path {
                dirfd,
                path,
                follow,
                empty_path_flag,
                ..
            } => [*dirfd, Some(*path), *empty_path_flag, follow_arg(follow)]
                .into_iter()
                .flatten()
                .collect(),
            Sem::TwoPath {
                olddirfd,
                old,
                newdirfd,
                new,
                follow,
                ..
            } => [
                *olddirfd,
                Some(*old),
                *newdirfd,
                Some(*new),
                follow_arg(follow),
            ]
            .into_iter()
            .flatten()
            .collect(),
            Sem::Symlink {
                target,
                newdirfd,
                new,
            } => [Some(*target), *newdirfd, Some(*new)]
                .into_iter()
                .flatten()
                .collect(),
            Sem::Fd { fd, .. } => vec![*fd],
        }
    }

    #[test]
    fn elf_machine_is_the_audit_arch_machine() {
        // AUDIT_ARCH_* is EM_* with the 64-bit and little-endian bits.
        for arch in ARCHES {
            assert_eq!(u32::from(arch.elf_machine()), arch.audit_arch() & 0xffff);
        }
    }

    #[test]
    fn every_table_is_sorted_unique_and_well_formed() {
        for arch in ARCHES {
            let t = arch.table();
            assert!(t.len() > 300, "{arch:?}: {} rows", t.len());
            let mut seen_nr = BTreeSet::new();
            let mut seen_name = BTreeSet::new();
            for d in t {
                assert!(seen_nr.insert(d.nr), "{arch:?}: number {} twice", d.nr);
                assert!(seen_name.insert(d.name), "{arch:?}: {} twice", d.name);
                assert_eq!(arch.by_nr(u64::from(d.nr)), Some(d), "{arch:?} {}", d.name);
                assert_eq!(arch.by_name(d.name), Some(d), "{arch:?} {}", d.name);
                let args = sem_args(&d.sem);
                assert!(args.iter().all(|&a| a < 6), "{arch:?} {}", d.name);
                if let Sem::Args(list) = d.sem {
                    // A path's dirfd and flags are arguments the call takes.
                    assert!(
                        args.iter().all(|&a| usize::from(a) < list.len()),
                        "{arch:?} {}",
                        d.name
                    );
                }
                if d.class == Class::Checked {
                    assert_ne!(d.sem, Sem::Raw, "{arch:?} {} is checked but raw", d.name);
                }
                // Gated and creds calls are recorded: `show` names their arguments.
                if matches!(d.class, Class::Gated | Class::Creds) && d.sem == Sem::Raw {
                    assert!(
                        NOT_IMPLEMENTED.contains(&d.name),
                        "{arch:?} {} is {:?} but raw",
                        d.name,
                        d.class
                    );
                }
            }
            // Numbers with the x32 bit or above the table are unknown.
            assert_eq!(arch.by_nr(56 | 0x4000_0000), None);
            assert_eq!(arch.by_nr(u64::from(u32::MAX) + 56), None);
        }
    }

    #[test]
    fn holes_are_exactly_the_missing_numbers() {
        let holes: [(Arch, Vec<std::ops::RangeInclusive<u32>>); 2] = [
            (Arch::X86_64, vec![x86_64::HOLES]),
            (Arch::Aarch64, aarch64::HOLES.to_vec()),
        ];
        for (arch, holes) in holes {
            let max = arch.table().last().map_or(0, |d| d.nr);
            for nr in 0..=max {
                let in_hole = holes.iter().any(|h| h.contains(&nr));
                assert_eq!(
                    arch.by_nr(u64::from(nr)).is_some(),
                    !in_hole,
                    "{arch:?} nr {nr}"
                );
            }
        }
    }

    #[test]
    fn shared_names_have_the_same_class_and_semantics() {
        let x = names(Arch::X86_64);
        let a = names(Arch::Aarch64);
        let shared: Vec<&str> = x.intersection(&a).copied().collect();
        assert_eq!(shared.len(), Arch::Aarch64.table().len());
        for name in shared {
            let (dx, da) = match (Arch::X86_64.by_name(name), Arch::Aarch64.by_name(name)) {
                (Some(dx), Some(da)) => (dx, da),
                _ => panic!("{name} vanished"),
            };
            assert_eq!(dx.class, da.class, "{name}: class differs");
            assert_eq!(dx.sem, da.sem, "{name}: decode semantics differ");
        }
        for (name, moving, why) in ARG_ORDER_DIFFERS {
            for arch in ARCHES {
                let sem = arch.by_name(name).map(|d| d.sem);
                match sem {
                    Some(Sem::Raw) => {}
                    Some(Sem::Args(args)) => {
                        for &i in *moving {
                            assert_eq!(args.get(i), Some(&Arg::Hex), "{arch:?} {name}: {why}");
                        }
                    }
                    other => panic!("{arch:?} {name}: {other:?} ({why})"),
                }
            }
        }
    }

    /// Since 5.1 every architecture gets new syscalls at the same number (424 on), so the two
    /// tables must agree row for row there: the aarch64 rows newer than any installed headers
    /// are checked against the x86_64 ones, which were checked against a running 6.18 kernel.
    #[test]
    fn unified_numbers_from_424_agree() {
        let tail = |arch: Arch| -> Vec<(u32, &str)> {
            arch.table()
                .iter()
                .filter(|d| d.nr >= 424)
                .map(|d| (d.nr, d.name))
                .collect()
        };
        let x = tail(Arch::X86_64);
        assert_eq!(x.len(), 46);
        assert_eq!(tail(Arch::Aarch64), x);
    }

    #[test]
    fn names_in_one_table_only_are_documented() {
        let x = names(Arch::X86_64);
        let a = names(Arch::Aarch64);
        let only_a: Vec<&str> = a.difference(&x).copied().collect();
        assert_eq!(only_a, Vec::<&str>::new(), "aarch64-only names need a list");
        let only_x: BTreeSet<&str> = x.difference(&a).copied().collect();
        let listed: BTreeSet<&str> = X86_64_ONLY.iter().map(|(n, _, _)| *n).collect();
        assert_eq!(
            listed.len(),
            X86_64_ONLY.len(),
            "X86_64_ONLY has a duplicate"
        );
        assert_eq!(only_x, listed);
        for (name, replacement, why) in X86_64_ONLY {
            let Some(r) = replacement else { continue };
            let (dx, dr) = match (Arch::X86_64.by_name(name), Arch::Aarch64.by_name(r)) {
                (Some(dx), Some(dr)) => (dx, dr),
                _ => panic!("{name} -> {r}: missing row"),
            };
            assert_eq!(dx.class, dr.class, "{name} -> {r} ({why})");
        }
    }

    /// Decoding follows the architecture of the raw call, not the host: the same openat words
    /// mean O_NOFOLLOW on aarch64 and O_LARGEFILE on x86_64, and an aarch64 trace decodes the
    /// same way on either host.
    #[test]
    fn decode_uses_the_calls_architecture() {
        use crate::decode::memory::{FakeMemory, FakeProc};
        use crate::decode::{RawSyscall, decode};
        use crate::event::Object;

        let mut bytes = b"/w/link\0".to_vec();
        bytes.resize(16, 0);
        let mem = FakeMemory {
            base: 0x1000,
            bytes,
        };
        let mut view = FakeProc {
            pid: 7,
            tid: 7,
            cwd: b"/w".to_vec(),
            ..FakeProc::default()
        };
        view.symlinks
            .insert(b"/w/link".to_vec(), b"/etc/shadow".to_vec());
        let at_fdcwd = u64::from_le_bytes((-100i64).to_le_bytes());
        let bit_0x8000 = 0o100_000; // aarch64 O_NOFOLLOW, x86_64 O_LARGEFILE
        for (arch, want) in [
            (Arch::Aarch64, &b"/w/link"[..]),
            (Arch::X86_64, &b"/etc/shadow"[..]),
        ] {
            let Some(def) = arch.by_name("openat") else {
                panic!("{arch:?} has no openat")
            };
            let raw = RawSyscall {
                arch,
                nr: u64::from(def.nr),
                args: [at_fdcwd, 0x1000, bit_0x8000, 0, 0, 0],
            };
            let d = decode(def, &raw, &mem, &view);
            let paths: Vec<&[u8]> = d
                .targets
                .iter()
                .filter_map(|t| match &t.object {
                    Object::Path(p) => Some(p.effective()),
                    _ => None,
                })
                .collect();
            assert_eq!(paths, vec![want], "{arch:?}");
        }
    }

    #[test]
    fn race_defence_constants() {
        // svc #0: opcode 0xd4000001 (SVC, imm16 = 0 in bits 5..20, LL = 01).
        let svc = 0xd400_0000u32 | 0b01;
        assert_eq!(Arch::Aarch64.syscall_insn(), svc.to_le_bytes());
        assert_eq!(Arch::X86_64.syscall_insn(), [0x0f, 0x05]);
        for arch in ARCHES {
            // A 4 GiB window and the one below it must fit under the smallest address space,
            // and under the filter's 56-bit window test.
            let bits = arch.min_user_va_bits();
            assert!((34..=56).contains(&bits), "{arch:?}");
        }
    }

    /// The native instruction is the one the C library's `syscall(3)` executes.
    #[test]
    fn syscall_insn_is_what_libc_uses() {
        let insn = Arch::native().syscall_insn();
        let f: unsafe extern "C" fn(libc::c_long, ...) -> libc::c_long = libc::syscall;
        let code = f as *const u8;
        // SAFETY: `code` is the entry of glibc's syscall(), inside libc's mapped, readable text
        // segment, which extends far beyond the 96 bytes read here; nothing writes to it.
        let bytes = unsafe { std::slice::from_raw_parts(code, 96) };
        assert!(
            bytes.windows(insn.len()).any(|w| w == insn),
            "{insn:02x?} not in {bytes:02x?}"
        );
    }

    // ---- against the kernel's own lists ----

    /// Syscalls added after 6.1 (the kernel headers of Debian 12, where CI runs): a table row
    /// absent from older installed headers is accepted only if it is listed here with a
    /// version newer than the headers'.
    const ADDED_IN: &[(&str, (u32, u32))] = &[
        ("cachestat", (6, 5)),
        ("fchmodat2", (6, 6)),
        ("map_shadow_stack", (6, 6)),
        ("futex_wake", (6, 7)),
        ("futex_wait", (6, 7)),
        ("futex_requeue", (6, 7)),
        ("statmount", (6, 8)),
        ("listmount", (6, 8)),
        ("lsm_get_self_attr", (6, 8)),
        ("lsm_set_self_attr", (6, 8)),
        ("lsm_list_modules", (6, 8)),
        ("mseal", (6, 10)),
        ("uretprobe", (6, 11)),
        ("setxattrat", (6, 13)),
        ("getxattrat", (6, 13)),
        ("listxattrat", (6, 13)),
        ("removexattrat", (6, 13)),
        ("open_tree_attr", (6, 15)),
        ("file_getattr", (6, 17)),
        ("file_setattr", (6, 17)),
        ("uprobe", (6, 18)),
    ];

    /// A tiny C preprocessor for the kernel's unistd headers: `#define`/`#undef`, `#ifdef`,
    /// `#ifndef`, `#if` over `defined(X)` and `__BITS_PER_LONG ==/!= N` joined by `||`, `&&`
    /// and `!`, `#else`, `#endif`, and `#include` of other unistd headers. Anything else in a condition
    /// fails the test rather than being guessed.
    struct Cpp {
        root: &'static Path,
        defs: HashMap<String, String>,
        /// One entry per open conditional: is its current branch taken.
        stack: Vec<bool>,
    }

    impl Cpp {
        fn new(root: &'static Path) -> Cpp {
            let mut defs = HashMap::new();
            defs.insert("__BITS_PER_LONG".to_string(), "64".to_string());
            Cpp {
                root,
                defs,
                stack: Vec::new(),
            }
        }

        fn active(&self) -> bool {
            self.stack.iter().all(|&b| b)
        }

        fn eval(&self, expr: &str) -> bool {
            let expr = match expr.find("/*") {
                Some(i) => &expr[..i],
                None => expr,
            };
            expr.split("||")
                .any(|all| all.split("&&").all(|atom| self.atom(atom.trim())))
        }

        /// `defined(X)`, `defined X`, `A == N`, `A != N`, each optionally negated by `!`.
        fn atom(&self, atom: &str) -> bool {
            if let Some(rest) = atom.strip_prefix('!') {
                return !self.atom(rest.trim());
            }
            if let Some(rest) = atom.strip_prefix("defined") {
                let name = rest.trim().trim_start_matches('(').trim_end_matches(')');
                return self.defs.contains_key(name.trim());
            }
            let (lhs, eq, rhs) = if let Some((l, r)) = atom.split_once("==") {
                (l, true, r)
            } else if let Some((l, r)) = atom.split_once("!=") {
                (l, false, r)
            } else {
                panic!("unsupported condition {atom:?}")
            };
            let value = |s: &str| -> i64 {
                let s = s.trim();
                let s = self.defs.get(s).map_or(s, String::as_str);
                s.parse()
                    .unwrap_or_else(|_| panic!("not a number in {atom:?}"))
            };
            (value(lhs) == value(rhs)) == eq
        }

        fn run(&mut self, rel: &str) -> std::io::Result<()> {
            let text = std::fs::read_to_string(self.root.join(rel))?;
            for line in text.lines() {
                let Some(directive) = line.trim_start().strip_prefix('#') else {
                    continue;
                };
                let directive = directive.trim_start();
                let (word, rest) = directive
                    .split_once(char::is_whitespace)
                    .unwrap_or((directive, ""));
                let rest = rest.trim();
                let first = rest.split_whitespace().next().unwrap_or("");
                match word {
                    "ifdef" => self.stack.push(self.defs.contains_key(first)),
                    "ifndef" => self.stack.push(!self.defs.contains_key(first)),
                    "if" => {
                        let v = self.active() && self.eval(rest);
                        self.stack.push(v);
                    }
                    "else" => {
                        let top = self.stack.pop().expect("#else without #if");
                        self.stack.push(!top);
                    }
                    "endif" => {
                        self.stack.pop().expect("#endif without #if");
                    }
                    "elif" => panic!("#elif in {rel} is not supported"),
                    _ if !self.active() => {}
                    "define" => {
                        let value = rest[first.len()..].trim().to_string();
                        self.defs.insert(first.to_string(), value);
                    }
                    "undef" => {
                        self.defs.remove(first);
                    }
                    "include" => {
                        let inc = first.trim_matches(|c| c == '<' || c == '>' || c == '"');
                        if inc.contains("unistd") {
                            self.run(inc)?;
                        }
                    }
                    _ => {}
                }
            }
            Ok(())
        }

        /// `__NR_name` → number, aliases resolved.
        fn syscalls(&self) -> BTreeMap<String, u32> {
            fn resolve<'a>(defs: &'a HashMap<String, String>, mut v: &'a str) -> u32 {
                for _ in 0..8 {
                    if let Ok(n) = v.parse() {
                        return n;
                    }
                    v = defs
                        .get(v)
                        .unwrap_or_else(|| panic!("cannot evaluate {v:?}"));
                }
                panic!("alias loop at {v:?}")
            }
            self.defs
                .iter()
                .filter_map(|(k, v)| Some((k.strip_prefix("__NR_")?, v)))
                .filter(|(k, _)| !matches!(*k, "syscalls" | "arch_specific_syscall"))
                .map(|(k, v)| (k.to_string(), resolve(&self.defs, v)))
                .collect()
        }
    }

    /// `(major, minor)` of installed kernel headers.
    fn header_version(version_h: &Path) -> Option<(u32, u32)> {
        let text = std::fs::read_to_string(version_h).ok()?;
        let get = |key: &str| -> Option<u32> {
            text.lines()
                .find_map(|l| l.strip_prefix("#define ")?.strip_prefix(key))?
                .trim()
                .parse()
                .ok()
        };
        Some((
            get("LINUX_VERSION_MAJOR")?,
            get("LINUX_VERSION_PATCHLEVEL")?,
        ))
    }

    /// Compare `arch`'s table with the kernel headers under `root` (whose version is in
    /// `version_h`); `false` when they are not installed.
    fn check_against_headers(arch: Arch, root: &'static Path, file: &str, version_h: &str) -> bool {
        let mut cpp = Cpp::new(root);
        if cpp.run(file).is_err() {
            eprintln!(
                "skipped: {} not installed (see .ci/aarch64.sh)",
                root.join(file).display()
            );
            return false;
        }
        let Some(version) = header_version(Path::new(version_h)) else {
            panic!("{arch:?}: headers without a readable {version_h}");
        };
        let kernel = cpp.syscalls();
        assert!(
            kernel.len() > 280,
            "{arch:?}: parsed {} names",
            kernel.len()
        );
        for (name, &nr) in &kernel {
            let row = arch.by_name(name).map(|d| d.nr);
            assert_eq!(
                row,
                Some(nr),
                "{arch:?} {name}: headers {version:?} say {nr}"
            );
        }
        let max = kernel.values().copied().max().unwrap_or(0);
        let mut newer = Vec::new();
        for d in arch.table() {
            if kernel.contains_key(d.name) {
                continue;
            }
            let added = ADDED_IN.iter().find(|(n, _)| *n == d.name).map(|(_, v)| *v);
            assert!(
                added.is_some_and(|v| v > version),
                "{arch:?} {} ({}) is not in headers {version:?} (max {max})",
                d.name,
                d.nr
            );
            newer.push(d.name);
        }
        eprintln!(
            "{arch:?}: {} names match headers {version:?}; newer than them: {newer:?}",
            kernel.len()
        );
        true
    }

    #[test]
    fn tables_match_installed_kernel_headers() {
        let x86 = check_against_headers(
            Arch::X86_64,
            Path::new("/usr/include/x86_64-linux-gnu"),
            "asm/unistd_64.h",
            "/usr/include/linux/version.h",
        );
        let arm = check_against_headers(
            Arch::Aarch64,
            Path::new("/usr/aarch64-linux-gnu/include"),
            "asm/unistd.h",
            "/usr/aarch64-linux-gnu/include/linux/version.h",
        );
        // CI installs both (libc6-dev, libc6-dev-arm64-cross); make the skip visible there.
        if std::env::var_os("SBX_REQUIRE_KERNEL_HEADERS").is_some() {
            assert!(x86 && arm, "kernel headers required but missing");
        }
    }
}
