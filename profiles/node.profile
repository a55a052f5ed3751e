# node: the Node.js runtime and npm. Shipped with sbx (`include node`).
# ${HOME}/.npmrc holds registry tokens: only probed (admitted while absent); a project that
# needs it must allow it explicitly, and reviewers should see that line.

include base

# The node binary, as installed by Debian packages, nodesource and official tarballs.
exec /usr/{,local/}bin/{node,nodejs}
# npm and npx are node scripts started through their symlinks.
exec /usr/{,local/}bin/{npm,npx}
# npm itself and globally installed packages (the global prefix /usr or /usr/local).
read /usr/{,local/}lib/node_modules/**
# Debian's split node libraries (nodejs packages outside node_modules).
read /usr/share/nodejs/**
# Node's own shared libraries and ICU data on distributions that package them separately.
read /usr/share/node/**
# The npm cache (tarballs, index, logs): read back on every install.
read ${HOME}/.npm/**
# The npm cache is written during installs; logs go to ${HOME}/.npm/_logs.
write ${HOME}/.npm/**
# The first install creates the cache directory itself.
# See: tests/learn.rs (npm-demo runs with a fresh HOME).
write ${HOME}/.npm
# npm rotates its cache and logs with rename and unlink.
delete ${HOME}/.npm/**
# npm looks for a user config; admitted only while it does not exist (it holds tokens).
probe ${HOME}/.npmrc
# Global npm configuration (prefix, registry), never credentials by convention.
read /{usr/,}etc/npmrc
# libuv and V8 size thread pools and heaps from the cgroup limits.
read /sys/fs/cgroup/**
# npm puts node_modules/.bin of the project AND of every directory above it on PATH for
# scripts, so `sh` and `node` are looked up there first; admitted only while absent.
# See: tests/learn.rs (portability: a checkout at a different depth).
probe /**/node_modules/.bin/*
