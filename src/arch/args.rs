//! The argument lists ([`Sem::Args`]) of the gated, creds and spawn syscalls, shared by every
//! architecture's table so that one name decodes the same way everywhere (the tables' test
//! compares them).
//!
//! Each list has exactly as many entries as the syscall takes arguments (`man 2 NAME`, the
//! kernel's `SYSCALL_DEFINEn`), so `show` prints no trailing garbage registers. Pure data.

use super::Arg::{self, *};
use super::{Follow, Sem};

/// `UMOUNT_NOFOLLOW` (umount2 flags).
const UMOUNT_NOFOLLOW: u64 = 8;
/// `AT_SYMLINK_NOFOLLOW` (open_tree, mount_setattr, open_tree_attr flags).
const AT_SYMLINK_NOFOLLOW: u64 = 0x100;
/// `AT_SYMLINK_FOLLOW` (name_to_handle_at flags).
const AT_SYMLINK_FOLLOW: u64 = 0x400;

/// A cwd-relative path, the final symlink followed.
const PATH: Arg = Path {
    dirfd: None,
    follow: Follow::Yes,
};
/// A path relative to the dirfd in argument `dirfd`, followed unless argument `flags` has
/// AT_SYMLINK_NOFOLLOW.
const fn path_at(dirfd: u8, flags: u8) -> Arg {
    Path {
        dirfd: Some(dirfd),
        follow: Follow::UnlessFlag {
            arg: flags,
            nofollow: AT_SYMLINK_NOFOLLOW,
        },
    }
}

const fn args(a: &'static [Arg]) -> Sem {
    Sem::Args(a)
}

// ---- credentials (class Creds) ----
pub const SETUID: Sem = args(&[Id]);
pub const SETREUID: Sem = args(&[Id, Id]);
pub const SETRESUID: Sem = args(&[Id, Id, Id]);
/// setgroups(size, list).
pub const SETGROUPS: Sem = args(&[Size, GidList]);
/// capset(hdrp, datap).
pub const CAPSET: Sem = args(&[Hex, Hex]);

// ---- process creation ----
/// clone(flags, stack, parent_tid, child_tid | tls, tls | child_tid, ...): only the flags are
/// named; arguments 3 and 4 swap places between x86_64 and aarch64.
pub const CLONE: Sem = args(&[CloneFlags, Hex, Hex, Hex, Hex]);

// ---- namespaces, mounts, roots ----
pub const UNSHARE: Sem = args(&[NsFlags]);
/// setns(fd, nstype).
pub const SETNS: Sem = args(&[Fd, NsFlags]);
pub const CHROOT: Sem = args(&[PATH]);
/// pivot_root(new_root, put_old).
pub const PIVOT_ROOT: Sem = args(&[PATH, PATH]);
/// mount(source, target, filesystemtype, mountflags, data).
pub const MOUNT: Sem = args(&[MountSource, PATH, Str, MountFlags, Hex]);
/// umount2(target, flags).
pub const UMOUNT2: Sem = args(&[
    Path {
        dirfd: None,
        follow: Follow::UnlessFlag {
            arg: 1,
            nofollow: UMOUNT_NOFOLLOW,
        },
    },
    UmountFlags,
]);
/// open_tree(dfd, filename, flags).
pub const OPEN_TREE: Sem = args(&[Dirfd, path_at(0, 2), Hex]);
/// open_tree_attr(dfd, filename, flags, attr, size).
pub const OPEN_TREE_ATTR: Sem = args(&[Dirfd, path_at(0, 2), Hex, Hex, Size]);
/// move_mount(from_dfd, from_path, to_dfd, to_path, flags).
pub const MOVE_MOUNT: Sem = args(&[Dirfd, PATH_AT_0, Dirfd, PATH_AT_2, Hex]);
const PATH_AT_0: Arg = Path {
    dirfd: Some(0),
    follow: Follow::Yes,
};
const PATH_AT_2: Arg = Path {
    dirfd: Some(2),
    follow: Follow::Yes,
};
/// fsopen(fsname, flags).
pub const FSOPEN: Sem = args(&[Str, Hex]);
/// fsconfig(fd, cmd, key, value, aux).
pub const FSCONFIG: Sem = args(&[Fd, Int, Hex, Hex, Int]);
/// fsmount(fs_fd, flags, attr_flags).
pub const FSMOUNT: Sem = args(&[Fd, Hex, Hex]);
/// fspick(dfd, path, flags).
pub const FSPICK: Sem = args(&[Dirfd, PATH_AT_0, Hex]);
/// mount_setattr(dfd, path, flags, attr, size).
pub const MOUNT_SETATTR: Sem = args(&[Dirfd, path_at(0, 2), Hex, Hex, Size]);
/// swapon(path, flags).
pub const SWAPON: Sem = args(&[PATH, Hex]);
pub const SWAPOFF: Sem = args(&[PATH]);
/// acct(filename | NULL).
pub const ACCT: Sem = args(&[PATH]);
/// quotactl(cmd, special, id, addr): `special` is a block device path (or NULL).
pub const QUOTACTL: Sem = args(&[Hex, PATH, Int, Hex]);
/// quotactl_fd(fd, cmd, id, addr).
pub const QUOTACTL_FD: Sem = args(&[Fd, Hex, Int, Hex]);
/// uselib(library).
pub const USELIB: Sem = args(&[PATH]);

// ---- other processes ----
/// ptrace(request, pid, addr, data).
pub const PTRACE: Sem = args(&[PtraceRequest, Int, Hex, Hex]);
/// process_vm_readv/writev(pid, local_iov, liovcnt, remote_iov, riovcnt, flags).
pub const PROCESS_VM: Sem = args(&[Int, Hex, Size, Hex, Size, Hex]);
/// kcmp(pid1, pid2, type, idx1, idx2).
pub const KCMP: Sem = args(&[Int, Int, Int, Hex, Hex]);
/// pidfd_getfd(pidfd, targetfd, flags).
pub const PIDFD_GETFD: Sem = args(&[Fd, Int, Hex]);
/// process_madvise(pidfd, iovec, vlen, advice, flags).
pub const PROCESS_MADVISE: Sem = args(&[Fd, Hex, Size, Int, Hex]);
/// process_mrelease(pidfd, flags).
pub const PROCESS_MRELEASE: Sem = args(&[Fd, Hex]);
/// kill(pid, sig) and tkill(tid, sig) (free: never stopped, named for traces of other tools).
pub const KILL: Sem = args(&[Int, Signal]);
/// tgkill(tgid, tid, sig).
pub const TGKILL: Sem = args(&[Int, Int, Signal]);

// ---- the kernel ----
pub const PERSONALITY: Sem = args(&[Personality]);
/// bpf(cmd, attr, size).
pub const BPF: Sem = args(&[BpfCmd, Hex, Size]);
/// perf_event_open(attr, pid, cpu, group_fd, flags).
pub const PERF_EVENT_OPEN: Sem = args(&[Hex, Int, Int, Int, Hex]);
/// init_module(module_image, len, param_values).
pub const INIT_MODULE: Sem = args(&[Hex, Size, Str]);
/// finit_module(fd, param_values, flags).
pub const FINIT_MODULE: Sem = args(&[Fd, Str, Hex]);
/// delete_module(name, flags).
pub const DELETE_MODULE: Sem = args(&[Str, Hex]);
/// kexec_load(entry, nr_segments, segments, flags).
pub const KEXEC_LOAD: Sem = args(&[Hex, Size, Hex, Hex]);
/// kexec_file_load(kernel_fd, initrd_fd, cmdline_len, cmdline, flags).
pub const KEXEC_FILE_LOAD: Sem = args(&[Fd, Fd, Size, Str, Hex]);
/// seccomp(operation, flags, args).
pub const SECCOMP: Sem = args(&[Int, Hex, Hex]);
/// syslog(type, bufp, len).
pub const SYSLOG: Sem = args(&[Int, Hex, Int]);
/// reboot(magic, magic2, cmd, arg).
pub const REBOOT: Sem = args(&[Hex, Hex, Hex, Hex]);
/// sethostname/setdomainname(name, len): the name need not be NUL-terminated.
pub const SETHOSTNAME: Sem = args(&[Hex, Size]);
pub const VHANGUP: Sem = args(&[]);
/// iopl(level).
pub const IOPL: Sem = args(&[Int]);
/// ioperm(from, num, turn_on).
pub const IOPERM: Sem = args(&[Hex, Size, Int]);
/// modify_ldt(func, ptr, bytecount).
pub const MODIFY_LDT: Sem = args(&[Int, Hex, Size]);
/// adjtimex(buf).
pub const ADJTIMEX: Sem = args(&[Hex]);
/// clock_adjtime(clk_id, buf).
pub const CLOCK_ADJTIME: Sem = args(&[Int, Hex]);
/// clock_settime(clk_id, tp).
pub const CLOCK_SETTIME: Sem = args(&[Int, Hex]);
/// settimeofday(tv, tz).
pub const SETTIMEOFDAY: Sem = args(&[Hex, Hex]);
/// lookup_dcookie(cookie, buffer, len).
pub const LOOKUP_DCOOKIE: Sem = args(&[Hex, Hex, Size]);
/// add_key(type, description, payload, plen, keyring).
pub const ADD_KEY: Sem = args(&[Str, Str, Hex, Size, Int]);
/// request_key(type, description, callout_info, dest_keyring).
pub const REQUEST_KEY: Sem = args(&[Str, Str, Str, Int]);
/// keyctl(operation, arg2, arg3, arg4, arg5).
pub const KEYCTL: Sem = args(&[Int, Hex, Hex, Hex, Hex]);
/// userfaultfd(flags).
pub const USERFAULTFD: Sem = args(&[Hex]);
/// fanotify_init(flags, event_f_flags).
pub const FANOTIFY_INIT: Sem = args(&[Hex, Hex]);
/// fanotify_mark(fanotify_fd, flags, mask, dirfd, pathname | NULL).
pub const FANOTIFY_MARK: Sem = args(&[
    Fd,
    Hex,
    Hex,
    Dirfd,
    Path {
        dirfd: Some(3),
        follow: Follow::Yes,
    },
]);
/// name_to_handle_at(dirfd, pathname, handle, mount_id, flags).
pub const NAME_TO_HANDLE_AT: Sem = args(&[
    Dirfd,
    Path {
        dirfd: Some(0),
        follow: Follow::IfFlag {
            arg: 4,
            follow: AT_SYMLINK_FOLLOW,
        },
    },
    Hex,
    Hex,
    Hex,
]);
/// open_by_handle_at(mount_fd, handle, flags).
pub const OPEN_BY_HANDLE_AT: Sem = args(&[Fd, Hex, Hex]);
/// io_uring_setup(entries, params).
pub const IO_URING_SETUP: Sem = args(&[Size, Hex]);
/// io_uring_enter(fd, to_submit, min_complete, flags, argp, argsz).
pub const IO_URING_ENTER: Sem = args(&[Fd, Size, Size, Hex, Hex, Size]);
/// io_uring_register(fd, opcode, arg, nr_args).
pub const IO_URING_REGISTER: Sem = args(&[Fd, Int, Hex, Size]);
/// _sysctl(args) (removed; ENOSYS).
pub const SYSCTL: Sem = args(&[Hex]);
