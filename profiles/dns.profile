# dns: host name resolution through glibc (getaddrinfo) or a runtime's own resolver.
# Shipped with sbx (`include dns`).
# Only the name servers of /etc/resolv.conf are reachable (${NAMESERVERS}, expanded when
# enforce starts). Which names may be asked is up to the profile: `resolve NAME` rules and
# tcp/udp rules that name a host (`connect tcp registry.npmjs.org:443`); a query for any
# other name is a violation. CAVEAT: data can still leave in queries for allowed names'
# subdomains if the profile allows them (`resolve *.example`), and queries sent with
# write() are not seen (docs/security.md, "DNS").

# Name servers and search domains.
read /etc/resolv.conf
# systemd-resolved: /etc/resolv.conf is a symlink to one of these.
read /run/systemd/resolve/{resolv.conf,stub-resolv.conf}
# Static host names (localhost).
read /etc/hosts
# Address sorting rules for getaddrinfo; usually absent.
read /etc/gai.conf
# Resolver options (multi on/off); usually absent.
read /etc/host.conf
# Queries to the name servers over UDP (glibc connects its UDP socket first).
connect udp ${NAMESERVERS}:53
# Queries sent without connect (sendto with an address).
send udp ${NAMESERVERS}:53
# Truncated answers are retried over TCP.
connect tcp ${NAMESERVERS}:53
# glibc asks the name service cache daemon first; admitted only while absent.
probe /{var/,}run/nscd/socket
# The same check as a socket connect (fails with ENOENT when nscd is not running).
connect unix /{var/,}run/nscd/socket
