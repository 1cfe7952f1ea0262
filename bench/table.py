#!/usr/bin/env python3
"""Print a benchmark table from one hyperfine run.

    table.py [--ref LABEL | --ref-fastest-except PREFIXES] RESULTS.json [RSS_KIB ...]
    table.py --goals GOALS RESULTS.json...
    table.py --scaling BASELINE [--efficiency MIN] RESULTS.json...
    table.py --medians SAMPLES.tsv

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

--goals checks ratios of medians, over the commands of one or more runs
(found by name). GOALS is a file with one goal a line, fields separated
by tabs: the most the ratio may be, the numerator's name, and the names
whose medians add up to the denominator:

    0.5<TAB>mpirun -n 2 fnd -u .<TAB>mpirun -n 2 dwalk -l .
    1.15<TAB>mpirun -n 2 fnd -u .<TAB>fnd -u .<TAB>mpirun -n 2 mpi_init

A goal whose commands did not all run says which one is missing.

--scaling prints, for each command run as `mpirun -n N REST` at several N,
its median per N, the speed-up over its smallest N and the efficiency
(speed-up over the growth in ranks), first of the whole run, then of the
walk alone: the median less that of `mpirun -n N BASELINE` (start-up and
whatever the launch adds, e.g. mounting). CPU is the mean CPU time of all
processes over the mean wall time of the cores: near 100% the run measured
the CPUs, not what it meant to. With --efficiency MIN, a walk efficiency
below MIN is marked.

--medians reads lines of NAME<TAB>WHAT<TAB>VALUE (samples, e.g. a walk time
a tool printed, one line per run) and prints the median of each NAME and
WHAT, a row per NAME and a column per WHAT, in the order first seen.
"""
import json
import os
import re
import statistics
import sys


def median(result):
    return statistics.median(result["times"])


def load(paths):
    """The results of several runs, by command name (a later run wins)."""
    by_name = {}
    for path in paths:
        for r in json.load(open(path))["results"]:
            by_name[r["command"]] = r
    return by_name


def goals(goals_path, results):
    by_name = load(results)
    rows = []
    for line in open(goals_path):
        fields = line.rstrip("\n").split("\t")
        if len(fields) < 3:
            continue
        limit, num, dens = float(fields[0]), fields[1], fields[2:]
        what = f"{num} / {dens[0]}" if len(dens) == 1 else f"{num} / ({' + '.join(dens)})"
        missing = [n for n in [num, *dens] if n not in by_name]
        if missing:
            rows.append((what, "-", limit, "not run: " + missing[0]))
            continue
        ratio = median(by_name[num]) / sum(median(by_name[d]) for d in dens)
        rows.append((what, f"{ratio:.2f}", limit, "yes" if ratio <= limit else "NO"))
    width = max([4] + [len(r[0]) for r in rows])
    print(f"{'goal':<{width}} {'ratio':>6} {'at most':>8}  met")
    for what, ratio, limit, met in rows:
        print(f"{what:<{width}} {ratio:>6} {limit:>8.2f}  {met}")
    return 0


def scaling(baseline, min_efficiency, results):
    runs = {}  # REST -> {N: result}, in the order first seen
    for name, r in load(results).items():
        m = re.match(r"mpirun -n (\d+) (.*)$", name)
        if m:
            runs.setdefault(m.group(2), {})[int(m.group(1))] = r
    base = runs.get(baseline, {})
    cores = os.cpu_count() or 1

    def walk(rest, n):
        """The median less the baseline's at the same rank count, if both ran."""
        if rest == baseline or n not in base:
            return None
        return median(runs[rest][n]) - median(base[n])

    width = max([7] + [len(rest) for rest in runs])
    print(
        f"{'command':<{width}} {'ranks':>5} {'median s':>9} {'speed-up':>8} {'effic.':>7}"
        f" {'walk s':>7} {'speed-up':>8} {'effic.':>7} {'CPU':>5}"
    )
    for rest, by_n in runs.items():
        first = min(by_n)
        t1, w1 = median(by_n[first]), walk(rest, first)
        for n in sorted(by_n):
            t, w = median(by_n[n]), walk(rest, n)
            walk_s = speedup_w = eff_w = "-"
            mark = ""
            if w is not None:
                walk_s = f"{w:.2f}"
                if w > 0 and w1 is not None and w1 > 0:
                    eff = w1 / w * first / n
                    # Truncated, so that a mark is never next to "80%".
                    speedup_w, eff_w = f"{w1 / w:.2f}", f"{int(eff * 100)}%"
                    if min_efficiency is not None and n != first and eff < min_efficiency:
                        mark = "  < goal"
            cpu = (by_n[n]["user"] + by_n[n]["system"]) / (by_n[n]["mean"] * cores) * 100
            print(
                f"{rest:<{width}} {n:>5} {t:>9.2f} {t1 / t:>8.2f} {t1 / t * first / n * 100:>6.0f}%"
                f" {walk_s:>7} {speedup_w:>8} {eff_w:>7} {cpu:>4.0f}%{mark}"
            )
    return 0


def medians(path):
    samples = {}  # name -> {what: [values]}
    columns = []
    for line in open(path):
        fields = line.rstrip("\n").split("\t")
        if len(fields) != 3:
            continue
        name, what, value = fields
        if what not in columns:
            columns.append(what)
        samples.setdefault(name, {}).setdefault(what, []).append(float(value))
    if not samples:
        print("(nothing reported)")
        return 0

    def cell(values):
        if not values:
            return "-"
        m = statistics.median(values)
        return f"{m:.0f}" if all(v == int(v) for v in values) else f"{m:.3f}"

    width = max(len(n) for n in samples)
    cols = [max(12, len(c)) for c in columns]
    print(f"{'command':<{width}} " + " ".join(f"{c:>{w}}" for c, w in zip(columns, cols)))
    for name, by_what in samples.items():
        print(f"{name:<{width}} " + " ".join(f"{cell(by_what.get(c)):>{w}}" for c, w in zip(columns, cols)))
    return 0


def main(argv):
    if len(argv) == 3 and argv[1] == "--medians":
        return medians(argv[2])
    if len(argv) > 2 and argv[1] == "--goals":
        return goals(argv[2], argv[3:])
    if len(argv) > 2 and argv[1] == "--scaling":
        baseline, args, min_efficiency = argv[2], argv[3:], None
        if len(args) > 1 and args[0] == "--efficiency":
            min_efficiency, args = float(args[1]), args[2:]
        return scaling(baseline, min_efficiency, args)
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
            ref = min(others, key=median)
            label = "best other"
        else:
            ref, label = None, "-"
    width = max(10, *(len(r["command"]) for r in results))
    x_col, min_col = max(8, len("x " + label)), max(12, len("min x " + label))
    print(f"{'command':<{width}} {'median ms':>10} {'x ' + label:>{x_col}} {'min x ' + label:>{min_col}} {'CPU ms':>8} {'peak RSS MiB':>13}")
    for i, r in enumerate(results):
        mid = median(r)
        try:
            mib = f"{int(rss[i]) / 1024:.1f}"
        except (IndexError, ValueError):
            mib = "-"
        if ref is None:
            ratio = fastest = "-"
        else:
            ratio = f"{mid / median(ref):.2f}"
            fastest = f"{min(r['times']) / min(ref['times']):.2f}"
        cpu = (r["user"] + r["system"]) * 1000
        print(f"{r['command']:<{width}} {mid * 1000:>10.1f} {ratio:>{x_col}} {fastest:>{min_col}} {cpu:>8.0f} {mib:>13}")
    if ours is not None:
        print(f"best other: {ref['command'] if ref else '- (none ran)'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
