#!/usr/bin/env bash
# Hot-cache listing benchmark: fnd against the serial floor, bfs, fd and find.
#
# Usage: bench/run.sh [--quick] [--runs N] [--dir DIR] [TREE...]
#   TREE      presets of bench/mktree.py: src fanout5 million bigdir (default:
#             all four), or the path of a tree made elsewhere
#   --quick   src only, fewer runs: under a minute once the tree exists
#   --runs N  timed runs per command (default: hyperfine's choice, at least 10)
#   --dir DIR where trees are made and reused (default $FND_BENCH_DIR, else
#             /tmp/fnd-bench); an existing DIR/TREE is used as it is, so a
#             directory of ready-made trees (e.g. /data/trees) works too
# Environment: FND (the fnd binary; default: built here with cargo --release),
# FND_ANCHORS (where bfs is looked for before PATH; default ../shared/anchors
# beside the checkout). bfs, fd and find are left out, with a note, when absent.
#
# Each tree gets ONE hyperfine run over all commands (hot cache: warm-up runs
# first, and the floor walks the tree before every timed run, so that a cache
# dropped by something else on the machine cannot make a run cold), with
# every command's output going to a pipe that bench/topipe drains, so each
# tool pays for writing its listing the way it would into `| grep`. The
# table shows each median as a ratio to the floor (bench/floor.c: openat +
# getdents64 per directory, serial, no output) and each command's peak RSS
# from one more run. Making the big trees takes minutes (million,
# bigdir: ~1M inodes each) and ~5 GB of disk; they are made once.
#
# Not run by CI: timings need a quiet machine and the trees are large.
set -euo pipefail
# shellcheck source=bench/common.sh
. "$(dirname "$0")/common.sh"

quick=false
own_option() {
    if [ "$1" = --quick ]; then quick=true; took=1; fi
}
parse_options "$@"
warmup=3
if $quick; then
    [ ${#trees[@]} -gt 0 ] || trees=(src)
    runs=${runs:-5}
    warmup=2
fi
[ ${#trees[@]} -gt 0 ] || trees=(src fanout5 million bigdir)
runs_arg=()
[ -z "$runs" ] || runs_arg=(--runs "$runs")

require hyperfine python3 cc cargo
build_helpers floor topipe
FND=$(release_binary fnd "${FND:-}")

# The others are optional: a missing one is left out of the table, saying so.
others=()
if bfs=$(find_tool bfs "apt-get install bfs"); then
    others+=(-n bfs "$bfs .")
    # bfs has threads (-j) from 3.0 on; Debian's 2.6 has not.
    if "$bfs" -j1 /dev/null >/dev/null 2>&1; then others+=(-n "bfs -j1" "$bfs -j1 ."); else echo "note: this bfs has no -j; 'bfs -j1' left out" >&2; fi
fi
if fd=$(find_tool fd "cargo install --locked fd-find"); then
    others+=(-n "fd -u ." "$fd -u ." -n "fd -j1 -u ." "$fd -j1 -u .")
fi
if find=$(find_tool find); then others+=(-n find "$find ."); fi

echo "fnd: $("$FND" --version 2>/dev/null || echo "$FND")"
[ -z "${bfs:-}" ] || echo "bfs: $bfs ($("$bfs" --version 2>/dev/null | head -1))"
machine
for name in "${trees[@]}"; do
    tree=$(tree_path "$name")
    cmds=(-n floor "$bin/floor ." -n "fnd -u ." "$FND -u ." -n "fnd -j1 -u ." "$FND -j1 -u ." "${others[@]}")
    # Every command runs as `topipe CMD`: the same pipe for all of them.
    piped=()
    for ((i = 0; i < ${#cmds[@]}; i += 3)); do
        piped+=(-n "${cmds[i + 1]}" "$bin/topipe ${cmds[i + 2]}")
    done
    tree_header "$name" "$tree"
    time_commands "$tree" "$work/times.json" --style basic --warmup "$warmup" "${runs_arg[@]}" --prepare "$bin/floor ." "${piped[@]}"
    rss=()
    for ((i = 0; i < ${#cmds[@]}; i += 3)); do
        rss+=("$(peak_rss "$tree" "${cmds[i + 2]}")")
    done
    ratios "$work/times.json" "${rss[@]}"
done
echo
echo "load average at the end: $(load); CPU pressure: $(head -1 /proc/pressure/cpu 2>/dev/null)"
