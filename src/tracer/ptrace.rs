//! Thin, safe wrappers over the ptrace requests sbx uses, each raw call wrapped once.
//!
//! Every wrapper maps `ESRCH` to [`Error::TraceeDied`]: a tracee can be SIGKILLed (by sbx, by
//! the OOM killer, by its own tree) between any two requests, and that is not a tracer bug.

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, Ordering};

use nix::errno::Errno;
use nix::sys::ptrace;
use nix::sys::signal::Signal;
use nix::unistd::Pid;

use super::Error;

/// What `PTRACE_GET_SYSCALL_INFO` said about the current stop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SyscallInfo {
    /// A seccomp stop (`SECCOMP_RET_TRACE`): the syscall has not run yet.
    Seccomp {
        arch: u32,
        nr: u64,
        args: [u64; 6],
        ret_data: u32,
        /// The thread's stack pointer.
        sp: u64,
    },
    /// A syscall-exit stop: the syscall ran and returned `rval`.
    Exit { rval: i64, is_error: bool },
    /// A syscall-entry stop (not requested by sbx, but decoded for completeness).
    Entry { arch: u32, nr: u64, args: [u64; 6] },
    /// Not a syscall stop.
    None,
}

fn ctx(tid: i32, operation: &'static str) -> impl FnOnce(Errno) -> Error {
    move |e| match e {
        Errno::ESRCH => Error::TraceeDied { tid },
        errno => Error::Tracee {
            tid,
            operation,
            errno,
        },
    }
}

/// The pending syscall of a thread stopped at a seccomp stop, as the kernel last said
/// (`PTRACE_GET_SYSCALL_INFO`) or as sbx last set it (`PTRACE_SET_SYSCALL_INFO`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SeccompCall {
    pub tid: i32,
    pub arch: u32,
    pub nr: u64,
    pub args: [u64; 6],
}

thread_local! {
    /// The pending call of the one thread whose seccomp stop sbx is handling: filled by
    /// [`syscall_info`], kept current by [`set_seccomp_call`], emptied when that thread is
    /// resumed or its registers are written another way ([`forget_call`]). With it, a change of
    /// the call's number or arguments is one `PTRACE_SET_SYSCALL_INFO` instead of a
    /// GETREGS/SETREGS pair.
    static CURRENT: Cell<Option<SeccompCall>> = const { Cell::new(None) };
}

/// Whether `PTRACE_SET_SYSCALL_INFO` is known to be missing (Linux < 6.16 answers EIO).
static NO_SET_SYSCALL_INFO: AtomicBool = AtomicBool::new(false);

/// The pending call of `tid`, if `tid` is the thread stopped at the seccomp stop being handled
/// and nothing changed its registers behind [`set_seccomp_call`].
pub fn current_call(tid: i32) -> Option<SeccompCall> {
    CURRENT.get().filter(|c| c.tid == tid)
}

/// Forget the pending call of `tid` (it was resumed, or its registers were rewritten).
pub fn forget_call(tid: i32) {
    if CURRENT.get().is_some_and(|c| c.tid == tid) {
        CURRENT.set(None);
    }
}

/// The kernel's `struct ptrace_syscall_info` (Linux 6.16 layout: `reserved` and `flags` took
/// the old padding and must be 0 for `PTRACE_SET_SYSCALL_INFO`) with its `seccomp` member.
#[repr(C)]
struct RawSeccompInfo {
    op: u8,
    reserved: u8,
    flags: u16,
    arch: u32,
    instruction_pointer: u64,
    stack_pointer: u64,
    nr: u64,
    args: [u64; 6],
    ret_data: u32,
    reserved2: u32,
}

/// `PTRACE_SET_SYSCALL_INFO` (Linux 6.16+) at a seccomp stop: make the pending call `call`
/// (number and all six arguments; the kernel re-runs the seccomp filters on it, as after
/// SETREGS). `Ok(false)` when the kernel cannot (older kernel, or it refuses this stop): the
/// caller then edits the registers itself.
pub fn set_seccomp_call(call: SeccompCall) -> Result<bool, Error> {
    if NO_SET_SYSCALL_INFO.load(Ordering::Relaxed) {
        return Ok(false);
    }
    let info = RawSeccompInfo {
        op: libc::PTRACE_SYSCALL_INFO_SECCOMP,
        reserved: 0,
        flags: 0,
        arch: call.arch,
        // Ignored by the kernel.
        instruction_pointer: 0,
        stack_pointer: 0,
        nr: call.nr,
        args: call.args,
        ret_data: 0,
        reserved2: 0,
    };
    // SAFETY: PTRACE_SET_SYSCALL_INFO reads `addr` bytes (the size of `info`) from `data`, which
    // points to `info`, a live, initialized #[repr(C)] struct of exactly that size on our
    // stack; the kernel only reads it and keeps no pointer after the call.
    let r = unsafe {
        libc::ptrace(
            libc::PTRACE_SET_SYSCALL_INFO,
            libc::pid_t::from(call.tid),
            std::mem::size_of::<RawSeccompInfo>(),
            std::ptr::from_ref(&info).cast::<libc::c_void>(),
        )
    };
    match Errno::result(r) {
        Ok(_) => {
            CURRENT.set(Some(call));
            Ok(true)
        }
        // An unknown request: a kernel before 6.16.
        Err(Errno::EIO) => {
            NO_SET_SYSCALL_INFO.store(true, Ordering::Relaxed);
            forget_call(call.tid);
            Ok(false)
        }
        // Not a stop the kernel can change this way (or a layout it does not accept).
        Err(Errno::EINVAL | Errno::ERANGE) => {
            forget_call(call.tid);
            Ok(false)
        }
        Err(e) => Err(ctx(call.tid, "PTRACE_SET_SYSCALL_INFO")(e)),
    }
}

/// `PTRACE_GET_SYSCALL_INFO` (Linux 5.3+).
pub fn syscall_info(tid: i32) -> Result<SyscallInfo, Error> {
    forget_call(tid);
    let info =
        ptrace::syscall_info(Pid::from_raw(tid)).map_err(ctx(tid, "PTRACE_GET_SYSCALL_INFO"))?;
    // The `op` field tells which union member the kernel filled in; we read only that one.
    Ok(match info.op {
        libc::PTRACE_SYSCALL_INFO_SECCOMP => {
            // SAFETY: op == PTRACE_SYSCALL_INFO_SECCOMP, so the kernel wrote the `seccomp`
            // member of the union (nr, args, ret_data); it is plain integers, valid for any bits.
            let s = unsafe { info.u.seccomp };
            CURRENT.set(Some(SeccompCall {
                tid,
                arch: info.arch,
                nr: s.nr,
                args: s.args,
            }));
            SyscallInfo::Seccomp {
                arch: info.arch,
                nr: s.nr,
                args: s.args,
                ret_data: s.ret_data,
                sp: info.stack_pointer,
            }
        }
        libc::PTRACE_SYSCALL_INFO_EXIT => {
            // SAFETY: op == PTRACE_SYSCALL_INFO_EXIT, so the `exit` member (rval, is_error) is the
            // one the kernel wrote; plain integers.
            let x = unsafe { info.u.exit };
            SyscallInfo::Exit {
                rval: x.sval,
                is_error: x.is_error != 0,
            }
        }
        libc::PTRACE_SYSCALL_INFO_ENTRY => {
            // SAFETY: op == PTRACE_SYSCALL_INFO_ENTRY, so the `entry` member (nr, args) is the one
            // the kernel wrote; plain integers.
            let e = unsafe { info.u.entry };
            SyscallInfo::Entry {
                arch: info.arch,
                nr: e.nr,
                args: e.args,
            }
        }
        _ => SyscallInfo::None,
    })
}

/// `PTRACE_GETEVENTMSG`: the new tid for fork/vfork/clone events, the former tid for exec.
pub fn event_msg(tid: i32) -> Result<u64, Error> {
    let v = ptrace::getevent(Pid::from_raw(tid)).map_err(ctx(tid, "PTRACE_GETEVENTMSG"))?;
    // The kernel stores an unsigned long; nix returns it as c_long.
    Ok(v.cast_unsigned())
}

/// `PTRACE_CONT`, delivering `sig` if any.
pub fn cont(tid: i32, sig: Option<Signal>) -> Result<(), Error> {
    forget_call(tid);
    ptrace::cont(Pid::from_raw(tid), sig).map_err(ctx(tid, "PTRACE_CONT"))
}

/// `PTRACE_SYSCALL`: resume until the exit of the current syscall (from a seccomp stop).
pub fn syscall(tid: i32) -> Result<(), Error> {
    forget_call(tid);
    ptrace::syscall(Pid::from_raw(tid), None).map_err(ctx(tid, "PTRACE_SYSCALL"))
}

/// `PTRACE_LISTEN`: leave a group-stopped tracee stopped but let it report SIGCONT.
pub fn listen(tid: i32) -> Result<(), Error> {
    forget_call(tid);
    // nix has no wrapper for PTRACE_LISTEN.
    // SAFETY: PTRACE_LISTEN takes no pointers (addr and data are ignored and passed as 0); the
    // call cannot touch our memory.
    let r = unsafe { libc::ptrace(libc::PTRACE_LISTEN, tid, 0usize, 0usize) };
    Errno::result(r)
        .map(drop)
        .map_err(ctx(tid, "PTRACE_LISTEN"))
}

/// `PTRACE_SEIZE` with `options`.
pub fn seize(pid: i32, options: ptrace::Options) -> Result<(), Error> {
    ptrace::seize(Pid::from_raw(pid), options).map_err(|e| match e {
        Errno::EPERM => Error::Attach(e),
        e => ctx(pid, "PTRACE_SEIZE")(e),
    })
}
