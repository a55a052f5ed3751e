//! Thin, safe wrappers over the ptrace requests sbx uses, each raw call wrapped once.
//!
//! Every wrapper maps `ESRCH` to [`Error::TraceeDied`]: a tracee can be SIGKILLed (by sbx, by
//! the OOM killer, by its own tree) between any two requests, and that is not a tracer bug.

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
        source => Error::Tracee {
            tid,
            operation,
            source,
        },
    }
}

/// `PTRACE_GET_SYSCALL_INFO` (Linux 5.3+).
pub fn syscall_info(tid: i32) -> Result<SyscallInfo, Error> {
    let info =
        ptrace::syscall_info(Pid::from_raw(tid)).map_err(ctx(tid, "PTRACE_GET_SYSCALL_INFO"))?;
    // The `op` field tells which union member the kernel filled in; we read only that one.
    Ok(match info.op {
        libc::PTRACE_SYSCALL_INFO_SECCOMP => {
            // SAFETY: op == PTRACE_SYSCALL_INFO_SECCOMP, so the kernel wrote the `seccomp`
            // member of the union (nr, args, ret_data); it is plain integers, valid for any bits.
            let s = unsafe { info.u.seccomp };
            SyscallInfo::Seccomp {
                arch: info.arch,
                nr: s.nr,
                args: s.args,
                ret_data: s.ret_data,
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
    ptrace::cont(Pid::from_raw(tid), sig).map_err(ctx(tid, "PTRACE_CONT"))
}

/// `PTRACE_SYSCALL`: resume until the exit of the current syscall (from a seccomp stop).
pub fn syscall(tid: i32) -> Result<(), Error> {
    ptrace::syscall(Pid::from_raw(tid), None).map_err(ctx(tid, "PTRACE_SYSCALL"))
}

/// `PTRACE_LISTEN`: leave a group-stopped tracee stopped but let it report SIGCONT.
pub fn listen(tid: i32) -> Result<(), Error> {
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
    ptrace::seize(Pid::from_raw(pid), options).map_err(ctx(pid, "PTRACE_SEIZE"))
}
