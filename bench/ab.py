#!/usr/bin/env python3
"""Compare commands interleaved: one run of each in turn, round after round.

    ab.py [--rounds N] [--warmup N] [--dir DIR] [--pipe TOPIPE] [--roundtrip BIN] CMD CMD...

Each CMD is one string, split into words as a shell would (no shell runs
it). Running them in turn (in a new random order each round) spreads the
machine's moods over all of them alike, which hyperfine's one command after
the other does not: on a busy machine this is the way to decide whether a
change moved anything. With --pipe (bench/topipe, built by build_helpers),
each command's output goes to a pipe that is drained, as in the other
benchmarks; otherwise to /dev/null.

Prints each command's median wall time, its ratio to the first command's
median, the median of the per-round ratios (the steadier figure), and the
median CPU time (user + system of the command and its children: on a busy
machine it moves less than wall time) with its ratio to the first's.

With --roundtrip (bench/roundtrip, built by build_helpers), each round is
tagged with a cache line's round trip between two threads (the larger of
the probe's figures before and after it), and the table is printed again
for the rounds under 200 ns and for the others: a virtual machine's host
moves its cores within seconds (60, 330, 1,000 ns from one minute to the
next), and a walk whose threads share lines (the ordered walk) moves with
them, where the unordered walk hardly does.
"""
import argparse
import os
import random
import resource
import shlex
import statistics
import subprocess
import sys
import time


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--dir", default=".")
    parser.add_argument("--pipe", help="run each command as `TOPIPE CMD`")
    parser.add_argument("--roundtrip", help="tag each round with this probe's nanoseconds")
    parser.add_argument("commands", nargs="+")
    args = parser.parse_args()
    argvs = [shlex.split(c) for c in args.commands]
    if args.pipe:
        argvs = [[os.path.abspath(args.pipe), *a] for a in argvs]
    times = [[] for _ in argvs]
    cpus = [[] for _ in argvs]
    trips = []
    for round_ in range(args.warmup + args.rounds):
        trip_before = roundtrip(args.roundtrip)
        order = list(range(len(argvs)))
        random.shuffle(order)
        for i in order:
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            start = time.perf_counter()
            done = subprocess.run(argvs[i], cwd=args.dir, stdout=subprocess.DEVNULL)
            took = time.perf_counter() - start
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
            if done.returncode not in (0, 1):
                print(f"{args.commands[i]}: exit status {done.returncode}", file=sys.stderr)
                return 1
            if round_ >= args.warmup:
                times[i].append(took)
                cpus[i].append(cpu)
        if round_ >= args.warmup:
            trips.append(max(trip_before, roundtrip(args.roundtrip)))
    table(args.commands, times, cpus)
    if args.roundtrip:
        print(f"cores' round trip per round, ns: {sorted(round(t) for t in trips)}")
        for label, near in (("round trip under 200 ns", True), ("round trip 200 ns or more", False)):
            rounds = [r for r, t in enumerate(trips) if (t < FAR_NS) == near]
            if rounds:
                print(f"{label}: {len(rounds)} rounds")
                table(args.commands, [[t[r] for r in rounds] for t in times], [[c[r] for r in rounds] for c in cpus])
    return 0


# A cache line's round trip from which two cores no longer share a cache.
FAR_NS = 200


def roundtrip(probe):
    """The probe's round trip in ns (0 without a probe)."""
    if not probe:
        return 0.0
    return float(subprocess.run([probe], capture_output=True, text=True, check=True).stdout)


def table(commands, times, cpus):
    """Each command's medians, and ratios to the first command's."""
    first = statistics.median(times[0])
    first_cpu = statistics.median(cpus[0])
    width = max(10, *(len(c) for c in commands))
    print(f"{'command':<{width}} {'median ms':>10} {'x first':>8} {'round ratio':>12} {'CPU ms':>8} {'CPU x first':>12}")
    for command, t, c in zip(commands, times, cpus):
        per_round = statistics.median(a / b for a, b in zip(t, times[0]))
        median, cpu = statistics.median(t), statistics.median(c)
        print(
            f"{command:<{width}} {median * 1000:>10.2f} {median / first:>8.3f} {per_round:>12.3f}"
            f" {cpu * 1000:>8.1f} {cpu / first_cpu:>12.3f}"
        )


if __name__ == "__main__":
    sys.exit(main())
