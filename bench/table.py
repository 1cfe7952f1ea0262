#!/usr/bin/env python3
"""Print a benchmark table from one hyperfine run.

    table.py [--ref LABEL] RESULTS.json [RSS_KIB ...]

Each command's median, as milliseconds and as a ratio to the first command
(the floor); its fastest run as a ratio to the floor's fastest (the run
least disturbed by other work on the machine); its mean CPU time (user + system, all threads: on a busy
machine this moves less than wall time); and its peak RSS in MiB: the n-th
RSS_KIB belongs to the n-th command ('-' or nothing when it was not measured).
The first command is the reference; --ref names it in the headers
(default: floor).
"""
import json
import statistics
import sys


def main(argv):
    ref = "floor"
    if len(argv) > 2 and argv[1] == "--ref":
        ref = argv[2]
        argv = argv[:1] + argv[3:]
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    results = json.load(open(argv[1]))["results"]
    rss = argv[2:]
    floor = statistics.median(results[0]["times"])
    floor_min = min(results[0]["times"])
    width = max(10, *(len(r["command"]) for r in results))
    print(f"{'command':<{width}} {'median ms':>10} {'x ' + ref:>8} {'min x ' + ref:>12} {'CPU ms':>8} {'peak RSS MiB':>13}")
    for i, r in enumerate(results):
        median = statistics.median(r["times"])
        try:
            mib = f"{int(rss[i]) / 1024:.1f}"
        except (IndexError, ValueError):
            mib = "-"
        cpu = (r["user"] + r["system"]) * 1000
        print(f"{r['command']:<{width}} {median * 1000:>10.1f} {median / floor:>8.2f} {min(r['times']) / floor_min:>12.2f} {cpu:>8.0f} {mib:>13}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
