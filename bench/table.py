#!/usr/bin/env python3
"""Print a benchmark table from one hyperfine run.

    table.py [--ref LABEL | --ref-fastest-except PREFIXES] RESULTS.json [RSS_KIB ...]

Each command's median, as milliseconds and as a ratio to the reference's
median; its fastest run as a ratio to the reference's fastest (the run
least disturbed by other work on the machine); its mean CPU time (user +
system, all threads: on a busy machine this moves less than wall time); and
its peak RSS in MiB: the n-th RSS_KIB belongs to the n-th command ('-' or
nothing when it was not measured).

The reference is the first command; --ref names it in the headers (default:
floor). With --ref-fastest-except fnd,fdu,floor it is instead the fastest
command whose name starts with none of those prefixes (the best of the
other tools), named in a line after the table.
"""
import json
import statistics
import sys


def main(argv):
    label = "floor"
    ours = None
    args = argv[1:]
    while args and args[0] in ("--ref", "--ref-fastest-except"):
        if len(args) < 2:
            print(__doc__, file=sys.stderr)
            return 2
        if args[0] == "--ref":
            label = args[1]
        else:
            ours = tuple(p for p in args[1].split(",") if p)
        args = args[2:]
    if not args:
        print(__doc__, file=sys.stderr)
        return 2
    results = json.load(open(args[0]))["results"]
    rss = args[1:]
    ref = results[0]
    if ours is not None:
        others = [r for r in results if not r["command"].startswith(ours)]
        if others:
            ref = min(others, key=lambda r: statistics.median(r["times"]))
            label = "best other"
        else:
            ref, label = None, "-"
    width = max(10, *(len(r["command"]) for r in results))
    x_col, min_col = max(8, len("x " + label)), max(12, len("min x " + label))
    print(f"{'command':<{width}} {'median ms':>10} {'x ' + label:>{x_col}} {'min x ' + label:>{min_col}} {'CPU ms':>8} {'peak RSS MiB':>13}")
    for i, r in enumerate(results):
        median = statistics.median(r["times"])
        try:
            mib = f"{int(rss[i]) / 1024:.1f}"
        except (IndexError, ValueError):
            mib = "-"
        if ref is None:
            ratio = fastest = "-"
        else:
            ratio = f"{median / statistics.median(ref['times']):.2f}"
            fastest = f"{min(r['times']) / min(ref['times']):.2f}"
        cpu = (r["user"] + r["system"]) * 1000
        print(f"{r['command']:<{width}} {median * 1000:>10.1f} {ratio:>{x_col}} {fastest:>{min_col}} {cpu:>8.0f} {mib:>13}")
    if ours is not None:
        print(f"best other: {ref['command'] if ref else '- (none ran)'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
