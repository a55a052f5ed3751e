#!/bin/sh
# PID 1 of the aarch64 VM check (.ci/aarch64-vm.sh), run by busybox sh inside a Debian arm64
# kernel under qemu-system-aarch64. Runs sbx record -> learn -> enforce on a benign workload
# and four attacks (each first shown to work without sbx) and one gdb session through
# `sbx enforce --gdb`, prints one `SBX-VM: PASS|FAIL` line per check and a final
# `SBX-VM-RESULT: PASS|FAIL` line on the serial console, and powers the VM off. The host script decides on that last line.
export PATH=/bin HOME=/root
/bin/busybox mkdir -p /proc /sys /dev /tmp /root
/bin/busybox mount -t devtmpfs dev /dev
exec </dev/console >/dev/console 2>&1
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t tmpfs tmp /tmp

T=${SBX_VM_STEP_TIMEOUT:-120}  # seconds per command (TCG is slow, but nothing should hang)
L=/tmp/log                     # traces, profiles and outputs: outside the workload's tree
mkdir -p $L
pass=0
fail=0
ok() { pass=$((pass + 1)); echo "SBX-VM: PASS $*"; }
ko() { fail=$((fail + 1)); echo "SBX-VM: FAIL $*"; }

# A fresh tree: /tmp/t/work (the cwd, ${CWD} of the profiles) and /tmp/t/secret (in no profile).
fresh() {
    cd /
    rm -rf /tmp/t
    mkdir -p /tmp/t/work /tmp/t/secret
    echo fine >/tmp/t/work/ok.txt
    echo TOPSECRET >/tmp/t/secret/secret.txt
    cd /tmp/t/work
}

# Functions keep their variables `local`: ash's are global otherwise.
# run NAME CMD...: run CMD (time-limited) in a fresh tree; output in $L/NAME.out, status in $rc.
run() {
    local name=$1
    shift
    fresh
    timeout $T "$@" >$L/$name.out 2>&1
    rc=$?
}

show() {
    echo "---- $1 (exit $rc), last lines:"
    tail -n ${2:-8} $L/$1.out
    echo "----"
}

leaked() { grep -q -e TOPSECRET -e PWNED -e LEAKED $L/$1.out || grep -rqs TOPSECRET /tmp/t/work; }

# learn NAME CMD...: record CMD, learn $L/NAME.profile, enforce it on CMD (must pass).
learn() {
    local name=$1
    shift
    run $name-record sbx record -o $L/$name.bin -- "$@"
    if [ $rc != 0 ]; then show $name-record; return 1; fi
    timeout $T sbx learn $L/$name.bin -o $L/$name.profile >$L/$name-learn.out 2>&1
    rc=$?
    if [ $rc != 0 ]; then show $name-learn; return 1; fi
    run $name-twin sbx enforce $L/$name.profile -- "$@"
    if [ $rc != 0 ]; then show $name-twin 20; cat $L/$name.profile; return 1; fi
    return 0
}

# attack NAME TRIES BARE_CMD -- TWIN_CMD -- ATTACK_CMD
# The attack must leak bare (within TRIES runs); the profile learned from the twin must admit
# the twin; under enforce the attack must end with exit 124, a violation line and no leak.
attack() {
    local name=$1 tries=$2 bare twin i worked v
    shift 2
    bare=""
    while [ "$1" != -- ]; do bare="$bare $1"; shift; done
    shift
    twin=""
    while [ "$1" != -- ]; do twin="$twin $1"; shift; done
    shift
    i=0
    worked=no
    while [ $i -lt $tries ]; do
        i=$((i + 1))
        run $name-bare $bare
        if leaked $name-bare; then worked=yes; break; fi
    done
    if [ $worked != yes ]; then
        show $name-bare
        ko "$name: the attack does not work without sbx ($i tries)"
        return
    fi
    echo "SBX-VM: $name works bare (try $i): $(grep -m1 -e TOPSECRET -e PWNED -e LEAKED $L/$name-bare.out)"
    if ! learn $name $twin; then ko "$name: could not learn/enforce the benign twin"; return; fi
    run $name-enforce sbx enforce $L/$name.profile -- "$@"
    if [ $rc != 124 ]; then show $name-enforce 20; ko "$name: exit $rc under enforce, want 124"; return; fi
    if leaked $name-enforce; then show $name-enforce 20; ko "$name: leaked under enforce"; return; fi
    v=$(grep -m1 'sbx: violation: ' $L/$name-enforce.out)
    if [ -z "$v" ]; then show $name-enforce 20; ko "$name: no violation line"; return; fi
    ok "$name: killed (exit 124), nothing leaked; $v"
}

echo "SBX-VM: kernel $(uname -r) $(uname -m), $(grep -c ^processor /proc/cpuinfo) cpus, $(sbx --version), up $(cut -d' ' -f1 /proc/uptime) s"

# 1. The benign workload: record -> learn -> enforce passes and does its work.
if learn workload /bin/workload; then
    if grep -q 'workload done' $L/workload-twin.out && [ "$(cat /tmp/t/work/out.txt)" = written ] \
        && grep -q '^guard region: yes' $L/workload-twin.out \
        && grep -q '^child guard region: no' $L/workload-twin.out; then
        ok "workload: record -> learn -> enforce, exit 0 ($(grep -c . $L/workload.profile) profile lines, guard region mapped in the two-thread parent, copies on the stack in the child)"
    else
        show workload-twin
        ko "workload: enforce exited 0 but the workload did not do its work (or the guard region is not where it should be)"
    fi
else
    ko "workload: record -> learn -> enforce failed"
fi

# 2. Reading a secret outside the profile.
attack secret-read 1 \
    /bin/attack plain /tmp/t/secret/secret.txt -- \
    /bin/attack plain /tmp/t/work/ok.txt -- \
    /bin/attack plain /tmp/t/secret/secret.txt

# 3. Make sbx's read-only argument region writable with mprotect, then race its slots
#    (src/tracer/guard.rs; the region is injected by a syscall sbx makes the tracee run).
attack guard-mprotect 1 \
    /bin/attack guard_remap mprotect /tmp/t/work/ok.txt /tmp/t/secret/secret.txt 50 -- \
    /bin/attack jit /tmp/t/work/ok.txt -- \
    /bin/attack guard_remap mprotect /tmp/t/work/ok.txt /tmp/t/secret/secret.txt 2000

# 4. A thread flips a path buffer between an allowed file and the secret while main opens it.
attack path-race 5 \
    /bin/race_open /tmp/t/work/ok.txt /tmp/t/secret/secret.txt 20000 -- \
    /bin/race_open /tmp/t/work/ok.txt /tmp/t/work/ok.txt 50 -- \
    /bin/race_open /tmp/t/work/ok.txt /tmp/t/secret/secret.txt 20000

# 5. The same race in deny mode: every open of the secret is refused with EACCES (the skipped
#    syscall) and the workload goes on; the opens sbx lets through read the path from its
#    read-only copy (the re-pointed argument register), so all 20000 opens must not leak.
run path-race-deny sbx enforce --mode deny $L/path-race.profile -- \
    /bin/race_open /tmp/t/work/ok.txt /tmp/t/secret/secret.txt 20000
if [ $rc = 124 ] && grep -q 'no leak' $L/path-race-deny.out && ! leaked path-race-deny; then
    ok "path-race-deny: 20000 opens, $(grep -c 'sbx: violation: ' $L/path-race-deny.out) refused, exit 124, nothing leaked"
else
    show path-race-deny 20
    ko "path-race-deny: exit $rc, want 124, 'no leak' and no secret"
fi
# The control (not a check): without the race guard the same run may leak.
run path-race-unguarded sbx enforce --mode deny --unsafe-no-race-guard $L/path-race.profile -- \
    /bin/race_open /tmp/t/work/ok.txt /tmp/t/secret/secret.txt 20000
echo "SBX-VM: control path-race --unsafe-no-race-guard (exit $rc): $(grep -m1 -e LEAKED -e 'no leak' $L/path-race-unguarded.out)"

# 6. The compat arm32 ABI (an AArch32 program, .ci/aarch64-vm/arm32.S): it reads the secret
#    bare; under sbx, record as enforce, its first syscall carries AUDIT_ARCH_ARM and the
#    filter's architecture check kills it (the exec itself is allowed by the profile).
run arm32-bare /bin/arm32
if grep -q TOPSECRET $L/arm32-bare.out; then
    echo "SBX-VM: arm32 works bare: $(head -n1 $L/arm32-bare.out)"
    { cat $L/secret-read.profile; echo 'exec /bin/arm32'; } >$L/arm32.profile
    # enforce: 124 and the in-kernel kill reported; record kills nothing itself, so 159
    # (128 + SIGSYS) there can only be the seccomp filter's KILL_PROCESS.
    for how in enforce:124 record:159; do
        want=${how#*:}
        how=${how%:*}
        if [ $how = enforce ]; then
            run arm32-$how sbx enforce $L/arm32.profile -- /bin/arm32
        else
            run arm32-$how sbx record -o $L/arm32.bin -- /bin/arm32
        fi
        if [ $rc = $want ] && ! leaked arm32-$how; then
            ok "arm32-$how: killed by the architecture check (exit $rc), nothing leaked"
        else
            show arm32-$how
            ko "arm32-$how: exit $rc (want $want) or the secret leaked"
        fi
    done
    echo "SBX-VM:   $(grep -m1 'sbx: violation: ' $L/arm32-enforce.out)"
else
    show arm32-bare
    ko "arm32: the AArch32 program does not run without sbx (no AArch32 at EL0?)"
fi

# 7. A gdb session (docs/gdb.md): sbx serves the GDB remote protocol on a unix socket for the
#    workload it enforces; Debian's gdb 13 (in the initramfs with its shared libraries)
#    connects, stops at a breakpoint in compute, steps over the line that sets `local` to the
#    next line of /src/gdb_target.c, prints `local` (memory) and the pc (the aarch64 register
#    layout), and runs to the exit; sbx then exits with the workload's status, 42. gdb must
#    not report an internal problem ("should not happen": the initramfs lacks something).
gdb_session() {
    local sock=/tmp/gdb.sock spid src grc i t0
    t0=$(date +%s)
    if ! learn gdb /bin/gdb_target; then ko "gdb: could not learn/enforce gdb_target"; return; fi
    fresh
    rm -f $sock
    : >$L/gdb-sbx.out
    timeout $T sbx enforce --gdb $sock $L/gdb.profile -- /bin/gdb_target 6 >$L/gdb-sbx.out 2>&1 &
    spid=$!
    i=0
    while ! grep -q 'sbx: waiting for gdb on' $L/gdb-sbx.out; do
        i=$((i + 1))
        if [ $i -gt $((T * 5)) ] || ! kill -0 $spid 2>/dev/null; then break; fi
        usleep 200000
    done
    timeout $T gdb -nx -batch -ex "target extended-remote $sock" -ex 'break compute' \
        -ex continue -ex next -ex 'print local' -ex 'info registers pc' -ex continue \
        /bin/gdb_target >$L/gdb.out 2>&1
    grc=$?
    wait $spid
    src=$?
    # gdb prints the exit status in octal: 052 is 42.
    if [ $grc = 0 ] && [ $src = 42 ] && grep -q '^Breakpoint 1, compute (n=6) at ' $L/gdb.out \
        && grep -q '^12[[:space:]]*return local;' $L/gdb.out && grep -q '^\$1 = 42$' $L/gdb.out && grep -q '^pc .*<compute+' $L/gdb.out \
        && grep -q 'exited with code 052\]' $L/gdb.out && ! grep -q 'should not happen' $L/gdb.out; then
        ok "gdb: sbx enforce --gdb served gdb $(gdb --version | sed -n '1s/.* //p'): breakpoint in compute, next, local = 42, pc in compute, exit 42 (sbx exit $src; $(($(date +%s) - t0)) s with the learning)"
        grep -e '^Breakpoint 1,' -e '^1[12][[:space:]]' -e '^\$1 = ' -e '^pc ' -e 'exited with code' $L/gdb.out \
            | while read -r line; do echo "SBX-VM:   gdb: $line"; done
    else
        echo "---- gdb (exit $grc):"
        cat $L/gdb.out
        echo "---- sbx enforce --gdb (exit $src):"
        cat $L/gdb-sbx.out
        echo "----"
        ko "gdb: session failed (gdb exit $grc, sbx exit $src, want 0 and 42, and the breakpoint, local, pc and exit lines)"
    fi
}
gdb_session

echo "SBX-VM-SUMMARY: $pass passed, $fail failed"
if [ $fail = 0 ] && [ $pass -gt 0 ]; then
    echo "SBX-VM-RESULT: PASS"
else
    echo "SBX-VM-RESULT: FAIL"
fi
sync
poweroff -f
