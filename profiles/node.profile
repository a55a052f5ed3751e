# node: the Node.js runtime and npm. Shipped with sbx (`include node`).
# ${HOME}/.npmrc holds registry tokens: only probed (admitted while absent); a project that
# needs it must allow it explicitly, and reviewers should see that line.

include base

# npm's own code, the identity of `npm` for rights bound to it (`read ${HOME}/.npmrc by npm`):
# npm-cli.js as installed with node (Debian, nodesource, official tarballs, nvm, the GitHub
# runners' tool cache). An install script runs as `sh` and its own program, never as npm.
program npm /usr/{,local/}lib/node_modules/npm/bin/npm-cli.js
# Debian's npm package (its modules under /usr/share/nodejs).
program npm /usr/share/nodejs/npm/bin/npm-cli.js
# npm installed by nvm (a node version per directory).
program npm ${HOME}/.nvm/versions/node/*/lib/node_modules/npm/bin/npm-cli.js
# npm in the GitHub runners' tool cache (actions/setup-node).
program npm /opt/hostedtoolcache/node/*/{x64,arm64}/lib/node_modules/npm/bin/npm-cli.js

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
# node, npm and npx from the GitHub runners' tool cache (actions/setup-node puts them first on
# PATH, one directory per version: /opt/hostedtoolcache/node/20.19.1/x64).
# See: tests/ci.rs (a simulated tool cache).
exec /opt/hostedtoolcache/node/*/{x64,arm64}/bin/{node,npm,npx}
# npm and npx of the tool cache run as the scripts their bin/ links point at.
exec /opt/hostedtoolcache/node/*/{x64,arm64}/lib/node_modules/npm/bin/{npm,npx}-cli.js
# The tool cache's node tree: npm's own code, node's headers for node-gyp, the binary itself.
read /opt/hostedtoolcache/node/*/{x64,arm64}/**
# npm's cache (tarballs, content index, logs): the tool's own store, read back, written,
# rotated and pruned on every install, whether this run finds it full or empty. Poisoning
# risk: any process of the workload may rewrite cached tarballs that later installs trust
# (npm checks their integrity against package-lock.json, not against the registry).
# See: tests/learn.rs (npm-demo runs with a fresh HOME).
own ${HOME}/.npm
# npm looks for a user config; admitted only while it does not exist (it holds tokens).
probe ${HOME}/.npmrc
# Global npm configuration (prefix, registry), never credentials by convention.
read /{usr/,}etc/npmrc
# npm puts node_modules/.bin of the project AND of every directory above it on PATH for
# scripts, so `sh` and `node` are looked up there first; admitted only while absent.
# See: tests/learn.rs (portability: a checkout at a different depth).
probe /**/node_modules/.bin/*
# Node looks for a package.json in the script's directory and every directory above it (the
# module type); admitted only while absent, wherever the checkout is.
probe /**/package.json
# Node's resolver (c-ares) looks for these BSD/AIX resolver configs; admitted while absent.
probe /etc/{netsvc,svc}.conf
# npm (detect-libc) reads ldd, a shell script, to tell glibc from musl.
read /usr/bin/ldd
# npm and node-gyp read the node binary's own file (process.execPath).
read /usr/{,local/}bin/{node,nodejs}
# Registry tokens CI passes in the environment (npm reads them through ${NPM_TOKEN} in
# .npmrc; actions/setup-node sets NODE_AUTH_TOKEN): only npm itself sees them, an install
# script started by npm gets an environment without them.
env NPM_TOKEN by npm
# actions/setup-node's name for the same token.
env NODE_AUTH_TOKEN by npm
# npx runs the package binary it is given (`npx vite build`): at the start of a step it is a
# launcher, like the shell (see the `base` snippet); run by an install script it is not.
launcher /usr/{,local/}lib/node_modules/npm/bin/npx-cli.js
# ...and from the GitHub runners' tool cache.
launcher /opt/hostedtoolcache/node/*/{x64,arm64}/lib/node_modules/npm/bin/npx-cli.js
