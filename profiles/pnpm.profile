# pnpm: the pnpm package manager. Shipped with sbx (`include pnpm`, added by `sbx learn` when
# the trace ran pnpm). Tokens live in .npmrc files, which stay secret places (only probed).

include node

# pnpm's own program, the identity of `pnpm` for rights bound to it: the npm package's entry
# script (pnpm up to 10) or its native binary (pnpm 11+, from @pnpm/exe), in any prefix.
program pnpm /**/node_modules/pnpm/bin/pnpm.{cjs,mjs}
# ...the native binary the package installs.
program pnpm /**/node_modules/{pnpm/pnpm,@pnpm/exe*/pnpm}
# The standalone installer's copy (get.pnpm.io) and the GitHub action's.
program pnpm ${HOME}/.local/share/pnpm/{pnpm,.tools/**}

# pnpm's content-addressed store (store-dir, ${HOME}/.local/share/pnpm/store by default) and
# its global packages: the tool's own store, warm or cold; every package of every project is
# hard-linked from it, so it is read by everything.
read ${HOME}/.local/share/pnpm/**
# ...written by pnpm alone. Poisoning risk: a file changed here changes every project that
# links it (pnpm verifies the store's integrity only on a fresh fetch).
own ${HOME}/.local/share/pnpm by pnpm
# pnpm's metadata cache (registry answers), read and written by pnpm.
own ${HOME}/.cache/pnpm by pnpm
# pnpm's state (the last update check).
own ${HOME}/.local/state/pnpm by pnpm
# pnpm keeps its store's operation locks in /tmp whatever TMPDIR says, one directory per uid,
# left for the next run (sbx cannot name the uid here: any such directory, for pnpm alone).
own /tmp/pnpm-store-operation-locks-* by pnpm
