//! `struct sockaddr` bytes → [`SockAddr`].
//!
//! Pure and total: any byte string gives an answer, never a panic (property-tested). Lengths
//! follow the kernel's checks, so an address the kernel would refuse with EINVAL is
//! [`SockAddr::Invalid`]. `sa_family` and `sin6_scope_id` are in host order (little-endian on
//! every architecture sbx supports); ports are in network order.

use crate::event::SockAddr;

pub const AF_UNIX: u16 = 1;
pub const AF_INET: u16 = 2;
pub const AF_INET6: u16 = 10;
pub const AF_NETLINK: u16 = 16;
/// `sizeof(struct sockaddr_in)`.
const SOCKADDR_IN_LEN: usize = 16;
/// `SIN6_LEN_RFC2133`: the shortest sockaddr_in6 the kernel accepts (no scope id).
const SOCKADDR_IN6_MIN: usize = 24;
/// `sizeof(struct sockaddr_un)`.
const SOCKADDR_UN_LEN: usize = 110;
/// `sizeof(struct sockaddr_storage)`: the most the decoder reads.
pub const SOCKADDR_MAX: usize = 128;
/// `sizeof(((struct sockaddr_un *)0)->sun_path)`: a unix path and its NUL must fit.
pub const SUN_PATH_LEN: usize = 108;

fn invalid(bytes: &[u8]) -> SockAddr {
    SockAddr::Invalid {
        len: u32::try_from(bytes.len()).unwrap_or(u32::MAX),
    }
}

/// Parse the `addrlen` bytes of a socket address.
pub fn parse(bytes: &[u8]) -> SockAddr {
    let Some(&[f0, f1]) = bytes.get(..2) else {
        return invalid(bytes);
    };
    let family = u16::from_le_bytes([f0, f1]);
    match family {
        AF_INET => {
            if bytes.len() < SOCKADDR_IN_LEN {
                return invalid(bytes);
            }
            let port = u16::from_be_bytes([bytes[2], bytes[3]]);
            let addr = [bytes[4], bytes[5], bytes[6], bytes[7]];
            SockAddr::Inet { addr, port }
        }
        AF_INET6 => {
            if bytes.len() < SOCKADDR_IN6_MIN {
                return invalid(bytes);
            }
            let port = u16::from_be_bytes([bytes[2], bytes[3]]);
            let mut addr = [0u8; 16];
            addr.copy_from_slice(&bytes[8..24]);
            let scope_id = match bytes.get(24..28) {
                Some(&[a, b, c, d]) => u32::from_le_bytes([a, b, c, d]),
                _ => 0,
            };
            SockAddr::Inet6 {
                addr,
                port,
                scope_id,
            }
        }
        AF_UNIX => {
            if bytes.len() > SOCKADDR_UN_LEN {
                return invalid(bytes);
            }
            let path = &bytes[2..];
            match path.first() {
                None => SockAddr::UnixUnnamed,
                // Abstract names are exactly addrlen - 3 bytes, NULs included.
                Some(0) => SockAddr::UnixAbstract(path[1..].to_vec()),
                Some(_) => {
                    let end = path.iter().position(|&b| b == 0).unwrap_or(path.len());
                    SockAddr::Unix(path[..end].to_vec())
                }
            }
        }
        AF_NETLINK => {
            // struct sockaddr_nl { u16 family; u16 pad; u32 pid; u32 groups; }
            if bytes.len() < 12 {
                return invalid(bytes);
            }
            let word =
                |i: usize| u32::from_ne_bytes([bytes[i], bytes[i + 1], bytes[i + 2], bytes[i + 3]]);
            SockAddr::Netlink {
                protocol: None,
                port_id: word(4),
                groups: word(8),
            }
        }
        _ => SockAddr::Other {
            family,
            bytes: bytes.to_vec(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn inet(port: u16, addr: [u8; 4]) -> Vec<u8> {
        let mut b = vec![2, 0];
        b.extend_from_slice(&port.to_be_bytes());
        b.extend_from_slice(&addr);
        b.extend_from_slice(&[0; 8]);
        b
    }

    fn unix(path: &[u8]) -> Vec<u8> {
        let mut b = vec![1, 0];
        b.extend_from_slice(path);
        b
    }

    #[test]
    fn table() {
        let mut v6 = vec![10, 0, 0x01, 0xbb, 0, 0, 0, 0];
        let lo6: [u8; 16] = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];
        v6.extend_from_slice(&lo6);
        let mut v6_scope = v6.clone();
        v6_scope.extend_from_slice(&7u32.to_le_bytes());
        let cases: Vec<(Vec<u8>, SockAddr)> = vec![
            (
                inet(443, [1, 2, 3, 4]),
                SockAddr::Inet {
                    addr: [1, 2, 3, 4],
                    port: 443,
                },
            ),
            (
                inet(53, [127, 0, 0, 53])[..15].to_vec(),
                SockAddr::Invalid { len: 15 },
            ),
            (
                v6.clone(),
                SockAddr::Inet6 {
                    addr: lo6,
                    port: 443,
                    scope_id: 0,
                },
            ),
            (
                v6_scope,
                SockAddr::Inet6 {
                    addr: lo6,
                    port: 443,
                    scope_id: 7,
                },
            ),
            (v6[..23].to_vec(), SockAddr::Invalid { len: 23 }),
            (
                unix(b"/run/x.sock\0junk"),
                SockAddr::Unix(b"/run/x.sock".to_vec()),
            ),
            (unix(b"/run/nonul"), SockAddr::Unix(b"/run/nonul".to_vec())),
            (
                unix(b"\0abs\0ns"),
                SockAddr::UnixAbstract(b"abs\0ns".to_vec()),
            ),
            (unix(b""), SockAddr::UnixUnnamed),
            (unix(&[b'a'; 109]), SockAddr::Invalid { len: 111 }),
            // A netlink address shorter than sockaddr_nl is refused by the kernel.
            (vec![16, 0, 1, 2], SockAddr::Invalid { len: 4 }),
            (
                vec![16, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0],
                SockAddr::Netlink {
                    protocol: None,
                    port_id: 0,
                    groups: 1,
                },
            ),
            (
                vec![17, 0, 1, 2],
                SockAddr::Other {
                    family: 17,
                    bytes: vec![17, 0, 1, 2],
                },
            ),
            (vec![2], SockAddr::Invalid { len: 1 }),
            (vec![], SockAddr::Invalid { len: 0 }),
        ];
        for (bytes, want) in cases {
            assert_eq!(parse(&bytes), want, "{bytes:?}");
        }
    }

    proptest! {
        #[test]
        fn never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = parse(&bytes);
        }

        #[test]
        fn inet_round_trips(port: u16, addr: [u8; 4]) {
            prop_assert_eq!(parse(&inet(port, addr)), SockAddr::Inet { addr, port });
        }
    }
}
