//! Sinks connect the tracer to the pure core: `record` decodes and writes the trace, `enforce`
//! decodes and asks the policy. Both share [`Decoder`], so a decoding fix fixes both.

pub mod enforce;
pub mod record;

use crate::arch::{AUDIT_ARCH_I386, Arch, SyscallDef};
use crate::decode::{self, Decoded, RawSyscall};
use crate::event::{Object, Outcome, SockAddr, Syscall};
use crate::tracer::SyscallStop;
use crate::tracer::memory::TraceeMemory;
use crate::tracer::procfs;
use crate::tracer::procfs::TraceeProc;

/// A decoded seccomp stop.
#[derive(Debug)]
pub struct DecodedStop {
    pub def: Option<&'static SyscallDef>,
    pub syscall: Syscall,
    pub decoded: Decoded,
}

/// Decode a stop with the real tracee memory and `/proc` view.
pub fn decode_stop(arch: Arch, stop: &SyscallStop<'_>) -> DecodedStop {
    let raw = RawSyscall {
        arch,
        nr: stop.nr,
        args: stop.args,
    };
    let foreign = stop.audit_arch != arch.audit_arch();
    let def = if foreign { None } else { arch.by_nr(stop.nr) };
    let decoded = match def {
        Some(d) => decode::decode(
            d,
            &raw,
            &TraceeMemory { tid: stop.tid },
            &TraceeProc {
                pid: stop.pid,
                tid: stop.tid,
            },
        ),
        None => Decoded::default(),
    };
    let name = match def {
        Some(d) => d.name.to_string(),
        None if foreign && stop.audit_arch == AUDIT_ARCH_I386 => format!("i386:{}", stop.nr),
        None if foreign => format!("abi{:#x}:{}", stop.audit_arch, stop.nr),
        None => format!("syscall_{}", stop.nr),
    };
    let mut decoded = decoded;
    for t in &mut decoded.targets {
        if let Object::Socket(SockAddr::Netlink { protocol, .. }) = &mut t.object {
            // The netlink protocol is a property of the socket, not of the address.
            let fd = i32::try_from(stop.args[0]).unwrap_or(-1);
            *protocol = procfs::socket_protocol(stop.pid, fd).and_then(|p| u16::try_from(p).ok());
        }
    }
    let syscall = Syscall {
        name,
        nr: u32::try_from(stop.nr).unwrap_or(u32::MAX),
        args: stop.args,
        targets: decoded.targets.clone(),
        outcome: Outcome::Unknown,
    };
    DecodedStop {
        def,
        syscall,
        decoded,
    }
}
