# Shared by examples/demo.sh and examples/make-demo.sh (sourced, not run): `step`, the sbx
# binary in $SBX (built with cargo unless given), and a scratch directory $work removed at
# exit (kept with KEEP=1). Needs $repo (the checkout) and $name (the scratch prefix).

step() { printf '\n==> %s\n' "$*"; }

if [ -z "${SBX:-}" ]; then
    command -v cargo >/dev/null || {
        echo "$0: building sbx needs cargo (Rust 1.88+); or run with SBX=/path/to/sbx" >&2
        exit 1
    }
    step "Building sbx: cargo build --release in $repo"
    echo "The first build downloads and compiles about 65 crates (3-4 minutes on a busy 2-CPU"
    echo "machine); later runs take seconds. Cargo's progress follows (SBX=/path/to/sbx skips it)."
    (cd "$repo" && cargo build --release)
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
