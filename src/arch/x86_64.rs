//! The x86_64 syscall table: every number the 6.18 kernel defines for the 64-bit ABI, with its
//! [`Class`] and decoding [`Sem`].
//!
//! Pure data, read by `filter` (which numbers stop, which are refused), `decode` (where the
//! objects are in the argument words) and `show`. Numbers come from the kernel's
//! `arch/x86/entry/syscalls/syscall_64.tbl` (mirrored in `asm/unistd_64.h` and `libc::SYS_*`;
//! the test module compares every row that libc knows). The rows libc 0.2.191 lacks were
//! checked against linux-raw-sys 0.12.1's x86_64 table and this 6.18 kernel's `kallsyms`
//! (`uprobe` = 336 answers ENXIO outside a trampoline while 337 answers ENOSYS).
//!
//! Holes: 337..=423 are unassigned on x86_64 (the numbering jumped to 424 to line up with the
//! other architectures), and 512..=547 are the x32-only entry points, reachable only with the
//! x32 bit (0x4000_0000) set, which this kernel rejects and the filter treats as unknown.
//! Rows marked "not implemented" exist in the table but return ENOSYS on every kernel sbx
//! supports; they are gated so that enforce refuses them like unknown numbers.
//!
//! Class choices that are not obvious carry a comment on their row.

use super::{Class, Class::*, Follow, Sem, SockOp, SyscallDef, TwoKind, args};
use crate::event::{Access, AccessSet};

/// `AT_SYMLINK_NOFOLLOW`.
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
/// A cwd-relative path in argument `path`.
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
const fn two(kind: TwoKind, at: bool, follow: Follow) -> Sem {
    if at {
        Sem::TwoPath {
            kind,
            olddirfd: Some(0),
            old: 1,
            newdirfd: Some(2),
            new: 3,
            follow,
        }
    } else {
        Sem::TwoPath {
            kind,
            olddirfd: None,
            old: 0,
            newdirfd: None,
            new: 1,
            follow,
        }
    }
}

/// Sorted by number.
pub static TABLE: &[SyscallDef] = &[
    d(0, "read", Free, RAW),
    d(1, "write", Free, RAW),
    d(2, "open", Checked, open(None, 0, Some(1), false)),
    d(3, "close", Free, RAW),
    d(4, "stat", Metadata, path(0, STAT, YES)),
    d(5, "fstat", Free, RAW), // an fd already held
    d(6, "lstat", Metadata, path(0, STAT, NO)),
    d(7, "poll", Free, RAW),
    d(8, "lseek", Free, RAW),
    d(9, "mmap", Memory, RAW), // MAP_FIXED can map over the guard region
    d(10, "mprotect", Memory, RAW),
    d(11, "munmap", Memory, RAW),
    d(12, "brk", Free, RAW), // never moves over an existing mapping
    d(13, "rt_sigaction", Free, RAW),
    d(14, "rt_sigprocmask", Free, RAW),
    d(15, "rt_sigreturn", Free, RAW),
    d(16, "ioctl", Free, RAW), // on an fd already held (TIOCSTI: see docs/security.md)
    d(17, "pread64", Free, RAW),
    d(18, "pwrite64", Free, RAW),
    d(19, "readv", Free, RAW),
    d(20, "writev", Free, RAW),
    d(21, "access", Metadata, path(0, STAT, YES)),
    d(22, "pipe", Free, RAW),
    d(23, "select", Free, RAW),
    d(24, "sched_yield", Free, RAW),
    d(25, "mremap", Memory, RAW),
    d(26, "msync", Free, RAW),
    d(27, "mincore", Free, RAW),
    d(28, "madvise", Memory, RAW), // MADV_DONTNEED would zero the guard region
    d(29, "shmget", Free, RAW),    // SysV IPC objects live in the IPC namespace, not on paths
    d(30, "shmat", Memory, RAW),   // SHM_REMAP can attach over an existing mapping
    d(31, "shmctl", Free, RAW),
    d(32, "dup", Free, RAW),
    d(33, "dup2", Free, RAW),
    d(34, "pause", Free, RAW),
    d(35, "nanosleep", Free, RAW),
    d(36, "getitimer", Free, RAW),
    d(37, "alarm", Free, RAW),
    d(38, "setitimer", Free, RAW),
    d(39, "getpid", Free, RAW),
    d(40, "sendfile", Free, RAW),
    d(41, "socket", Checked, sock(SockOp::Socket)),
    d(42, "connect", Checked, sock(SockOp::Connect)),
    d(43, "accept", Free, RAW), // on a socket whose bind/listen was checked
    d(44, "sendto", Checked, sock(SockOp::SendTo)),
    d(45, "recvfrom", Answer, sock(SockOp::RecvFrom)),
    d(46, "sendmsg", Checked, sock(SockOp::SendMsg)),
    d(47, "recvmsg", Answer, sock(SockOp::RecvMsg)),
    d(48, "shutdown", Free, RAW),
    d(49, "bind", Checked, sock(SockOp::Bind)),
    d(50, "listen", Checked, sock(SockOp::Listen)),
    d(51, "getsockname", Free, RAW),
    d(52, "getpeername", Free, RAW),
    d(53, "socketpair", Free, RAW), // unnamed unix sockets: no address
    d(54, "setsockopt", Free, RAW),
    d(55, "getsockopt", Free, RAW),
    d(56, "clone", Spawn, args::CLONE),
    d(57, "fork", Spawn, RAW),
    d(58, "vfork", Spawn, RAW),
    d(
        59,
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
    d(60, "exit", Free, RAW),
    d(61, "wait4", Free, RAW),
    // Signals to other processes are limited by the kernel to the same uid; sbx itself runs as
    // that uid too, so a workload could signal sbx: see the report of the arch helper.
    d(62, "kill", Free, args::KILL),
    d(63, "uname", Free, RAW),
    d(64, "semget", Free, RAW),
    d(65, "semop", Free, RAW),
    d(66, "semctl", Free, RAW),
    d(67, "shmdt", Memory, RAW),
    d(68, "msgget", Free, RAW),
    d(69, "msgsnd", Free, RAW),
    d(70, "msgrcv", Free, RAW),
    d(71, "msgctl", Free, RAW),
    d(72, "fcntl", Free, RAW),
    d(73, "flock", Free, RAW),
    d(74, "fsync", Free, RAW),
    d(75, "fdatasync", Free, RAW),
    d(76, "truncate", Checked, path(0, TRUNCATE, YES)),
    d(77, "ftruncate", Free, RAW), // needs an fd opened for writing, which was checked
    d(78, "getdents", Free, RAW),
    d(79, "getcwd", Free, RAW),
    d(80, "chdir", Metadata, path(0, CHDIR, YES)),
    // Metadata like chdir: it reveals no content, and the tracer reads the cwd from /proc.
    d(81, "fchdir", Metadata, fd(0, CHDIR)),
    d(82, "rename", Checked, two(TwoKind::Rename, false, NO)),
    d(83, "mkdir", Checked, path(0, CREATE, NO)),
    d(84, "rmdir", Checked, path(0, DELETE, NO)),
    d(85, "creat", Checked, open(None, 0, None, false)),
    d(86, "link", Checked, two(TwoKind::Link, false, NO)), // link(2) never follows on Linux
    d(87, "unlink", Checked, path(0, DELETE, NO)),
    d(
        88,
        "symlink",
        Checked,
        Sem::Symlink {
            target: 0,
            newdirfd: None,
            new: 1,
        },
    ),
    d(89, "readlink", Metadata, path(0, STAT, NO)),
    d(90, "chmod", Checked, path(0, CHMOD, YES)),
    d(91, "fchmod", Checked, fd(0, CHMOD)),
    d(92, "chown", Checked, path(0, CHOWN, YES)),
    d(93, "fchown", Checked, fd(0, CHOWN)),
    d(94, "lchown", Checked, path(0, CHOWN, NO)),
    d(95, "umask", Free, RAW),
    d(96, "gettimeofday", Free, RAW),
    d(97, "getrlimit", Free, RAW),
    d(98, "getrusage", Free, RAW),
    d(99, "sysinfo", Free, RAW),
    d(100, "times", Free, RAW),
    d(101, "ptrace", Gated, args::PTRACE),
    d(102, "getuid", Free, RAW),
    d(103, "syslog", Gated, args::SYSLOG),
    d(104, "getgid", Free, RAW),
    d(105, "setuid", Creds, args::SETUID),
    d(106, "setgid", Creds, args::SETUID),
    d(107, "geteuid", Free, RAW),
    d(108, "getegid", Free, RAW),
    d(109, "setpgid", Free, RAW),
    d(110, "getppid", Free, RAW),
    d(111, "getpgrp", Free, RAW),
    d(112, "setsid", Free, RAW),
    d(113, "setreuid", Creds, args::SETREUID),
    d(114, "setregid", Creds, args::SETREUID),
    d(115, "getgroups", Free, RAW),
    d(116, "setgroups", Creds, args::SETGROUPS),
    d(117, "setresuid", Creds, args::SETRESUID),
    d(118, "getresuid", Free, RAW),
    d(119, "setresgid", Creds, args::SETRESUID),
    d(120, "getresgid", Free, RAW),
    d(121, "getpgid", Free, RAW),
    d(122, "setfsuid", Creds, args::SETUID),
    d(123, "setfsgid", Creds, args::SETUID),
    d(124, "getsid", Free, RAW),
    d(125, "capget", Free, RAW),
    d(126, "capset", Creds, args::CAPSET),
    d(127, "rt_sigpending", Free, RAW),
    d(128, "rt_sigtimedwait", Free, RAW),
    d(129, "rt_sigqueueinfo", Free, RAW),
    d(130, "rt_sigsuspend", Free, RAW),
    d(131, "sigaltstack", Free, RAW),
    d(132, "utime", Checked, path(0, WRITE, YES)), // timestamps: a modification
    d(133, "mknod", Checked, path(0, CREATE, NO)),
    d(134, "uselib", Gated, args::USELIB), // a.out library loading; ENOSYS on modern kernels
    d(135, "personality", Gated, args::PERSONALITY),
    d(136, "ustat", Free, RAW), // takes a device number, not a path
    d(137, "statfs", Metadata, path(0, STAT, YES)),
    d(138, "fstatfs", Free, RAW),
    d(139, "sysfs", Free, RAW),
    d(140, "getpriority", Free, RAW),
    d(141, "setpriority", Free, RAW),
    d(142, "sched_setparam", Free, RAW),
    d(143, "sched_getparam", Free, RAW),
    d(144, "sched_setscheduler", Free, RAW),
    d(145, "sched_getscheduler", Free, RAW),
    d(146, "sched_get_priority_max", Free, RAW),
    d(147, "sched_get_priority_min", Free, RAW),
    d(148, "sched_rr_get_interval", Free, RAW),
    d(149, "mlock", Free, RAW),
    d(150, "munlock", Free, RAW),
    d(151, "mlockall", Free, RAW),
    d(152, "munlockall", Free, RAW),
    d(153, "vhangup", Gated, args::VHANGUP),
    d(154, "modify_ldt", Gated, args::MODIFY_LDT),
    d(155, "pivot_root", Gated, args::PIVOT_ROOT),
    d(156, "_sysctl", Gated, args::SYSCTL), // not implemented
    // prctl is free except PR_SET_SECCOMP, which the filter treats like the seccomp syscall.
    d(157, "prctl", Free, RAW),
    d(158, "arch_prctl", Free, RAW),
    d(159, "adjtimex", Gated, args::ADJTIMEX),
    d(160, "setrlimit", Free, RAW),
    d(161, "chroot", Gated, args::CHROOT),
    d(162, "sync", Free, RAW),
    d(163, "acct", Gated, args::ACCT),
    d(164, "settimeofday", Gated, args::SETTIMEOFDAY),
    d(165, "mount", Gated, args::MOUNT),
    d(166, "umount2", Gated, args::UMOUNT2),
    d(167, "swapon", Gated, args::SWAPON),
    d(168, "swapoff", Gated, args::SWAPOFF),
    d(169, "reboot", Gated, args::REBOOT),
    d(170, "sethostname", Gated, args::SETHOSTNAME),
    d(171, "setdomainname", Gated, args::SETHOSTNAME),
    d(172, "iopl", Gated, args::IOPL),
    d(173, "ioperm", Gated, args::IOPERM),
    d(174, "create_module", Gated, RAW), // not implemented
    d(175, "init_module", Gated, args::INIT_MODULE),
    d(176, "delete_module", Gated, args::DELETE_MODULE),
    d(177, "get_kernel_syms", Gated, RAW), // not implemented
    d(178, "query_module", Gated, RAW),    // not implemented
    d(179, "quotactl", Gated, args::QUOTACTL),
    d(180, "nfsservctl", Gated, RAW),  // not implemented
    d(181, "getpmsg", Gated, RAW),     // not implemented
    d(182, "putpmsg", Gated, RAW),     // not implemented
    d(183, "afs_syscall", Gated, RAW), // not implemented
    d(184, "tuxcall", Gated, RAW),     // not implemented
    d(185, "security", Gated, RAW),    // not implemented
    d(186, "gettid", Free, RAW),
    d(187, "readahead", Free, RAW),
    d(188, "setxattr", Checked, path(0, WRITE, YES)),
    d(189, "lsetxattr", Checked, path(0, WRITE, NO)),
    d(190, "fsetxattr", Checked, fd(0, WRITE)),
    d(191, "getxattr", Metadata, path(0, STAT, YES)),
    d(192, "lgetxattr", Metadata, path(0, STAT, NO)),
    d(193, "fgetxattr", Free, RAW),
    d(194, "listxattr", Metadata, path(0, STAT, YES)),
    d(195, "llistxattr", Metadata, path(0, STAT, NO)),
    d(196, "flistxattr", Free, RAW),
    d(197, "removexattr", Checked, path(0, WRITE, YES)),
    d(198, "lremovexattr", Checked, path(0, WRITE, NO)),
    d(199, "fremovexattr", Checked, fd(0, WRITE)),
    d(200, "tkill", Free, args::KILL),
    d(201, "time", Free, RAW),
    d(202, "futex", Free, RAW),
    d(203, "sched_setaffinity", Free, RAW),
    d(204, "sched_getaffinity", Free, RAW),
    d(205, "set_thread_area", Free, RAW),
    d(206, "io_setup", Free, RAW), // Linux AIO works on fds already held
    d(207, "io_destroy", Free, RAW),
    d(208, "io_getevents", Free, RAW),
    d(209, "io_submit", Free, RAW),
    d(210, "io_cancel", Free, RAW),
    d(211, "get_thread_area", Free, RAW),
    d(212, "lookup_dcookie", Gated, args::LOOKUP_DCOOKIE), // removed in 6.8
    d(213, "epoll_create", Free, RAW),
    d(214, "epoll_ctl_old", Gated, RAW),  // not implemented
    d(215, "epoll_wait_old", Gated, RAW), // not implemented
    d(216, "remap_file_pages", Memory, RAW),
    d(217, "getdents64", Free, RAW),
    d(218, "set_tid_address", Free, RAW),
    d(219, "restart_syscall", Free, RAW),
    d(220, "semtimedop", Free, RAW),
    d(221, "fadvise64", Free, RAW),
    d(222, "timer_create", Free, RAW),
    d(223, "timer_settime", Free, RAW),
    d(224, "timer_gettime", Free, RAW),
    d(225, "timer_getoverrun", Free, RAW),
    d(226, "timer_delete", Free, RAW),
    d(227, "clock_settime", Gated, args::CLOCK_SETTIME),
    d(228, "clock_gettime", Free, RAW),
    d(229, "clock_getres", Free, RAW),
    d(230, "clock_nanosleep", Free, RAW),
    d(231, "exit_group", Free, RAW),
    d(232, "epoll_wait", Free, RAW),
    d(233, "epoll_ctl", Free, RAW),
    d(234, "tgkill", Free, args::TGKILL),
    d(235, "utimes", Checked, path(0, WRITE, YES)),
    d(236, "vserver", Gated, RAW), // not implemented
    d(237, "mbind", Free, RAW),
    d(238, "set_mempolicy", Free, RAW),
    d(239, "get_mempolicy", Free, RAW),
    // POSIX message queues live in the IPC namespace's mqueue mount, not on workload paths.
    d(240, "mq_open", Free, RAW),
    d(241, "mq_unlink", Free, RAW),
    d(242, "mq_timedsend", Free, RAW),
    d(243, "mq_timedreceive", Free, RAW),
    d(244, "mq_notify", Free, RAW),
    d(245, "mq_getsetattr", Free, RAW),
    d(246, "kexec_load", Gated, args::KEXEC_LOAD),
    d(247, "waitid", Free, RAW),
    d(248, "add_key", Gated, args::ADD_KEY),
    d(249, "request_key", Gated, args::REQUEST_KEY),
    d(250, "keyctl", Gated, args::KEYCTL),
    d(251, "ioprio_set", Free, RAW),
    d(252, "ioprio_get", Free, RAW),
    d(253, "inotify_init", Free, RAW),
    // Watching reveals names and timing, not content: metadata.
    d(
        254,
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
    d(255, "inotify_rm_watch", Free, RAW),
    d(256, "migrate_pages", Free, RAW),
    d(257, "openat", Checked, open(Some(0), 1, Some(2), false)),
    d(258, "mkdirat", Checked, path_at(CREATE, NO, None)),
    d(259, "mknodat", Checked, path_at(CREATE, NO, None)),
    d(
        260,
        "fchownat",
        Checked,
        path_at(CHOWN, nofollow_at(4), Some(4)),
    ),
    // A NULL path acts on the dirfd (decode handles it).
    d(261, "futimesat", Checked, path_at(WRITE, YES, None)),
    d(
        262,
        "newfstatat",
        Metadata,
        path_at(STAT, nofollow_at(3), Some(3)),
    ),
    // AT_REMOVEDIR only chooses rmdir over unlink: both delete.
    d(263, "unlinkat", Checked, path_at(DELETE, NO, None)),
    d(264, "renameat", Checked, two(TwoKind::Rename, true, NO)),
    d(
        265,
        "linkat",
        Checked,
        two(
            TwoKind::Link,
            true,
            Follow::IfFlag {
                arg: 4,
                follow: AT_SYMLINK_FOLLOW,
            },
        ),
    ),
    d(
        266,
        "symlinkat",
        Checked,
        Sem::Symlink {
            target: 0,
            newdirfd: Some(1),
            new: 2,
        },
    ),
    d(267, "readlinkat", Metadata, path_at(STAT, NO, None)),
    d(268, "fchmodat", Checked, path_at(CHMOD, YES, None)), // no flags argument in the syscall
    d(269, "faccessat", Metadata, path_at(STAT, YES, None)), // no flags argument in the syscall
    d(270, "pselect6", Free, RAW),
    d(271, "ppoll", Free, RAW),
    d(272, "unshare", Gated, args::UNSHARE),
    d(273, "set_robust_list", Free, RAW),
    d(274, "get_robust_list", Free, RAW),
    d(275, "splice", Free, RAW),
    d(276, "tee", Free, RAW),
    d(277, "sync_file_range", Free, RAW),
    d(278, "vmsplice", Free, RAW),
    d(279, "move_pages", Free, RAW),
    // A NULL path acts on the dirfd (decode handles it).
    d(
        280,
        "utimensat",
        Checked,
        path_at(WRITE, nofollow_at(3), Some(3)),
    ),
    d(281, "epoll_pwait", Free, RAW),
    d(282, "signalfd", Free, RAW),
    d(283, "timerfd_create", Free, RAW),
    d(284, "eventfd", Free, RAW),
    d(285, "fallocate", Free, RAW),
    d(286, "timerfd_settime", Free, RAW),
    d(287, "timerfd_gettime", Free, RAW),
    d(288, "accept4", Free, RAW),
    d(289, "signalfd4", Free, RAW),
    d(290, "eventfd2", Free, RAW),
    d(291, "epoll_create1", Free, RAW),
    d(292, "dup3", Free, RAW),
    d(293, "pipe2", Free, RAW),
    d(294, "inotify_init1", Free, RAW),
    d(295, "preadv", Free, RAW),
    d(296, "pwritev", Free, RAW),
    d(297, "rt_tgsigqueueinfo", Free, RAW),
    d(298, "perf_event_open", Gated, args::PERF_EVENT_OPEN),
    d(299, "recvmmsg", Answer, sock(SockOp::RecvMmsg)),
    d(300, "fanotify_init", Gated, args::FANOTIFY_INIT),
    d(301, "fanotify_mark", Gated, args::FANOTIFY_MARK),
    d(302, "prlimit64", Free, RAW),
    d(303, "name_to_handle_at", Gated, args::NAME_TO_HANDLE_AT),
    d(304, "open_by_handle_at", Gated, args::OPEN_BY_HANDLE_AT), // opens by handle, bypassing path checks
    d(305, "clock_adjtime", Gated, args::CLOCK_ADJTIME),
    d(306, "syncfs", Free, RAW),
    d(307, "sendmmsg", Checked, sock(SockOp::SendMmsg)),
    d(308, "setns", Gated, args::SETNS),
    d(309, "getcpu", Free, RAW),
    d(310, "process_vm_readv", Gated, args::PROCESS_VM),
    d(311, "process_vm_writev", Gated, args::PROCESS_VM),
    d(312, "kcmp", Gated, args::KCMP),
    d(313, "finit_module", Gated, args::FINIT_MODULE),
    d(314, "sched_setattr", Free, RAW),
    d(315, "sched_getattr", Free, RAW),
    d(316, "renameat2", Checked, two(TwoKind::Rename, true, NO)),
    // A workload filter returning SECCOMP_RET_USER_NOTIF would pre-empt sbx's TRACE stops.
    d(317, "seccomp", Gated, args::SECCOMP),
    d(318, "getrandom", Free, RAW),
    // Free: runtimes use it widely; executing it (execveat/fexecve) is checked and resolves
    // to "/memfd:NAME (deleted)", which no profile allows by accident.
    d(319, "memfd_create", Free, RAW),
    d(320, "kexec_file_load", Gated, args::KEXEC_FILE_LOAD),
    d(321, "bpf", Gated, args::BPF),
    d(
        322,
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
    d(323, "userfaultfd", Gated, args::USERFAULTFD),
    d(324, "membarrier", Free, RAW),
    d(325, "mlock2", Free, RAW),
    d(326, "copy_file_range", Free, RAW),
    d(327, "preadv2", Free, RAW),
    d(328, "pwritev2", Free, RAW),
    d(329, "pkey_mprotect", Memory, RAW),
    d(330, "pkey_alloc", Free, RAW),
    d(331, "pkey_free", Free, RAW),
    d(
        332,
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
    d(333, "io_pgetevents", Free, RAW),
    d(334, "rseq", Free, RAW),
    // Only valid from the kernel's uprobe trampoline page; anywhere else they raise SIGILL.
    d(335, "uretprobe", Free, RAW),
    d(336, "uprobe", Free, RAW),
    // 337..=423: unassigned on x86_64.
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

/// Numbers below the table's maximum that are not syscalls on x86_64.
pub const HOLES: std::ops::RangeInclusive<u32> = 337..=423;

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
            assert_eq!(known, !HOLES.contains(&nr), "nr {nr}");
        }
        assert_eq!(max, 469);
    }

    #[test]
    fn sems_point_at_real_arguments() {
        for d in TABLE {
            let args: Vec<u8> = match d.sem {
                Sem::Raw | Sem::Sock { .. } | Sem::Args(_) => vec![],
                Sem::Open {
                    dirfd, path, flags, ..
                } => [dirfd, Some(path), flags].into_iter().flatten().collect(),
                Sem::Exec {
                    dirfd,
                    path,
                    argv,
                    envp,
                    flags,
                } => [dirfd, Some(path), Some(argv), Some(envp), flags]
                    .into_iter()
                    .flatten()
                    .collect(),
                Sem::Path {
                    dirfd,
                    path,
                    empty_path_flag,
                    ..
                } => [dirfd, Some(path), empty_path_flag]
                    .into_iter()
                    .flatten()
                    .collect(),
                Sem::TwoPath {
                    olddirfd,
                    old,
                    newdirfd,
                    new,
                    ..
                } => [olddirfd, Some(old), newdirfd, Some(new)]
                    .into_iter()
                    .flatten()
                    .collect(),
                Sem::Symlink {
                    target,
                    newdirfd,
                    new,
                } => [Some(target), newdirfd, Some(new)]
                    .into_iter()
                    .flatten()
                    .collect(),
                Sem::Fd { fd, .. } => vec![fd],
            };
            assert!(args.iter().all(|&a| a < 6), "{}", d.name);
            // Checked and Metadata rows that take paths must say where they are.
            if matches!(d.class, Class::Checked) {
                assert!(
                    !matches!(d.sem, Sem::Raw),
                    "{} is checked but has no semantics",
                    d.name
                );
            }
        }
    }

    #[test]
    fn classes_of_key_syscalls() {
        let class = |n: &str| TABLE.iter().find(|d| d.name == n).map(|d| d.class);
        for (name, want) in [
            ("openat", Checked),
            ("execveat", Checked),
            ("newfstatat", Metadata),
            ("fstat", Free),
            ("ptrace", Gated),
            ("io_uring_setup", Gated),
            ("seccomp", Gated),
            ("setresuid", Creds),
            ("mprotect", Memory),
            ("clone3", Spawn),
            ("connect", Checked),
        ] {
            assert_eq!(class(name), Some(want), "{name}");
        }
    }

    /// Compare each row against `libc::SYS_*`. Rows libc 0.2.191 lacks (create_module,
    /// get_kernel_syms, query_module, io_pgetevents, uretprobe, uprobe and the 6.x additions
    /// after 450 except fchmodat2 and mseal) are covered by the density test above.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn numbers_match_libc() {
        let pairs: &[(i64, &str)] = &[
            (libc::SYS_read, "read"),
            (libc::SYS_write, "write"),
            (libc::SYS_open, "open"),
            (libc::SYS_close, "close"),
            (libc::SYS_stat, "stat"),
            (libc::SYS_fstat, "fstat"),
            (libc::SYS_lstat, "lstat"),
            (libc::SYS_poll, "poll"),
            (libc::SYS_lseek, "lseek"),
            (libc::SYS_mmap, "mmap"),
            (libc::SYS_mprotect, "mprotect"),
            (libc::SYS_munmap, "munmap"),
            (libc::SYS_brk, "brk"),
            (libc::SYS_rt_sigaction, "rt_sigaction"),
            (libc::SYS_rt_sigprocmask, "rt_sigprocmask"),
            (libc::SYS_rt_sigreturn, "rt_sigreturn"),
            (libc::SYS_ioctl, "ioctl"),
            (libc::SYS_pread64, "pread64"),
            (libc::SYS_pwrite64, "pwrite64"),
            (libc::SYS_readv, "readv"),
            (libc::SYS_writev, "writev"),
            (libc::SYS_access, "access"),
            (libc::SYS_pipe, "pipe"),
            (libc::SYS_select, "select"),
            (libc::SYS_sched_yield, "sched_yield"),
            (libc::SYS_mremap, "mremap"),
            (libc::SYS_msync, "msync"),
            (libc::SYS_mincore, "mincore"),
            (libc::SYS_madvise, "madvise"),
            (libc::SYS_shmget, "shmget"),
            (libc::SYS_shmat, "shmat"),
            (libc::SYS_shmctl, "shmctl"),
            (libc::SYS_dup, "dup"),
            (libc::SYS_dup2, "dup2"),
            (libc::SYS_pause, "pause"),
            (libc::SYS_nanosleep, "nanosleep"),
            (libc::SYS_getitimer, "getitimer"),
            (libc::SYS_alarm, "alarm"),
            (libc::SYS_setitimer, "setitimer"),
            (libc::SYS_getpid, "getpid"),
            (libc::SYS_sendfile, "sendfile"),
            (libc::SYS_socket, "socket"),
            (libc::SYS_connect, "connect"),
            (libc::SYS_accept, "accept"),
            (libc::SYS_sendto, "sendto"),
            (libc::SYS_recvfrom, "recvfrom"),
            (libc::SYS_sendmsg, "sendmsg"),
            (libc::SYS_recvmsg, "recvmsg"),
            (libc::SYS_shutdown, "shutdown"),
            (libc::SYS_bind, "bind"),
            (libc::SYS_listen, "listen"),
            (libc::SYS_getsockname, "getsockname"),
            (libc::SYS_getpeername, "getpeername"),
            (libc::SYS_socketpair, "socketpair"),
            (libc::SYS_setsockopt, "setsockopt"),
            (libc::SYS_getsockopt, "getsockopt"),
            (libc::SYS_clone, "clone"),
            (libc::SYS_fork, "fork"),
            (libc::SYS_vfork, "vfork"),
            (libc::SYS_execve, "execve"),
            (libc::SYS_exit, "exit"),
            (libc::SYS_wait4, "wait4"),
            (libc::SYS_kill, "kill"),
            (libc::SYS_uname, "uname"),
            (libc::SYS_semget, "semget"),
            (libc::SYS_semop, "semop"),
            (libc::SYS_semctl, "semctl"),
            (libc::SYS_shmdt, "shmdt"),
            (libc::SYS_msgget, "msgget"),
            (libc::SYS_msgsnd, "msgsnd"),
            (libc::SYS_msgrcv, "msgrcv"),
            (libc::SYS_msgctl, "msgctl"),
            (libc::SYS_fcntl, "fcntl"),
            (libc::SYS_flock, "flock"),
            (libc::SYS_fsync, "fsync"),
            (libc::SYS_fdatasync, "fdatasync"),
            (libc::SYS_truncate, "truncate"),
            (libc::SYS_ftruncate, "ftruncate"),
            (libc::SYS_getdents, "getdents"),
            (libc::SYS_getcwd, "getcwd"),
            (libc::SYS_chdir, "chdir"),
            (libc::SYS_fchdir, "fchdir"),
            (libc::SYS_rename, "rename"),
            (libc::SYS_mkdir, "mkdir"),
            (libc::SYS_rmdir, "rmdir"),
            (libc::SYS_creat, "creat"),
            (libc::SYS_link, "link"),
            (libc::SYS_unlink, "unlink"),
            (libc::SYS_symlink, "symlink"),
            (libc::SYS_readlink, "readlink"),
            (libc::SYS_chmod, "chmod"),
            (libc::SYS_fchmod, "fchmod"),
            (libc::SYS_chown, "chown"),
            (libc::SYS_fchown, "fchown"),
            (libc::SYS_lchown, "lchown"),
            (libc::SYS_umask, "umask"),
            (libc::SYS_gettimeofday, "gettimeofday"),
            (libc::SYS_getrlimit, "getrlimit"),
            (libc::SYS_getrusage, "getrusage"),
            (libc::SYS_sysinfo, "sysinfo"),
            (libc::SYS_times, "times"),
            (libc::SYS_ptrace, "ptrace"),
            (libc::SYS_getuid, "getuid"),
            (libc::SYS_syslog, "syslog"),
            (libc::SYS_getgid, "getgid"),
            (libc::SYS_setuid, "setuid"),
            (libc::SYS_setgid, "setgid"),
            (libc::SYS_geteuid, "geteuid"),
            (libc::SYS_getegid, "getegid"),
            (libc::SYS_setpgid, "setpgid"),
            (libc::SYS_getppid, "getppid"),
            (libc::SYS_getpgrp, "getpgrp"),
            (libc::SYS_setsid, "setsid"),
            (libc::SYS_setreuid, "setreuid"),
            (libc::SYS_setregid, "setregid"),
            (libc::SYS_getgroups, "getgroups"),
            (libc::SYS_setgroups, "setgroups"),
            (libc::SYS_setresuid, "setresuid"),
            (libc::SYS_getresuid, "getresuid"),
            (libc::SYS_setresgid, "setresgid"),
            (libc::SYS_getresgid, "getresgid"),
            (libc::SYS_getpgid, "getpgid"),
            (libc::SYS_setfsuid, "setfsuid"),
            (libc::SYS_setfsgid, "setfsgid"),
            (libc::SYS_getsid, "getsid"),
            (libc::SYS_capget, "capget"),
            (libc::SYS_capset, "capset"),
            (libc::SYS_rt_sigpending, "rt_sigpending"),
            (libc::SYS_rt_sigtimedwait, "rt_sigtimedwait"),
            (libc::SYS_rt_sigqueueinfo, "rt_sigqueueinfo"),
            (libc::SYS_rt_sigsuspend, "rt_sigsuspend"),
            (libc::SYS_sigaltstack, "sigaltstack"),
            (libc::SYS_utime, "utime"),
            (libc::SYS_mknod, "mknod"),
            (libc::SYS_uselib, "uselib"),
            (libc::SYS_personality, "personality"),
            (libc::SYS_ustat, "ustat"),
            (libc::SYS_statfs, "statfs"),
            (libc::SYS_fstatfs, "fstatfs"),
            (libc::SYS_sysfs, "sysfs"),
            (libc::SYS_getpriority, "getpriority"),
            (libc::SYS_setpriority, "setpriority"),
            (libc::SYS_sched_setparam, "sched_setparam"),
            (libc::SYS_sched_getparam, "sched_getparam"),
            (libc::SYS_sched_setscheduler, "sched_setscheduler"),
            (libc::SYS_sched_getscheduler, "sched_getscheduler"),
            (libc::SYS_sched_get_priority_max, "sched_get_priority_max"),
            (libc::SYS_sched_get_priority_min, "sched_get_priority_min"),
            (libc::SYS_sched_rr_get_interval, "sched_rr_get_interval"),
            (libc::SYS_mlock, "mlock"),
            (libc::SYS_munlock, "munlock"),
            (libc::SYS_mlockall, "mlockall"),
            (libc::SYS_munlockall, "munlockall"),
            (libc::SYS_vhangup, "vhangup"),
            (libc::SYS_modify_ldt, "modify_ldt"),
            (libc::SYS_pivot_root, "pivot_root"),
            (libc::SYS__sysctl, "_sysctl"),
            (libc::SYS_prctl, "prctl"),
            (libc::SYS_arch_prctl, "arch_prctl"),
            (libc::SYS_adjtimex, "adjtimex"),
            (libc::SYS_setrlimit, "setrlimit"),
            (libc::SYS_chroot, "chroot"),
            (libc::SYS_sync, "sync"),
            (libc::SYS_acct, "acct"),
            (libc::SYS_settimeofday, "settimeofday"),
            (libc::SYS_mount, "mount"),
            (libc::SYS_umount2, "umount2"),
            (libc::SYS_swapon, "swapon"),
            (libc::SYS_swapoff, "swapoff"),
            (libc::SYS_reboot, "reboot"),
            (libc::SYS_sethostname, "sethostname"),
            (libc::SYS_setdomainname, "setdomainname"),
            (libc::SYS_iopl, "iopl"),
            (libc::SYS_ioperm, "ioperm"),
            (libc::SYS_init_module, "init_module"),
            (libc::SYS_delete_module, "delete_module"),
            (libc::SYS_quotactl, "quotactl"),
            (libc::SYS_nfsservctl, "nfsservctl"),
            (libc::SYS_getpmsg, "getpmsg"),
            (libc::SYS_putpmsg, "putpmsg"),
            (libc::SYS_afs_syscall, "afs_syscall"),
            (libc::SYS_tuxcall, "tuxcall"),
            (libc::SYS_security, "security"),
            (libc::SYS_gettid, "gettid"),
            (libc::SYS_readahead, "readahead"),
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
            (libc::SYS_tkill, "tkill"),
            (libc::SYS_time, "time"),
            (libc::SYS_futex, "futex"),
            (libc::SYS_sched_setaffinity, "sched_setaffinity"),
            (libc::SYS_sched_getaffinity, "sched_getaffinity"),
            (libc::SYS_set_thread_area, "set_thread_area"),
            (libc::SYS_io_setup, "io_setup"),
            (libc::SYS_io_destroy, "io_destroy"),
            (libc::SYS_io_getevents, "io_getevents"),
            (libc::SYS_io_submit, "io_submit"),
            (libc::SYS_io_cancel, "io_cancel"),
            (libc::SYS_get_thread_area, "get_thread_area"),
            (libc::SYS_lookup_dcookie, "lookup_dcookie"),
            (libc::SYS_epoll_create, "epoll_create"),
            (libc::SYS_epoll_ctl_old, "epoll_ctl_old"),
            (libc::SYS_epoll_wait_old, "epoll_wait_old"),
            (libc::SYS_remap_file_pages, "remap_file_pages"),
            (libc::SYS_getdents64, "getdents64"),
            (libc::SYS_set_tid_address, "set_tid_address"),
            (libc::SYS_restart_syscall, "restart_syscall"),
            (libc::SYS_semtimedop, "semtimedop"),
            (libc::SYS_fadvise64, "fadvise64"),
            (libc::SYS_timer_create, "timer_create"),
            (libc::SYS_timer_settime, "timer_settime"),
            (libc::SYS_timer_gettime, "timer_gettime"),
            (libc::SYS_timer_getoverrun, "timer_getoverrun"),
            (libc::SYS_timer_delete, "timer_delete"),
            (libc::SYS_clock_settime, "clock_settime"),
            (libc::SYS_clock_gettime, "clock_gettime"),
            (libc::SYS_clock_getres, "clock_getres"),
            (libc::SYS_clock_nanosleep, "clock_nanosleep"),
            (libc::SYS_exit_group, "exit_group"),
            (libc::SYS_epoll_wait, "epoll_wait"),
            (libc::SYS_epoll_ctl, "epoll_ctl"),
            (libc::SYS_tgkill, "tgkill"),
            (libc::SYS_utimes, "utimes"),
            (libc::SYS_vserver, "vserver"),
            (libc::SYS_mbind, "mbind"),
            (libc::SYS_set_mempolicy, "set_mempolicy"),
            (libc::SYS_get_mempolicy, "get_mempolicy"),
            (libc::SYS_mq_open, "mq_open"),
            (libc::SYS_mq_unlink, "mq_unlink"),
            (libc::SYS_mq_timedsend, "mq_timedsend"),
            (libc::SYS_mq_timedreceive, "mq_timedreceive"),
            (libc::SYS_mq_notify, "mq_notify"),
            (libc::SYS_mq_getsetattr, "mq_getsetattr"),
            (libc::SYS_kexec_load, "kexec_load"),
            (libc::SYS_waitid, "waitid"),
            (libc::SYS_add_key, "add_key"),
            (libc::SYS_request_key, "request_key"),
            (libc::SYS_keyctl, "keyctl"),
            (libc::SYS_ioprio_set, "ioprio_set"),
            (libc::SYS_ioprio_get, "ioprio_get"),
            (libc::SYS_inotify_init, "inotify_init"),
            (libc::SYS_inotify_add_watch, "inotify_add_watch"),
            (libc::SYS_inotify_rm_watch, "inotify_rm_watch"),
            (libc::SYS_migrate_pages, "migrate_pages"),
            (libc::SYS_openat, "openat"),
            (libc::SYS_mkdirat, "mkdirat"),
            (libc::SYS_mknodat, "mknodat"),
            (libc::SYS_fchownat, "fchownat"),
            (libc::SYS_futimesat, "futimesat"),
            (libc::SYS_newfstatat, "newfstatat"),
            (libc::SYS_unlinkat, "unlinkat"),
            (libc::SYS_renameat, "renameat"),
            (libc::SYS_linkat, "linkat"),
            (libc::SYS_symlinkat, "symlinkat"),
            (libc::SYS_readlinkat, "readlinkat"),
            (libc::SYS_fchmodat, "fchmodat"),
            (libc::SYS_faccessat, "faccessat"),
            (libc::SYS_pselect6, "pselect6"),
            (libc::SYS_ppoll, "ppoll"),
            (libc::SYS_unshare, "unshare"),
            (libc::SYS_set_robust_list, "set_robust_list"),
            (libc::SYS_get_robust_list, "get_robust_list"),
            (libc::SYS_splice, "splice"),
            (libc::SYS_tee, "tee"),
            (libc::SYS_sync_file_range, "sync_file_range"),
            (libc::SYS_vmsplice, "vmsplice"),
            (libc::SYS_move_pages, "move_pages"),
            (libc::SYS_utimensat, "utimensat"),
            (libc::SYS_epoll_pwait, "epoll_pwait"),
            (libc::SYS_signalfd, "signalfd"),
            (libc::SYS_timerfd_create, "timerfd_create"),
            (libc::SYS_eventfd, "eventfd"),
            (libc::SYS_fallocate, "fallocate"),
            (libc::SYS_timerfd_settime, "timerfd_settime"),
            (libc::SYS_timerfd_gettime, "timerfd_gettime"),
            (libc::SYS_accept4, "accept4"),
            (libc::SYS_signalfd4, "signalfd4"),
            (libc::SYS_eventfd2, "eventfd2"),
            (libc::SYS_epoll_create1, "epoll_create1"),
            (libc::SYS_dup3, "dup3"),
            (libc::SYS_pipe2, "pipe2"),
            (libc::SYS_inotify_init1, "inotify_init1"),
            (libc::SYS_preadv, "preadv"),
            (libc::SYS_pwritev, "pwritev"),
            (libc::SYS_rt_tgsigqueueinfo, "rt_tgsigqueueinfo"),
            (libc::SYS_perf_event_open, "perf_event_open"),
            (libc::SYS_recvmmsg, "recvmmsg"),
            (libc::SYS_fanotify_init, "fanotify_init"),
            (libc::SYS_fanotify_mark, "fanotify_mark"),
            (libc::SYS_prlimit64, "prlimit64"),
            (libc::SYS_name_to_handle_at, "name_to_handle_at"),
            (libc::SYS_open_by_handle_at, "open_by_handle_at"),
            (libc::SYS_clock_adjtime, "clock_adjtime"),
            (libc::SYS_syncfs, "syncfs"),
            (libc::SYS_sendmmsg, "sendmmsg"),
            (libc::SYS_setns, "setns"),
            (libc::SYS_getcpu, "getcpu"),
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
            (libc::SYS_kexec_file_load, "kexec_file_load"),
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
            (libc::SYS_fchmodat2, "fchmodat2"),
            (libc::SYS_mseal, "mseal"),
        ];
        for &(nr, name) in pairs {
            let row = TABLE.iter().find(|d| d.name == name);
            assert_eq!(row.map(|d| i64::from(d.nr)), Some(nr), "{name}");
        }
        assert_eq!(pairs.len(), 360);
    }
}
