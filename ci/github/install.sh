#!/usr/bin/env bash
# Installs sbx for the GitHub Action (action.yml at the repository's root).
#
#   INPUT_INSTALL=auto     the release binary when ci/checksums.txt pins one for this version
#                          and architecture, else a build from the action's own source
#   INPUT_INSTALL=release  the release binary, verified against the pinned checksum; fails
#                          when none is pinned
#   INPUT_INSTALL=source   `cargo install --locked` from the action's checkout (needs cargo)
#
# The checksum comes from this repository at the ref the workflow pinned (`uses: X@SHA`),
# never from the download site: a replaced release asset fails the job. Puts sbx on PATH
# (GITHUB_PATH) and sets the step output `sbx`.
#
# Test hooks (tests/ci.rs): SBX_RELEASE_BASE_URL replaces the release download URL (e.g. a
# file:// directory); SBX_PINNED_CHECKSUMS replaces ci/checksums.txt.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
how="${INPUT_INSTALL:-auto}"
: "${RUNNER_TEMP:?RUNNER_TEMP is not set: run this as a GitHub Actions step}"
dest="$RUNNER_TEMP/sbx-bin"
mkdir -p "$dest"

fail() { echo "::error title=sbx install::$*" >&2; exit 1; }

version=$(sed -n 's/^version = "\(.*\)"$/\1/p' "$root/Cargo.toml" | head -n1)
[ -n "$version" ] || fail "cannot read the version from $root/Cargo.toml"
case "$(uname -m)" in
  x86_64) arch=x86_64 ;;
  aarch64 | arm64) arch=aarch64 ;;
  *) fail "no sbx release for $(uname -m) (x86_64 and aarch64 only); sbx runs on Linux only" ;;
esac
[ "$(uname -s)" = Linux ] || fail "sbx runs on Linux only (this runner is $(uname -s))"
asset="sbx-$version-$arch-linux-musl"
pinned="${SBX_PINNED_CHECKSUMS:-$root/ci/checksums.txt}"
sum=""
if [ -f "$pinned" ]; then
  sum=$(awk -v a="$asset" '$1 !~ /^#/ && $2 == a { print $1 }' "$pinned" | head -n1)
fi

case "$how" in
  auto) if [ -n "$sum" ]; then how=release; else how=source; fi ;;
  release | source) ;;
  *) fail "install must be auto, release or source (got '$how')" ;;
esac

if [ "$how" = release ]; then
  [ -n "$sum" ] || fail "no checksum pinned for $asset in ci/checksums.txt at this action ref: use a released ref of the action, or install: source"
  repo="${SBX_ACTION_REPOSITORY:-${GITHUB_ACTION_REPOSITORY:-}}"
  base="${SBX_RELEASE_BASE_URL:-}"
  if [ -z "$base" ]; then
    [ -n "$repo" ] || fail "cannot tell which repository the action comes from (github.action_repository is empty)"
    base="https://github.com/$repo/releases/download/v$version"
  fi
  tmp="$dest/.download"
  curl -fsSL --retry 3 -o "$tmp" "$base/$asset" || fail "cannot download $base/$asset"
  got=$(sha256sum "$tmp" | cut -d' ' -f1)
  if [ "$got" != "$sum" ]; then
    rm -f "$tmp"
    fail "checksum mismatch for $asset: pinned $sum, downloaded $got (not installed)"
  fi
  install -m 755 "$tmp" "$dest/sbx"
  rm -f "$tmp"
  echo "sbx: installed release $asset (sha256 $sum, pinned by the action)"
else
  command -v cargo >/dev/null \
    || fail "install: source needs cargo on PATH (add a Rust toolchain step first), or pin a released ref of the action"
  cargo install --locked --quiet --path "$root" --root "$RUNNER_TEMP/sbx-cargo"
  install -m 755 "$RUNNER_TEMP/sbx-cargo/bin/sbx" "$dest/sbx"
  echo "sbx: built $version from the action's source ($root)"
fi

"$dest/sbx" --version
if [ -n "${GITHUB_PATH:-}" ]; then echo "$dest" >>"$GITHUB_PATH"; fi
if [ -n "${GITHUB_OUTPUT:-}" ]; then echo "sbx=$dest/sbx" >>"$GITHUB_OUTPUT"; fi
