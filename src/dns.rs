//! Host names: what the workload's own DNS traffic and `/etc/hosts` say about the addresses it
//! connects to. Pure functions of bytes and text; the sinks feed them what the tracer reads.
//!
//! - [`query_names`] reads the question names of a DNS query (checked against `resolve` and
//!   named `connect` rules before it leaves, in enforce);
//! - [`parse_answer`] reads an answer: the question name and the addresses of its A/AAAA
//!   records, following the CNAME chain from the question (records about other names, e.g.
//!   in the additional section, are ignored: they would let a resolver vouch for anything);
//! - [`DnsBook`] remembers, for one run, which names resolved to each address, so a connect
//!   can be decided by name;
//! - [`name_matches`] is the name glob of profiles (`*.npmjs.org`);
//! - [`parse_hosts`] and [`nameservers`] read `/etc/hosts` and `/etc/resolv.conf`.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use simple_dns::Packet;
use simple_dns::rdata::RData;

/// The DNS port.
pub const PORT: u16 = 53;

/// The name of a DNS payload that could not be parsed (a query nobody can check). Only a
/// `resolve *` rule admits it.
pub const MALFORMED: &str = "(malformed)";

/// A name as profiles and events write it: lower case, no trailing dot.
pub fn normalize(name: &str) -> String {
    name.trim_end_matches('.').to_ascii_lowercase()
}

/// The question names of a DNS query message (`None` when `msg` is not a well-formed query).
pub fn query_names(msg: &[u8]) -> Option<Vec<String>> {
    let p = Packet::parse(msg).ok()?;
    if msg.len() < 3 || msg[2] & 0x80 != 0 {
        return None; // QR set: an answer
    }
    Some(
        p.questions
            .iter()
            .map(|q| normalize(&q.qname.to_string()))
            .collect(),
    )
}

/// What one DNS answer says: the question name and where it points.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    pub name: String,
    /// Addresses of the A/AAAA records on the question's CNAME chain, in answer order.
    pub addrs: Vec<IpAddr>,
}

/// Parse a DNS answer (QR set). `None` when it is not one.
pub fn parse_answer(msg: &[u8]) -> Option<Answer> {
    if msg.len() < 3 || msg[2] & 0x80 == 0 {
        return None;
    }
    let p = Packet::parse(msg).ok()?;
    let name = normalize(&p.questions.first()?.qname.to_string());
    // The chain: the question name, then every CNAME target reachable from it.
    let mut chain = vec![name.clone()];
    loop {
        let before = chain.len();
        for rr in &p.answers {
            if let RData::CNAME(c) = &rr.rdata {
                let owner = normalize(&rr.name.to_string());
                let target = normalize(&c.0.to_string());
                if chain.contains(&owner) && !chain.contains(&target) {
                    chain.push(target);
                }
            }
        }
        if chain.len() == before || chain.len() > 16 {
            break;
        }
    }
    let mut addrs = Vec::new();
    for rr in &p.answers {
        if !chain.contains(&normalize(&rr.name.to_string())) {
            continue;
        }
        let ip = match &rr.rdata {
            RData::A(a) => IpAddr::V4(Ipv4Addr::from(a.address)),
            RData::AAAA(a) => IpAddr::V6(Ipv6Addr::from(a.address)),
            _ => continue,
        };
        if !addrs.contains(&ip) {
            addrs.push(ip);
        }
    }
    Some(Answer { name, addrs })
}

/// A DNS-over-TCP stream starts each message with its 2-byte length: the first message.
pub fn tcp_message(stream: &[u8]) -> Option<&[u8]> {
    let len = usize::from(u16::from_be_bytes([*stream.first()?, *stream.get(1)?]));
    stream.get(2..2 + len)
}

/// Which names resolved to which addresses during one run (across the whole process tree).
#[derive(Debug, Clone, Default)]
pub struct DnsBook {
    names: HashMap<IpAddr, Vec<String>>,
}

impl DnsBook {
    /// Remember that `name` resolved to `addrs`. The latest name comes first.
    pub fn learn(&mut self, name: &str, addrs: &[IpAddr]) {
        for ip in addrs {
            let v = self.names.entry(canonical(*ip)).or_default();
            v.retain(|n| n != name);
            v.insert(0, name.to_string());
        }
    }

    /// The names that resolved to `ip` in this run, latest first.
    pub fn names(&self, ip: IpAddr) -> &[String] {
        self.names.get(&canonical(ip)).map_or(&[], Vec::as_slice)
    }
}

/// IPv4-mapped IPv6 addresses (`::ffff:1.2.3.4`, how dual-stack sockets connect to IPv4) are
/// the IPv4 address.
pub fn canonical(ip: IpAddr) -> IpAddr {
    ip.to_canonical()
}

/// Whether an address is loopback (`127/8`, `::1`): such peers stay exact in profiles.
pub fn is_loopback(ip: IpAddr) -> bool {
    canonical(ip).is_loopback()
}

/// Check a name pattern of a profile: labels of letters, digits, `-`, `_` and `*` (any run of
/// characters inside one label), separated by dots; a first label `**` stands for one or more
/// labels. Returns the normalized pattern.
pub fn check_name_pattern(p: &str) -> Result<String, String> {
    let n = normalize(p);
    if n.is_empty() {
        return Err("empty host name".into());
    }
    if n.len() > 253 {
        return Err("host name longer than 253 characters".into());
    }
    for (i, label) in n.split('.').enumerate() {
        if label.is_empty() {
            return Err("empty label (two dots in a row?)".into());
        }
        if label.len() > 63 {
            return Err(format!("label {label:?} longer than 63 characters"));
        }
        if label == "**" {
            if i != 0 {
                return Err("** is only allowed as the first label (**.example.org)".into());
            }
            continue;
        }
        if let Some(c) = label
            .chars()
            .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '*')))
        {
            return Err(format!("unexpected character {c:?} in host name"));
        }
    }
    Ok(n)
}

/// Whether the normalized `name` matches the normalized name pattern `pattern`:
/// `*` inside a label matches any characters of that label; a first label `**` matches one
/// or more labels; everything else is compared exactly (names are lower case).
pub fn name_matches(pattern: &str, name: &str) -> bool {
    let pat: Vec<&str> = pattern.split('.').collect();
    let labels: Vec<&str> = name.split('.').collect();
    match pat.split_first() {
        Some((&"**", rest)) => {
            labels.len() > rest.len() && labels_match(rest, &labels[labels.len() - rest.len()..])
        }
        _ => pat.len() == labels.len() && labels_match(&pat, &labels),
    }
}

fn labels_match(pat: &[&str], labels: &[&str]) -> bool {
    pat.iter()
        .zip(labels)
        .all(|(p, l)| wildcard(p.as_bytes(), l.as_bytes()))
}

/// `*` matches any run of bytes; everything else matches itself. Linear backtracking to the
/// last star (no exponential blow-up on `*a*a*a...`).
fn wildcard(p: &[u8], s: &[u8]) -> bool {
    let (mut pi, mut si) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while si < s.len() {
        if pi < p.len() && p[pi] == b'*' {
            star = Some((pi, si));
            pi += 1;
        } else if pi < p.len() && p[pi] == s[si] {
            pi += 1;
            si += 1;
        } else if let Some((sp, ss)) = star {
            pi = sp + 1;
            si = ss + 1;
            star = Some((sp, ss + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == b'*')
}

/// The `name -> address` lines of an `/etc/hosts` file (every alias of a line counts).
pub fn parse_hosts(text: &str) -> Vec<(String, IpAddr)> {
    let mut out = Vec::new();
    for line in text.lines() {
        let line = line.split('#').next().unwrap_or("");
        let mut words = line.split_whitespace();
        let Some(ip) = words.next().and_then(|w| w.parse::<IpAddr>().ok()) else {
            continue;
        };
        for name in words {
            out.push((normalize(name), ip));
        }
    }
    out
}

/// The `nameserver` addresses of a `resolv.conf`.
pub fn nameservers(text: &str) -> Vec<IpAddr> {
    text.lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            (w.next() == Some("nameserver"))
                .then(|| w.next())
                .flatten()
                // A scoped IPv6 server (fe80::1%eth0): the address without the scope.
                .and_then(|a| a.split('%').next())
                .and_then(|a| a.parse::<IpAddr>().ok())
        })
        .collect()
}

/// Is `addr` (a TCP peer) one of the run's own servers: listening on that address and port,
/// or on the wildcard address and that port while `addr` is a loopback address?
pub fn own_listener(own: &[(IpAddr, u16)], addr: &crate::event::SockAddr) -> bool {
    let (ip, port) = match addr {
        crate::event::SockAddr::Inet { addr, port } => (IpAddr::from(*addr), *port),
        crate::event::SockAddr::Inet6 { addr, port, .. } => (IpAddr::from(*addr), *port),
        _ => return false,
    };
    let ip = canonical(ip);
    own.iter().any(|(l, p)| {
        let l = canonical(*l);
        *p == port && (l == ip || (l.is_unspecified() && is_loopback(ip)))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A DNS message: header (id 0x1234, `flags`), one question, then `answers`.
    pub(crate) fn message(flags: u16, qname: &str, answers: &[(&str, u16, Vec<u8>)]) -> Vec<u8> {
        let mut m = vec![0x12, 0x34];
        m.extend_from_slice(&flags.to_be_bytes());
        m.extend_from_slice(&1u16.to_be_bytes());
        m.extend_from_slice(&u16::try_from(answers.len()).unwrap().to_be_bytes());
        m.extend_from_slice(&[0, 0, 0, 0]);
        let name = |m: &mut Vec<u8>, n: &str| {
            for l in n.split('.').filter(|l| !l.is_empty()) {
                m.push(u8::try_from(l.len()).unwrap());
                m.extend_from_slice(l.as_bytes());
            }
            m.push(0);
        };
        name(&mut m, qname);
        m.extend_from_slice(&[0, 1, 0, 1]);
        for (owner, ty, rdata) in answers {
            name(&mut m, owner);
            m.extend_from_slice(&ty.to_be_bytes());
            m.extend_from_slice(&[0, 1, 0, 0, 0, 60]);
            m.extend_from_slice(&u16::try_from(rdata.len()).unwrap().to_be_bytes());
            m.extend_from_slice(rdata);
        }
        m
    }

    fn encoded(n: &str) -> Vec<u8> {
        let mut m = Vec::new();
        for l in n.split('.') {
            m.push(u8::try_from(l.len()).unwrap());
            m.extend_from_slice(l.as_bytes());
        }
        m.push(0);
        m
    }

    #[test]
    fn queries_and_answers() {
        let q = message(0x0100, "Registry.NPMjs.org.", &[]);
        assert_eq!(
            query_names(&q),
            Some(vec!["registry.npmjs.org".to_string()])
        );
        assert_eq!(parse_answer(&q), None, "a query is not an answer");
        let a = message(
            0x8180,
            "registry.npmjs.org",
            &[
                ("registry.npmjs.org", 5, encoded("cdn.example.net")),
                ("cdn.example.net", 1, vec![104, 16, 1, 34]),
                (
                    "cdn.example.net",
                    28,
                    [0u8; 15].iter().chain(&[1]).copied().collect(),
                ),
                // Not on the chain: ignored.
                ("evil.example", 1, vec![6, 6, 6, 6]),
            ],
        );
        assert_eq!(query_names(&a), None, "an answer is not a query");
        let ans = parse_answer(&a).unwrap();
        assert_eq!(ans.name, "registry.npmjs.org");
        assert_eq!(
            ans.addrs,
            vec![
                "104.16.1.34".parse::<IpAddr>().unwrap(),
                "::1".parse::<IpAddr>().unwrap()
            ]
        );
    }

    #[test]
    fn garbage_is_neither() {
        for bytes in [&b""[..], b"\x12", b"\x12\x34\x81\x80\x00\x05", &[0xff; 40]] {
            assert_eq!(query_names(bytes), None);
            assert_eq!(parse_answer(bytes), None);
        }
        let q = message(0x0100, "a.b", &[]);
        let mut framed = u16::try_from(q.len()).unwrap().to_be_bytes().to_vec();
        framed.extend_from_slice(&q);
        assert_eq!(tcp_message(&framed), Some(q.as_slice()));
        assert_eq!(tcp_message(&framed[..framed.len() - 1]), None);
    }

    #[test]
    fn book_keeps_latest_name_first() {
        let mut b = DnsBook::default();
        let ip: IpAddr = "10.0.0.1".parse().unwrap();
        b.learn("a.example", &[ip]);
        b.learn("b.example", &[ip]);
        assert_eq!(b.names(ip), ["b.example", "a.example"]);
        b.learn("a.example", &[ip]);
        assert_eq!(b.names(ip), ["a.example", "b.example"]);
        let mapped: IpAddr = "::ffff:10.0.0.1".parse().unwrap();
        assert_eq!(b.names(mapped), ["a.example", "b.example"]);
        assert!(b.names("10.0.0.2".parse().unwrap()).is_empty());
    }

    #[test]
    fn name_globs() {
        let yes = [
            ("registry.npmjs.org", "registry.npmjs.org"),
            ("*.npmjs.org", "registry.npmjs.org"),
            ("**.npmjs.org", "a.b.npmjs.org"),
            ("registry*.npmjs.org", "registry2.npmjs.org"),
            ("*", "localhost"),
            ("a*b*c", "aXbYc"),
            ("*b", "abb"),
        ];
        let no = [
            ("*.npmjs.org", "npmjs.org"),
            ("*.npmjs.org", "a.b.npmjs.org"),
            ("**.npmjs.org", "npmjs.org"),
            ("*.npmjs.org", "npmjs.org.evil.example"),
            ("registry.npmjs.org", "registry.npmjs.org.evil.example"),
            ("*", "a.b"),
            ("r*y.npmjs.org", "registry.npmjs.org.x"),
            ("a*b*c", "aXbYd"),
        ];
        for (p, n) in yes {
            assert!(name_matches(p, n), "{p} should match {n}");
        }
        for (p, n) in no {
            assert!(!name_matches(p, n), "{p} should not match {n}");
        }
        assert_eq!(
            check_name_pattern("Registry.NPMjs.org.").unwrap(),
            "registry.npmjs.org"
        );
        for bad in ["", "a..b", "a.**.b", "a b", "a/b", &"x".repeat(64)] {
            assert!(check_name_pattern(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn hosts_and_resolv_conf() {
        let hosts = "127.0.0.1 localhost\n# c\n10.1.2.3  Reg.Example  reg # alias\nbad line\n::1 ip6-localhost\n";
        assert_eq!(
            parse_hosts(hosts),
            vec![
                ("localhost".into(), "127.0.0.1".parse().unwrap()),
                ("reg.example".into(), "10.1.2.3".parse().unwrap()),
                ("reg".into(), "10.1.2.3".parse().unwrap()),
                ("ip6-localhost".into(), "::1".parse().unwrap()),
            ]
        );
        let conf = "search x\nnameserver 10.0.0.53\nnameserver fe80::1%eth0\nnameserver junk\n";
        assert_eq!(
            nameservers(conf),
            vec![
                "10.0.0.53".parse::<IpAddr>().unwrap(),
                "fe80::1".parse::<IpAddr>().unwrap()
            ]
        );
    }

    proptest::proptest! {
        #[test]
        fn parsers_never_panic(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..600)) {
            let _ = query_names(&bytes);
            let _ = parse_answer(&bytes);
            let _ = tcp_message(&bytes);
        }
    }
}
