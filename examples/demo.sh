#!/bin/sh
# sbx end to end: record an offline `npm install` whose dependencies run install scripts,
# learn a profile from the trace, enforce it on a fresh install, then enforce it on a
# compromised copy of a dependency that steals ~/.ssh/id_rsa (sbx kills it).
#
# Usage: examples/demo.sh
#   SBX=/path/to/sbx   use this binary instead of building one (cargo build --release)
#   KEEP=1             keep the scratch directory (traces, profile) and print where it is
#
# Needs node and npm (run with npm 9.2, Debian 12's, and npm 11.19), no network: the packages
# are local tarballs made with `npm pack`. Your HOME, npm cache and TMPDIR are not touched:
# the demo runs with a private HOME (holding a fake key) and TMPDIR under a scratch directory.
set -eu

repo=$(cd "$(dirname "$0")/.." && pwd -P)
for tool in node npm; do
    command -v "$tool" >/dev/null || { echo "demo.sh needs $tool" >&2; exit 1; }
done
npm_install() { npm install --offline --no-audit --no-fund --update-notifier=false; }

name=sbx-demo
# shellcheck source=examples/common.sh
. "$repo/examples/common.sh"

step "Setting up a private HOME with a (fake) SSH key and a private TMPDIR in $work"
home=$work/home
mkdir -p "$home/.ssh" "$work/tmp"
printf '%s\n' '-----BEGIN OPENSSH PRIVATE KEY-----' 'sbx-demo-fake-key' \
    '-----END OPENSSH PRIVATE KEY-----' >"$home/.ssh/id_rsa"
chmod 700 "$home/.ssh"
chmod 600 "$home/.ssh/id_rsa"
export HOME="$home" TMPDIR="$work/tmp" npm_config_cache="$home/.npm"
# Every install starts like a fresh CI machine: no npm cache, empty TMPDIR.
fresh() { rm -rf "$home/.npm" "$work/tmp" && mkdir -p "$work/tmp"; }

step "Packing the demo packages with npm pack (offline; node $(node --version), npm $(npm --version)) into three project copies"
"$repo/examples/npm-demo/prepare.sh" "$work/learn"
"$repo/examples/npm-demo/prepare.sh" "$work/clean"
"$repo/examples/npm-demo/prepare.sh" "$work/compromised" "$repo/examples/npm-demo-compromised"
ls "$work/learn/vendor"

step "Recording: sbx record -- npm install (demo-native's postinstall runs node, sh, sed, mkdtemp)"
fresh
(cd "$work/learn" && "$SBX" record -o "$work/npm.trace" -- \
    npm install --offline --no-audit --no-fund --update-notifier=false)
cat "$work/learn/node_modules/demo-util/stamp.txt"

step "What the install did, summarized: sbx stats"
"$SBX" stats "$work/npm.trace" | head -40

step "Learning a profile from the trace: sbx learn (variables, globs, shipped includes)"
"$SBX" learn "$work/npm.trace" -o "$work/npm.profile"
cat "$work/npm.profile"
echo "($(wc -l <"$work/npm.profile") lines)"

step "Enforcing the profile on a fresh install in another directory: expected to pass"
fresh
if (cd "$work/clean" && "$SBX" enforce "$work/npm.profile" -- \
    npm install --offline --no-audit --no-fund --update-notifier=false); then
    echo "clean install: passed under enforce"
else
    status=$?
    echo "UNEXPECTED: the clean install failed under enforce (exit $status)"
    exit 1
fi

step "Enforcing the same profile on the compromised dependency (reads ~/.ssh/id_rsa): expected to be killed (exit 124)"
fresh
status=0
(cd "$work/compromised" && "$SBX" enforce "$work/npm.profile" -- \
    npm install --offline --no-audit --no-fund --update-notifier=false) || status=$?
stolen="$work/compromised/node_modules/demo-native/.cache/k"
if [ "$status" -eq 124 ] && [ ! -e "$stolen" ]; then
    echo "compromised install: killed by sbx (exit 124) before the key was copied"
else
    echo "UNEXPECTED: exit $status; stolen copy present: $([ -e "$stolen" ] && echo yes || echo no)"
    exit 1
fi

step "Without sbx the same install would have copied the key (shown here, no sbx)"
fresh
(cd "$work/compromised" && rm -rf node_modules package-lock.json && npm_install >/dev/null 2>&1)
if [ -e "$stolen" ]; then
    echo "without sbx: $stolen now holds: $(head -2 "$stolen" | tail -1)"
fi
