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
    regs.rax = ret.cast_unsigned();
    ptrace::setregs(pid, regs).map_err(err(tid, "PTRACE_SETREGS"))
}

/// Skip the syscall the tracee is stopped in (seccomp stop) and make it return `ret`.
#[cfg(target_arch = "aarch64")]
pub fn skip_syscall(tid: i32, ret: i64) -> Result<(), Error> {
    use nix::sys::ptrace::regset::{NT_ARM_SYSTEM_CALL, NT_PRSTATUS};
    let pid = Pid::from_raw(tid);
    ptrace::setregset::<NT_ARM_SYSTEM_CALL>(pid, -1).map_err(err(tid, "PTRACE_SETREGSET"))?;
    let mut regs = ptrace::getregset::<NT_PRSTATUS>(pid).map_err(err(tid, "PTRACE_GETREGSET"))?;
    regs.regs[0] = ret.cast_unsigned();
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

/// Set several argument registers at once (one GETREGS/SETREGS pair).
#[cfg(target_arch = "x86_64")]
pub fn set_args(tid: i32, args: &[(u8, u64)]) -> Result<(), Error> {
    let pid = Pid::from_raw(tid);
    let mut regs = ptrace::getregs(pid).map_err(err(tid, "PTRACE_GETREGS"))?;
    for &(index, value) in args {
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
    }
    ptrace::setregs(pid, regs).map_err(err(tid, "PTRACE_SETREGS"))
}

/// Set several argument registers at once.
#[cfg(target_arch = "aarch64")]
pub fn set_args(tid: i32, args: &[(u8, u64)]) -> Result<(), Error> {
    use nix::sys::ptrace::regset::NT_PRSTATUS;
    let pid = Pid::from_raw(tid);
    let mut regs = ptrace::getregset::<NT_PRSTATUS>(pid).map_err(err(tid, "PTRACE_GETREGSET"))?;
    for &(index, value) in args {
        if index > 5 {
            return Err(Error::Internal(format!(
                "argument index {index} out of range"
            )));
        }
        regs.regs[usize::from(index)] = value;
    }
    ptrace::setregset::<NT_PRSTATUS>(pid, regs).map_err(err(tid, "PTRACE_SETREGSET"))
}

/// Registers saved before an injected syscall.
#[cfg(target_arch = "x86_64")]
#[derive(Debug, Clone, Copy)]
pub struct Saved(libc::user_regs_struct);

/// Registers saved before an injected syscall.
#[cfg(target_arch = "aarch64")]
#[derive(Debug, Clone, Copy)]
pub struct Saved(libc::user_regs_struct);

/// At a seccomp stop: replace the pending syscall by `nr(args)`, to be run with
/// PTRACE_SYSCALL; returns the registers to restore with [`restart_saved`].
#[cfg(target_arch = "x86_64")]
pub fn replace_syscall(tid: i32, nr: u64, args: [u64; 6]) -> Result<Saved, Error> {
    let pid = Pid::from_raw(tid);
    let saved = ptrace::getregs(pid).map_err(err(tid, "PTRACE_GETREGS"))?;
    let mut r = saved;
    r.orig_rax = nr;
    r.rax = nr;
    r.rdi = args[0];
    r.rsi = args[1];
    r.rdx = args[2];
    r.r10 = args[3];
    r.r8 = args[4];
    r.r9 = args[5];
    ptrace::setregs(pid, r).map_err(err(tid, "PTRACE_SETREGS"))?;
    Ok(Saved(saved))
}

/// At the exit stop of an injected syscall: restore the registers and step back over the
/// 2-byte `syscall` instruction, so the original syscall runs again (and stops again).
#[cfg(target_arch = "x86_64")]
pub fn restart_saved(tid: i32, saved: Saved) -> Result<(), Error> {
    let mut r = saved.0;
    r.rip = r.rip.wrapping_sub(2);
    r.rax = r.orig_rax;
    ptrace::setregs(Pid::from_raw(tid), r).map_err(err(tid, "PTRACE_SETREGS"))
}

/// At a seccomp stop: replace the pending syscall by `nr(args)`.
#[cfg(target_arch = "aarch64")]
pub fn replace_syscall(tid: i32, nr: u64, args: [u64; 6]) -> Result<Saved, Error> {
    use nix::sys::ptrace::regset::{NT_ARM_SYSTEM_CALL, NT_PRSTATUS};
    let pid = Pid::from_raw(tid);
    let saved = ptrace::getregset::<NT_PRSTATUS>(pid).map_err(err(tid, "PTRACE_GETREGSET"))?;
    let mut r = saved;
    r.regs[..6].copy_from_slice(&args);
    r.regs[8] = nr;
    ptrace::setregset::<NT_PRSTATUS>(pid, r).map_err(err(tid, "PTRACE_SETREGSET"))?;
    let nr =
        i32::try_from(nr).map_err(|_| Error::Internal("syscall number out of range".into()))?;
    ptrace::setregset::<NT_ARM_SYSTEM_CALL>(pid, nr).map_err(err(tid, "PTRACE_SETREGSET"))?;
    Ok(Saved(saved))
}

/// At the exit stop of an injected syscall: restore the registers (x0 included, which the
/// result clobbered) and step back over the 4-byte `svc #0`.
#[cfg(target_arch = "aarch64")]
pub fn restart_saved(tid: i32, saved: Saved) -> Result<(), Error> {
    use nix::sys::ptrace::regset::NT_PRSTATUS;
    let mut r = saved.0;
    r.pc = r.pc.wrapping_sub(4);
    ptrace::setregset::<NT_PRSTATUS>(Pid::from_raw(tid), r).map_err(err(tid, "PTRACE_SETREGSET"))
}
