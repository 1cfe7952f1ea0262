#!/usr/bin/env python3
"""The Python package against os.walk, scandir_rs and pwalk (issue 33's goals).

    python bench/python.py [--rounds N] [TREE...]

Needs fnd_walk installed (pip install ./crates/python) and, for the
comparison, scandir-rs and pwalk from PyPI. Times are Python-level (the
whole loop, objects built), hot cache (one warm-up pass per tree), the
tools interleaved round by round; it prints each tool's median and the
ratios to it. A missing comparison package is skipped with a note.

Goals: walk >= 4x os.walk and >= 1.5x scandir_rs.Walk and pwalk;
find(T, extension="rs") >= 10x os.walk + endswith; iterating scan() on
the million tree within 64 MiB of peak RSS above the interpreter's.
"""

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time

import fnd_walk

TREES = ["/work/trees/src", "/work/trees/million", "/usr"]


def walkers():
    found = {"fnd_walk.walk": fnd_walk.walk, "os.walk": os.walk}
    try:
        import scandir_rs

        found["scandir_rs.Walk"] = scandir_rs.Walk
    except ImportError:
        print("# scandir_rs not installed: pip install scandir-rs", file=sys.stderr)
    try:
        import pwalk

        found["pwalk.walk"] = pwalk.walk
    except ImportError:
        print("# pwalk not installed: pip install pwalk", file=sys.stderr)
    return found


def os_find_rs(tree):
    return sum(1 for _, _, fs in os.walk(tree) for f in fs if f.endswith(".rs"))


def fnd_find_rs(tree):
    # Everything, as os.walk sees it: hidden entries and ignored ones too.
    # find also yields directories named *.rs; the tree has none that os.walk's
    # filenames would miss, and the counts are printed to check.
    return sum(1 for _ in fnd_walk.find(tree, extension="rs", hidden=True, ignore=False))


def timed(f):
    """Wall time, CPU time of the whole process (the walking threads too), result."""
    before = resource.getrusage(resource.RUSAGE_SELF)
    start = time.perf_counter()
    result = f()
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_SELF)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return wall, cpu, result


def peak_rss_kib(code):
    """Peak RSS of a fresh interpreter running `code`: VmHWM, which starts
    again at exec (getrusage's ru_maxrss would carry this process's peak)."""
    report = "\nprint([l.split()[1] for l in open('/proc/self/status') if l.startswith('VmHWM')][0])"
    out = subprocess.run([sys.executable, "-c", code + report], capture_output=True, text=True, check=True)
    return int(out.stdout.split()[-1])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("trees", nargs="*", default=TREES)
    args = parser.parse_args()
    tools = walkers()
    tests = {name: (lambda t, w=w: sum(len(f) for _, _, f in w(t))) for name, w in tools.items()}
    tests["fnd_walk.find ext=rs"] = fnd_find_rs
    tests["os.walk+endswith .rs"] = os_find_rs
    print(f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {os.cpu_count()} cores, "
          f"Python {sys.version.split()[0]}, load {os.getloadavg()[0]:.1f}, {args.rounds} rounds interleaved")
    for tree in args.trees:
        if not os.path.isdir(tree):
            print(f"# {tree}: missing, skipped")
            continue
        times = {name: [] for name in tests}
        cpus = {name: [] for name in tests}
        counts = {}
        for name, f in tests.items():  # warm-up: a hot cache for everyone
            counts[name] = f(tree)
        for _ in range(args.rounds):
            for name, f in tests.items():
                t, cpu, counts[name] = timed(lambda: f(tree))
                times[name].append(t)
                cpus[name].append(cpu)
        med = {name: statistics.median(ts) for name, ts in times.items()}
        cpu = {name: statistics.median(ts) for name, ts in cpus.items()}
        ours = med["fnd_walk.walk"]
        print(f"\n## {tree}")
        print("| tool | files | median wall s | fnd_walk.walk is faster by | median CPU s |")
        print("| --- | ---: | ---: | ---: | ---: |")
        for name in tools:
            print(f"| {name} | {counts[name]} | {med[name]:.3f} | {med[name] / ours:.2f}x | {cpu[name]:.3f} |")
        find, os_find = med["fnd_walk.find ext=rs"], med["os.walk+endswith .rs"]
        print(f"| os.walk + endswith('.rs') | {counts['os.walk+endswith .rs']} | {os_find:.3f} | | "
              f"{cpu['os.walk+endswith .rs']:.3f} |")
        print(f"| fnd_walk.find(extension='rs') | {counts['fnd_walk.find ext=rs']} | {find:.3f} | "
              f"{os_find / find:.2f}x faster than os.walk + endswith | {cpu['fnd_walk.find ext=rs']:.3f} |")
    million = "/work/trees/million"
    if million in args.trees and os.path.isdir(million):
        base = peak_rss_kib("import fnd_walk")
        scan = peak_rss_kib(f"import fnd_walk\nn = sum(1 for _ in fnd_walk.scan({million!r}))")
        print(f"\nscan() over {million}: peak RSS {scan / 1024:.1f} MiB, "
              f"{(scan - base) / 1024:.1f} MiB above the interpreter's ({base / 1024:.1f} MiB)")


if __name__ == "__main__":
    main()
