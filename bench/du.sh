#!/usr/bin/env bash
# Hot-cache disk-usage benchmark: `fdu -s` against the serial stat floor
# (`floor -s`: openat + getdents64 + one fstatat per entry), GNU `du -s`, and
# whichever of diskus, pdu, dust, dua and gdu are installed; and `fdu -o`
# (an export in ncdu's format) against `ncdu -o` and `gdu -o`.
#
# Usage: bench/du.sh [--runs N] [--dir DIR] [TREE...]
#   TREE      presets of bench/mktree.py (default: src million), or paths
#   --dir DIR where the trees are made and reused (default $FND_BENCH_DIR,
#             else /tmp/fnd-bench; bench/run.sh makes them the same way)
#   --runs N  timed runs per command (default 10)
# Environment: FDU (the fdu binary; default: built here with cargo --release);
#   FDU_BASE, an earlier fdu (one that printed its lines as directories
#   completed): then a second table gives du's order, `fdu` and `fdu -a`,
#   as ratios to that binary's unordered output on the same tree.
#
# One hyperfine run per tree over all commands (warm-up runs first; output to
# /dev/null: a summary is one line), printed by bench/table.py: each median
# as a ratio to the floor, CPU time, and peak RSS from one more run.
# The others are looked for in FND_ANCHORS (default ../shared/anchors), then
# on PATH and in ~/.cargo/bin, and left out with a note when absent.
# Installing them: apt-get install gdu ncdu; cargo install --locked diskus
# parallel-disk-usage du-dust dua-cli (many CPU minutes).
# Not run by CI: timings need a quiet machine and the trees are large.
set -euo pipefail
# shellcheck source=bench/common.sh
. "$(dirname "$0")/common.sh"

parse_options "$@"
runs=${runs:-10}
[ ${#trees[@]} -gt 0 ] || trees=(src million)
require hyperfine python3 cc
build_helpers floor topipe
FDU=$(release_binary fdu "${FDU:-}")

others=()
add() { # name tool args...: benchmarked when the tool is found
    local name=$1 tool=$2 path
    shift 2
    if path=$(find_tool "$tool"); then others+=(-n "$name" "$path $*"); fi
}
add "du -s" du -s .
add diskus diskus .
add pdu pdu --max-depth=1 --quantity=block-size .
add dust dust -d 0 .
add dua dua aggregate .
add gdu gdu --non-interactive --summarize --no-progress .
# What `fdu -o` is compared with: the scans behind ncdu's and gdu's exports.
add "ncdu -o" ncdu -0 -o /dev/null .
add "gdu -o" gdu --non-interactive --no-progress -o /dev/null .

echo "fdu: $("$FDU" --version)"
machine
for name in "${trees[@]}"; do
    tree=$(tree_path "$name")
    cmds=(-n "floor -s" "$bin/floor -s ." -n "fdu -s" "$FDU -s ." -n "fdu -o" "$FDU -o /dev/null ." "${others[@]}")
    tree_header "$name" "$tree"
    # Each run is preceded by a stat walk, so the tree stays hot even when
    # something else on the machine drops caches.
    time_commands "$tree" "$work/times.json" --style basic --warmup 2 --runs "$runs" --prepare "$bin/floor -s ." --output=null "${cmds[@]}"
    rss=()
    for ((i = 0; i < ${#cmds[@]}; i += 3)); do
        rss+=("$(peak_rss "$tree" "${cmds[i + 2]}")")
    done
    ratios "$work/times.json" "${rss[@]}"
    # du's order against the unordered lines of FDU_BASE (issue 30's goal: at most 1.05x).
    if [ -n "${FDU_BASE:-}" ]; then
        base=$(realpath "$FDU_BASE")
        echo "-- du's order: fdu against FDU_BASE"
        time_commands "$tree" "$work/order.json" --style none --warmup 2 --runs "$runs" --output=null \
            -n "base fdu" "$base ." -n "fdu" "$FDU ." -n "base fdu -a" "$base -a ." -n "fdu -a" "$FDU -a ."
        ratios --ref "base fdu" "$work/order.json"
    fi
done
echo
echo "load average at the end: $(load)"
