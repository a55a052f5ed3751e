# Shared by examples/demo.sh and examples/make-demo.sh (sourced, not run): `step`, the sbx
# binary in $SBX (built with cargo unless given), and a scratch directory $work removed at
# exit (kept with KEEP=1). Needs $repo (the checkout) and $name (the scratch prefix).

step() { printf '\n==> %s\n' "$*"; }

if [ -z "${SBX:-}" ]; then
    step "Building sbx (cargo build --release)"
    (cd "$repo" && cargo build --release --quiet)
    SBX=$repo/target/release/sbx
fi
SBX=$(cd "$(dirname "$SBX")" && pwd -P)/$(basename "$SBX")

work=$(mktemp -d "${TMPDIR:-/tmp}/$name.XXXXXX")
work=$(cd "$work" && pwd -P)
if [ "${KEEP:-}" = 1 ]; then
    trap 'echo; echo "scratch directory kept: $work"' EXIT
else
    trap 'rm -rf "$work"' EXIT
fi
