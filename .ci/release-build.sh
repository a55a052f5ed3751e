#!/usr/bin/env bash
# Static release binaries (issue 23, item 1; docs/release.md): builds sbx for
# x86_64-unknown-linux-musl and/or aarch64-unknown-linux-musl with `--locked --release`,
# copies each to target/dist/sbx-<version>-<arch>-linux-musl, strips it, checks it is a static
# executable of the right machine (no PT_INTERP, no DT_NEEDED), writes target/dist/SHA256SUMS
# (`cd target/dist && sha256sum -c SHA256SUMS`) and, for the x86_64 binary, runs a smoke test:
# --version, then record -> learn -> enforce of `true`.
#
#   .ci/release-build.sh [x86_64|aarch64|all]     (default: all)
#
# Called by .ci/run (all), .ci/aarch64-vm.sh (aarch64: the VM runs that very binary) and
# .github/workflows/release.yml. Needs an x86_64 Linux host with rustup, cargo, a C compiler
# (the linker of the x86_64 musl target) and binutils; installs the rustup targets and, with
# apt-get, gcc-aarch64-linux-gnu (the aarch64 linker) when missing. Both targets share one
# target directory, target/dist-build (not target/: no waiting on the lock of a concurrent
# `cargo test`, and the proc macros are built once); a second run rebuilds nothing.
set -euo pipefail
cd "$(dirname "$0")/.."

die() {
  echo "release-build: error: $*" >&2
  exit 1
}

what=${1:-all}
case "$what" in
  x86_64) arches=(x86_64) ;;
  aarch64) arches=(aarch64) ;;
  all) arches=(x86_64 aarch64) ;;
  *) die "unknown argument '$what' (usage: .ci/release-build.sh [x86_64|aarch64|all])" ;;
esac
[ "$#" -le 1 ] || die "one argument at most (usage: .ci/release-build.sh [x86_64|aarch64|all])"
if [ "$(uname -s)" != Linux ] || [ "$(uname -m)" != x86_64 ]; then
  die "needs an x86_64 Linux host (this is $(uname -s) $(uname -m))"
fi
for cmd in cargo rustup cc readelf strip sha256sum; do
  command -v "$cmd" >/dev/null || die "'$cmd' not found (install rustup / gcc / binutils)"
done

# The version of [package] in Cargo.toml (the first `version = "..."` of that section).
version=$(awk -F'"' '/^\[/ { p = ($0 == "[package]") } p && /^version *=/ { print $2; exit }' Cargo.toml)
[ -n "$version" ] || die "no version in the [package] section of Cargo.toml"

build_dir=target/dist-build
dist=target/dist
mkdir -p "$dist"
if [ "$what" = all ]; then
  rm -f "$dist"/sbx-* "$dist"/SHA256SUMS
fi

# Per arch: Rust target, linker (the x86_64 musl target links with the host cc and Rust's
# self-contained musl crt and libc), strip, and the machine readelf -h must report.
triple_of() { echo "$1-unknown-linux-musl"; }
strip_of() { if [ "$1" = aarch64 ]; then echo aarch64-linux-gnu-strip; else echo strip; fi; }
machine_of() { if [ "$1" = aarch64 ]; then echo AArch64; else echo 'Advanced Micro Devices X86-64'; fi; }

# apt-get as root, else through sudo (the GitHub runner), else give up with the package name.
apt_install() {
  command -v apt-get >/dev/null || die "$1 missing and no apt-get: install $* by hand"
  local sudo=()
  if [ "$(id -u)" != 0 ]; then
    command -v sudo >/dev/null || die "$1 missing: install it (apt-get install $*) as root"
    sudo=(sudo)
  fi
  echo "release-build: apt-get install $*"
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

for arch in "${arches[@]}"; do
  triple=$(triple_of "$arch")
  if ! rustup target list --installed | grep -qx "$triple"; then
    rustup target add "$triple" >/dev/null 2>&1 || rustup target add "$triple" \
      || die "rustup target add $triple failed"
  fi
  if [ "$arch" = aarch64 ] && ! command -v aarch64-linux-gnu-gcc >/dev/null; then
    apt_install gcc-aarch64-linux-gnu
    command -v aarch64-linux-gnu-gcc >/dev/null || die "aarch64-linux-gnu-gcc still missing"
  fi
done

for arch in "${arches[@]}"; do
  triple=$(triple_of "$arch")
  out="$dist/sbx-$version-$arch-linux-musl"
  rm -f "$dist"/sbx-*-"$arch"-linux-musl
  t0=$(date +%s)
  CARGO_TARGET_DIR="$build_dir" \
    CARGO_TARGET_AARCH64_UNKNOWN_LINUX_MUSL_LINKER=aarch64-linux-gnu-gcc \
    cargo build --locked --release --target "$triple" \
    || die "cargo build --locked --release --target $triple failed"
  t1=$(date +%s)
  built="$build_dir/$triple/release/sbx"
  [ -f "$built" ] || die "cargo produced no $built"
  cp "$built" "$out"
  "$(strip_of "$arch")" "$out" || die "$(strip_of "$arch") $out failed"
  chmod 755 "$out"

  # Static: no program interpreter, no shared library needed (a static-pie has a dynamic
  # section, for its own relocations, but no NEEDED entry); and built for the right machine.
  # (Outputs captured first: `readelf | grep -q` can fail with SIGPIPE under pipefail.)
  header=$(readelf -hW "$out") || die "readelf -h $out failed"
  segments=$(readelf -lW "$out") || die "readelf -l $out failed"
  dynamic=$(readelf -dW "$out") || die "readelf -d $out failed"
  machine=$(sed -n 's/^ *Machine: *//p' <<<"$header")
  [ "$machine" = "$(machine_of "$arch")" ] \
    || die "$out is built for '$machine', not $(machine_of "$arch")"
  if grep -q 'INTERP' <<<"$segments"; then
    die "$out is not static: it has a program interpreter (PT_INTERP)"
  fi
  if grep -q '(NEEDED)' <<<"$dynamic"; then
    die "$out is not static: it needs $(grep '(NEEDED)' <<<"$dynamic" | sed 's/.*\[\(.*\)\]/\1/' | paste -sd, -)"
  fi
  echo "release-build: $out: $(stat -c %s "$out") bytes ($(du -k "$out" | cut -f1) KiB)," \
    "static, stripped; cargo build $((t1 - t0)) s"
done

# The smoke test, on the x86_64 binary (the host runs it): record, learn and enforce need
# ptrace and seccomp, as sbx always does.
if [[ " ${arches[*]} " == *" x86_64 "* ]]; then
  sbx="$PWD/$dist/sbx-$version-x86_64-linux-musl"
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  true_bin=$(type -P true) || die "smoke test: no true program on PATH"
  v=$("$sbx" --version) || die "smoke test: sbx --version failed"
  [[ "$v" == "sbx $version"* ]] || die "smoke test: sbx --version says '$v', not sbx $version"
  "$sbx" record -o "$tmp/t.bin" -- "$true_bin" >"$tmp/record.out" 2>&1 \
    || die "smoke test: sbx record -- $true_bin failed: $(tail -n1 "$tmp/record.out")"
  "$sbx" learn -q "$tmp/t.bin" -o "$tmp/t.profile" >"$tmp/learn.out" 2>&1 \
    || die "smoke test: sbx learn failed: $(tail -n1 "$tmp/learn.out")"
  status=0
  "$sbx" enforce "$tmp/t.profile" -- "$true_bin" >"$tmp/enforce.out" 2>&1 || status=$?
  [ "$status" = 0 ] \
    || die "smoke test: sbx enforce -- $true_bin exited $status: $(tail -n1 "$tmp/enforce.out")"
  echo "release-build: smoke test passed ($v: --version, record, learn, enforce of $true_bin)"
fi

# SHA256SUMS over this version's binaries in target/dist, by file name.
(
  cd "$dist"
  shopt -s nullglob
  files=(sbx-"$version"-*-linux-musl)
  [ "${#files[@]}" -gt 0 ] || die "no binaries in $dist"
  sha256sum -- "${files[@]}" >SHA256SUMS
  sha256sum --quiet -c SHA256SUMS || die "sha256sum -c SHA256SUMS failed in $dist"
)
echo "release-build: $dist/SHA256SUMS:"
sed 's/^/  /' "$dist/SHA256SUMS"
