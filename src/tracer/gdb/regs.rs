//! Registers as gdb sees them, for x86_64 and aarch64.
//!
//! The layouts gdb expects (`gdbstub_arch::x86::X86_64_SSE`, `gdbstub_arch::aarch64::AArch64`)
//! are filled from and written back to the kernel's `user_regs_struct`, seen here as an array
//! of words in the kernel's order. Those conversions are plain data, compiled and unit-tested
//! on every architecture; only [`read`]/[`write`] (the ptrace requests) and the breakpoint
//! instruction are chosen by `cfg(target_arch)`, as is the floating-point/vector state
//! (`NT_PRFPREG`: x87 and SSE on x86_64, the 32 SIMD registers, FPSR and FPCR on aarch64).

use gdbstub_arch::aarch64::reg::AArch64CoreRegs;
use gdbstub_arch::x86::reg::X86_64CoreRegs;

/// The words of x86_64's `user_regs_struct`, in the kernel's order.
pub const X86_64_WORDS: usize = 27;
/// The words of aarch64's `user_pt_regs`: x0..x30, sp, pc, pstate.
pub const AARCH64_WORDS: usize = 34;

/// `user_regs_struct` word indices (arch/x86/include/asm/user_64.h).
mod x86 {
    pub const R15: usize = 0;
    pub const R14: usize = 1;
    pub const R13: usize = 2;
    pub const R12: usize = 3;
    pub const RBP: usize = 4;
    pub const RBX: usize = 5;
    pub const R11: usize = 6;
    pub const R10: usize = 7;
    pub const R9: usize = 8;
    pub const R8: usize = 9;
    pub const RAX: usize = 10;
    pub const RCX: usize = 11;
    pub const RDX: usize = 12;
    pub const RSI: usize = 13;
    pub const RDI: usize = 14;
    pub const RIP: usize = 16;
    pub const CS: usize = 17;
    pub const EFLAGS: usize = 18;
    pub const RSP: usize = 19;
    pub const SS: usize = 20;
    pub const DS: usize = 23;
    pub const ES: usize = 24;
    pub const FS: usize = 25;
    pub const GS: usize = 26;
    /// gdb's order of the 16 general registers: rax, rbx, rcx, rdx, rsi, rdi, rbp, rsp,
    /// r8..r15.
    pub const GDB_ORDER: [usize; 16] = [
        RAX, RBX, RCX, RDX, RSI, RDI, RBP, RSP, R8, R9, R10, R11, R12, R13, R14, R15,
    ];
}

/// The low 32 bits of a register word (segment selectors and flags are 32-bit for gdb).
fn low32(w: u64) -> u32 {
    u32::try_from(w & 0xffff_ffff).unwrap_or(0)
}

/// x86_64 kernel words to gdb's registers.
pub fn x86_64_to_gdb(u: &[u64; X86_64_WORDS]) -> X86_64CoreRegs {
    let mut g = X86_64CoreRegs::default();
    for (slot, &i) in g.regs.iter_mut().zip(x86::GDB_ORDER.iter()) {
        *slot = u[i];
    }
    g.rip = u[x86::RIP];
    g.eflags = low32(u[x86::EFLAGS]);
    g.segments.cs = low32(u[x86::CS]);
    g.segments.ss = low32(u[x86::SS]);
    g.segments.ds = low32(u[x86::DS]);
    g.segments.es = low32(u[x86::ES]);
    g.segments.fs = low32(u[x86::FS]);
    g.segments.gs = low32(u[x86::GS]);
    g
}

/// gdb's x86_64 registers into kernel words (segment selectors are kept: gdb may not move a
/// thread to another segment).
pub fn x86_64_from_gdb(g: &X86_64CoreRegs, u: &mut [u64; X86_64_WORDS]) {
    for (&v, &i) in g.regs.iter().zip(x86::GDB_ORDER.iter()) {
        u[i] = v;
    }
    u[x86::RIP] = g.rip;
    u[x86::EFLAGS] = u64::from(g.eflags);
}

/// aarch64 kernel words (`user_pt_regs`) to gdb's registers.
pub fn aarch64_to_gdb(u: &[u64; AARCH64_WORDS]) -> AArch64CoreRegs {
    let mut g = AArch64CoreRegs::default();
    g.x.copy_from_slice(&u[..31]);
    g.sp = u[31];
    g.pc = u[32];
    g.cpsr = low32(u[33]);
    g
}

/// gdb's aarch64 registers into kernel words.
pub fn aarch64_from_gdb(g: &AArch64CoreRegs, u: &mut [u64; AARCH64_WORDS]) {
    u[..31].copy_from_slice(&g.x);
    u[31] = g.sp;
    u[32] = g.pc;
    u[33] = u64::from(g.cpsr);
}

/// The type of a ptrace request in libc (`c_uint` with glibc, `c_int` with musl).
#[cfg(all(target_arch = "x86_64", target_env = "gnu"))]
type PtraceRequest = libc::c_uint;
#[cfg(all(target_arch = "x86_64", not(target_env = "gnu")))]
type PtraceRequest = libc::c_int;

#[cfg(target_arch = "x86_64")]
mod native {
    use nix::sys::ptrace;
    use nix::unistd::Pid;

    use super::{X86_64_WORDS, x86};
    use crate::tracer::Error;

    /// The gdbstub architecture of this build.
    pub type GdbArch = gdbstub_arch::x86::X86_64_SSE;
    /// `int3`.
    pub const BREAKPOINT: &[u8] = &[0xcc];
    /// After an `int3` trap the PC is one past the instruction.
    pub const PC_AFTER_TRAP: u64 = 1;

    fn words(r: &libc::user_regs_struct) -> [u64; X86_64_WORDS] {
        [
            r.r15, r.r14, r.r13, r.r12, r.rbp, r.rbx, r.r11, r.r10, r.r9, r.r8, r.rax, r.rcx,
            r.rdx, r.rsi, r.rdi, r.orig_rax, r.rip, r.cs, r.eflags, r.rsp, r.ss, r.fs_base,
            r.gs_base, r.ds, r.es, r.fs, r.gs,
        ]
    }

    fn set_words(r: &mut libc::user_regs_struct, w: &[u64; X86_64_WORDS]) {
        (r.r15, r.r14, r.r13, r.r12, r.rbp, r.rbx) = (w[0], w[1], w[2], w[3], w[4], w[5]);
        (r.r11, r.r10, r.r9, r.r8, r.rax, r.rcx) = (w[6], w[7], w[8], w[9], w[10], w[11]);
        (r.rdx, r.rsi, r.rdi, r.rip, r.eflags, r.rsp) = (w[12], w[13], w[14], w[16], w[18], w[19]);
    }

    pub fn get(tid: i32) -> Result<[u64; X86_64_WORDS], Error> {
        let r = ptrace::getregs(Pid::from_raw(tid)).map_err(super::err(tid, "PTRACE_GETREGS"))?;
        Ok(words(&r))
    }

    pub fn set(tid: i32, w: &[u64; X86_64_WORDS]) -> Result<(), Error> {
        crate::tracer::ptrace::forget_call(tid);
        let pid = Pid::from_raw(tid);
        let mut r = ptrace::getregs(pid).map_err(super::err(tid, "PTRACE_GETREGS"))?;
        set_words(&mut r, w);
        ptrace::setregs(pid, r).map_err(super::err(tid, "PTRACE_SETREGS"))
    }

    type Regs = <GdbArch as gdbstub::arch::Arch>::Registers;

    /// x87 and SSE state (`PTRACE_GETFPREGS`'s layout) into gdb's registers.
    fn fp_to_gdb(f: &libc::user_fpregs_struct, g: &mut Regs) {
        for (i, st) in g.st.iter_mut().enumerate() {
            // Each x87 register takes 16 bytes of st_space, the first 10 are the value.
            let bytes: Vec<u8> = f.st_space[i * 4..i * 4 + 4]
                .iter()
                .flat_map(|w| w.to_le_bytes())
                .collect();
            st.copy_from_slice(&bytes[..10]);
        }
        g.fpu.fctrl = u32::from(f.cwd);
        g.fpu.fstat = u32::from(f.swd);
        g.fpu.ftag = u32::from(f.ftw);
        g.fpu.fop = u32::from(f.fop);
        (g.fpu.fioff, g.fpu.fiseg) = (super::low32(f.rip), super::low32(f.rip >> 32));
        (g.fpu.fooff, g.fpu.foseg) = (super::low32(f.rdp), super::low32(f.rdp >> 32));
        for (i, x) in g.xmm.iter_mut().enumerate() {
            let w = &f.xmm_space[i * 4..i * 4 + 4];
            *x = w
                .iter()
                .rev()
                .fold(0u128, |acc, &v| (acc << 32) | u128::from(v));
        }
        g.mxcsr = f.mxcsr;
    }

    /// gdb's x87 values, control words and SSE registers back into the kernel's layout.
    fn fp_from_gdb(g: &Regs, f: &mut libc::user_fpregs_struct) {
        for (i, st) in g.st.iter().enumerate() {
            let mut bytes = [0u8; 16];
            bytes[..10].copy_from_slice(st);
            for (j, chunk) in bytes.chunks_exact(4).enumerate() {
                let mut w = [0u8; 4];
                w.copy_from_slice(chunk);
                f.st_space[i * 4 + j] = u32::from_le_bytes(w);
            }
        }
        f.cwd = u16::try_from(g.fpu.fctrl & 0xffff).unwrap_or(f.cwd);
        f.swd = u16::try_from(g.fpu.fstat & 0xffff).unwrap_or(f.swd);
        for (i, x) in g.xmm.iter().enumerate() {
            for j in 0..4 {
                f.xmm_space[i * 4 + j] = u32::try_from((x >> (32 * j)) & 0xffff_ffff).unwrap_or(0);
            }
        }
        f.mxcsr = g.mxcsr;
    }

    /// All of gdb's registers of stopped thread `tid`.
    pub fn read_gdb(tid: i32) -> Result<Regs, Error> {
        let mut g = super::x86_64_to_gdb(&get(tid)?);
        let f = fp_get(tid)?;
        fp_to_gdb(&f, &mut g);
        Ok(g)
    }

    /// Write gdb's registers into stopped thread `tid`.
    pub fn write_gdb(tid: i32, g: &Regs) -> Result<(), Error> {
        let mut w = get(tid)?;
        super::x86_64_from_gdb(g, &mut w);
        set(tid, &w)?;
        let mut f = fp_get(tid)?;
        fp_from_gdb(g, &mut f);
        fp_regset(tid, libc::PTRACE_SETREGSET, &mut f)
    }

    /// The x87/SSE registers (`NT_PRFPREG`) of stopped thread `tid`. Raw PTRACE_GETREGSET:
    /// nix offers its regset calls on x86_64 for glibc only, and the release build is musl.
    fn fp_get(tid: i32) -> Result<libc::user_fpregs_struct, Error> {
        // SAFETY: user_fpregs_struct is plain integers: all zeroes is a valid value.
        let mut f: libc::user_fpregs_struct = unsafe { std::mem::zeroed() };
        fp_regset(tid, libc::PTRACE_GETREGSET, &mut f)?;
        Ok(f)
    }

    /// PTRACE_GETREGSET or PTRACE_SETREGSET of `NT_PRFPREG` with `f`.
    fn fp_regset(
        tid: i32,
        request: super::PtraceRequest,
        f: &mut libc::user_fpregs_struct,
    ) -> Result<(), Error> {
        /// `NT_PRFPREG` (elf.h).
        const NT_PRFPREG: usize = 2;
        let mut iov = libc::iovec {
            iov_base: std::ptr::from_mut(f).cast(),
            iov_len: std::mem::size_of::<libc::user_fpregs_struct>(),
        };
        // SAFETY: the iovec points at `f`, a live user_fpregs_struct of the length given;
        // the kernel reads or fills at most that many bytes.
        let r = unsafe {
            libc::ptrace(
                request,
                tid,
                NT_PRFPREG as *mut libc::c_void,
                std::ptr::from_mut(&mut iov).cast::<libc::c_void>(),
            )
        };
        if r == -1 {
            let name = if request == libc::PTRACE_GETREGSET {
                "PTRACE_GETREGSET"
            } else {
                "PTRACE_SETREGSET"
            };
            return Err(super::err(tid, name)(nix::errno::Errno::last()));
        }
        Ok(())
    }

    pub fn pc(w: &[u64; X86_64_WORDS]) -> u64 {
        w[x86::RIP]
    }

    pub fn set_pc(w: &mut [u64; X86_64_WORDS], pc: u64) {
        w[x86::RIP] = pc;
    }

    pub type Words = [u64; X86_64_WORDS];
}

#[cfg(target_arch = "aarch64")]
mod native {
    use nix::sys::ptrace;
    use nix::sys::ptrace::regset::{NT_PRFPREG, NT_PRSTATUS};
    use nix::unistd::Pid;

    use super::AARCH64_WORDS;
    use crate::tracer::Error;

    /// The gdbstub architecture of this build.
    pub type GdbArch = gdbstub_arch::aarch64::AArch64;
    /// `brk #0`, little-endian.
    pub const BREAKPOINT: &[u8] = &[0x00, 0x00, 0x20, 0xd4];
    /// After a `brk` trap the PC is at the instruction.
    pub const PC_AFTER_TRAP: u64 = 0;

    pub fn get(tid: i32) -> Result<[u64; AARCH64_WORDS], Error> {
        let r = ptrace::getregset::<NT_PRSTATUS>(Pid::from_raw(tid))
            .map_err(super::err(tid, "PTRACE_GETREGSET"))?;
        let mut w = [0u64; AARCH64_WORDS];
        w[..31].copy_from_slice(&r.regs);
        (w[31], w[32], w[33]) = (r.sp, r.pc, r.pstate);
        Ok(w)
    }

    pub fn set(tid: i32, w: &[u64; AARCH64_WORDS]) -> Result<(), Error> {
        crate::tracer::ptrace::forget_call(tid);
        let pid = Pid::from_raw(tid);
        let mut r =
            ptrace::getregset::<NT_PRSTATUS>(pid).map_err(super::err(tid, "PTRACE_GETREGSET"))?;
        r.regs.copy_from_slice(&w[..31]);
        (r.sp, r.pc, r.pstate) = (w[31], w[32], w[33]);
        ptrace::setregset::<NT_PRSTATUS>(pid, r).map_err(super::err(tid, "PTRACE_SETREGSET"))
    }

    type Regs = <GdbArch as gdbstub::arch::Arch>::Registers;

    /// All of gdb's registers of stopped thread `tid` (general, then FP/SIMD).
    pub fn read_gdb(tid: i32) -> Result<Regs, Error> {
        let mut g = super::aarch64_to_gdb(&get(tid)?);
        let f = ptrace::getregset::<NT_PRFPREG>(Pid::from_raw(tid))
            .map_err(super::err(tid, "PTRACE_GETREGSET"))?;
        g.v = f.vregs;
        (g.fpsr, g.fpcr) = (f.fpsr, f.fpcr);
        Ok(g)
    }

    /// Write gdb's registers into stopped thread `tid`.
    pub fn write_gdb(tid: i32, g: &Regs) -> Result<(), Error> {
        let mut w = get(tid)?;
        super::aarch64_from_gdb(g, &mut w);
        set(tid, &w)?;
        let pid = Pid::from_raw(tid);
        let mut f =
            ptrace::getregset::<NT_PRFPREG>(pid).map_err(super::err(tid, "PTRACE_GETREGSET"))?;
        f.vregs = g.v;
        (f.fpsr, f.fpcr) = (g.fpsr, g.fpcr);
        ptrace::setregset::<NT_PRFPREG>(pid, f).map_err(super::err(tid, "PTRACE_SETREGSET"))
    }

    pub fn pc(w: &[u64; AARCH64_WORDS]) -> u64 {
        w[32]
    }

    pub fn set_pc(w: &mut [u64; AARCH64_WORDS], pc: u64) {
        w[32] = pc;
    }

    pub type Words = [u64; AARCH64_WORDS];
}

pub use native::{
    BREAKPOINT, GdbArch, PC_AFTER_TRAP, Words, get, pc, read_gdb, set, set_pc, write_gdb,
};

/// The tracer's error for a failed register request (ESRCH: the tracee died).
use crate::tracer::regs::err;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aarch64_layout_x_sp_pc_pstate() {
        let mut u = [0u64; AARCH64_WORDS];
        for (i, w) in u.iter_mut().enumerate() {
            *w = 0x1000 + i as u64;
        }
        u[33] = 0x6000_03c5; // pstate: NZCV + DAIF bits
        let g = aarch64_to_gdb(&u);
        assert_eq!(g.x[0], 0x1000);
        assert_eq!(g.x[29], 0x1000 + 29, "x29 is the frame pointer");
        assert_eq!(g.x[30], 0x1000 + 30, "x30 is the link register");
        assert_eq!(g.sp, 0x1000 + 31);
        assert_eq!(g.pc, 0x1000 + 32);
        assert_eq!(g.cpsr, 0x6000_03c5);
        let mut back = [0u64; AARCH64_WORDS];
        aarch64_from_gdb(&g, &mut back);
        assert_eq!(back, u);
    }

    #[test]
    fn aarch64_serializes_in_gdb_order() {
        use gdbstub::arch::Registers;
        let mut u = [0u64; AARCH64_WORDS];
        u[0] = 0x11;
        u[31] = 0x22; // sp
        u[32] = 0x33; // pc
        u[33] = 0x44; // cpsr
        let g = aarch64_to_gdb(&u);
        let mut bytes = Vec::new();
        g.gdb_serialize(|b| bytes.push(b.unwrap_or(0)));
        // x0..x30 (8 bytes each), sp, pc (8 bytes), cpsr (4 bytes), little-endian.
        assert_eq!(bytes[0], 0x11);
        assert_eq!(bytes[31 * 8], 0x22);
        assert_eq!(bytes[32 * 8], 0x33);
        assert_eq!(bytes[33 * 8], 0x44);
        let mut parsed = AArch64CoreRegs::default();
        parsed.gdb_deserialize(&bytes).unwrap();
        assert_eq!(parsed, g);
    }

    #[test]
    fn x86_64_gdb_order_and_round_trip() {
        let mut u = [0u64; X86_64_WORDS];
        for (i, w) in u.iter_mut().enumerate() {
            *w = 100 + i as u64;
        }
        let g = x86_64_to_gdb(&u);
        assert_eq!(g.regs[0], 110, "rax first");
        assert_eq!(g.regs[7], 119, "rsp eighth");
        assert_eq!(g.regs[15], 100, "r15 last");
        assert_eq!(g.rip, 116);
        assert_eq!(g.eflags, 118);
        let mut back = u;
        back[x86::RAX] = 0;
        x86_64_from_gdb(&g, &mut back);
        assert_eq!(back, u);
    }
}
