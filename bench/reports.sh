#!/usr/bin/env bash
# The reports of issue 32, hot cache, as ratios from one interleaved run:
#   - `fdu --by user,ext` against `fdu -s` (goal: at most 1.15x);
#   - `fdu --diff OLD NEW` of two exports of the tree, NEW with 1% of its
#     entries changed (bench/mutate_export.py; goals: at most 2 s and
#     64 MiB), and `fdu --diff OLD .` (the live tree) against `fdu -s`
#     (goal: at most 1.3x).
#
# Usage: bench/reports.sh [--runs N] [--dir DIR] [TREE...]
#   TREE      presets of bench/mktree.py (default: million), or paths
#   --dir DIR where the trees are made and reused (default $FND_BENCH_DIR,
#             else /tmp/fnd-bench)
#   --runs N  timed runs per command (default 10)
# Environment: FDU (the fdu binary; default: built here with cargo --release).
# Peak RSS from one more run of each. Not run by CI.
set -euo pipefail
# shellcheck source=bench/common.sh
. "$(dirname "$0")/common.sh"

parse_options "$@"
runs=${runs:-10}
[ ${#trees[@]} -gt 0 ] || trees=(million)
require hyperfine python3 cc
build_helpers floor topipe
FDU=$(release_binary fdu "${FDU:-}")

echo "fdu: $("$FDU" --version)"
machine
for name in "${trees[@]}"; do
    tree=$(tree_path "$name")
    "$FDU" -o "$work/old.ncdu" "$tree"
    python3 "$repo/bench/mutate_export.py" "$work/old.ncdu" "$work/new.ncdu" 0.01
    cmds=(
        -n "fdu -s" "$FDU -s ."
        -n "fdu --by user,ext" "$FDU --by user,ext ."
        -n "fdu --by type,age" "$FDU --by type,age ."
        -n "fdu --diff OLD ." "$FDU --diff $work/old.ncdu ."
        -n "fdu --diff OLD NEW" "$FDU --diff $work/old.ncdu $work/new.ncdu"
    )
    tree_header "$name" "$tree"
    time_commands "$tree" "$work/times.json" --style basic --warmup 2 --runs "$runs" --prepare "$bin/floor -s ." --output=null "${cmds[@]}"
    rss=()
    for ((i = 0; i < ${#cmds[@]}; i += 3)); do
        rss+=("$(peak_rss "$tree" "${cmds[i + 2]}")")
    done
    ratios "$work/times.json" "${rss[@]}"
done
echo
echo "load average at the end: $(load)"
