#!/usr/bin/env bash
# Hot-cache index benchmark: building an index, querying it (checked and
# stale-ok), against plocate and the live walk, on src, million and /usr.
#
# Usage: bench/index.sh [--runs N] [--dir DIR] [TREE...]
#   TREE      presets of bench/mktree.py (default: src million /usr), or paths
#   --dir DIR where the trees are made and reused (default $FND_BENCH_DIR,
#             else /tmp/fnd-bench)
#   --runs N  timed runs per command (default 10)
# Environment: FND (the fnd binary; default: built here with cargo --release).
#
# Per tree: `fnd --build-index .` against a live `fnd -u .` and plocate's
# `updatedb -U TREE -o DB -l 0`, then the build and the live walk again,
# interleaved (bench/ab.py); then for each query (a rare name,
# lexer71.java; main_types; query, which matches half of million) the
# stale-ok and checked queries, plocate and live `fnd -u`, all with -u;
# a checked query after 1% of the directories changed (a file made and
# removed in each, on a copy of the tree, before every run; preset trees
# only, not paths such as /usr); the sizes of
# the index and of plocate's database; peak RSS of the queries. The index
# and the database live in a scratch directory, never in the tree. Not
# run by CI.
set -euo pipefail
# shellcheck source=bench/common.sh
. "$(dirname "$0")/common.sh"

parse_options "$@"
runs=${runs:-10}
[ ${#trees[@]} -gt 0 ] || trees=(src million /usr)
require hyperfine python3 cc plocate updatedb
build_helpers topipe
FND=$(release_binary fnd "${FND:-}")
export XDG_CACHE_HOME=$work/cache
machine

for name in "${trees[@]}"; do
    tree=$(tree_path "$name")
    label=${name//\//_}
    idx=$work/$label.fndidx
    db=$work/$label.plocate.db
    tree_header "$name" "$tree"

    echo
    echo "-- build (reference: live fnd -u .)"
    time_commands "$tree" "$work/build.json" --style none --warmup 1 --runs "$runs" \
        -n "fnd -u ." "$bin/topipe $FND -u ." \
        -n "fnd --build-index" "$FND --build-index --index-file $idx ." \
        -n "updatedb" "updatedb -U $tree -o $db -l 0 --prunepaths '' --prunenames '' --prunefs ''"
    ratios "$work/build.json"
    echo "index: $(stat -c %s "$idx") bytes, plocate db: $(stat -c %s "$db") bytes"
    # hyperfine runs one command's runs back to back: on a shared machine
    # the same build read 1.17x and 1.28x an hour apart. Interleaved, each
    # round both in a random order, the ratio holds steadier.
    echo "-- build interleaved with the live walk (bench/ab.py, $((2 * runs)) rounds)"
    python3 "$repo/bench/ab.py" --rounds $((2 * runs)) --warmup 1 --dir "$tree" --pipe "$bin/topipe" \
        "$FND -u ." "$FND --build-index --index-file $idx ."

    for q in lexer71.java main_types query; do
        echo
        echo "-- query $q ($("$FND" -u "$q" "$tree" | wc -l) results; reference: live fnd -u)"
        # -i: plocate exits 1 when nothing matches.
        time_commands "$tree" "$work/q.json" --style none --warmup 2 --runs "$runs" -i \
            -n "fnd -u $q" "$bin/topipe $FND -u $q" \
            -n "stale-ok" "$bin/topipe $FND --indexed=stale-ok --index-file $idx -u $q" \
            -n "checked" "$bin/topipe $FND --indexed --index-file $idx -u $q" \
            -n "plocate" "$bin/topipe plocate -d $db $q"
        ratios "$work/q.json" \
            "$(peak_rss "$tree" "$FND" -u "$q")" \
            "$(peak_rss "$tree" "$FND" --indexed=stale-ok --index-file "$idx" -u "$q")" \
            "$(peak_rss "$tree" "$FND" --indexed --index-file "$idx" -u "$q")" \
            "$(peak_rss "$tree" plocate -d "$db" "$q")"
    done

    # The change case works on a copy: only of the preset trees (/usr is GBs).
    case $name in */*) continue ;; esac
    echo
    echo "-- checked query after 1% of the directories changed (a copy of the tree)"
    copy=$work/copy
    rm -rf "$copy"
    cp -a "$tree" "$copy"
    find "$copy" -type d | awk 'NR % 100 == 0' >"$work/dirs"
    echo "$(wc -l <"$work/dirs") of $(find "$copy" -type d | wc -l) directories change before each run"
    cat >"$work/touch.sh" <<'SH'
while read -r d; do : >"$d/.bench-touch" && rm "$d/.bench-touch"; done <"$1"
SH
    "$FND" --build-index --index-file "$work/copy.fndidx" "$copy"
    time_commands "$copy" "$work/changed.json" --style none --warmup 1 --runs "$runs" \
        --prepare "sh $work/touch.sh $work/dirs" \
        -n "fnd -u lexer71.java" "$bin/topipe $FND -u lexer71.java" \
        -n "checked, 1% changed" "$bin/topipe $FND --indexed --index-file $work/copy.fndidx -u lexer71.java"
    ratios "$work/changed.json" \
        "$(peak_rss "$copy" "$FND" -u lexer71.java)" \
        "$( sh "$work/touch.sh" "$work/dirs"; peak_rss "$copy" "$FND" --indexed --index-file "$work/copy.fndidx" -u lexer71.java)"
    rm -rf "$copy"
done
echo
echo "load average at the end: $(load)"
