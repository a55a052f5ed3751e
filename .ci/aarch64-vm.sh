#!/usr/bin/env bash
# aarch64 under full-system emulation (issue 8, item 4; docs/aarch64.md): boot Debian's arm64
# kernel under qemu-system-aarch64 (TCG, no KVM) with an initramfs holding the static aarch64
# release binary of sbx (target/dist/sbx-<version>-aarch64-linux-musl, from
# `.ci/release-build.sh aarch64`: the VM tests what is released), static C fixtures and
# busybox (and Debian's arm64 gdb with its shared libraries), and run record -> learn ->
# enforce of a workload plus four attacks in it, and one gdb session through sbx's --gdb
# (.ci/aarch64-vm/init.sh). Fails unless the VM prints `SBX-VM-RESULT: PASS` before the
# timeout. Runs as root on Debian 12 (bookworm); idempotent: downloads are kept under
# target/aarch64-vm, the sbx build under target/dist-build (up to date after .ci/run's
# release build: nothing is rebuilt).
#
# SBX_VM_TIMEOUT (seconds, default 600) bounds the whole boot and run.
set -euo pipefail
cd "$(dirname "$0")/.."

export DEBIAN_FRONTEND=noninteractive
work=target/aarch64-vm
mkdir -p "$work/dl"
start=$(date +%s)

# Host tools: the emulator, cpio for the initramfs, the cross compiler and sysroot.
# binutils-arm-linux-gnueabihf assembles the AArch32 program of the compat-ABI check.
if ! command -v qemu-system-aarch64 >/dev/null || ! command -v cpio >/dev/null \
  || ! command -v aarch64-linux-gnu-gcc >/dev/null || ! command -v arm-linux-gnueabihf-as >/dev/null; then
  apt-get update -qq
  apt-get install -y -qq qemu-system-arm cpio gcc-aarch64-linux-gnu libc6-dev-arm64-cross \
    binutils-arm-linux-gnueabihf >/dev/null
fi

# The arm64 kernel and a static busybox, unpacked from Debian's packages (never installed).
kernel=$(ls "$work"/root/boot/vmlinuz-* 2>/dev/null | head -n1 || true)
if [ -z "$kernel" ] || [ ! -x "$work/root/bin/busybox" ]; then
  if ! dpkg --print-foreign-architectures | grep -qx arm64; then
    dpkg --add-architecture arm64
  fi
  apt-get update -qq
  # linux-image-arm64 depends on the current ABI's package, e.g. linux-image-6.1.0-57-arm64.
  image=$(apt-cache depends linux-image-arm64:arm64 \
    | sed -n 's/^ *Depends: \(linux-image-[0-9].*-arm64\)\(:arm64\)\?$/\1/p' | head -n1)
  [ -n "$image" ] || { echo "aarch64-vm: no linux-image-*-arm64 package found" >&2; exit 1; }
  rm -rf "$work/dl"/*.deb "$work/root"
  (cd "$work/dl" && apt-get download -q "$image:arm64" busybox-static:arm64)
  for deb in "$work"/dl/*.deb; do dpkg-deb -x "$deb" "$work/root"; done
  kernel=$(ls "$work"/root/boot/vmlinuz-* | head -n1)
fi

# gdb for the --gdb session (check 7 of init.sh): Debian's gdb-minimal (13.1, no python), a
# dynamic executable, with the arm64 shared libraries it loads and the dynamic loader, also
# unpacked from Debian's packages (never installed). The packages: gdb-minimal; libc6 (the
# loader, libc, libm, and libresolv for libkrb5); libgcc-s1, libstdc++6 (gdb is C++);
# libreadline8, libtinfo6 (its command line); libexpat1 (the XML target description sbx
# sends); zlib1g, libzstd1, liblzma5, libxxhash0, libgmp10 (linked by gdb). The rest only
# because gdb links libdebuginfod (unused: DEBUGINFOD_URLS is not set in the VM) and the
# loader must resolve every DT_NEEDED: libdebuginfod1, libelf1, libcurl3-gnutls and
# libcurl's closure (libnghttp2-14, libidn2-0, libunistring2, librtmp1, libssh2-1, libssl3
# for libssh2's libcrypto, libpsl5, libgnutls30, libnettle8, libhogweed6, libp11-kit0,
# libffi8, libtasn1-6, libgssapi-krb5-2, libkrb5-3, libk5crypto3, libkrb5support0,
# libcom-err2, libkeyutils1, libldap-2.5-0 (also liblber), libsasl2-2, libbrotli1). 14 MB
# of .deb; only gdb, the libraries it needs (by DT_NEEDED, below) and one iconv module go in
# the initramfs (13 MB more of it, gzipped).
gdb_pkgs="gdb-minimal libc6 libgcc-s1 libstdc++6 libreadline8 libtinfo6 libexpat1 zlib1g
  libzstd1 liblzma5 libxxhash0 libgmp10 libdebuginfod1 libelf1 libcurl3-gnutls libnghttp2-14
  libidn2-0 libunistring2 librtmp1 libssh2-1 libssl3 libpsl5 libgnutls30 libnettle8
  libhogweed6 libp11-kit0 libffi8 libtasn1-6 libgssapi-krb5-2 libkrb5-3 libk5crypto3
  libkrb5support0 libcom-err2 libkeyutils1 libldap-2.5-0 libsasl2-2 libbrotli1"
groot="$work/gdb-root"
if [ ! -x "$groot/usr/bin/gdb" ] || [ "$(cat "$groot/.packages" 2>/dev/null)" != "$gdb_pkgs" ]; then
  if ! dpkg --print-foreign-architectures | grep -qx arm64; then
    dpkg --add-architecture arm64
  fi
  apt-get update -qq
  rm -rf "$work/dl/gdb" "$groot"
  mkdir -p "$work/dl/gdb"
  # shellcheck disable=SC2046,SC2086 # one word per package
  (cd "$work/dl/gdb" && apt-get download -q $(printf '%s:arm64 ' $gdb_pkgs))
  for deb in "$work"/dl/gdb/*.deb; do dpkg-deb -x "$deb" "$groot"; done
  printf '%s' "$gdb_pkgs" >"$groot/.packages"
fi

# sbx: the aarch64-unknown-linux-musl release binary, static (no loader or libraries to ship)
# and stripped; release-build.sh checks both.
bash .ci/release-build.sh aarch64
version=$(awk -F'"' '/^\[/ { p = ($0 == "[package]") } p && /^version *=/ { print $2; exit }' Cargo.toml)
sbx="target/dist/sbx-$version-aarch64-linux-musl"
[ -x "$sbx" ] || { echo "aarch64-vm: $sbx missing after .ci/release-build.sh aarch64" >&2; exit 1; }

# The initramfs: /init, busybox, sbx and the static fixtures.
rm -rf "$work/initrd"
mkdir -p "$work/initrd/bin"
cp "$work/root/bin/busybox" "$work/initrd/bin/busybox"
ln -s busybox "$work/initrd/bin/sh"
cp "$sbx" "$work/initrd/bin/sbx"
cc="aarch64-linux-gnu-gcc -O2 -static -pthread -Wall"
$cc -o "$work/initrd/bin/attack" tests/fixtures/attack.c
$cc -o "$work/initrd/bin/race_open" tests/fixtures/race_open.c
$cc -o "$work/initrd/bin/workload" .ci/aarch64-vm/workload.c
# gdb_target's debug information names its source /src/gdb_target.c, where the VM has it.
mkdir -p "$work/initrd/src"
cp .ci/aarch64-vm/gdb_target.c "$work/initrd/src/gdb_target.c"
out="$PWD/$work/initrd/bin/gdb_target"
(cd .ci/aarch64-vm && aarch64-linux-gnu-gcc -g -O0 -static -Wall -fdebug-prefix-map="$PWD=/src" \
  -o "$out" gdb_target.c)
# gdb, its libraries (the DT_NEEDED closure, found in the unpacked packages; any missing one
# fails the script) and the loader at the path gdb's PT_INTERP names.
mkdir -p "$work/initrd/lib/aarch64-linux-gnu"
cp "$groot/usr/bin/gdb" "$work/initrd/bin/gdb"
todo="$groot/usr/bin/gdb"
seen=" "
while [ -n "$todo" ]; do
  set -- $todo
  elf=$1
  shift
  todo="$*"
  for lib in $(aarch64-linux-gnu-readelf -d "$elf" | sed -n 's/.*(NEEDED).*\[\(.*\)\]$/\1/p'); do
    case "$seen" in *" $lib "*) continue ;; esac
    seen="$seen$lib "
    path=""
    for dir in lib/aarch64-linux-gnu usr/lib/aarch64-linux-gnu; do
      if [ -e "$groot/$dir/$lib" ]; then path="$groot/$dir/$lib"; break; fi
    done
    [ -n "$path" ] || { echo "aarch64-vm: $lib (needed by $elf) is in no downloaded package" >&2; exit 1; }
    cp -L "$path" "$work/initrd/lib/aarch64-linux-gnu/$lib"
    todo="$todo $path"
  done
done
interp=$(aarch64-linux-gnu-readelf -l "$groot/usr/bin/gdb" | sed -n 's/.*Requesting program interpreter: \(.*\)\]$/\1/p')
[ "$interp" = /lib/ld-linux-aarch64.so.1 ] && [ -e "$work/initrd/lib/aarch64-linux-gnu/ld-linux-aarch64.so.1" ] \
  || { echo "aarch64-vm: gdb's interpreter is $interp, not the shipped /lib/ld-linux-aarch64.so.1" >&2; exit 1; }
ln -s aarch64-linux-gnu/ld-linux-aarch64.so.1 "$work/initrd/lib/ld-linux-aarch64.so.1"
# glibc's iconv module for UTF-32, gdb's target-wide-charset (without it gdb warns that it
# cannot convert names from the host encoding), and the list that names it.
gconv=usr/lib/aarch64-linux-gnu/gconv
mkdir -p "$work/initrd/$gconv"
cp "$groot/$gconv/gconv-modules" "$groot/$gconv/UTF-32.so" "$work/initrd/$gconv/"
arm-linux-gnueabihf-as -o "$work/arm32.o" .ci/aarch64-vm/arm32.S
arm-linux-gnueabihf-ld -static -o "$work/initrd/bin/arm32" "$work/arm32.o"
cp .ci/aarch64-vm/init.sh "$work/initrd/init"
chmod 755 "$work/initrd/init"
(cd "$work/initrd" && find . | cpio -o -H newc --quiet) | gzip -1 >"$work/initrd.gz"
built=$(date +%s)
echo "aarch64-vm: $(basename "$kernel"), initramfs $(du -k "$work/initrd.gz" | cut -f1) KiB," \
  "prepared in $((built - start)) s"

# Boot. -cpu max with the cheap pointer-authentication algorithm (QARMA is slow under TCG).
log="$work/console.log"
status=0
timeout "${SBX_VM_TIMEOUT:-600}" qemu-system-aarch64 -machine virt -cpu max,pauth-impdef=on \
  -smp 2 -m 1024 -nographic -no-reboot -kernel "$kernel" -initrd "$work/initrd.gz" \
  -append 'console=ttyAMA0 rdinit=/init panic=-1 quiet' </dev/null | tee "$log" || status=$?
end=$(date +%s)
echo "aarch64-vm: qemu exited $status after $((end - built)) s (total $((end - start)) s)"
if [ "$status" = 124 ]; then
  echo "aarch64-vm: FAIL: timeout after ${SBX_VM_TIMEOUT:-600} s" >&2
  exit 1
fi
if ! tr -d '\r' <"$log" | grep -qx 'SBX-VM-RESULT: PASS'; then
  echo "aarch64-vm: FAIL (see the SBX-VM lines above)" >&2
  exit 1
fi
echo "aarch64-vm: PASS"
