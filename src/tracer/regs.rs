//! Architecture-specific register access: the only `cfg(target_arch)` code in sbx.
//!
//! Used to refuse a syscall at a seccomp stop (set the number to -1 and the return value to
//! `-errno`) and to re-point an argument register (the race defence).
//!
//! Changing the number or arguments of the pending call goes through
//! `PTRACE_SET_SYSCALL_INFO` (Linux 6.16+, arch-neutral, one request) when the tracer holds the
//! call as the kernel reported it ([`ptrace::current_call`]); otherwise, and on older kernels,
//! through the registers (GETREGS/SETREGS on x86_64, three regset requests on aarch64). Every
//! direct register write here forgets the held call, so it is never stale.

use nix::sys::ptrace;
use nix::unistd::Pid;

use super::Error;
use super::ptrace as request;
use crate::arch::Arch;

/// The tracer's error for a failed request on `tid` (ESRCH: the tracee died).
pub(crate) fn err(tid: i32, operation: &'static str) -> impl FnOnce(nix::errno::Errno) -> Error {
    move |e| match e {
        nix::errno::Errno::ESRCH => Error::TraceeDied { tid },
        errno => Error::Tracee {
            tid,
            operation,
            errno,
        },
    }
}

/// Change the pending call with one `PTRACE_SET_SYSCALL_INFO`: its number when `nr` is given,
/// and the arguments in `args`. `Ok(false)` when that cannot be done (no held call, an older
/// kernel): the caller edits the registers.
fn set_call_info(tid: i32, nr: Option<u64>, args: &[(u8, u64)]) -> Result<bool, Error> {
    let Some(mut call) = request::current_call(tid) else {
        return Ok(false);
    };
    if let Some(nr) = nr {
        call.nr = nr;
    }
    for &(index, value) in args {
        let Some(slot) = call.args.get_mut(usize::from(index)) else {
            return Err(Error::Internal(format!(
                "argument index {index} out of range"
            )));
        };
        *slot = value;
    }
    request::set_seccomp_call(call)
}

/// Skip the syscall the tracee is stopped in (seccomp stop) and make it return `ret`.
#[cfg(target_arch = "x86_64")]
pub fn skip_syscall(tid: i32, ret: i64) -> Result<(), Error> {
    request::forget_call(tid);
    let pid = Pid::from_raw(tid);
    let mut regs = ptrace::getregs(pid).map_err(err(tid, "PTRACE_GETREGS"))?;
    // orig_rax = -1: the kernel skips the syscall and returns rax as the result.
    regs.orig_rax = u64::MAX;
    regs.rax = ret.cast_unsigned();
    ptrace::setregs(pid, regs).map_err(err(tid, "PTRACE_SETREGS"))
}

/// `NT_ARM_SYSTEM_CALL` (`linux/elf.h`): the regset holding the number of the syscall the
/// kernel is about to run (`pt_regs::syscallno`), which is not among the general registers.
/// nix 0.32 has no type for it, hence the raw call in [`set_syscall_nr`].
#[cfg(target_arch = "aarch64")]
const NT_ARM_SYSTEM_CALL: usize = 0x404;

/// `PTRACE_SETREGSET(NT_ARM_SYSTEM_CALL)`: replace the number of the stopped syscall; -1
/// makes the kernel skip it (arm64 `syscall_trace_enter` returns `NO_SYSCALL` and x0 is
/// returned as is).
#[cfg(target_arch = "aarch64")]
fn set_syscall_nr(tid: i32, nr: i32) -> Result<(), Error> {
    let mut value: libc::c_int = nr;
    let mut iov = libc::iovec {
        iov_base: std::ptr::from_mut(&mut value).cast(),
        iov_len: std::mem::size_of::<libc::c_int>(),
    };
    // SAFETY: `iov` is a live iovec on our stack describing `value`, a live c_int of exactly
    // `iov_len` bytes; for NT_ARM_SYSTEM_CALL the kernel reads one int through it (it checks
    // the length) and writes back at most `iov_len` into `iov.iov_len`. Both outlive the call.
    let r = unsafe {
        libc::ptrace(
            libc::PTRACE_SETREGSET,
            libc::pid_t::from(tid),
            std::ptr::without_provenance_mut::<libc::c_void>(NT_ARM_SYSTEM_CALL),
            std::ptr::from_mut(&mut iov).cast::<libc::c_void>(),
        )
    };
    nix::errno::Errno::result(r)
        .map(drop)
        .map_err(err(tid, "PTRACE_SETREGSET(NT_ARM_SYSTEM_CALL)"))
}

/// Skip the syscall the tracee is stopped in (seccomp stop) and make it return `ret`.
///
/// aarch64 keeps the syscall number apart from the registers: set it to -1 through
/// `NT_ARM_SYSTEM_CALL`, then put `ret` in x0, which is both argument 0 and the result
/// register (the kernel keeps the original argument in `orig_x0` for restarts only).
#[cfg(target_arch = "aarch64")]
pub fn skip_syscall(tid: i32, ret: i64) -> Result<(), Error> {
    use nix::sys::ptrace::regset::NT_PRSTATUS;
    request::forget_call(tid);
    let pid = Pid::from_raw(tid);
    set_syscall_nr(tid, -1)?;
    let mut regs = ptrace::getregset::<NT_PRSTATUS>(pid).map_err(err(tid, "PTRACE_GETREGSET"))?;
    regs.regs[0] = ret.cast_unsigned();
    ptrace::setregset::<NT_PRSTATUS>(pid, regs).map_err(err(tid, "PTRACE_SETREGSET"))
}

/// Put argument `index` (0-based) into its x86_64 syscall register.
#[cfg(target_arch = "x86_64")]
fn put_arg(regs: &mut libc::user_regs_struct, index: u8, value: u64) -> Result<(), Error> {
    let reg = match index {
        0 => &mut regs.rdi,
        1 => &mut regs.rsi,
        2 => &mut regs.rdx,
        3 => &mut regs.r10,
        4 => &mut regs.r8,
        5 => &mut regs.r9,
        _ => {
            return Err(Error::Internal(format!(
                "argument index {index} out of range"
            )));
        }
    };
    *reg = value;
    Ok(())
}

/// Set several argument registers of the stopped syscall at once (one GETREGS/SETREGS pair),
/// and its number too when `nr` is given.
#[cfg(target_arch = "x86_64")]
fn edit_call(tid: i32, nr: Option<u64>, args: &[(u8, u64)]) -> Result<(), Error> {
    if set_call_info(tid, nr, args)? {
        return Ok(());
    }
    request::forget_call(tid);
    let pid = Pid::from_raw(tid);
    let mut regs = ptrace::getregs(pid).map_err(err(tid, "PTRACE_GETREGS"))?;
    if let Some(nr) = nr {
        regs.orig_rax = nr;
    }
    for &(index, value) in args {
        put_arg(&mut regs, index, value)?;
    }
    ptrace::setregs(pid, regs).map_err(err(tid, "PTRACE_SETREGS"))
}

/// Set several argument registers at once (one GETREGS/SETREGS pair).
#[cfg(target_arch = "x86_64")]
pub fn set_args(tid: i32, args: &[(u8, u64)]) -> Result<(), Error> {
    edit_call(tid, None, args)
}

/// Set several argument registers at once: x0..x5.
///
/// At a seccomp stop the kernel has not yet read the arguments; it reads x0..x5 from
/// `pt_regs` after the stop, so a re-pointed argument is what the syscall sees. If the call is
/// later restarted after a signal, the kernel restores x0 from `orig_x0` (the value before the
/// stop) and re-enters the syscall, which passes through seccomp again and stops again.
#[cfg(target_arch = "aarch64")]
pub fn set_args(tid: i32, args: &[(u8, u64)]) -> Result<(), Error> {
    use nix::sys::ptrace::regset::NT_PRSTATUS;
    if set_call_info(tid, None, args)? {
        return Ok(());
    }
    request::forget_call(tid);
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
    request::forget_call(tid);
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

/// How far to move the program counter back to execute the syscall instruction again: the
/// length of [`Arch::syscall_insn`] (x86_64 `syscall`: 2 bytes, aarch64 `svc #0`: 4).
fn syscall_insn_len() -> u64 {
    Arch::native().syscall_insn().len() as u64
}

/// At the exit stop of an injected syscall: restore the registers and step back over the
/// `syscall` instruction, so the original syscall runs again (and stops again).
#[cfg(target_arch = "x86_64")]
pub fn restart_saved(tid: i32, saved: Saved) -> Result<(), Error> {
    request::forget_call(tid);
    let mut r = saved.0;
    r.rip = r.rip.wrapping_sub(syscall_insn_len());
    r.rax = r.orig_rax;
    ptrace::setregs(Pid::from_raw(tid), r).map_err(err(tid, "PTRACE_SETREGS"))
}

/// At a seccomp stop: replace the pending syscall by `nr(args)`.
#[cfg(target_arch = "aarch64")]
pub fn replace_syscall(tid: i32, nr: u64, args: [u64; 6]) -> Result<Saved, Error> {
    use nix::sys::ptrace::regset::NT_PRSTATUS;
    request::forget_call(tid);
    let pid = Pid::from_raw(tid);
    let saved = ptrace::getregset::<NT_PRSTATUS>(pid).map_err(err(tid, "PTRACE_GETREGSET"))?;
    let mut r = saved;
    r.regs[..6].copy_from_slice(&args);
    r.regs[8] = nr;
    ptrace::setregset::<NT_PRSTATUS>(pid, r).map_err(err(tid, "PTRACE_SETREGSET"))?;
    let nr =
        i32::try_from(nr).map_err(|_| Error::Internal("syscall number out of range".into()))?;
    set_syscall_nr(tid, nr)?;
    Ok(Saved(saved))
}

/// At the exit stop of an injected syscall: restore the registers (x0 included, which the
/// result clobbered) and step back over the `svc #0`.
///
/// The saved registers are those of the seccomp stop, not of a syscall stop: arm64 replaces x7
/// with the stop direction during syscall-entry/exit stops (and restores it afterwards), so a
/// GETREGSET here would not hold the workload's x7.
#[cfg(target_arch = "aarch64")]
pub fn restart_saved(tid: i32, saved: Saved) -> Result<(), Error> {
    use nix::sys::ptrace::regset::NT_PRSTATUS;
    request::forget_call(tid);
    let mut r = saved.0;
    r.pc = r.pc.wrapping_sub(syscall_insn_len());
    ptrace::setregset::<NT_PRSTATUS>(Pid::from_raw(tid), r).map_err(err(tid, "PTRACE_SETREGSET"))
}

/// At a seccomp stop: change the pending syscall to `nr` with these argument registers (the
/// kernel re-runs the seccomp filters on the new call; a TRACE result then counts as allow).
#[cfg(target_arch = "x86_64")]
pub fn set_syscall(tid: i32, nr: u64, args: &[(u8, u64)]) -> Result<(), Error> {
    edit_call(tid, Some(nr), args)
}

/// At a seccomp stop: change the pending syscall to `nr` with these argument registers.
#[cfg(target_arch = "aarch64")]
pub fn set_syscall(tid: i32, nr: u64, args: &[(u8, u64)]) -> Result<(), Error> {
    if set_call_info(tid, Some(nr), args)? {
        return Ok(());
    }
    set_args(tid, args)?;
    let nr =
        i32::try_from(nr).map_err(|_| Error::Internal("syscall number out of range".into()))?;
    set_syscall_nr(tid, nr)
}

/// At a syscall-exit stop: make the call return `ret` (a value, or `-errno`) instead of what
/// the kernel returned. The kernel decides on restarting a call interrupted by a signal from
/// this register afterwards, so a `-ERESTART*` replaced here is not restarted.
#[cfg(target_arch = "x86_64")]
pub fn set_return(tid: i32, ret: i64) -> Result<(), Error> {
    request::forget_call(tid);
    let pid = Pid::from_raw(tid);
    let mut regs = ptrace::getregs(pid).map_err(err(tid, "PTRACE_GETREGS"))?;
    regs.rax = ret.cast_unsigned();
    ptrace::setregs(pid, regs).map_err(err(tid, "PTRACE_SETREGS"))
}

/// At a syscall-exit stop: make the call return `ret` (x0 holds the result). The x7 that
/// GETREGSET shows during a syscall stop is the stop direction, which the kernel replaces by
/// the workload's own x7 when the stop ends, whatever is written here.
#[cfg(target_arch = "aarch64")]
pub fn set_return(tid: i32, ret: i64) -> Result<(), Error> {
    use nix::sys::ptrace::regset::NT_PRSTATUS;
    request::forget_call(tid);
    let pid = Pid::from_raw(tid);
    let mut regs = ptrace::getregset::<NT_PRSTATUS>(pid).map_err(err(tid, "PTRACE_GETREGSET"))?;
    regs.regs[0] = ret.cast_unsigned();
    ptrace::setregset::<NT_PRSTATUS>(pid, regs).map_err(err(tid, "PTRACE_SETREGSET"))
}

/// At a syscall-exit stop: put back the argument registers the call had at its seccomp stop,
/// before sbx re-pointed them (`args`, the words the stop reported). The kernel's syscall
/// ABI preserves every register but the return value's (and rcx, r11 on x86_64), so code
/// that keeps a value in an argument register across an inline `syscall` (musl, glibc's
/// inline wrappers) must find it unchanged. x86_64: rdi, rsi, rdx, r10, r8, r9, and the
/// call's own number in `orig_rax`: a call interrupted by a signal (`-ERESTART*`) is
/// restarted by the kernel from `orig_rax` and these registers, so it runs again as the
/// workload made it, and passes through seccomp to be decided again.
#[cfg(target_arch = "x86_64")]
pub fn restore_args(tid: i32, nr: u64, args: &[u64; 6]) -> Result<(), Error> {
    request::forget_call(tid);
    let pid = Pid::from_raw(tid);
    let mut regs = ptrace::getregs(pid).map_err(err(tid, "PTRACE_GETREGS"))?;
    regs.orig_rax = nr;
    for (i, &a) in (0u8..).zip(args) {
        put_arg(&mut regs, i, a)?;
    }
    ptrace::setregs(pid, regs).map_err(err(tid, "PTRACE_SETREGS"))
}

/// [`restore_args`] on aarch64: x1..x5 (x0 holds the return value; a restarted call gets its
/// first argument back from `orig_x0`, and its number from x8, which sbx never changes).
#[cfg(target_arch = "aarch64")]
pub fn restore_args(tid: i32, _nr: u64, args: &[u64; 6]) -> Result<(), Error> {
    use nix::sys::ptrace::regset::NT_PRSTATUS;
    request::forget_call(tid);
    let pid = Pid::from_raw(tid);
    let mut regs = ptrace::getregset::<NT_PRSTATUS>(pid).map_err(err(tid, "PTRACE_GETREGSET"))?;
    regs.regs[1..6].copy_from_slice(&args[1..6]);
    ptrace::setregset::<NT_PRSTATUS>(pid, regs).map_err(err(tid, "PTRACE_SETREGSET"))
}
