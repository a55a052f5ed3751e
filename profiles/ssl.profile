# ssl: TLS clients verifying servers (OpenSSL, GnuTLS, Node, Python, curl).
# Shipped with sbx (`include ssl`). Only public trust anchors and configuration; private keys
# are denied outright, even if another rule would allow them. `sbx learn` adds this snippet
# when the trace read what it covers and that shortens the profile (docs/learning.md section 8).

# The trust store: individual certificates, hash links and the bundle.
read /etc/ssl/certs/**
# OpenSSL's configuration file.
read /etc/ssl/openssl.cnf
# The certificates the trust store links to (Debian's ca-certificates package).
read /usr/share/ca-certificates/**
# OpenSSL's default directory: symlinks to /etc/ssl/certs and openssl.cnf.
read /usr/lib/ssl/{certs/**,openssl.cnf,cert.pem}
# Red Hat style trust store.
read /etc/pki/{tls/certs/**,tls/openssl.cnf,ca-trust/**}
# Server private keys: never needed by a client; deny wins over any allow.
deny read /etc/ssl/private/**
