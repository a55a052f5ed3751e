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

/// The kernel's ptrace ABI numbers (`linux/ptrace.h`), here because not every libc crate target
/// has them (musl's lacks the syscall-info requests): they are the same on every architecture.
mod uapi {
    /// The type of `ptrace`'s request argument in the libc crate: `c_uint` for glibc, `c_int`
    /// for musl.
    #[cfg(target_env = "musl")]
    pub type Request = libc::c_int;
    #[cfg(not(target_env = "musl"))]
    pub type Request = libc::c_uint;
    pub const PTRACE_GET_SYSCALL_INFO: Request = 0x420e;
    pub const PTRACE_SET_SYSCALL_INFO: Request = 0x4212;
    pub const PTRACE_SYSCALL_INFO_ENTRY: u8 = 1;
    pub const PTRACE_SYSCALL_INFO_EXIT: u8 = 2;
    pub const PTRACE_SYSCALL_INFO_SECCOMP: u8 = 3;
}

/// The kernel's `struct ptrace_syscall_info` (Linux 6.16 layout: `reserved` and `flags` took
/// the old padding and must be 0 for `PTRACE_SET_SYSCALL_INFO`): the common header, then the
/// union as eight words (its largest member, `seccomp`, is 64 bytes: nr, args[6], ret_data and
/// reserved2), read and written by `op`.
#[repr(C)]
#[derive(Default)]
struct RawSyscallInfo {
    op: u8,
    reserved: u8,
    flags: u16,
    arch: u32,
    instruction_pointer: u64,
    stack_pointer: u64,
    u: [u64; 8],
}

/// `PTRACE_SET_SYSCALL_INFO` (Linux 6.16+) at a seccomp stop: make the pending call `call`
/// (number and all six arguments; the kernel re-runs the seccomp filters on it, as after
/// SETREGS). `Ok(false)` when the kernel cannot (older kernel, or it refuses this stop): the
/// caller then edits the registers itself.
pub fn set_seccomp_call(call: SeccompCall) -> Result<bool, Error> {
    if NO_SET_SYSCALL_INFO.load(Ordering::Relaxed) {
        return Ok(false);
    }
    let a = call.args;
    let info = RawSyscallInfo {
        op: uapi::PTRACE_SYSCALL_INFO_SECCOMP,
        arch: call.arch,
        // The `seccomp` member; instruction and stack pointer are ignored by the kernel,
        // ret_data and reserved2 (the last word) must be 0.
        u: [call.nr, a[0], a[1], a[2], a[3], a[4], a[5], 0],
        ..RawSyscallInfo::default()
    };
    // SAFETY: PTRACE_SET_SYSCALL_INFO reads `addr` bytes (the size of `info`) from `data`, which
    // points to `info`, a live, initialized #[repr(C)] struct of exactly that size on our
    // stack; the kernel only reads it and keeps no pointer after the call.
    let r = unsafe {
        libc::ptrace(
            uapi::PTRACE_SET_SYSCALL_INFO,
            libc::pid_t::from(call.tid),
            std::mem::size_of::<RawSyscallInfo>(),
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
    let mut info = RawSyscallInfo::default();
    // SAFETY: PTRACE_GET_SYSCALL_INFO writes at most `addr` bytes (the size of `info`) to
    // `data`, which points to `info`, a live #[repr(C)] struct of exactly that size on our
    // stack, made of integers (valid for any bits); the kernel keeps no pointer after the call.
    let r = unsafe {
        libc::ptrace(
            uapi::PTRACE_GET_SYSCALL_INFO,
            libc::pid_t::from(tid),
            std::mem::size_of::<RawSyscallInfo>(),
            std::ptr::from_mut(&mut info).cast::<libc::c_void>(),
        )
    };
    Errno::result(r).map_err(ctx(tid, "PTRACE_GET_SYSCALL_INFO"))?;
    // The `op` field tells which union member the kernel filled in; we read only that one.
    let u = info.u;
    let args = [u[1], u[2], u[3], u[4], u[5], u[6]];
    Ok(match info.op {
        uapi::PTRACE_SYSCALL_INFO_SECCOMP => {
            // `seccomp`: nr, args[6], then ret_data (u32) in the first half of the last word.
            let last = u[7].to_ne_bytes();
            let ret_data = u32::from_ne_bytes([last[0], last[1], last[2], last[3]]);
            CURRENT.set(Some(SeccompCall {
                tid,
                arch: info.arch,
                nr: u[0],
                args,
            }));
            SyscallInfo::Seccomp {
                arch: info.arch,
                nr: u[0],
                args,
                ret_data,
                sp: info.stack_pointer,
            }
        }
        // `exit`: rval (s64), then is_error (u8) first in the next word.
        uapi::PTRACE_SYSCALL_INFO_EXIT => SyscallInfo::Exit {
            rval: i64::from_ne_bytes(u[0].to_ne_bytes()),
            is_error: u[1].to_ne_bytes()[0] != 0,
        },
        // `entry`: nr, args[6].
        uapi::PTRACE_SYSCALL_INFO_ENTRY => SyscallInfo::Entry {
            arch: info.arch,
            nr: u[0],
            args,
        },
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

/// `PTRACE_SETOPTIONS` on a tracee in a ptrace stop (the processes it makes from then on
/// inherit them).
pub fn set_options(tid: i32, options: ptrace::Options) -> Result<(), Error> {
    ptrace::setoptions(Pid::from_raw(tid), options).map_err(ctx(tid, "PTRACE_SETOPTIONS"))
}

/// `PTRACE_INTERRUPT`: stop a seized tracee; it reports a `PTRACE_EVENT_STOP` (or another
/// stop first, the interrupt trap staying pending until it returns to user space).
pub fn interrupt(tid: i32) -> Result<(), Error> {
    ptrace::interrupt(Pid::from_raw(tid)).map_err(ctx(tid, "PTRACE_INTERRUPT"))
}

/// `PTRACE_SINGLESTEP`, delivering `sig` if any.
pub fn step(tid: i32, sig: Option<Signal>) -> Result<(), Error> {
    forget_call(tid);
    ptrace::step(Pid::from_raw(tid), sig).map_err(ctx(tid, "PTRACE_SINGLESTEP"))
}
