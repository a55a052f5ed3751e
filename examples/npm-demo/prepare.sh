#!/bin/sh
# Prepare an offline npm project in DEST from an example tree (default: this directory):
# copy SRC/app/* to DEST (with @DEST@ replaced by DEST's absolute path) and pack each SRC/packages/* into DEST/vendor with `npm pack`.
# The tarballs are generated here, never committed. No registry is contacted.
#
# Usage: prepare.sh DEST [SRC]
set -eu
dest=${1:?usage: prepare.sh DEST [SRC]}
src=${2:-$(dirname "$0")}
mkdir -p "$dest/vendor"
dest=$(cd "$dest" && pwd -P)
cp "$src"/app/* "$dest"/
# npm 11 approves a file: dependency's install scripts when package.json's allowScripts names
# its tarball by absolute path (`npm install-scripts approve NAME` writes the same); without
# it npm 11.19 warns (and refuses with --strict-allow-scripts). npm 9 ignores allowScripts.
sed -i "s|@DEST@|$dest|g" "$dest/package.json"
# npm pack wants a cache; keep it out of the user's ~/.npm unless the caller chose one.
if [ -z "${npm_config_cache:-}" ]; then
    npm_config_cache=$(mktemp -d)
    trap 'rm -rf "$npm_config_cache"' EXIT
    export npm_config_cache
fi
for pkg in "$src"/packages/*/; do
    npm pack --offline --silent --pack-destination "$dest/vendor" "$pkg" >/dev/null
done
