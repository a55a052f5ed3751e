#!/usr/bin/env python3
"""Interleaved A/B timing of shell commands: each round runs every command once, in order,
so a slow phase of a shared machine hits them all alike; prints medians, ratios to the first
command, and minimums.

    python3 benches/ab.py ROUNDS DIR NAME=COMMAND [NAME=COMMAND ...]

Example (docs/performance.md, session 11; L is the strace list bench.py builds from
`sbx syscalls --stopped`):

    python3 benches/ab.py 15 /tmp/sbx-bench/linux \\
        "bare=find . -name '*.h' -size +1k" \\
        "strace=strace -f -qq --seccomp-bpf -e trace=$L -o /dev/null find . -name '*.h' -size +1k" \\
        "sbx=target/release/sbx record -o /tmp/k.bin -- find . -name '*.h' -size +1k"
"""
import statistics
import subprocess
import sys
import time


def main():
    if len(sys.argv) < 4 or any("=" not in a for a in sys.argv[3:]):
        sys.exit(__doc__)
    rounds, cwd = int(sys.argv[1]), sys.argv[2]
    variants = [a.split("=", 1) for a in sys.argv[3:]]
    times = {name: [] for name, _ in variants}
    for _ in range(rounds):
        for name, cmd in variants:
            t0 = time.perf_counter()
            subprocess.run(cmd, shell=True, cwd=cwd, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
            times[name].append(time.perf_counter() - t0)
    base = statistics.median(times[variants[0][0]])
    for name, _ in variants:
        m = statistics.median(times[name])
        print(f"{name:20s} median {m * 1000:8.1f} ms  ratio {m / base:.3f}  "
              f"min {min(times[name]) * 1000:.1f} ms")


if __name__ == "__main__":
    main()
