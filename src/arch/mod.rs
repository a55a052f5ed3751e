//! Syscall tables as data, one per architecture, selected at run time by [`Arch`].
//!
//! Every syscall number of an architecture is in exactly one [`Class`] (design.md section 3),
//! and carries a [`Sem`] that tells `decode` how to turn its raw argument words into
//! [`crate::event::Target`]s. Tables are compiled for every supported architecture because
//! `show` and `learn` may read a trace recorded on another one. Nothing here touches the
//! running system: register access lives in `tracer/regs.rs`.

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

    /// The `AUDIT_ARCH_*` value the kernel reports for this ABI in seccomp data.
    pub fn audit_arch(self) -> u32 {
        match self {
            Arch::X86_64 => AUDIT_ARCH_X86_64,
            Arch::Aarch64 => AUDIT_ARCH_AARCH64,
        }
    }

    /// The table of this architecture, sorted by number.
    pub fn table(self) -> &'static [SyscallDef] {
        match self {
            Arch::X86_64 => x86_64::TABLE,
            // The aarch64 table is its own issue; until then aarch64 knows no syscall, so every
            // number is `Unknown` and enforce refuses everything (fail closed).
            Arch::Aarch64 => &[],
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
}

/// One row of an architecture's table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SyscallDef {
    pub name: &'static str,
    pub nr: u32,
    pub class: Class,
    pub sem: Sem,
}
