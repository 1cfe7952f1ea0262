#!/usr/bin/env python3
"""Compare commands interleaved: one run of each in turn, round after round.

    ab.py [--rounds N] [--warmup N] [--dir DIR] [--pipe TOPIPE] CMD CMD...

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
    parser.add_argument("commands", nargs="+")
    args = parser.parse_args()
    argvs = [shlex.split(c) for c in args.commands]
    if args.pipe:
        argvs = [[os.path.abspath(args.pipe), *a] for a in argvs]
    times = [[] for _ in argvs]
    cpus = [[] for _ in argvs]
    for round_ in range(args.warmup + args.rounds):
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
    first = statistics.median(times[0])
    first_cpu = statistics.median(cpus[0])
    width = max(10, *(len(c) for c in args.commands))
    print(f"{'command':<{width}} {'median ms':>10} {'x first':>8} {'round ratio':>12} {'CPU ms':>8} {'CPU x first':>12}")
    for command, t, c in zip(args.commands, times, cpus):
        per_round = statistics.median(a / b for a, b in zip(t, times[0]))
        median, cpu = statistics.median(t), statistics.median(c)
        print(
            f"{command:<{width}} {median * 1000:>10.2f} {median / first:>8.3f} {per_round:>12.3f}"
            f" {cpu * 1000:>8.1f} {cpu / first_cpu:>12.3f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
