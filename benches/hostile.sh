#!/usr/bin/env bash
# Hostile traces (issue 39 item 8): what `sbx stats`, `show` and `learn` cost on traces built
# to expand (a big string named by one-byte ids again and again) and on an honest trace of
# 20,000 distinct execs (learn's exec rules). Prints a markdown table: wall seconds, peak RSS,
# exit code (125: refused with a one-line error).
#   bash benches/hostile.sh                      # this tree's release build
#   SBX=/path/to/old/sbx TIMEOUT=60 bash benches/hostile.sh   # another build, each run capped
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet --example hostile_trace
if [ -z "${SBX:-}" ]; then
  cargo build --release --quiet
  SBX=${CARGO_TARGET_DIR:-target}/release/sbx
fi
TIMEOUT=${TIMEOUT:-600}
# Address-space cap so that a reader that asks for terabytes fails instead of swapping.
AS=${AS:-$((8 << 30))}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
gen=${CARGO_TARGET_DIR:-target}/release/examples/hostile_trace
$gen one "$tmp/one-1m.trace" 1048576
$gen argv "$tmp/argv-1m.trace" 1048576
$gen path "$tmp/path-1m.trace" 1048576
$gen one "$tmp/one-16m.trace" 16777215
$gen execs "$tmp/execs-20k.trace" 20000
echo "| trace | bytes | command | wall s | peak RSS MiB | exit |"
echo "|---|---|---|---|---|---|"
for t in one-1m argv-1m path-1m one-16m execs-20k; do
  f="$tmp/$t.trace"
  for c in stats show learn; do
    case $c in
      learn) args=(learn "$f" -o "$tmp/p.profile") ;;
      *) args=("$c" "$f") ;;
    esac
    set +e
    /usr/bin/time -f "%e %M" -o "$tmp/time" prlimit --as="$AS" timeout "$TIMEOUT" "$SBX" "${args[@]}" >/dev/null 2>"$tmp/err"
    rc=$?
    set -e
    read -r wall kib < <(tail -1 "$tmp/time")
    case $rc in
      124) rc="timeout ${TIMEOUT}s" ;;
      134) rc="134 (allocation failed)" ;;
    esac
    echo "| $t | $(stat -c %s "$f") | $c | $wall | $((kib / 1024)) | $rc |"
  done
done
