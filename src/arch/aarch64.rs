//! The aarch64 syscall table: every number the 6.18 kernel defines for the 64-bit ABI, with its
//! [`Class`] and decoding [`Sem`].
//!
//! Pure data, read by `filter` (which numbers stop, which are refused), `decode` (where the
//! objects are in the argument words) and `show`, on any host: an aarch64 trace can be shown
//! on x86_64. arm64 uses the kernel's generic table (`include/uapi/asm-generic/unistd.h`, since
//! 6.11 `scripts/syscall.tbl` with the `64`, `renameat`, `rlimit` and `memfd_secret` ABIs), so
//! it has none of the legacy path syscalls (open, creat, stat, lstat, access, rename, mkdir,
//! unlink, link, symlink, readlink, chmod, chown, utimes...): only the `*at` forms, which share
//! x86_64's argument layout. Numbers were taken from linux-raw-sys 0.12.1's `aarch64/general.rs`;
//! the tests compare them with `libc::SYS_*` when run on aarch64 (under qemu in CI) and with the
//! installed cross kernel headers (`/usr/aarch64-linux-gnu/include/asm/unistd.h`) when present.
//! `mod.rs` checks this table against the x86_64 one: every shared name has the same class and
//! the same decode semantics.
//!
//! Holes: 244..=259 (the generic "arch-specific" range, empty on arm64) and 295..=423
//! (unassigned on 64-bit architectures). The compat arm32 ABI (`AUDIT_ARCH_ARM`, an AArch32
//! binary exec'd by the workload on a CPU that still runs AArch32 at EL0) has its own numbers;
//! it is never looked up here: every seccomp program kills any other `AUDIT_ARCH`, as it does
//! for i386 on x86_64.
//!
//! Rows marked "not implemented" exist in the table but return ENOSYS on every kernel sbx
//! supports; they are gated so that enforce refuses them like unknown numbers. Class choices
//! that are not obvious carry a comment on their row (the same comment as on x86_64).

use super::{Class, Class::*, Follow, Sem, SockOp, SyscallDef, TwoKind, args};
use crate::event::{Access, AccessSet};

// The helpers below mirror x86_64.rs so that rows read the same in both tables.

/// `AT_SYMLINK_NOFOLLOW` (the same value on every architecture).
const AT_SYMLINK_NOFOLLOW: u64 = 0x100;
/// `AT_SYMLINK_FOLLOW` (linkat).
const AT_SYMLINK_FOLLOW: u64 = 0x400;
/// `IN_DONT_FOLLOW` (inotify_add_watch mask).
const IN_DONT_FOLLOW: u64 = 0x0200_0000;

const WRITE: AccessSet = AccessSet::of(Access::Write);
const CREATE: AccessSet = AccessSet::of(Access::Create);
const TRUNCATE: AccessSet = AccessSet::of(Access::Truncate);
const DELETE: AccessSet = AccessSet::of(Access::Delete);
const STAT: AccessSet = AccessSet::of(Access::Stat);
const CHMOD: AccessSet = AccessSet::of(Access::Chmod);
const CHOWN: AccessSet = AccessSet::of(Access::Chown);
const CHDIR: AccessSet = AccessSet::of(Access::Chdir);

const YES: Follow = Follow::Yes;
const NO: Follow = Follow::No;
/// Followed unless argument `arg` has AT_SYMLINK_NOFOLLOW.
const fn nofollow_at(arg: u8) -> Follow {
    Follow::UnlessFlag {
        arg,
        nofollow: AT_SYMLINK_NOFOLLOW,
    }
}

const RAW: Sem = Sem::Raw;

const fn d(nr: u32, name: &'static str, class: Class, sem: Sem) -> SyscallDef {
    SyscallDef {
        name,
        nr,
        class,
        sem,
    }
}
/// A cwd-relative path in argument `path` (on aarch64 only the xattr, truncate, chdir, chroot
/// and statfs families take one).
const fn path(path: u8, access: AccessSet, follow: Follow) -> Sem {
    Sem::Path {
        dirfd: None,
        path,
        access,
        follow,
        empty_path_flag: None,
    }
}
/// A dirfd-relative path (dirfd in argument 0, path in argument 1); `empty`: the argument whose
/// AT_EMPTY_PATH bit makes the call act on the dirfd itself.
const fn path_at(access: AccessSet, follow: Follow, empty: Option<u8>) -> Sem {
    Sem::Path {
        dirfd: Some(0),
        path: 1,
        access,
        follow,
        empty_path_flag: empty,
    }
}
const fn fd(fd: u8, access: AccessSet) -> Sem {
    Sem::Fd { fd, access }
}
const fn sock(op: SockOp) -> Sem {
    Sem::Sock { op }
}
const fn open(dirfd: Option<u8>, path: u8, flags: Option<u8>, how: bool) -> Sem {
    Sem::Open {
        dirfd,
        path,
        flags,
        how,
    }
}
/// The `*at` layout (olddirfd, old, newdirfd, new): aarch64 has no rename(2) or link(2).
const fn two_at(kind: TwoKind, follow: Follow) -> Sem {
    Sem::TwoPath {
        kind,
        olddirfd: Some(0),
        old: 1,
        newdirfd: Some(2),
        new: 3,
        follow,
    }
}

/// Sorted by number.
pub static TABLE: &[SyscallDef] = &[
    d(0, "io_setup", Free, RAW), // Linux AIO works on fds already held
    d(1, "io_destroy", Free, RAW),
    d(2, "io_submit", Free, RAW),
    d(3, "io_cancel", Free, RAW),
    d(4, "io_getevents", Free, RAW),
    d(5, "setxattr", Checked, path(0, WRITE, YES)),
    d(6, "lsetxattr", Checked, path(0, WRITE, NO)),
    d(7, "fsetxattr", Checked, fd(0, WRITE)),
    d(8, "getxattr", Metadata, path(0, STAT, YES)),
    d(9, "lgetxattr", Metadata, path(0, STAT, NO)),
    d(10, "fgetxattr", Free, RAW),
    d(11, "listxattr", Metadata, path(0, STAT, YES)),
    d(12, "llistxattr", Metadata, path(0, STAT, NO)),
    d(13, "flistxattr", Free, RAW),
    d(14, "removexattr", Checked, path(0, WRITE, YES)),
    d(15, "lremovexattr", Checked, path(0, WRITE, NO)),
    d(16, "fremovexattr", Checked, fd(0, WRITE)),
    d(17, "getcwd", Free, RAW),
    d(18, "lookup_dcookie", Gated, args::LOOKUP_DCOOKIE), // removed in 6.8
    d(19, "eventfd2", Free, RAW),
    d(20, "epoll_create1", Free, RAW),
    d(21, "epoll_ctl", Free, RAW),
    d(22, "epoll_pwait", Free, RAW),
    d(23, "dup", Free, RAW),
    d(24, "dup3", Free, RAW),
    d(25, "fcntl", Free, RAW),
    d(26, "inotify_init1", Free, RAW),
    // Watching reveals names and timing, not content: metadata.
    d(
        27,
        "inotify_add_watch",
        Metadata,
        Sem::Path {
            dirfd: None,
            path: 1,
            access: STAT,
            follow: Follow::UnlessFlag {
                arg: 2,
                nofollow: IN_DONT_FOLLOW,
            },
            empty_path_flag: None,
        },
    ),
    d(28, "inotify_rm_watch", Free, RAW),
    d(29, "ioctl", Free, RAW), // on an fd already held (TIOCSTI: see docs/security.md)
    d(30, "ioprio_set", Free, RAW),
    d(31, "ioprio_get", Free, RAW),
    d(32, "flock", Free, RAW),
    d(33, "mknodat", Checked, path_at(CREATE, NO, None)),
    d(34, "mkdirat", Checked, path_at(CREATE, NO, None)),
    // AT_REMOVEDIR only chooses rmdir over unlink: both delete.
    d(35, "unlinkat", Checked, path_at(DELETE, NO, None)),
    d(
        36,
        "symlinkat",
        Checked,
        Sem::Symlink {
            target: 0,
            newdirfd: Some(1),
            new: 2,
        },
    ),
    d(
        37,
        "linkat",
        Checked,
        two_at(
            TwoKind::Link,
            Follow::IfFlag {
                arg: 4,
                follow: AT_SYMLINK_FOLLOW,
            },
        ),
    ),
    d(38, "renameat", Checked, two_at(TwoKind::Rename, NO)),
    d(39, "umount2", Gated, args::UMOUNT2),
    d(40, "mount", Gated, args::MOUNT),
    d(41, "pivot_root", Gated, args::PIVOT_ROOT),
    d(42, "nfsservctl", Gated, RAW), // not implemented
    d(43, "statfs", Metadata, path(0, STAT, YES)),
    d(44, "fstatfs", Free, RAW),
    d(45, "truncate", Checked, path(0, TRUNCATE, YES)),
    d(46, "ftruncate", Free, RAW), // needs an fd opened for writing, which was checked
    d(47, "fallocate", Free, RAW),
    d(48, "faccessat", Metadata, path_at(STAT, YES, None)), // no flags argument in the syscall
    d(49, "chdir", Metadata, path(0, CHDIR, YES)),
    // Metadata like chdir: it reveals no content, and the tracer reads the cwd from /proc.
    d(50, "fchdir", Metadata, fd(0, CHDIR)),
    d(51, "chroot", Gated, args::CHROOT),
    d(52, "fchmod", Checked, fd(0, CHMOD)),
    d(53, "fchmodat", Checked, path_at(CHMOD, YES, None)), // no flags argument in the syscall
    d(
        54,
        "fchownat",
        Checked,
        path_at(CHOWN, nofollow_at(4), Some(4)),
    ),
    d(55, "fchown", Checked, fd(0, CHOWN)),
    d(56, "openat", Checked, open(Some(0), 1, Some(2), false)),
    d(57, "close", Free, RAW),
    d(58, "vhangup", Gated, args::VHANGUP),
    d(59, "pipe2", Free, RAW),
    d(60, "quotactl", Gated, args::QUOTACTL),
    d(61, "getdents64", Free, RAW),
    d(62, "lseek", Free, RAW),
    d(63, "read", Free, RAW),
    d(64, "write", Free, RAW),
    d(65, "readv", Free, RAW),
    d(66, "writev", Free, RAW),
    d(67, "pread64", Free, RAW),
    d(68, "pwrite64", Free, RAW),
    d(69, "preadv", Free, RAW),
    d(70, "pwritev", Free, RAW),
    d(71, "sendfile", Free, RAW),
    d(72, "pselect6", Free, RAW),
    d(73, "ppoll", Free, RAW),
    d(74, "signalfd4", Free, RAW),
    d(75, "vmsplice", Free, RAW),
    d(76, "splice", Free, RAW),
    d(77, "tee", Free, RAW),
    d(78, "readlinkat", Metadata, path_at(STAT, NO, None)),
    d(
        79,
        "newfstatat",
        Metadata,
        path_at(STAT, nofollow_at(3), Some(3)),
    ),
    d(80, "fstat", Free, RAW), // an fd already held
    d(81, "sync", Free, RAW),
    d(82, "fsync", Free, RAW),
    d(83, "fdatasync", Free, RAW),
    d(84, "sync_file_range", Free, RAW),
    d(85, "timerfd_create", Free, RAW),
    d(86, "timerfd_settime", Free, RAW),
    d(87, "timerfd_gettime", Free, RAW),
    // A NULL path acts on the dirfd (decode handles it).
    d(
        88,
        "utimensat",
        Checked,
        path_at(WRITE, nofollow_at(3), Some(3)),
    ),
    d(89, "acct", Gated, args::ACCT),
    d(90, "capget", Free, RAW),
    d(91, "capset", Creds, args::CAPSET),
    d(92, "personality", Gated, args::PERSONALITY),
    d(93, "exit", Free, RAW),
    d(94, "exit_group", Free, RAW),
    d(95, "waitid", Free, RAW),
    d(96, "set_tid_address", Free, RAW),
    d(97, "unshare", Gated, args::UNSHARE),
    d(98, "futex", Free, RAW),
    d(99, "set_robust_list", Free, RAW),
    d(100, "get_robust_list", Free, RAW),
    d(101, "nanosleep", Free, RAW),
    d(102, "getitimer", Free, RAW),
    d(103, "setitimer", Free, RAW),
    d(104, "kexec_load", Gated, args::KEXEC_LOAD),
    d(105, "init_module", Gated, args::INIT_MODULE),
    d(106, "delete_module", Gated, args::DELETE_MODULE),
    d(107, "timer_create", Free, RAW),
    d(108, "timer_gettime", Free, RAW),
    d(109, "timer_getoverrun", Free, RAW),
    d(110, "timer_settime", Free, RAW),
    d(111, "timer_delete", Free, RAW),
    d(112, "clock_settime", Gated, args::CLOCK_SETTIME),
    d(113, "clock_gettime", Free, RAW),
    d(114, "clock_getres", Free, RAW),
    d(115, "clock_nanosleep", Free, RAW),
    d(116, "syslog", Gated, args::SYSLOG),
    d(117, "ptrace", Gated, args::PTRACE),
    d(118, "sched_setparam", Free, RAW),
    d(119, "sched_setscheduler", Free, RAW),
    d(120, "sched_getscheduler", Free, RAW),
    d(121, "sched_getparam", Free, RAW),
    d(122, "sched_setaffinity", Free, RAW),
    d(123, "sched_getaffinity", Free, RAW),
    d(124, "sched_yield", Free, RAW),
    d(125, "sched_get_priority_max", Free, RAW),
    d(126, "sched_get_priority_min", Free, RAW),
    d(127, "sched_rr_get_interval", Free, RAW),
    d(128, "restart_syscall", Free, RAW),
    // Signals to other processes are limited by the kernel to the same uid; sbx itself runs as
    // that uid too, so a workload could signal sbx: see the report of the arch helper.
    d(129, "kill", Free, args::KILL),
    d(130, "tkill", Free, args::KILL),
    d(131, "tgkill", Free, args::TGKILL),
    d(132, "sigaltstack", Free, RAW),
    d(133, "rt_sigsuspend", Free, RAW),
    d(134, "rt_sigaction", Free, RAW),
    d(135, "rt_sigprocmask", Free, RAW),
    d(136, "rt_sigpending", Free, RAW),
    d(137, "rt_sigtimedwait", Free, RAW),
    d(138, "rt_sigqueueinfo", Free, RAW),
    d(139, "rt_sigreturn", Free, RAW),
    d(140, "setpriority", Free, RAW),
    d(141, "getpriority", Free, RAW),
    d(142, "reboot", Gated, args::REBOOT),
    d(143, "setregid", Creds, args::SETREUID),
    d(144, "setgid", Creds, args::SETUID),
    d(145, "setreuid", Creds, args::SETREUID),
    d(146, "setuid", Creds, args::SETUID),
    d(147, "setresuid", Creds, args::SETRESUID),
    d(148, "getresuid", Free, RAW),
    d(149, "setresgid", Creds, args::SETRESUID),
    d(150, "getresgid", Free, RAW),
    d(151, "setfsuid", Creds, args::SETUID),
    d(152, "setfsgid", Creds, args::SETUID),
    d(153, "times", Free, RAW),
    d(154, "setpgid", Free, RAW),
    d(155, "getpgid", Free, RAW),
    d(156, "getsid", Free, RAW),
    d(157, "setsid", Free, RAW),
    d(158, "getgroups", Free, RAW),
    d(159, "setgroups", Creds, args::SETGROUPS),
    d(160, "uname", Free, RAW),
    d(161, "sethostname", Gated, args::SETHOSTNAME),
    d(162, "setdomainname", Gated, args::SETHOSTNAME),
    d(163, "getrlimit", Free, RAW),
    d(164, "setrlimit", Free, RAW),
    d(165, "getrusage", Free, RAW),
    d(166, "umask", Free, RAW),
    // prctl is free except PR_SET_SECCOMP, which the filter treats like the seccomp syscall.
    d(167, "prctl", Free, RAW),
    d(168, "getcpu", Free, RAW),
    d(169, "gettimeofday", Free, RAW),
    d(170, "settimeofday", Gated, args::SETTIMEOFDAY),
    d(171, "adjtimex", Gated, args::ADJTIMEX),
    d(172, "getpid", Free, RAW),
    d(173, "getppid", Free, RAW),
    d(174, "getuid", Free, RAW),
    d(175, "geteuid", Free, RAW),
    d(176, "getgid", Free, RAW),
    d(177, "getegid", Free, RAW),
    d(178, "gettid", Free, RAW),
    d(179, "sysinfo", Free, RAW),
    // POSIX message queues live in the IPC namespace's mqueue mount, not on workload paths.
    d(180, "mq_open", Free, RAW),
    d(181, "mq_unlink", Free, RAW),
    d(182, "mq_timedsend", Free, RAW),
    d(183, "mq_timedreceive", Free, RAW),
    d(184, "mq_notify", Free, RAW),
    d(185, "mq_getsetattr", Free, RAW),
    d(186, "msgget", Free, RAW),
    d(187, "msgctl", Free, RAW),
    d(188, "msgrcv", Free, RAW),
    d(189, "msgsnd", Free, RAW),
    d(190, "semget", Free, RAW),
    d(191, "semctl", Free, RAW),
    d(192, "semtimedop", Free, RAW),
    d(193, "semop", Free, RAW),
    d(194, "shmget", Free, RAW), // SysV IPC objects live in the IPC namespace, not on paths
    d(195, "shmctl", Free, RAW),
    d(196, "shmat", Memory, RAW), // SHM_REMAP can attach over an existing mapping
    d(197, "shmdt", Memory, RAW),
    d(198, "socket", Checked, sock(SockOp::Socket)),
    d(199, "socketpair", Free, RAW), // unnamed unix sockets: no address
    d(200, "bind", Checked, sock(SockOp::Bind)),
    d(201, "listen", Checked, sock(SockOp::Listen)),
    d(202, "accept", Free, RAW), // on a socket whose bind/listen was checked
    d(203, "connect", Checked, sock(SockOp::Connect)),
    d(204, "getsockname", Free, RAW),
    d(205, "getpeername", Free, RAW),
    d(206, "sendto", Checked, sock(SockOp::SendTo)),
    d(207, "recvfrom", Answer, sock(SockOp::RecvFrom)),
    d(208, "setsockopt", Free, RAW),
    d(209, "getsockopt", Free, RAW),
    d(210, "shutdown", Free, RAW),
    d(211, "sendmsg", Checked, sock(SockOp::SendMsg)),
    d(212, "recvmsg", Answer, sock(SockOp::RecvMsg)),
    d(213, "readahead", Free, RAW),
    d(214, "brk", Free, RAW), // never moves over an existing mapping
    d(215, "munmap", Memory, RAW),
    d(216, "mremap", Memory, RAW),
    d(217, "add_key", Gated, args::ADD_KEY),
    d(218, "request_key", Gated, args::REQUEST_KEY),
    d(219, "keyctl", Gated, args::KEYCTL),
    // clone(flags, stack, parent_tid, tls, child_tid) (CONFIG_CLONE_BACKWARDS): flags is
    // argument 0 as on x86_64, which is all the filter reads; tls and child_tid are swapped
    // relative to x86_64's clone(flags, stack, parent_tid, child_tid, tls).
    d(220, "clone", Spawn, args::CLONE),
    d(
        221,
        "execve",
        Checked,
        Sem::Exec {
            dirfd: None,
            path: 0,
            argv: 1,
            envp: 2,
            flags: None,
        },
    ),
    d(222, "mmap", Memory, RAW), // MAP_FIXED can map over the guard region
    d(223, "fadvise64", Free, RAW),
    d(224, "swapon", Gated, args::SWAPON),
    d(225, "swapoff", Gated, args::SWAPOFF),
    d(226, "mprotect", Memory, RAW),
    d(227, "msync", Free, RAW),
    d(228, "mlock", Free, RAW),
    d(229, "munlock", Free, RAW),
    d(230, "mlockall", Free, RAW),
    d(231, "munlockall", Free, RAW),
    d(232, "mincore", Free, RAW),
    d(233, "madvise", Memory, RAW), // MADV_DONTNEED would zero the guard region
    d(234, "remap_file_pages", Memory, RAW),
    d(235, "mbind", Free, RAW),
    d(236, "get_mempolicy", Free, RAW),
    d(237, "set_mempolicy", Free, RAW),
    d(238, "migrate_pages", Free, RAW),
    d(239, "move_pages", Free, RAW),
    d(240, "rt_tgsigqueueinfo", Free, RAW),
    d(241, "perf_event_open", Gated, args::PERF_EVENT_OPEN),
    d(242, "accept4", Free, RAW),
    d(243, "recvmmsg", Answer, sock(SockOp::RecvMmsg)),
    // 244..=259: the generic table's "arch-specific" range; arm64 defines nothing there.
    d(260, "wait4", Free, RAW),
    d(261, "prlimit64", Free, RAW),
    d(262, "fanotify_init", Gated, args::FANOTIFY_INIT),
    d(263, "fanotify_mark", Gated, args::FANOTIFY_MARK),
    d(264, "name_to_handle_at", Gated, args::NAME_TO_HANDLE_AT),
    d(265, "open_by_handle_at", Gated, args::OPEN_BY_HANDLE_AT), // opens by handle, bypassing path checks
    d(266, "clock_adjtime", Gated, args::CLOCK_ADJTIME),
    d(267, "syncfs", Free, RAW),
    d(268, "setns", Gated, args::SETNS),
    d(269, "sendmmsg", Checked, sock(SockOp::SendMmsg)),
    d(270, "process_vm_readv", Gated, args::PROCESS_VM),
    d(271, "process_vm_writev", Gated, args::PROCESS_VM),
    d(272, "kcmp", Gated, args::KCMP),
    d(273, "finit_module", Gated, args::FINIT_MODULE),
    d(274, "sched_setattr", Free, RAW),
    d(275, "sched_getattr", Free, RAW),
    d(276, "renameat2", Checked, two_at(TwoKind::Rename, NO)),
    // A workload filter returning SECCOMP_RET_USER_NOTIF would pre-empt sbx's TRACE stops.
    d(277, "seccomp", Gated, args::SECCOMP),
    d(278, "getrandom", Free, RAW),
    // Free: runtimes use it widely; executing it (execveat/fexecve) is checked and resolves
    // to "/memfd:NAME (deleted)", which no profile allows by accident.
    d(279, "memfd_create", Free, RAW),
    d(280, "bpf", Gated, args::BPF),
    d(
        281,
        "execveat",
        Checked,
        Sem::Exec {
            dirfd: Some(0),
            path: 1,
            argv: 2,
            envp: 3,
            flags: Some(4),
        },
    ),
    d(282, "userfaultfd", Gated, args::USERFAULTFD),
    d(283, "membarrier", Free, RAW),
    d(284, "mlock2", Free, RAW),
    d(285, "copy_file_range", Free, RAW),
    d(286, "preadv2", Free, RAW),
    d(287, "pwritev2", Free, RAW),
    d(288, "pkey_mprotect", Memory, RAW),
    d(289, "pkey_alloc", Free, RAW),
    d(290, "pkey_free", Free, RAW),
    d(
        291,
        "statx",
        Metadata,
        Sem::Path {
            dirfd: Some(0),
            path: 1,
            access: STAT,
            follow: Follow::UnlessFlag {
                arg: 2,
                nofollow: AT_SYMLINK_NOFOLLOW,
            },
            empty_path_flag: Some(2),
        },
    ),
    d(292, "io_pgetevents", Free, RAW),
    d(293, "rseq", Free, RAW),
    d(294, "kexec_file_load", Gated, args::KEXEC_FILE_LOAD),
    // 295..=423: unassigned on 64-bit generic-ABI architectures (403..=423 are the time64
    // variants that only 32-bit architectures have).
    d(424, "pidfd_send_signal", Free, RAW),
    d(425, "io_uring_setup", Gated, args::IO_URING_SETUP), // io_uring ops run without any syscall stop
    d(426, "io_uring_enter", Gated, args::IO_URING_ENTER),
    d(427, "io_uring_register", Gated, args::IO_URING_REGISTER),
    d(428, "open_tree", Gated, args::OPEN_TREE),
    d(429, "move_mount", Gated, args::MOVE_MOUNT),
    d(430, "fsopen", Gated, args::FSOPEN),
    d(431, "fsconfig", Gated, args::FSCONFIG),
    d(432, "fsmount", Gated, args::FSMOUNT),
    d(433, "fspick", Gated, args::FSPICK),
    d(434, "pidfd_open", Free, RAW),
    d(435, "clone3", Spawn, RAW), // ENOSYS in-kernel: its flags are behind a pointer
    d(436, "close_range", Free, RAW),
    d(437, "openat2", Checked, open(Some(0), 1, Some(2), true)),
    d(438, "pidfd_getfd", Gated, args::PIDFD_GETFD), // steals an fd from another process
    d(
        439,
        "faccessat2",
        Metadata,
        path_at(STAT, nofollow_at(3), Some(3)),
    ),
    d(440, "process_madvise", Gated, args::PROCESS_MADVISE),
    d(441, "epoll_pwait2", Free, RAW),
    d(442, "mount_setattr", Gated, args::MOUNT_SETATTR),
    d(443, "quotactl_fd", Gated, args::QUOTACTL_FD),
    // Landlock lets a workload sandbox itself: never harmful to sbx.
    d(444, "landlock_create_ruleset", Free, RAW),
    d(445, "landlock_add_rule", Free, RAW),
    d(446, "landlock_restrict_self", Free, RAW),
    d(447, "memfd_secret", Free, RAW),
    d(448, "process_mrelease", Gated, args::PROCESS_MRELEASE),
    d(449, "futex_waitv", Free, RAW),
    d(450, "set_mempolicy_home_node", Free, RAW),
    d(451, "cachestat", Free, RAW), // on an fd already held
    d(
        452,
        "fchmodat2",
        Checked,
        path_at(CHMOD, nofollow_at(3), Some(3)),
    ),
    d(453, "map_shadow_stack", Memory, RAW),
    d(454, "futex_wake", Free, RAW),
    d(455, "futex_wait", Free, RAW),
    d(456, "futex_requeue", Free, RAW),
    // Mount information by mount id (what /proc/self/mountinfo shows): no file content.
    d(457, "statmount", Metadata, RAW),
    d(458, "listmount", Metadata, RAW),
    d(459, "lsm_get_self_attr", Free, RAW),
    d(460, "lsm_set_self_attr", Free, RAW), // the caller's own LSM attributes
    d(461, "lsm_list_modules", Free, RAW),
    d(462, "mseal", Memory, RAW),
    d(
        463,
        "setxattrat",
        Checked,
        path_at(WRITE, nofollow_at(2), Some(2)),
    ),
    d(
        464,
        "getxattrat",
        Metadata,
        path_at(STAT, nofollow_at(2), Some(2)),
    ),
    d(
        465,
        "listxattrat",
        Metadata,
        path_at(STAT, nofollow_at(2), Some(2)),
    ),
    d(
        466,
        "removexattrat",
        Checked,
        path_at(WRITE, nofollow_at(2), Some(2)),
    ),
    d(467, "open_tree_attr", Gated, args::OPEN_TREE_ATTR),
    d(
        468,
        "file_getattr",
        Metadata,
        path_at(STAT, nofollow_at(4), Some(4)),
    ),
    // Sets inode flags (immutable, append-only, project id): like chmod.
    d(
        469,
        "file_setattr",
        Checked,
        path_at(CHMOD, nofollow_at(4), Some(4)),
    ),
];

/// Numbers below the table's maximum that are not syscalls on aarch64.
pub const HOLES: [std::ops::RangeInclusive<u32>; 2] = [244..=259, 295..=423];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sorted_unique_and_dense_except_holes() {
        for w in TABLE.windows(2) {
            assert!(
                w[0].nr < w[1].nr,
                "{} ({}) before {} ({})",
                w[0].name,
                w[0].nr,
                w[1].name,
                w[1].nr
            );
        }
        let mut names: Vec<&str> = TABLE.iter().map(|d| d.name).collect();
        names.sort_unstable();
        let before = names.len();
        names.dedup();
        assert_eq!(before, names.len(), "duplicate names");
        let max = TABLE.last().map(|d| d.nr).unwrap_or(0);
        for nr in 0..=max {
            let known = TABLE.binary_search_by_key(&nr, |d| d.nr).is_ok();
            let hole = HOLES.iter().any(|h| h.contains(&nr));
            assert_eq!(known, !hole, "nr {nr}");
        }
        assert_eq!(max, 469);
        assert_eq!(TABLE.len(), 325);
    }

    #[test]
    fn classes_of_key_syscalls() {
        let class = |n: &str| TABLE.iter().find(|d| d.name == n).map(|d| d.class);
        for (name, want) in [
            ("openat", Some(Checked)),
            ("openat2", Some(Checked)),
            ("execve", Some(Checked)),
            ("execveat", Some(Checked)),
            ("newfstatat", Some(Metadata)),
            ("fstat", Some(Free)),
            ("ptrace", Some(Gated)),
            ("io_uring_setup", Some(Gated)),
            ("seccomp", Some(Gated)),
            ("setresuid", Some(Creds)),
            ("mprotect", Some(Memory)),
            ("map_shadow_stack", Some(Memory)), // arm64 GCS shadow stacks (6.13+)
            ("clone", Some(Spawn)),
            ("clone3", Some(Spawn)),
            ("connect", Some(Checked)),
            // Legacy forms aarch64 never had.
            ("open", None),
            ("stat", None),
            ("fork", None),
            ("epoll_wait", None),
        ] {
            assert_eq!(class(name), want, "{name}");
        }
        // The numbers that differ most visibly from x86_64.
        for (name, nr) in [
            ("openat", 56),
            ("execve", 221),
            ("clone", 220),
            ("mmap", 222),
        ] {
            assert_eq!(
                TABLE.iter().find(|d| d.name == name).map(|d| d.nr),
                Some(nr)
            );
        }
    }

    /// Compare each row against `libc::SYS_*` (runs on aarch64 only: under qemu-aarch64 in CI,
    /// see `.ci/aarch64.sh`). Rows libc 0.2.191 lacks (io_pgetevents and the 6.x additions from
    /// 451 on except mseal) are covered by the density test above and by
    /// `arch::tests::tables_match_installed_kernel_headers`.
    #[cfg(target_arch = "aarch64")]
    #[test]
    fn numbers_match_libc() {
        let pairs: &[(i64, &str)] = &[
            (libc::SYS_io_setup, "io_setup"),
            (libc::SYS_io_destroy, "io_destroy"),
            (libc::SYS_io_submit, "io_submit"),
            (libc::SYS_io_cancel, "io_cancel"),
            (libc::SYS_io_getevents, "io_getevents"),
            (libc::SYS_setxattr, "setxattr"),
            (libc::SYS_lsetxattr, "lsetxattr"),
            (libc::SYS_fsetxattr, "fsetxattr"),
            (libc::SYS_getxattr, "getxattr"),
            (libc::SYS_lgetxattr, "lgetxattr"),
            (libc::SYS_fgetxattr, "fgetxattr"),
            (libc::SYS_listxattr, "listxattr"),
            (libc::SYS_llistxattr, "llistxattr"),
            (libc::SYS_flistxattr, "flistxattr"),
            (libc::SYS_removexattr, "removexattr"),
            (libc::SYS_lremovexattr, "lremovexattr"),
            (libc::SYS_fremovexattr, "fremovexattr"),
            (libc::SYS_getcwd, "getcwd"),
            (libc::SYS_lookup_dcookie, "lookup_dcookie"),
            (libc::SYS_eventfd2, "eventfd2"),
            (libc::SYS_epoll_create1, "epoll_create1"),
            (libc::SYS_epoll_ctl, "epoll_ctl"),
            (libc::SYS_epoll_pwait, "epoll_pwait"),
            (libc::SYS_dup, "dup"),
            (libc::SYS_dup3, "dup3"),
            (libc::SYS_fcntl, "fcntl"),
            (libc::SYS_inotify_init1, "inotify_init1"),
            (libc::SYS_inotify_add_watch, "inotify_add_watch"),
            (libc::SYS_inotify_rm_watch, "inotify_rm_watch"),
            (libc::SYS_ioctl, "ioctl"),
            (libc::SYS_ioprio_set, "ioprio_set"),
            (libc::SYS_ioprio_get, "ioprio_get"),
            (libc::SYS_flock, "flock"),
            (libc::SYS_mknodat, "mknodat"),
            (libc::SYS_mkdirat, "mkdirat"),
            (libc::SYS_unlinkat, "unlinkat"),
            (libc::SYS_symlinkat, "symlinkat"),
            (libc::SYS_linkat, "linkat"),
            (libc::SYS_renameat, "renameat"),
            (libc::SYS_umount2, "umount2"),
            (libc::SYS_mount, "mount"),
            (libc::SYS_pivot_root, "pivot_root"),
            (libc::SYS_nfsservctl, "nfsservctl"),
            (libc::SYS_statfs, "statfs"),
            (libc::SYS_fstatfs, "fstatfs"),
            (libc::SYS_truncate, "truncate"),
            (libc::SYS_ftruncate, "ftruncate"),
            (libc::SYS_fallocate, "fallocate"),
            (libc::SYS_faccessat, "faccessat"),
            (libc::SYS_chdir, "chdir"),
            (libc::SYS_fchdir, "fchdir"),
            (libc::SYS_chroot, "chroot"),
            (libc::SYS_fchmod, "fchmod"),
            (libc::SYS_fchmodat, "fchmodat"),
            (libc::SYS_fchownat, "fchownat"),
            (libc::SYS_fchown, "fchown"),
            (libc::SYS_openat, "openat"),
            (libc::SYS_close, "close"),
            (libc::SYS_vhangup, "vhangup"),
            (libc::SYS_pipe2, "pipe2"),
            (libc::SYS_quotactl, "quotactl"),
            (libc::SYS_getdents64, "getdents64"),
            (libc::SYS_lseek, "lseek"),
            (libc::SYS_read, "read"),
            (libc::SYS_write, "write"),
            (libc::SYS_readv, "readv"),
            (libc::SYS_writev, "writev"),
            (libc::SYS_pread64, "pread64"),
            (libc::SYS_pwrite64, "pwrite64"),
            (libc::SYS_preadv, "preadv"),
            (libc::SYS_pwritev, "pwritev"),
            (libc::SYS_sendfile, "sendfile"),
            (libc::SYS_pselect6, "pselect6"),
            (libc::SYS_ppoll, "ppoll"),
            (libc::SYS_signalfd4, "signalfd4"),
            (libc::SYS_vmsplice, "vmsplice"),
            (libc::SYS_splice, "splice"),
            (libc::SYS_tee, "tee"),
            (libc::SYS_readlinkat, "readlinkat"),
            (libc::SYS_newfstatat, "newfstatat"),
            (libc::SYS_fstat, "fstat"),
            (libc::SYS_sync, "sync"),
            (libc::SYS_fsync, "fsync"),
            (libc::SYS_fdatasync, "fdatasync"),
            (libc::SYS_sync_file_range, "sync_file_range"),
            (libc::SYS_timerfd_create, "timerfd_create"),
            (libc::SYS_timerfd_settime, "timerfd_settime"),
            (libc::SYS_timerfd_gettime, "timerfd_gettime"),
            (libc::SYS_utimensat, "utimensat"),
            (libc::SYS_acct, "acct"),
            (libc::SYS_capget, "capget"),
            (libc::SYS_capset, "capset"),
            (libc::SYS_personality, "personality"),
            (libc::SYS_exit, "exit"),
            (libc::SYS_exit_group, "exit_group"),
            (libc::SYS_waitid, "waitid"),
            (libc::SYS_set_tid_address, "set_tid_address"),
            (libc::SYS_unshare, "unshare"),
            (libc::SYS_futex, "futex"),
            (libc::SYS_set_robust_list, "set_robust_list"),
            (libc::SYS_get_robust_list, "get_robust_list"),
            (libc::SYS_nanosleep, "nanosleep"),
            (libc::SYS_getitimer, "getitimer"),
            (libc::SYS_setitimer, "setitimer"),
            (libc::SYS_kexec_load, "kexec_load"),
            (libc::SYS_init_module, "init_module"),
            (libc::SYS_delete_module, "delete_module"),
            (libc::SYS_timer_create, "timer_create"),
            (libc::SYS_timer_gettime, "timer_gettime"),
            (libc::SYS_timer_getoverrun, "timer_getoverrun"),
            (libc::SYS_timer_settime, "timer_settime"),
            (libc::SYS_timer_delete, "timer_delete"),
            (libc::SYS_clock_settime, "clock_settime"),
            (libc::SYS_clock_gettime, "clock_gettime"),
            (libc::SYS_clock_getres, "clock_getres"),
            (libc::SYS_clock_nanosleep, "clock_nanosleep"),
            (libc::SYS_syslog, "syslog"),
            (libc::SYS_ptrace, "ptrace"),
            (libc::SYS_sched_setparam, "sched_setparam"),
            (libc::SYS_sched_setscheduler, "sched_setscheduler"),
            (libc::SYS_sched_getscheduler, "sched_getscheduler"),
            (libc::SYS_sched_getparam, "sched_getparam"),
            (libc::SYS_sched_setaffinity, "sched_setaffinity"),
            (libc::SYS_sched_getaffinity, "sched_getaffinity"),
            (libc::SYS_sched_yield, "sched_yield"),
            (libc::SYS_sched_get_priority_max, "sched_get_priority_max"),
            (libc::SYS_sched_get_priority_min, "sched_get_priority_min"),
            (libc::SYS_sched_rr_get_interval, "sched_rr_get_interval"),
            (libc::SYS_restart_syscall, "restart_syscall"),
            (libc::SYS_kill, "kill"),
            (libc::SYS_tkill, "tkill"),
            (libc::SYS_tgkill, "tgkill"),
            (libc::SYS_sigaltstack, "sigaltstack"),
            (libc::SYS_rt_sigsuspend, "rt_sigsuspend"),
            (libc::SYS_rt_sigaction, "rt_sigaction"),
            (libc::SYS_rt_sigprocmask, "rt_sigprocmask"),
            (libc::SYS_rt_sigpending, "rt_sigpending"),
            (libc::SYS_rt_sigtimedwait, "rt_sigtimedwait"),
            (libc::SYS_rt_sigqueueinfo, "rt_sigqueueinfo"),
            (libc::SYS_rt_sigreturn, "rt_sigreturn"),
            (libc::SYS_setpriority, "setpriority"),
            (libc::SYS_getpriority, "getpriority"),
            (libc::SYS_reboot, "reboot"),
            (libc::SYS_setregid, "setregid"),
            (libc::SYS_setgid, "setgid"),
            (libc::SYS_setreuid, "setreuid"),
            (libc::SYS_setuid, "setuid"),
            (libc::SYS_setresuid, "setresuid"),
            (libc::SYS_getresuid, "getresuid"),
            (libc::SYS_setresgid, "setresgid"),
            (libc::SYS_getresgid, "getresgid"),
            (libc::SYS_setfsuid, "setfsuid"),
            (libc::SYS_setfsgid, "setfsgid"),
            (libc::SYS_times, "times"),
            (libc::SYS_setpgid, "setpgid"),
            (libc::SYS_getpgid, "getpgid"),
            (libc::SYS_getsid, "getsid"),
            (libc::SYS_setsid, "setsid"),
            (libc::SYS_getgroups, "getgroups"),
            (libc::SYS_setgroups, "setgroups"),
            (libc::SYS_uname, "uname"),
            (libc::SYS_sethostname, "sethostname"),
            (libc::SYS_setdomainname, "setdomainname"),
            (libc::SYS_getrlimit, "getrlimit"),
            (libc::SYS_setrlimit, "setrlimit"),
            (libc::SYS_getrusage, "getrusage"),
            (libc::SYS_umask, "umask"),
            (libc::SYS_prctl, "prctl"),
            (libc::SYS_getcpu, "getcpu"),
            (libc::SYS_gettimeofday, "gettimeofday"),
            (libc::SYS_settimeofday, "settimeofday"),
            (libc::SYS_adjtimex, "adjtimex"),
            (libc::SYS_getpid, "getpid"),
            (libc::SYS_getppid, "getppid"),
            (libc::SYS_getuid, "getuid"),
            (libc::SYS_geteuid, "geteuid"),
            (libc::SYS_getgid, "getgid"),
            (libc::SYS_getegid, "getegid"),
            (libc::SYS_gettid, "gettid"),
            (libc::SYS_sysinfo, "sysinfo"),
            (libc::SYS_mq_open, "mq_open"),
            (libc::SYS_mq_unlink, "mq_unlink"),
            (libc::SYS_mq_timedsend, "mq_timedsend"),
            (libc::SYS_mq_timedreceive, "mq_timedreceive"),
            (libc::SYS_mq_notify, "mq_notify"),
            (libc::SYS_mq_getsetattr, "mq_getsetattr"),
            (libc::SYS_msgget, "msgget"),
            (libc::SYS_msgctl, "msgctl"),
            (libc::SYS_msgrcv, "msgrcv"),
            (libc::SYS_msgsnd, "msgsnd"),
            (libc::SYS_semget, "semget"),
            (libc::SYS_semctl, "semctl"),
            (libc::SYS_semtimedop, "semtimedop"),
            (libc::SYS_semop, "semop"),
            (libc::SYS_shmget, "shmget"),
            (libc::SYS_shmctl, "shmctl"),
            (libc::SYS_shmat, "shmat"),
            (libc::SYS_shmdt, "shmdt"),
            (libc::SYS_socket, "socket"),
            (libc::SYS_socketpair, "socketpair"),
            (libc::SYS_bind, "bind"),
            (libc::SYS_listen, "listen"),
            (libc::SYS_accept, "accept"),
            (libc::SYS_connect, "connect"),
            (libc::SYS_getsockname, "getsockname"),
            (libc::SYS_getpeername, "getpeername"),
            (libc::SYS_sendto, "sendto"),
            (libc::SYS_recvfrom, "recvfrom"),
            (libc::SYS_setsockopt, "setsockopt"),
            (libc::SYS_getsockopt, "getsockopt"),
            (libc::SYS_shutdown, "shutdown"),
            (libc::SYS_sendmsg, "sendmsg"),
            (libc::SYS_recvmsg, "recvmsg"),
            (libc::SYS_readahead, "readahead"),
            (libc::SYS_brk, "brk"),
            (libc::SYS_munmap, "munmap"),
            (libc::SYS_mremap, "mremap"),
            (libc::SYS_add_key, "add_key"),
            (libc::SYS_request_key, "request_key"),
            (libc::SYS_keyctl, "keyctl"),
            (libc::SYS_clone, "clone"),
            (libc::SYS_execve, "execve"),
            (libc::SYS_mmap, "mmap"),
            (libc::SYS_fadvise64, "fadvise64"),
            (libc::SYS_swapon, "swapon"),
            (libc::SYS_swapoff, "swapoff"),
            (libc::SYS_mprotect, "mprotect"),
            (libc::SYS_msync, "msync"),
            (libc::SYS_mlock, "mlock"),
            (libc::SYS_munlock, "munlock"),
            (libc::SYS_mlockall, "mlockall"),
            (libc::SYS_munlockall, "munlockall"),
            (libc::SYS_mincore, "mincore"),
            (libc::SYS_madvise, "madvise"),
            (libc::SYS_remap_file_pages, "remap_file_pages"),
            (libc::SYS_mbind, "mbind"),
            (libc::SYS_get_mempolicy, "get_mempolicy"),
            (libc::SYS_set_mempolicy, "set_mempolicy"),
            (libc::SYS_migrate_pages, "migrate_pages"),
            (libc::SYS_move_pages, "move_pages"),
            (libc::SYS_rt_tgsigqueueinfo, "rt_tgsigqueueinfo"),
            (libc::SYS_perf_event_open, "perf_event_open"),
            (libc::SYS_accept4, "accept4"),
            (libc::SYS_recvmmsg, "recvmmsg"),
            (libc::SYS_wait4, "wait4"),
            (libc::SYS_prlimit64, "prlimit64"),
            (libc::SYS_fanotify_init, "fanotify_init"),
            (libc::SYS_fanotify_mark, "fanotify_mark"),
            (libc::SYS_name_to_handle_at, "name_to_handle_at"),
            (libc::SYS_open_by_handle_at, "open_by_handle_at"),
            (libc::SYS_clock_adjtime, "clock_adjtime"),
            (libc::SYS_syncfs, "syncfs"),
            (libc::SYS_setns, "setns"),
            (libc::SYS_sendmmsg, "sendmmsg"),
            (libc::SYS_process_vm_readv, "process_vm_readv"),
            (libc::SYS_process_vm_writev, "process_vm_writev"),
            (libc::SYS_kcmp, "kcmp"),
            (libc::SYS_finit_module, "finit_module"),
            (libc::SYS_sched_setattr, "sched_setattr"),
            (libc::SYS_sched_getattr, "sched_getattr"),
            (libc::SYS_renameat2, "renameat2"),
            (libc::SYS_seccomp, "seccomp"),
            (libc::SYS_getrandom, "getrandom"),
            (libc::SYS_memfd_create, "memfd_create"),
            (libc::SYS_bpf, "bpf"),
            (libc::SYS_execveat, "execveat"),
            (libc::SYS_userfaultfd, "userfaultfd"),
            (libc::SYS_membarrier, "membarrier"),
            (libc::SYS_mlock2, "mlock2"),
            (libc::SYS_copy_file_range, "copy_file_range"),
            (libc::SYS_preadv2, "preadv2"),
            (libc::SYS_pwritev2, "pwritev2"),
            (libc::SYS_pkey_mprotect, "pkey_mprotect"),
            (libc::SYS_pkey_alloc, "pkey_alloc"),
            (libc::SYS_pkey_free, "pkey_free"),
            (libc::SYS_statx, "statx"),
            (libc::SYS_rseq, "rseq"),
            (libc::SYS_kexec_file_load, "kexec_file_load"),
            (libc::SYS_pidfd_send_signal, "pidfd_send_signal"),
            (libc::SYS_io_uring_setup, "io_uring_setup"),
            (libc::SYS_io_uring_enter, "io_uring_enter"),
            (libc::SYS_io_uring_register, "io_uring_register"),
            (libc::SYS_open_tree, "open_tree"),
            (libc::SYS_move_mount, "move_mount"),
            (libc::SYS_fsopen, "fsopen"),
            (libc::SYS_fsconfig, "fsconfig"),
            (libc::SYS_fsmount, "fsmount"),
            (libc::SYS_fspick, "fspick"),
            (libc::SYS_pidfd_open, "pidfd_open"),
            (libc::SYS_clone3, "clone3"),
            (libc::SYS_close_range, "close_range"),
            (libc::SYS_openat2, "openat2"),
            (libc::SYS_pidfd_getfd, "pidfd_getfd"),
            (libc::SYS_faccessat2, "faccessat2"),
            (libc::SYS_process_madvise, "process_madvise"),
            (libc::SYS_epoll_pwait2, "epoll_pwait2"),
            (libc::SYS_mount_setattr, "mount_setattr"),
            (libc::SYS_quotactl_fd, "quotactl_fd"),
            (libc::SYS_landlock_create_ruleset, "landlock_create_ruleset"),
            (libc::SYS_landlock_add_rule, "landlock_add_rule"),
            (libc::SYS_landlock_restrict_self, "landlock_restrict_self"),
            (libc::SYS_memfd_secret, "memfd_secret"),
            (libc::SYS_process_mrelease, "process_mrelease"),
            (libc::SYS_futex_waitv, "futex_waitv"),
            (libc::SYS_set_mempolicy_home_node, "set_mempolicy_home_node"),
            (libc::SYS_mseal, "mseal"),
        ];
        for &(nr, name) in pairs {
            let row = TABLE.iter().find(|d| d.name == name);
            assert_eq!(row.map(|d| i64::from(d.nr)), Some(nr), "{name}");
        }
        assert_eq!(pairs.len(), 306);
    }
}
