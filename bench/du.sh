#!/usr/bin/env bash
# Hot-cache disk-usage benchmark: `fdu -s` against the serial stat floor
# (`floor -s`: openat + getdents64 + one fstatat per entry), GNU `du -s`, and
# whichever of diskus, pdu, dust, dua and gdu are installed.
#
# Usage: bench/du.sh [--runs N] [--dir DIR] [TREE...]
#   TREE      trees under DIR (default: src million)
#   --dir DIR where the trees are (default $FND_BENCH_DIR, else /tmp/fnd-bench;
#             bench/run.sh makes them with bench/mktree.py)
#   --runs N  timed runs per command (default 10)
# Environment: FDU (the fdu binary; default: built here with cargo --release).
#
# One hyperfine run per tree over all commands (warm-up runs first; output to
# /dev/null: a summary is one line), printed by bench/table.py: each median
# as a ratio to the floor, CPU time, and peak RSS from one more run.
# Installing the others: apt-get install gdu; cargo install --locked diskus
# parallel-disk-usage du-dust dua-cli (many CPU minutes).
# Not run by CI: timings need a quiet machine and the trees are large.
set -euo pipefail
# shellcheck source=bench/common.sh
. "$(dirname "$0")/common.sh"

parse_options "$@"
runs=${runs:-10}
[ ${#trees[@]} -gt 0 ] || trees=(src million)
require hyperfine python3 cc
build_helpers floor
FDU=$(release_binary fdu "${FDU:-}")

export PATH="$HOME/.cargo/bin:$PATH"
others=()
add() { # name command...: benchmarked when the tool is installed
    local name=$1
    shift
    if command -v "$1" >/dev/null; then others+=(-n "$name" "$*"); else echo "note: $1 not installed; left out" >&2; fi
}
add "du -s" du -s .
add diskus diskus .
add pdu pdu --max-depth=1 --quantity=block-size .
add dust dust -d 0 .
add dua dua aggregate .
add gdu gdu --non-interactive --summarize --no-progress .

echo "fdu: $("$FDU" --version)"
echo "machine: $(nproc) cores, kernel $(uname -r), trees on $(df -T "$dir" | awk 'NR==2 {print $2}')"
for name in "${trees[@]}"; do
    tree=$dir/$name
    [ -d "$tree" ] || { echo "du.sh: no tree $tree (make it with bench/mktree.py $name $tree)" >&2; exit 1; }
    cmds=(-n "floor -s" "$bin/floor -s ." -n "fdu -s" "$FDU -s ." "${others[@]}")
    json=$(mktemp /tmp/du-bench-XXXXXX.json)
    echo
    echo "== $name ($tree), load average: $(load)"
    # Each run is preceded by a stat walk, so the tree stays hot even when
    # something else on the machine drops caches.
    (cd "$tree" && hyperfine -N --style basic --warmup 2 --runs "$runs" --prepare "$bin/floor -s ." --output=null --export-json "$json" "${cmds[@]}" >/dev/null)
    rss=()
    for ((i = 0; i < ${#cmds[@]}; i += 3)); do
        rss+=("$(cd "$tree" && /usr/bin/time -f %M sh -c "${cmds[i + 2]} >/dev/null" 2>&1 | tail -1)")
    done
    python3 "$repo/bench/table.py" "$json" "${rss[@]}"
    rm -f "$json"
done
echo
echo "load average at the end: $(load)"
