# yarn: the Yarn package manager, classic (1.x) and berry (2+). Shipped with sbx (`include
# yarn`, added by `sbx learn` when the trace ran yarn). Its config files (${HOME}/.yarnrc,
# ${HOME}/.yarnrc.yml) can hold registry tokens (npmAuthToken): only probed here.

include node

# yarn's own code, the identity of `yarn` for rights bound to it: the npm package's entry
# (installed globally or into any prefix; Debian's yarnpkg), and berry's per-project release.
program yarn /**/node_modules/yarn/bin/yarn.js
# Debian's yarnpkg package.
program yarn /usr/share/nodejs/yarn/bin/yarn.js
# Berry: the release a project pins in .yarn/releases (corepack's copies included).
program yarn /**/.yarn/releases/yarn-*.cjs
# corepack's cache of yarn releases.
program yarn ${HOME}/.cache/node/corepack/**/yarn.js

# yarn 1's cache of package tarballs and unpacked packages (XDG layout), read back on every
# install, whether this run finds it warm or cold; read by everything (packages are linked
# from it).
read ${HOME}/.cache/yarn/**
# ...written by yarn alone. Poisoning risk: a package planted here is what later installs
# copy into node_modules (yarn checks the lockfile's integrity only when it downloads).
own ${HOME}/.cache/yarn by yarn
# Berry's global cache and metadata (enableGlobalCache), read by everything.
read ${HOME}/.yarn/berry/**
# ...written by yarn alone (same risk).
own ${HOME}/.yarn/berry by yarn
# yarn looks for its user configs; admitted only while they do not exist (they hold tokens).
probe ${HOME}/.yarnrc
# ...berry's.
probe ${HOME}/.yarnrc.yml
