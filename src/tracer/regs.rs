//! Architecture-specific register access: the only `cfg(target_arch)` code in sbx.
//!
//! Used to refuse a syscall at a seccomp stop (set the number to -1 and the return value to
//! `-errno`) and to re-point an argument register (the race defence).

use nix::sys::ptrace;
use nix::unistd::Pid;

use super::Error;

fn err(tid: i32, operation: &'static str) -> impl FnOnce(nix::errno::Errno) -> Error {
    move |e| match e {
        nix::errno::Errno::ESRCH => Error::TraceeDied { tid },
        source => Error::Tracee {
            tid,
            operation,
            source,
        },
    }
}

/// Skip the syscall the tracee is stopped in (seccomp stop) and make it return `ret`.
#[cfg(target_arch = "x86_64")]
pub fn skip_syscall(tid: i32, ret: i64) -> Result<(), Error> {
    let pid = Pid::from_raw(tid);
    let mut regs = ptrace::getregs(pid).map_err(err(tid, "PTRACE_GETREGS"))?;
    // orig_rax = -1: the kernel skips the syscall and returns rax as the result.
    regs.orig_rax = u64::MAX;
    regs.rax = ret as u64;
    ptrace::setregs(pid, regs).map_err(err(tid, "PTRACE_SETREGS"))
}

/// Skip the syscall the tracee is stopped in (seccomp stop) and make it return `ret`.
#[cfg(target_arch = "aarch64")]
pub fn skip_syscall(tid: i32, ret: i64) -> Result<(), Error> {
    use nix::sys::ptrace::regset::{NT_ARM_SYSTEM_CALL, NT_PRSTATUS};
    let pid = Pid::from_raw(tid);
    ptrace::setregset::<NT_ARM_SYSTEM_CALL>(pid, -1).map_err(err(tid, "PTRACE_SETREGSET"))?;
    let mut regs = ptrace::getregset::<NT_PRSTATUS>(pid).map_err(err(tid, "PTRACE_GETREGSET"))?;
    regs.regs[0] = ret as u64;
    ptrace::setregset::<NT_PRSTATUS>(pid, regs).map_err(err(tid, "PTRACE_SETREGSET"))
}

/// Set argument register `index` (0-based) of the syscall the tracee is stopped in.
#[cfg(target_arch = "x86_64")]
pub fn set_arg(tid: i32, index: u8, value: u64) -> Result<(), Error> {
    let pid = Pid::from_raw(tid);
    let mut regs = ptrace::getregs(pid).map_err(err(tid, "PTRACE_GETREGS"))?;
    match index {
        0 => regs.rdi = value,
        1 => regs.rsi = value,
        2 => regs.rdx = value,
        3 => regs.r10 = value,
        4 => regs.r8 = value,
        5 => regs.r9 = value,
        _ => {
            return Err(Error::Internal(format!(
                "argument index {index} out of range"
            )));
        }
    }
    ptrace::setregs(pid, regs).map_err(err(tid, "PTRACE_SETREGS"))
}

/// Set argument register `index` (0-based) of the syscall the tracee is stopped in.
#[cfg(target_arch = "aarch64")]
pub fn set_arg(tid: i32, index: u8, value: u64) -> Result<(), Error> {
    use nix::sys::ptrace::regset::NT_PRSTATUS;
    let pid = Pid::from_raw(tid);
    let mut regs = ptrace::getregset::<NT_PRSTATUS>(pid).map_err(err(tid, "PTRACE_GETREGSET"))?;
    if index > 5 {
        return Err(Error::Internal(format!(
            "argument index {index} out of range"
        )));
    }
    regs.regs[usize::from(index)] = value;
    ptrace::setregset::<NT_PRSTATUS>(pid, regs).map_err(err(tid, "PTRACE_SETREGSET"))
}
