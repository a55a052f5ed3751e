#!/usr/bin/env python3
"""Per-stop latency of three kinds of checked call, timed inside the workload (the loop alone:
no tracer start, no cleanup), interleaved round by round, medians in microseconds per call.

    python3 benches/perstop.py ROUNDS DIR NAME=PREFIX [NAME=PREFIX ...]

DIR (a tmpfs keeps the filesystem's own cost low and steady) gets the three loops built from
benches/ (openloop.c, mkdirloop.c, createloop.c) and a profile `perstop.profile` allowing
them; PREFIX is what runs each loop (empty for bare), e.g. (docs/performance.md, session 23):

    mount -t tmpfs tmpfs /mnt/ps
    python3 benches/perstop.py 9 /mnt/ps bare= "null=/tmp/nulltrace $L" \\
        "floor=/tmp/nulltrace -w $L" "sbx=$PWD/target/release/sbx enforce perstop.profile --"

where L is the syscall list benches/bench.py gives the null tracer (`sbx syscalls`).
Kinds: `open` (open O_RDONLY + close of one file: the open memo answers from the second),
`mkdir` (mkdir of a directory that exists: answered EEXIST, from the memo from the second),
`create` (open O_CREAT|O_EXCL + close of a new file each time, 5000 per run).
"""
import os
import shlex
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
N = {"open": 20000, "mkdir": 20000, "create": 5000}


def build(d):
    for name in ("openloop", "mkdirloop", "createloop"):
        subprocess.run(["gcc", "-O2", "-o", os.path.join(d, name),
                        os.path.join(HERE, name + ".c")], check=True)
    os.makedirs(os.path.join(d, "a/b/c"), exist_ok=True)
    open(os.path.join(d, "a/b/c/file"), "w").close()
    with open(os.path.join(d, "perstop.profile"), "w") as f:
        f.write("include base\n")
        for name in ("openloop", "mkdirloop", "createloop"):
            f.write(f"exec {d}/{name}\n")
        f.write("read ${CWD}/**\nwrite ${CWD}/**\n")


def run(d, prefix, kind):
    if kind == "create":
        subprocess.run(["rm", "-rf", os.path.join(d, "new")], check=True)
        os.mkdir(os.path.join(d, "new"))
        cmd = ["./createloop", str(N[kind]), os.path.join(d, "new")]
    elif kind == "mkdir":
        cmd = ["./mkdirloop", str(N[kind]), os.path.join(d, "a/b/c/d")]
    else:
        cmd = ["./openloop", str(N[kind]), os.path.join(d, "a/b/c/file")]
    r = subprocess.run(shlex.split(prefix) + cmd, cwd=d, capture_output=True, text=True)
    last = r.stderr.strip().splitlines()[-1] if r.stderr.strip() else ""
    try:
        v = float(last.split()[0])
    except (ValueError, IndexError):
        sys.exit(f"{prefix} {kind}: no timing ({r.returncode}): {r.stderr.strip()[-300:]}")
    return v / 1000 if last.endswith("ns/open") else v


def main():
    if len(sys.argv) < 4 or any("=" not in a for a in sys.argv[3:]):
        sys.exit(__doc__)
    rounds, d = int(sys.argv[1]), os.path.abspath(sys.argv[2])
    variants = [a.split("=", 1) for a in sys.argv[3:]]
    build(d)
    times = {(k, n): [] for k in N for n, _ in variants}
    for _ in range(rounds):
        for kind in N:
            for name, prefix in variants:
                times[(kind, name)].append(run(d, prefix, kind))
    print("| kind | " + " | ".join(n for n, _ in variants) + " |")
    print("|---|" + "---|" * len(variants))
    for kind in N:
        cells = [f"{statistics.median(times[(kind, n)]):.1f}" for n, _ in variants]
        print(f"| {kind} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
