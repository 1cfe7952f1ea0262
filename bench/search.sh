#!/usr/bin/env bash
# Hot-cache search benchmark: fd's own benchmark cases, fnd against fd and
# bfs's equivalent, on the src and million trees.
#
# Usage: bench/search.sh [--runs N] [--dir DIR] [TREE...]
#   TREE      presets of bench/mktree.py (default: src million), or paths
#   --dir DIR where the trees are made and reused (default $FND_BENCH_DIR,
#             else /tmp/fnd-bench; bench/run.sh makes them the same way)
#   --runs N  timed runs per command (default 10)
# Environment: FND (the fnd binary; default: built here with cargo --release),
# FND_ANCHORS (where bfs is looked for before PATH; default ../shared/anchors).
#
# Cases: a regex ('[0-9]\.rs$'), -e rs, -t l, -S +1k (needs a stat per
# file), -x echo and -X echo on a small result set (^walk_tree: ~30 files on
# src), and -1 for a file at depth 3. Every tool searches everything (fd and
# fnd with -u, as bfs has no ignore files), output to a pipe through
# bench/topipe. One hyperfine run per case; the table gives each median as a
# ratio to fd's. Not run by CI.
# Then -X over every file (-t f -X true, fd's defaults, against fd), and
# fnd --json -u . against fnd -l -u . (ls -l over every result: slow, a
# minute on million; at most 3 runs).
set -euo pipefail
# shellcheck source=bench/common.sh
. "$(dirname "$0")/common.sh"

parse_options "$@"
runs=${runs:-10}
[ ${#trees[@]} -gt 0 ] || trees=(src million)
require hyperfine python3 cc fd
fd=$(find_tool fd)
bfs=$(find_tool bfs "apt-get install bfs") || bfs=

build_helpers topipe roundtrip
FND=$(release_binary fnd "${FND:-}")

# case name, fnd/fd arguments, bfs arguments ('' when bfs has no equivalent)
run_case() {
    local name=$1 args=$2 bfs_args=$3
    local cmds=(-n "fd $args" "$bin/topipe $fd $args" -n "fnd $args" "$bin/topipe $FND $args")
    if [ -n "$bfs" ] && [ -n "$bfs_args" ]; then
        cmds+=(-n "bfs $bfs_args" "$bin/topipe $bfs . $bfs_args")
    fi
    echo
    echo "-- $name"
    time_commands . "$work/times.json" --style none --warmup 2 --runs "$runs" "${cmds[@]}"
    ratios --ref fd "$work/times.json"
}

# fnd against itself: case name, reference arguments, arguments.
run_own_case() {
    local name=$1 ref=$2 args=$3 own_runs=$4
    echo
    echo "-- $name"
    time_commands . "$work/times.json" --style none --warmup 1 --runs "$own_runs" \
        -n "fnd $ref" "$bin/topipe $FND $ref" -n "fnd $args" "$bin/topipe $FND $args"
    ratios --ref "fnd $ref" "$work/times.json"
}

for name in "${trees[@]}"; do
    tree=$(tree_path "$name")
    cd "$tree"
    # The first file (in name order) three levels down: a target for -1.
    deep=$(find . -mindepth 3 -maxdepth 3 -type f | LC_ALL=C sort | head -1)
    deep=${deep##*/}
    tree_header "$name" "$tree"
    # hyperfine -N splits words like a shell (quotes, backslashes) but runs no shell.
    run_case regex "-u '[0-9]\.rs\$'" "-regex '.*[0-9]\.rs'"
    run_case extension "-u -e rs" "-name *.rs"
    run_case symlinks "-u -t l" "-type l"
    # fd's k is 1000 bytes and + means at least: bfs's equivalent is > 999 bytes.
    run_case size "-u -S +1k" "-type f -size +999c"
    run_case exec "-u ^walk_tree -x echo" "-name 'walk_tree*' -exec echo {} ;"
    run_case exec-batch "-u ^walk_tree -X echo" "-name 'walk_tree*' -exec echo {} +"
    run_case first "-u -1 '^${deep//./\\.}\$'" "-name '$deep' -print -quit"
    run_case exec-batch-all "-t f -X true" ""
    run_own_case json "-l -u ." "--json -u ." "$((runs < 3 ? runs : 3))"
    # --sort on every core against the unsorted listing (goal: at most 1.15x).
    # The sorted walk's threads share cache lines: the cores' round trip
    # (bench/roundtrip) says whether the machine had them near or far.
    echo
    echo "-- sorted, as ratios to fnd -u; peak RSS after; cores' round trip $("$bin/roundtrip") ns before"
    time_commands . "$work/sort.json" --style none --warmup 2 --runs "$runs" \
        -n "fnd -u" "$bin/topipe $FND -u" -n "fnd -u --sort name" "$bin/topipe $FND -u --sort name" \
        -n "fnd -u --sort path" "$bin/topipe $FND -u --sort path" -n "fnd -u --order dfs --sort name" "$bin/topipe $FND -u --order dfs --sort name"
    ratios --ref "fnd -u" "$work/sort.json" "$(peak_rss . "$FND -u")" "$(peak_rss . "$FND -u --sort name")" \
        "$(peak_rss . "$FND -u --sort path")" "$(peak_rss . "$FND -u --order dfs --sort name")"
    echo "cores' round trip $("$bin/roundtrip") ns after"
done
echo
echo "load average at the end: $(load)"
