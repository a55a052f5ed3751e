//! Watching the workload's own DNS traffic (shared by record and enforce).
//!
//! - at the entry of a send (sendto/sendmsg/sendmmsg) to port 53, explicit or the connected
//!   peer, the query names become [`Access::Resolve`] targets ([`query_targets`]);
//! - receives that can carry answers ([`crate::arch::Class::Answer`]): at entry sbx peeks at
//!   the message waiting on the socket (its own duplicate, source as the kernel reports it),
//!   never reading the workload's buffers, which a thread could rewrite; if the receive
//!   returns data, an answer from port 53 becomes a [`Resolved`] event and teaches the
//!   run's [`DnsBook`] which names the addresses belong to;
//! - an open of `/etc/hosts` reads the file as the workload sees it (`/proc/PID/root`) and
//!   teaches the book its names.
//!
//! Not seen: queries and answers moved with write/read/writev (Go's resolver, glibc over TCP),
//! DNS over TLS/HTTPS. Connects to addresses learned that way have no name, so only an
//! address rule admits them (fail closed). See docs/security.md.

use std::collections::{BTreeMap, HashSet};
use std::net::IpAddr;

use crate::arch::{Sem, SockOp, SyscallDef};
use crate::decode::Memory;
use crate::dns::{self, DnsBook};
use crate::event::{Access, AccessSet, Object, ResolveSource, Resolved, SockAddr, Target};
use crate::tracer::SyscallStop;
use crate::tracer::memory::TraceeMemory;
use crate::tracer::procfs;

/// At most this many bytes of one DNS message are read (UDP answers with EDNS fit).
const MAX_MESSAGE: usize = 4096;
/// At most this many messages of one sendmmsg/recvmmsg, and iovecs of one message.
const MAX_VEC: u64 = 16;
/// `struct msghdr` and `struct mmsghdr` on LP64 (x86_64 and aarch64 alike).
const MSGHDR: u64 = 56;
const MMSGHDR: u64 = 64;

/// A receive waiting for its exit, with the message that was waiting at its entry (peeked
/// by sbx, source as the kernel reports it), if any.
#[derive(Debug, Clone)]
struct Recv {
    peeked: Option<(SockAddr, Vec<u8>)>,
}

/// What the run learned about host names.
#[derive(Debug, Default)]
pub struct DnsTracker {
    book: DnsBook,
    pending: crate::tid::TidMap<Recv>,
    hosts_seen: HashSet<(String, IpAddr)>,
}

impl DnsTracker {
    pub fn book(&self) -> &DnsBook {
        &self.book
    }

    /// The entry of a receive: read it at its exit. Returns false if `def` is no receive.
    pub fn recv_entry(&mut self, stop: &SyscallStop<'_>, def: &SyscallDef) -> bool {
        let Sem::Sock { op } = def.sem else {
            return false;
        };
        if !matches!(op, SockOp::RecvFrom | SockOp::RecvMsg | SockOp::RecvMmsg) {
            return false;
        }
        // The answer is taken here, from the socket, not at the exit from the workload's
        // buffers: a sibling thread could rewrite those (source address and bytes) between
        // the kernel's copy and sbx's read, and make a name admit an address of its choice.
        // Resolvers poll before they receive, so the answer is waiting; one that is not (a
        // blocking receive) teaches nothing (fail closed: its names resolve to no rule).
        let fd = crate::decode::int_arg(stop.args[0]);
        let peeked = procfs::socket_peek(stop.pid, stop.tid, fd, MAX_MESSAGE)
            .map(|(from, data)| (crate::decode::sockaddr::parse(&from), data));
        self.pending.insert(stop.tid, Recv { peeked });
        true
    }

    /// Whether `tid` is in a receive this tracker waits for.
    pub fn waits_for(&self, tid: i32) -> bool {
        self.pending.contains_key(&tid)
    }

    /// The thread left (exit, exec): forget its receive.
    pub fn forget(&mut self, tid: i32) {
        self.pending.remove(&tid);
    }

    /// The exit of a receive: the DNS answers it carried, learned into the book.
    pub fn recv_exit(&mut self, stop: &SyscallStop<'_>, rval: i64) -> Vec<Resolved> {
        let Some(r) = self.pending.remove(&stop.tid) else {
            return Vec::new();
        };
        if rval <= 0 {
            return Vec::new();
        }
        // Only the message that was waiting at the entry: a recvmmsg's further messages
        // are not learned.
        let Some((server, data)) = r
            .peeked
            .filter(|(from, _)| port_of(from) == Some(dns::PORT))
        else {
            return Vec::new();
        };
        let Some(answer) = dns::parse_answer(&data)
            .or_else(|| dns::tcp_message(&data).and_then(dns::parse_answer))
        else {
            return Vec::new();
        };
        self.book.learn(&answer.name, &answer.addrs);
        vec![Resolved {
            name: answer.name,
            addrs: answer.addrs,
            source: ResolveSource::Dns(server),
        }]
    }

    /// If `targets` (of an allowed or recorded syscall) open `/etc/hosts`, read it as the
    /// process sees it and learn its names. Returns what was new, one event per name.
    pub fn hosts_opened(&mut self, pid: i32, targets: &[Target]) -> Vec<Resolved> {
        let opens_hosts = targets.iter().any(|t| {
            t.access.contains(Access::Read)
                && matches!(&t.object, Object::Path(p) if p.effective() == b"/etc/hosts")
        });
        if !opens_hosts {
            return Vec::new();
        }
        let text =
            std::fs::read_to_string(format!("/proc/{pid}/root/etc/hosts")).unwrap_or_default();
        let mut new: BTreeMap<String, Vec<IpAddr>> = BTreeMap::new();
        for (name, ip) in dns::parse_hosts(&text) {
            if self.hosts_seen.insert((name.clone(), ip)) {
                new.entry(name).or_default().push(ip);
            }
        }
        new.into_iter()
            .map(|(name, addrs)| {
                self.book.learn(&name, &addrs);
                Resolved {
                    name,
                    addrs,
                    source: ResolveSource::Hosts,
                }
            })
            .collect()
    }
}

/// The DNS queries of one send.
#[derive(Debug, Default)]
pub struct Queries {
    /// One Resolve target per distinct name.
    pub targets: Vec<Target>,
    /// For sendto: the exact payload bytes that were checked, to hand to the kernel from the
    /// guard region (another thread cannot change them after the check).
    pub sendto_payload: Option<Vec<u8>>,
    /// For sendmsg, and the first message of a sendmmsg: the 56-byte msghdr and the checked
    /// payload (all its iovecs), likewise.
    pub sendmsg_copy: Option<(Vec<u8>, Vec<u8>)>,
}

/// The query names a send to port 53 carries, as Resolve targets (none for other sends).
/// `targets` are the call's decoded targets (explicit destination addresses); without one the
/// connected peer is asked. A payload to port 53 that is no DNS query (or is longer than
/// sbx reads) is named [`dns::MALFORMED`].
pub fn query_targets(stop: &SyscallStop<'_>, def: &SyscallDef, targets: &[Target]) -> Queries {
    let Sem::Sock { op } = def.sem else {
        return Queries::default();
    };
    if !matches!(op, SockOp::SendTo | SockOp::SendMsg | SockOp::SendMmsg) {
        return Queries::default();
    }
    let explicit: Vec<&SockAddr> = targets
        .iter()
        .filter_map(|t| match &t.object {
            Object::Socket(a) => Some(a),
            _ => None,
        })
        .collect();
    let fd = crate::decode::int_arg(stop.args[0]);
    let to_dns = if explicit.is_empty() {
        procfs::socket_peer(stop.pid, stop.tid, fd)
            .map(|b| crate::decode::sockaddr::parse(&b))
            .is_some_and(|a| port_of(&a) == Some(dns::PORT))
    } else {
        explicit.iter().any(|a| port_of(a) == Some(dns::PORT))
    };
    if !to_dns {
        return Queries::default();
    }
    let mem = TraceeMemory { tid: stop.tid };
    let mut payloads = Vec::new();
    let mut sendto_payload = None;
    let mut sendmsg_copy = None;
    match op {
        SockOp::SendTo => {
            let len = usize::try_from(stop.args[2]).unwrap_or(usize::MAX);
            let p = if len > MAX_MESSAGE {
                Vec::new() // not a query sbx can check: malformed
            } else {
                read_vec(&mem, stop.args[1], len)
            };
            if p.len() == len {
                sendto_payload = Some(p.clone());
            }
            payloads.push(p);
        }
        SockOp::SendMsg => match read_msghdr_exact(&mem, stop.args[1]) {
            Some((hdr, data)) => {
                payloads.push(data.clone());
                sendmsg_copy = Some((hdr, data));
            }
            // Unreadable, or larger than sbx reads: malformed.
            None => payloads.push(Vec::new()),
        },
        _ => {
            for i in 0..stop.args[2].min(MAX_VEC) {
                let hdr = stop.args[1] + i * MMSGHDR;
                if i > 0 {
                    payloads.push(read_msghdr(&mem, hdr, MAX_MESSAGE).1);
                    continue;
                }
                // The first message is the one the guard sends (alone), from a copy, as for
                // sendmsg.
                match read_msghdr_exact(&mem, hdr) {
                    Some((h, data)) => {
                        payloads.push(data.clone());
                        sendmsg_copy = Some((h, data));
                    }
                    None => payloads.push(Vec::new()),
                }
            }
        }
    }
    let mut names: Vec<String> = Vec::new();
    for p in payloads {
        let got = dns::query_names(&p)
            .or_else(|| dns::tcp_message(&p).and_then(dns::query_names))
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| vec![dns::MALFORMED.to_string()]);
        for n in got {
            if !names.contains(&n) {
                names.push(n);
            }
        }
    }
    Queries {
        targets: names
            .into_iter()
            .map(|n| Target {
                access: AccessSet::of(Access::Resolve),
                object: Object::DnsName(n),
            })
            .collect(),
        sendto_payload,
        sendmsg_copy,
    }
}

fn port_of(a: &SockAddr) -> Option<u16> {
    match a {
        SockAddr::Inet { port, .. } | SockAddr::Inet6 { port, .. } => Some(*port),
        _ => None,
    }
}

fn read_vec(mem: &dyn Memory, addr: u64, len: usize) -> Vec<u8> {
    if addr == 0 || len == 0 {
        return Vec::new();
    }
    let mut buf = vec![0u8; len];
    let n = mem.read(addr, &mut buf);
    buf.truncate(n);
    buf
}

fn read_u64(mem: &dyn Memory, addr: u64) -> Option<u64> {
    let b = read_vec(mem, addr, 8);
    Some(u64::from_le_bytes(b.try_into().ok()?))
}

fn read_u32(mem: &dyn Memory, addr: u64) -> Option<u32> {
    let b = read_vec(mem, addr, 4);
    Some(u32::from_le_bytes(b.try_into().ok()?))
}

fn read_sockaddr(mem: &dyn Memory, addr: u64, len: u64) -> Option<SockAddr> {
    if addr == 0 || len == 0 {
        return None;
    }
    let b = read_vec(mem, addr, usize::try_from(len.min(128)).ok()?);
    Some(crate::decode::sockaddr::parse(&b))
}

/// A `struct msghdr` at `hdr` and ALL its data (every iovec, in order), or `None` when any of
/// it is unreadable or the data is longer than [`MAX_MESSAGE`] (it could not be copied whole).
fn read_msghdr_exact(mem: &dyn Memory, hdr: u64) -> Option<(Vec<u8>, Vec<u8>)> {
    let h = read_vec(mem, hdr, usize::try_from(MSGHDR).ok()?);
    if h.len() != 56 {
        return None;
    }
    let word = |at: usize| u64::from_le_bytes(h[at..at + 8].try_into().unwrap_or([0; 8]));
    let (iov, iovlen) = (word(16), word(24));
    if iovlen > MAX_VEC {
        return None;
    }
    let mut data = Vec::new();
    for i in 0..iovlen {
        let base = read_u64(mem, iov + 16 * i)?;
        let n = usize::try_from(read_u64(mem, iov + 16 * i + 8)?).ok()?;
        if data.len() + n > MAX_MESSAGE {
            return None;
        }
        let part = read_vec(mem, base, n);
        if part.len() != n {
            return None;
        }
        data.extend(part);
    }
    Some((h, data))
}

/// A `struct msghdr` at `hdr`: its address (`msg_name`, if any) and up to `len` bytes of its
/// iovecs, in order.
fn read_msghdr(mem: &dyn Memory, hdr: u64, len: usize) -> (Option<SockAddr>, Vec<u8>) {
    let name = read_u64(mem, hdr).unwrap_or(0);
    let namelen = read_u32(mem, hdr + 8).unwrap_or(0);
    let from = read_sockaddr(mem, name, u64::from(namelen));
    let iov = read_u64(mem, hdr + 16).unwrap_or(0);
    let iovlen = read_u64(mem, hdr + 24).unwrap_or(0).min(MAX_VEC);
    let mut data = Vec::new();
    for i in 0..iovlen {
        if data.len() >= len {
            break;
        }
        let (Some(base), Some(n)) = (read_u64(mem, iov + 16 * i), read_u64(mem, iov + 16 * i + 8))
        else {
            break;
        };
        let want = usize::try_from(n)
            .unwrap_or(usize::MAX)
            .min(len - data.len());
        data.extend(read_vec(mem, base, want));
    }
    (from, data)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::memory::FakeMemory;

    /// A msghdr at 0x1000 naming 10.0.0.53:53, with two iovecs holding "abc" and "defg".
    fn image() -> FakeMemory {
        let base = 0x1000u64;
        let mut m = vec![0u8; 0x200];
        let put = |m: &mut Vec<u8>, at: u64, b: &[u8]| {
            let at = usize::try_from(at - base).unwrap();
            m[at..at + b.len()].copy_from_slice(b);
        };
        // sockaddr_in at 0x1100
        put(
            &mut m,
            0x1100,
            &[2, 0, 0, 53, 10, 0, 0, 53, 0, 0, 0, 0, 0, 0, 0, 0],
        );
        // payloads at 0x1140, 0x1150
        put(&mut m, 0x1140, b"abc");
        put(&mut m, 0x1150, b"defg");
        // iovecs at 0x1180
        put(&mut m, 0x1180, &0x1140u64.to_le_bytes());
        put(&mut m, 0x1188, &3u64.to_le_bytes());
        put(&mut m, 0x1190, &0x1150u64.to_le_bytes());
        put(&mut m, 0x1198, &4u64.to_le_bytes());
        // msghdr at 0x1000
        put(&mut m, 0x1000, &0x1100u64.to_le_bytes());
        put(&mut m, 0x1008, &16u32.to_le_bytes());
        put(&mut m, 0x1010, &0x1180u64.to_le_bytes());
        put(&mut m, 0x1018, &2u64.to_le_bytes());
        FakeMemory { base, bytes: m }
    }

    #[test]
    fn msghdr_name_and_iovecs() {
        let mem = image();
        let (from, data) = read_msghdr(&mem, 0x1000, MAX_MESSAGE);
        assert_eq!(
            from,
            Some(SockAddr::Inet {
                addr: [10, 0, 0, 53],
                port: 53
            })
        );
        assert_eq!(data, b"abcdefg");
        // Only as many bytes as were received.
        assert_eq!(read_msghdr(&mem, 0x1000, 5).1, b"abcde");
        // Unreadable memory: nothing, no panic.
        assert_eq!(read_msghdr(&mem, 0x9000, MAX_MESSAGE), (None, Vec::new()));
        // The exact copy: the header and all the data, or nothing.
        let (hdr, data) = read_msghdr_exact(&mem, 0x1000).unwrap();
        assert_eq!((hdr.len(), data.as_slice()), (56, &b"abcdefg"[..]));
        assert_eq!(read_msghdr_exact(&mem, 0x9000), None);
        assert_eq!(port_of(&from.unwrap()), Some(53));
    }
}
