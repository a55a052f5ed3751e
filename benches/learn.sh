#!/usr/bin/env bash
# Learn time and peak memory on synthetic traces of 100k and 1M events (issue 3): learn must
# stream, so memory follows the distinct paths, not the number of events.
#   bash benches/learn.sh   # prints a markdown table
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet --example synth_trace
cargo build --release --quiet
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "| events | trace bytes | learn wall s | learn peak RSS MiB | profile lines |"
echo "|---|---|---|---|---|"
for n in 100000 1000000; do
  target/release/examples/synth_trace "$tmp/s.trace" "$n" 2>/dev/null
  /usr/bin/time -f "%e %M" -o "$tmp/time" target/release/sbx learn "$tmp/s.trace" -o "$tmp/p.profile"
  read -r wall kib < "$tmp/time"
  echo "| $n | $(stat -c %s "$tmp/s.trace") | $wall | $((kib / 1024)) | $(wc -l < "$tmp/p.profile") |"
done
