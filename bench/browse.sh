#!/usr/bin/env bash
# Interactive disk-usage browsers, hot cache: how long `fdu -i`, ncdu, gdu
# and `dua i` (each when installed) take from start to their first screen
# with the scan's totals, and their peak RSS, against the serial stat floor
# (`floor -s`: openat + getdents64 + one fstatat per entry); then how long
# `fdu -i` takes to answer a key in one folder of 100,000 entries
# (crates/fdu/examples/redraw.rs: the model's work and a full draw).
#
# Usage: bench/browse.sh [--runs N] [--dir DIR] [TREE...]
#   TREE      presets of bench/mktree.py (default: src million), or paths
#   --dir DIR where the trees are made and reused (default $FND_BENCH_DIR,
#             else /tmp/fnd-bench)
#   --runs N  timed runs per browser (default 5)
# Environment: FDU (the fdu binary; default: built here with cargo --release).
#
# Each browser runs in a tmux server of its own (120x30 cells), started by
# /usr/bin/time (for the peak RSS); the screen is read with capture-pane
# every 20 ms until the status line shows the scan's totals ("Total disk
# usage"; dua, which draws while it scans: "Processed N entries in" without
# "scanning"), then
# the browser is sent `q`. The polling costs every browser the same;
# medians are printed with their ratio to the floor.
# Installing the others: apt-get install ncdu gdu tmux; cargo install
# --locked dua-cli. Not run by CI: timings need a quiet machine.
set -euo pipefail
# shellcheck source=bench/common.sh
. "$(dirname "$0")/common.sh"

parse_options "$@"
runs=${runs:-5}
[ ${#trees[@]} -gt 0 ] || trees=(src million)
require tmux python3 cc
[ -x /usr/bin/time ] || { echo "$script: needs GNU time (apt-get install time)" >&2; exit 1; }
build_helpers floor
FDU=$(release_binary fdu "${FDU:-}")

browsers=(fdu "$FDU -i ." "Total disk usage")
add() { # name tool marker args...: measured when the tool is found
    local name=$1 tool=$2 marker=$3 path
    shift 3
    if path=$(find_tool "$tool"); then browsers+=("$name" "$path $*" "$marker"); fi
}
add ncdu ncdu "Total disk usage" .
add gdu gdu "Total disk usage" --no-mouse .
# dua draws while it scans ("Processed N entries in Ts (R/s) -> scanning <-").
add "dua i" dua 'Processed \d+ entries in [\d.]+s(?!.*scanning)' interactive .

# The harness alone: a "browser" that shows its totals at once. Its time
# (tmux's start, the polling) is in every browser's, and is printed.
browsers+=(harness "sh -c 'echo Total disk usage; sleep 0.5'" "Total disk usage")

# A tmux server per run: a server still going away after kill-server
# must not take the next run's session with it.
runs_started=0
kill_servers() {
    local s
    for s in /tmp/tmux-"$(id -u)"/fnd-browse-$$-*; do
        [ -S "$s" ] && tmux -L "${s##*/}" kill-server 2>/dev/null
    done
    return 0
}
at_exit kill_servers

# first_screen TREE MARKER COMMAND: "MILLISECONDS RSS_KIB" of one run.
first_screen() {
    local tree=$1 marker=$2 command=$3 rss=$work/rss start now
    runs_started=$((runs_started + 1))
    local socket=fnd-browse-$$-$runs_started
    rm -f "$rss"
    start=$(date +%s%N)
    tmux -L "$socket" -f /dev/null new-session -d -x 120 -y 30 -c "$tree" "/usr/bin/time -f %M -o $rss $command"
    until tmux -L "$socket" capture-pane -p 2>/dev/null | grep -qP "$marker"; do
        now=$(date +%s%N)
        if ((now - start > 300000000000)); then
            echo "$script: no first screen from '$command' in 300 s" >&2
            exit 1
        fi
        sleep 0.02
    done
    now=$(date +%s%N)
    tmux -L "$socket" send-keys q
    for _ in $(seq 100); do [ -s "$rss" ] && break; sleep 0.05; done
    tmux -L "$socket" kill-server 2>/dev/null || true
    echo "$(((now - start) / 1000000)) $(cat "$rss" 2>/dev/null || echo -)"
}

median() {
    sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'
}

echo "fdu: $("$FDU" --version)"
machine
for name in "${trees[@]}"; do
    tree=$(tree_path "$name")
    tree_header "$name" "$tree"
    "$bin/floor" -s "$tree" >/dev/null
    floor_ms=$(for _ in $(seq "$runs"); do
        start=$(date +%s%N)
        "$bin/floor" -s "$tree" >/dev/null
        echo $((($(date +%s%N) - start) / 1000000))
    done | median)
    printf '%-8s %8s %7s %10s\n' browser "first ms" "/floor" "peak RSS"
    printf '%-8s %8s %7s %10s\n' "floor -s" "$floor_ms" 1.00 -
    for ((i = 0; i < ${#browsers[@]}; i += 3)); do
        label=${browsers[i]} command=${browsers[i + 1]} marker=${browsers[i + 2]}
        first_screen "$tree" "$marker" "$command" >/dev/null # warm-up
        : >"$work/runs"
        for _ in $(seq "$runs"); do first_screen "$tree" "$marker" "$command" >>"$work/runs"; done
        ms=$(cut -d' ' -f1 "$work/runs" | median)
        kib=$(cut -d' ' -f2 "$work/runs" | median)
        ratio=$(awk -v a="$ms" -v b="$floor_ms" 'BEGIN {printf "%.2f", a / (b > 0 ? b : 1)}')
        printf '%-8s %8s %7s %7s MiB\n' "$label" "$ms" "$ratio" "$((kib / 1024))"
    done
done

echo
echo "== fdu -i: one key in a folder of 100,000 entries"
(cd "$repo" && cargo run --quiet --release -p fdu --example redraw 100000)
