#!/usr/bin/env python3
"""Interleaved benchmark of sbx against bare runs and strace (design.md section 10).

For each workload, every round runs each variant once, in the same order (A B C D A B C D ...),
so slow phases of a shared machine hit all variants alike. Reports medians and ratios to bare.

    python3 benches/bench.py --rounds 5 --out docs/perf-results.md [workload ...]
    python3 benches/bench.py --rounds 15 --variants seccomp,record cbuild   # a longer pair
    python3 benches/bench.py --rounds 10 --alternate --variants enforce,enforce-nofence forkexec  # no-fence: only when named
    python3 benches/bench.py --rounds 10 --alternate --sbx-b /other/sbx --variants enforce,enforce-b cbuild

Workloads: cbuild (make -j2 of the Lua 5.1-5.5 C sources shipped in the lua-src crate),
npm (offline `npm install` of ~170 packages from a pre-filled cache), pipe (dd | sha256sum),
git (git status over a large tree), find (find over the same tree), forkexec (2000 x /bin/true).
Variants: bare, strace -f, strace -f --seccomp-bpf with sbx's stopped syscalls, a null tracer
(benches/nulltrace.c: the same seccomp stops as sbx enforce, each resumed at once without any
work: the floor of any ptrace + seccomp design), the design floor (the same tracer with `-w`:
at each stop also the kernel-side work a race-free check of a path argument needs, and no
decision: get the call, read the path, write its copy, set the call), sbx record, sbx enforce
(profile learned from one record run of the same workload), sbx enforce --no-fence (the same
profile without the Landlock fence, so without the fence's exit watches either), and with
--sbx-b PATH the record and enforce variants of a second sbx binary (e.g. an older commit's
build; the profile is still learned by the first one). The first binary is $SBX, or
target/release/sbx of this checkout.
"""

import argparse
import glob
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SBX = os.environ.get("SBX") or os.path.join(ROOT, "target", "release", "sbx")
WORK = os.environ.get("SBX_BENCH_DIR", "/tmp/sbx-bench")


def sh(cmd, **kw):
    return subprocess.run(cmd, shell=True, check=True, **kw)


def stopped_syscalls():
    """The syscalls sbx record stops on (checked + gated + creds), for strace's filter."""
    out = subprocess.run([SBX, "syscalls", "--stopped"], check=True, capture_output=True, text=True)
    names = out.stdout.split()
    # strace only knows names of its own table; it refuses unknown ones.
    known = []
    for n in names:
        r = subprocess.run(["strace", "-e", "trace=" + n, "-o", "/dev/null", "true"],
                           capture_output=True)
        if r.returncode == 0:
            known.append(n)
    return ",".join(known)


def null_tracer(tmp):
    """benches/nulltrace.c, compiled, with the numbers of the syscalls sbx enforce stops on
    (checked and credential classes): the cost of the stops alone."""
    exe = os.path.join(tmp, "nulltrace")
    subprocess.run(["gcc", "-O2", "-o", exe, os.path.join(ROOT, "benches", "nulltrace.c")], check=True)
    out = subprocess.run([SBX, "syscalls"], check=True, capture_output=True, text=True).stdout
    nrs = [f[1] for f in (l.split() for l in out.splitlines())
           if len(f) >= 3 and f[2] in ("Checked", "Creds")]
    return [exe, ",".join(nrs)]


# --- workloads: (setup() -> cwd, command list, reset() before each run) -------------------

def lua_sources():
    srcs = glob.glob(os.path.expanduser("~/.cargo/registry/src/*/lua-src-*/lua-5.*"))
    if not srcs:
        d = os.path.join(WORK, "luafetch")
        os.makedirs(os.path.join(d, "src"), exist_ok=True)
        with open(os.path.join(d, "Cargo.toml"), "w") as f:
            f.write('[package]\nname="x"\nversion="0.1.0"\nedition="2021"\n'
                    '[dependencies]\nlua-src="=551.1.0"\n')
        with open(os.path.join(d, "src", "main.rs"), "w") as f:
            f.write("fn main(){}\n")
        sh("cargo fetch", cwd=d)
        srcs = glob.glob(os.path.expanduser("~/.cargo/registry/src/*/lua-src-*/lua-5.*"))
    return sorted(srcs)


def setup_cbuild():
    d = os.path.join(WORK, "cbuild")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    objs = []
    rules = []
    for src in lua_sources():
        v = os.path.basename(src)
        shutil.copytree(src, os.path.join(d, v))
        for c in sorted(glob.glob(os.path.join(d, v, "*.c"))):
            base = os.path.basename(c)[:-2]
            if base in ("lua", "luac", "onelua"):
                continue
            o = f"{v}/{base}.o"
            objs.append(o)
            rules.append(f"{o}: {v}/{base}.c\n\t$(CC) $(CFLAGS) -I{v} -c -o $@ $<\n")
    with open(os.path.join(d, "Makefile"), "w") as f:
        f.write("CC = gcc\nCFLAGS = -O2 -DLUA_USE_LINUX -w\n")
        f.write("all: " + " ".join(objs) + "\n\n" + "\n".join(rules))
        f.write("\nclean:\n\trm -f */*.o\n")
    return d, ["make", "-s", "-j2"], lambda: sh("make -s clean", cwd=d)


def setup_npm():
    d = os.path.join(WORK, "npm")
    os.makedirs(d, exist_ok=True)
    pkg = os.path.join(d, "package.json")
    with open(pkg, "w") as f:
        f.write('{"name":"bench","version":"1.0.0","private":true,'
                '"dependencies":{"express":"^4","eslint":"^8"}}\n')
    # Fill the cache once (needs the registry); later runs are offline. The cache
    # (~/.npm) can be emptied behind the lock file's back: fill it again when an offline
    # install fails.
    offline = "npm install --offline --no-audit --no-fund --silent"
    if (not os.path.exists(os.path.join(d, "package-lock.json"))
            or subprocess.run(offline, shell=True, cwd=d, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL).returncode != 0):
        sh("npm install --no-audit --no-fund --silent", cwd=d)

    def reset():
        shutil.rmtree(os.path.join(d, "node_modules"), ignore_errors=True)

    return d, ["npm", "install", "--offline", "--no-audit", "--no-fund", "--silent"], reset


def setup_pipe():
    return WORK, ["sh", "-c", "dd if=/dev/zero bs=64k count=32768 status=none | sha256sum >/dev/null"], None


def big_tree():
    d = os.path.join(WORK, "tree")
    if not os.path.exists(os.path.join(d, ".git")):
        os.makedirs(d, exist_ok=True)
        # A large tree: 40 copies of the Lua sources plus 20k small files, committed to git.
        srcs = lua_sources()
        for i in range(40):
            for s in srcs:
                shutil.copytree(s, os.path.join(d, f"c{i}", os.path.basename(s)))
        for i in range(200):
            sub = os.path.join(d, "gen", str(i))
            os.makedirs(sub)
            for j in range(100):
                with open(os.path.join(sub, f"f{j}.txt"), "w") as f:
                    f.write(f"{i} {j}\n")
        sh("git init -q && git add -A && git -c user.name=b -c user.email=b@b commit -qm t", cwd=d)
    return d


def setup_git():
    return big_tree(), ["git", "status", "--porcelain"], None


def setup_find():
    return big_tree(), ["find", ".", "-name", "*.h", "-size", "+1k"], None


KERNEL_TARBALL = "/usr/src/linux-source-6.1.tar.xz"


def kernel_tree():
    """The Linux 6.1 sources from Debian's linux-source-6.1 package (about 78,000 files),
    committed to git once. `apt-get install linux-source-6.1` first."""
    d = os.path.join(WORK, "linux")
    if not os.path.exists(os.path.join(d, ".git")):
        if not os.path.exists(KERNEL_TARBALL):
            sys.exit(f"kgit/kfind need {KERNEL_TARBALL}: apt-get install linux-source-6.1")
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
        sh(f"tar -xf {KERNEL_TARBALL} --strip-components=1", cwd=d)
        # Debian's tarball ignores everything at the top level (`/*` in .gitignore): drop
        # that, so the tree is committed as upstream's would be.
        gi = os.path.join(d, ".gitignore")
        with open(gi) as f:
            lines = [l for l in f if l.strip() not in ("/*", "!/debian/")]
        with open(gi, "w") as f:
            f.writelines(lines)
        sh("git init -q && git add -A && git -c user.name=b -c user.email=b@b commit -qm t", cwd=d)
    return d


def setup_kgit():
    return kernel_tree(), ["git", "status", "--porcelain"], None


def setup_kfind():
    return kernel_tree(), ["find", ".", "-name", "*.h", "-size", "+1k"], None


def setup_forkexec():
    return WORK, ["sh", "-c", "i=0; while [ $i -lt 2000 ]; do /bin/true; i=$((i+1)); done"], None


WORKLOADS = {
    "cbuild": setup_cbuild,
    "npm": setup_npm,
    "pipe": setup_pipe,
    "git": setup_git,
    "find": setup_find,
    "forkexec": setup_forkexec,
    # The metadata storm over a real kernel tree (needs linux-source-6.1): not in the default
    # set, name them explicitly.
    "kgit": setup_kgit,
    "kfind": setup_kfind,
}


# Short names for --variants.
KEYS = {"bare": "bare", "strace": "strace -f", "seccomp": "strace seccomp", "null": "null tracer",
        "record": "sbx record", "enforce": "sbx enforce", "floor": "design floor",
        "enforce-nofence": "sbx enforce --no-fence", "record-b": "sbx-b record",
        "enforce-b": "sbx-b enforce"}


def paired(rounds, a, b):
    """Round-by-round ratios b/a (both ran in the same round, next to each other): their
    median, range, and in how many rounds b was faster. Slow phases of a shared machine hit
    both sides of a pair alike, so this is steadier than a ratio of medians."""
    pairs = [(r[a], r[b]) for r in rounds if a in r and b in r]
    n = len(pairs)
    if n == 0:
        return None
    r = sorted(y / x for x, y in pairs)
    faster = sum(1 for x, y in pairs if y < x)
    return f"{b} / {a}, paired by round: median {statistics.median(r):.3f}, range {r[0]:.3f}-{r[-1]:.3f}, {b} faster in {faster} of {n} rounds"


def run_once(argv, cwd, reset):
    if reset:
        reset()
    t = time.monotonic()
    r = subprocess.run(argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    dt = time.monotonic() - t
    if r.returncode != 0:
        sys.stderr.write(f"FAILED ({r.returncode}): {' '.join(argv)}\n{r.stderr.decode()[-2000:]}\n")
        return None
    return dt


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--out", default=None)
    ap.add_argument("--hardening", action="store_true",
                    help="compare enforce with and without the race defence instead")
    ap.add_argument("--sbx-b", default=None, metavar="PATH",
                    help="a second sbx binary: adds the variants record-b and enforce-b")
    ap.add_argument("--alternate", action="store_true",
                    help="run the variants in reverse order every other round (A B, B A, ...) "
                    "so that neither side always runs right after the other")
    ap.add_argument("--variants", default=None,
                    help="comma-separated subset of: " + ",".join(KEYS) + " (bare is always run)")
    ap.add_argument("workloads", nargs="*",
                    default=[w for w in WORKLOADS if w not in ("kgit", "kfind")])
    a = ap.parse_args()
    os.makedirs(WORK, exist_ok=True)
    seccomp_list = stopped_syscalls()
    tmp = tempfile.mkdtemp(prefix="sbx-bench-")
    null = null_tracer(tmp)
    lines = []
    for name in a.workloads:
        cwd, cmd, reset = WORKLOADS[name]()
        trace = os.path.join(tmp, f"{name}.trace")
        profile = os.path.join(tmp, f"{name}.profile")
        # A warm-up run (caches, lazily created files such as git's commit-graph), then one
        # learning run for enforce.
        run_once(cmd, cwd, reset)
        if reset:
            reset()
        sh_list = [SBX, "record", "-o", trace, "--"] + cmd
        if subprocess.run(sh_list, cwd=cwd, stdout=subprocess.DEVNULL).returncode != 0:
            sys.stderr.write(f"{name}: the recorded run failed; skipped\n")
            continue
        subprocess.run([SBX, "learn", "-o", profile, trace], check=True)
        variants = {
            "bare": cmd,
            "sbx enforce": [SBX, "enforce", profile, "--"] + cmd,
            "sbx enforce, no race guard": [SBX, "enforce", "--unsafe-no-race-guard", profile, "--"] + cmd,
        } if a.hardening else {
            "bare": cmd,
            "strace -f": ["strace", "-f", "-qq", "-o", "/dev/null"] + cmd,
            "strace seccomp": ["strace", "-f", "-qq", "--seccomp-bpf", "-e", "trace=" + seccomp_list,
                               "-o", "/dev/null"] + cmd,
            "null tracer": null + cmd,
            "design floor": [null[0], "-w"] + null[1:] + cmd,
            "sbx record": [SBX, "record", "-o", os.path.join(tmp, "r.trace"), "--"] + cmd,
            "sbx enforce": [SBX, "enforce", profile, "--"] + cmd,
            "sbx enforce --no-fence": [SBX, "enforce", "--no-fence", profile, "--"] + cmd,
        }
        if a.sbx_b and not a.hardening:
            variants["sbx-b record"] = [a.sbx_b, "record", "-o", os.path.join(tmp, "rb.trace"), "--"] + cmd
            variants["sbx-b enforce"] = [a.sbx_b, "enforce", profile, "--"] + cmd
        if a.variants:
            keep = {KEYS[k.strip()] for k in a.variants.split(",")} | {"bare"}
            variants = {v: argv for v, argv in variants.items() if v in keep}
        else:
            # Only when named: the default set stays as in the results above.
            variants.pop("sbx enforce --no-fence", None)
        times = {v: [] for v in variants}
        rounds = []
        for i in range(a.rounds):
            rounds.append({})
            order = list(variants.items())
            if a.alternate and i % 2 == 1:
                order.reverse()
            for v, argv in order:
                dt = run_once(argv, cwd, reset)
                if dt is not None:
                    times[v].append(dt)
                    rounds[-1][v] = dt
        events = subprocess.run([SBX, "stats", "--count", trace], capture_output=True, text=True).stdout.strip()
        size = os.path.getsize(trace)
        base = statistics.median(times["bare"])
        lines.append(f"### {name}: `{' '.join(cmd)}`\n")
        lines.append(f"trace: {size} bytes, {events} events"
                     + (f", {size / int(events):.1f} bytes/event" if events.isdigit() and int(events) else "")
                     + "\n")
        # The floor of any ptrace + seccomp design: the null tracer. "Above the floor" is how
        # many points (of the bare time) a variant spends beyond it (issue 24's targets).
        floor = statistics.median(times["null tracer"]) if times.get("null tracer") else None
        lines.append("| variant | median s | ratio to bare | ratio to null tracer | above the floor | runs |")
        lines.append("|---|---|---|---|---|---|")
        for v, ts in times.items():
            if ts:
                m = statistics.median(ts)
                to_null = f"{m / floor:.2f}x" if floor else ""
                above = f"{(m - floor) / base * 100:+.0f} points" if floor else ""
                lines.append(f"| {v} | {m:.3f} | {m / base:.2f}x | {to_null} | {above} | {len(ts)} |")
            else:
                lines.append(f"| {v} | failed | | | | 0 |")
        lines.append("")
        shown = len(variants) + 5
        for x, y in (("strace seccomp", "sbx record"), ("strace seccomp", "sbx enforce"),
                     ("null tracer", "sbx enforce"), ("null tracer", "design floor"),
                     ("design floor", "sbx enforce"), ("sbx enforce --no-fence", "sbx enforce"),
                     ("sbx-b record", "sbx record"), ("sbx-b enforce", "sbx enforce")):
            if x in times and y in times:
                p = paired(rounds, x, y)
                if p:
                    lines.append(p + "\n")
                    shown += 1
        print("\n".join(lines[-shown:]), flush=True)
    text = "\n".join(lines)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text + "\n")
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
