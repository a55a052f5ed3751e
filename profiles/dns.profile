# dns: host name resolution through glibc (getaddrinfo) or a runtime's own resolver.
# Shipped with sbx (`include dns`).
# CAVEAT: allowing DNS allows DNS tunnelling. A workload can leak data by resolving
# names like <data>.attacker.example through any resolver; sbx does not inspect queries.
# Include this snippet only for workloads that need the network anyway.

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
# Queries to any name server over UDP (glibc connects its UDP socket first).
connect udp *:53
# Queries sent without connect (sendto with an address).
send udp *:53
# Truncated answers are retried over TCP.
connect tcp *:53
# glibc asks the name service cache daemon first; admitted only while absent.
probe /{var/,}run/nscd/socket
# The same check as a socket connect (fails with ENOENT when nscd is not running).
connect unix /{var/,}run/nscd/socket
