#!/usr/bin/env bash
# MPI benchmark: `fnd` and `fdu` as one MPI job, against mpiFileUtils (dwalk,
# dfind) and pfind (IO500's parallel find): hot cache on this machine, or
# past one machine, emulated, with --scale.
#
# Usage: bench/mpi.sh [--ranks LIST] [--runs N] [--own-runs N] [--dir DIR] [TREE...]
#        bench/mpi.sh --scale [--delay-us N] [--slots N] [--ranks LIST] [--runs N] [TREE...]
#   TREE          presets of bench/mktree.py (default: src million; with
#                 --scale, src/walk: 951 dirs, 4,843 entries), or paths
#   --ranks LIST  rank counts (default 1,2,4; with --scale 1,2,4,8)
#   --runs N      timed runs per command (default 5; with --scale 3)
#   --own-runs N  more runs, untimed, whose output gives the walk time each
#                 anchor reports itself and, with --scale, the requests that
#                 reached the file system (default 3; with --scale 1)
#   --delay-us N, --slots N   with --scale: slowfs's delay per metadata
#                 request (default 4000) and its cap on requests in flight
#                 (default 8, a Lustre client's metadata RPC slots)
# Environment: FND, FDU (run alone: default built here with cargo --release);
# FND_MPI, FDU_MPI (run by mpirun: default built here with --features mpi,
# in target/mpi); FND_ANCHORS (where dwalk, dfind and pfind are looked for
# before PATH; default ../shared/anchors); MPIRUN (default mpirun).
#
# Every MPI command is `$MPIRUN --oversubscribe --bind-to none -n N CMD`
# (bound, each rank's threads would share one core), and its time is that of
# the whole mpirun. As root, OMPI_ALLOW_RUN_AS_ROOT(_CONFIRM) are set.
# Hot (the default): for each tree, two hyperfine runs:
#   listing, output to a pipe drained by bench/topipe, `floor .` before each
#   run: `fnd -u .` alone (the default build), then for each N:
#   `mpirun -n N true` and `mpirun -n N mpi_init` (bench/mpi_init.c, built
#   with mpicc: MPI initialized and finalized, nothing else), fnd -u .,
#   dwalk -l . (no stat; prints a summary), pfind . -C -D rates (no
#   pattern, counts every non-directory), pfind . -D rates (prints them,
#   each from the rank that finds it), dfind -v . (stats, prints every
#   entry); and `mpirun -n 1 cat LISTING` of fnd's listing of the tree: what
#   mpirun's forwarding of a rank's output costs for that many bytes;
#   disk usage, output to /dev/null, `floor -s .` before each run:
#   `fdu -s .` alone, then for each N fdu -s . and dwalk . (stats every
#   entry; prints a summary).
# fnd runs with --color=never: Open MPI gives every rank a terminal as its
# stdout, even when mpirun's own goes to a pipe, and colours need a stat per
# entry. Each table gives medians as ratios to fnd (fdu) alone; then the
# walk times dwalk, dfind and pfind report themselves (MPI's start-up,
# ~0.3 s here, is outside them), and the issue's goals: `mpirun -n N fnd`
# ≤ 0.5x dwalk -l and ≤ 0.7x pfind (-C, and printing), `mpirun -n N fdu -s`
# ≤ 0.5x dwalk, and both within 1.15x of the same alone plus `mpirun -n N
# mpi_init`.
#
# --scale: each rank gets a mount of its own of TREE through bench/slowfs
# (--delay-us per metadata request, --slots in flight, entries cached once
# seen: a client of a network file system with a cold cache), all at the
# same path, each in a mount namespace of its own (bench/slowfs/with-mount.sh,
# which mounts, runs the tool from the mount, and unmounts). The commands:
# `mpirun -n N with-mount.sh ... -- CMD` for CMD in mpi_init (the start-up and
# mount baseline), fnd -u ., fnd -u --io-depth=SLOTS ., fdu -s .,
# fdu -s --io-depth=SLOTS ., dwalk -l ., dwalk ., pfind . -D rates; and fnd
# and fdu alone (the default build, no mpirun) through one mount. Printed:
# each command's time, speed-up and efficiency per rank count, of the whole
# run and of the walk alone (less the baseline), with the CPU time of all
# its processes as a share of the machine (it must stay well below 100%, or
# the run measured the CPUs, not the latency); the requests each tool made
# and what slowfs spent serving them; the goals: walk efficiency ≥ 80% and
# fnd, fdu ≥ 2x faster than dwalk (-l) and pfind at every rank count.
# Needs root, /dev/fuse and unshare.
#
# A binary that mpirun cannot run as one job (a build without MPI says so
# and exits 2) is probed once on a small tree; its rows are skipped, saying
# why, and so are the goals that need them.
# Not run by CI: timings need a quiet machine.
set -euo pipefail
# shellcheck source=bench/common.sh
. "$(dirname "$0")/common.sh"

scale=false
ranks=
own_runs=
delay_us=4000
slots=8
own_option() {
    case $1 in
        --scale) scale=true; took=1 ;;
        --ranks | --own-runs | --delay-us | --slots)
            [ $# -ge 2 ] || fail_usage "$1 needs a value"
            case $1 in
                --ranks) ranks=${2//,/ } ;;
                --own-runs) own_runs=$2 ;;
                --delay-us) delay_us=$2 ;;
                --slots) slots=$2 ;;
            esac
            took=2 ;;
    esac
}
parse_options "$@"
if $scale; then
    ranks=${ranks:-1 2 4 8}
    runs=${runs:-3}
    own_runs=${own_runs:-1}
else
    ranks=${ranks:-1 2 4}
    runs=${runs:-5}
    own_runs=${own_runs:-3}
    [ ${#trees[@]} -gt 0 ] || trees=(src million)
fi

require hyperfine python3 cc mpicc cargo "${MPIRUN:-mpirun}"
build_helpers floor topipe
build_mpi_helpers mpi_init
if [ "$(id -u)" = 0 ]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
mpirun="${MPIRUN:-mpirun} --oversubscribe --bind-to none"

FND=$(release_binary fnd "${FND:-}")
FDU=$(release_binary fdu "${FDU:-}")

# mpi_build NAME GIVEN: GIVEN, else NAME built with --features mpi into its
# own target directory (the default build stays as it is); when it does not
# build, status 1 and why on stderr.
mpi_build() {
    local name=$1 given=$2 log=$work/build.log
    if CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$repo/target}/mpi release_binary "$name" "$given" --features mpi 2>"$log"; then
        return
    fi
    echo "cannot build it with --features mpi ($(grep -m1 '^error' "$log" || tail -1 "$log"))" >&2
    return 1
}

# mpi_support BINARY ARG...: whether `mpirun -n 2 BINARY ARG...` prints what
# BINARY ARG... prints alone (on a small tree); otherwise why not, on stdout.
mpi_support() {
    local probe=$work/probe alone together status=0
    if [ ! -d "$probe" ]; then
        mkdir -p "$probe/d/e"
        echo a >"$probe/a" && echo b >"$probe/d/b" && echo c >"$probe/d/e/c"
    fi
    alone=$(cd "$probe" && "$@" 2>/dev/null | sort) || true
    together=$(cd "$probe" && $mpirun -n 2 "$@" 2>"$work/probe.err" | sort) || status=$?
    if [ "$status" != 0 ]; then
        echo "under mpirun -n 2 it exits $status: $(head -1 "$work/probe.err")"
        return 1
    fi
    if [ "$together" != "$alone" ]; then
        echo "under mpirun -n 2 its output differs from its output alone ($(wc -l <<<"$together") lines against $(wc -l <<<"$alone"))"
        return 1
    fi
}

# The MPI builds, probed once; an empty one's rows are skipped.
skipped=()
probe_mpi() { # VAR NAME GIVEN ARG...: sets VAR to the MPI build of NAME, or ''
    local var=$1 name=$2 given=$3 path why
    shift 3
    printf -v "$var" '%s' ''
    [ -n "$given" ] || echo "building $name --features mpi (in target/mpi; the first time takes minutes)" >&2
    if ! path=$(mpi_build "$name" "$given" 2>"$work/why"); then
        skipped+=("$name under mpirun: $(cat "$work/why")")
    elif why=$(mpi_support "$path" "$@"); then
        printf -v "$var" '%s' "$path"
    else
        skipped+=("$name under mpirun ($path): $why")
    fi
}
probe_mpi FND_MPI fnd "${FND_MPI:-}" -u --color=never .
probe_mpi FDU_MPI fdu "${FDU_MPI:-}" -s .

dwalk=$(find_tool dwalk "mpiFileUtils") || dwalk=
dfind=$(find_tool dfind "mpiFileUtils") || dfind=
pfind=$(find_tool pfind "github.com/VI4IO/pfind") || pfind=

echo "fnd: $("$FND" --version); MPI build: ${FND_MPI:-none}"
echo "fdu: $("$FDU" --version); MPI build: ${FDU_MPI:-none}"
echo "$(${MPIRUN:-mpirun} --version | head -1); dwalk: ${dwalk:-none}; pfind: ${pfind:-none}"
machine
for line in "${skipped[@]}"; do echo "skipped: $line"; done

# own_times LABEL DIR COMMAND: COMMAND (one string, split on spaces) run
# $own_runs times in DIR, untimed; from its output, the walk time it reports
# (dwalk and dfind: "Walked N items in S seconds"; pfind: its rate and the
# files it scanned) and slowfs's --stats lines (requests, CPU), appended to
# $work/own.tsv as LABEL, what, value.
own_times() {
    local label=$1 in=$2 words i
    read -ra words <<<"$3"
    for ((i = 0; i < own_runs; i++)); do
        (cd "$in" && "${words[@]}" 2>&1 | grep -a -E 'Walked|\[DONE\]|^slowfs:' >"$work/own.out") || true
        awk -v label="$label" '
            match($0, /Walked [0-9]+ items in [0-9.]+ seconds/) { split(substr($0, RSTART, RLENGTH), w, " "); walk = w[5] }
            match($0, /\[DONE\] rate: [0-9.]+/) { rate = substr($0, RSTART + 13, RLENGTH - 13) }
            match($0, /\(scanned [0-9]+ files/) { files = substr($0, RSTART + 9, RLENGTH - 15) }
            /^slowfs: / { servers++; requests += $2
                          for (i = 1; i < NF; i++) if ($i == "user" || $i == "system") cpu += $(i + 1) }
            END { if (rate > 0) walk = files / (rate * 1000)
                  if (walk != "") printf "%s\twalk s\t%.3f\n", label, walk
                  if (servers) printf "%s\trequests\t%d\n%s\tslowfs CPU s\t%.2f\n", label, requests, label, cpu / 1000 }
        ' "$work/own.out" >>"$work/own.tsv"
    done
}

# goal LIMIT NUMERATOR DENOMINATOR...: one line of the goals file.
goal() {
    local IFS=$'\t'
    echo "$*" >>"$work/goals.tsv"
}

hot() { # name tree
    local name=$1 tree=$2 n list=() du=() own=()
    list+=(-n "fnd -u ." "$bin/topipe $FND -u --color=never .")
    # What passing fnd's whole listing through mpirun's output forwarding
    # costs: a floor for any job that prints it from its ranks.
    (cd "$tree" && "$FND" -u --color=never . >"$work/listing")
    list+=(-n "mpirun -n 1 cat listing" "$bin/topipe $mpirun -n 1 cat $work/listing")
    du+=(-n "fdu -s ." "$FDU -s .")
    for n in $ranks; do
        local run="$mpirun -n $n"
        list+=(-n "mpirun -n $n true" "$bin/topipe $run true")
        list+=(-n "mpirun -n $n mpi_init" "$bin/topipe $run $bin/mpi_init")
        [ -z "$FND_MPI" ] || list+=(-n "mpirun -n $n fnd -u ." "$bin/topipe $run $FND_MPI -u --color=never .")
        [ -z "$dwalk" ] || list+=(-n "mpirun -n $n dwalk -l ." "$bin/topipe $run $dwalk -l .")
        [ -z "$pfind" ] || list+=(-n "mpirun -n $n pfind -C ." "$bin/topipe $run $pfind . -C -D rates")
        [ -z "$pfind" ] || list+=(-n "mpirun -n $n pfind ." "$bin/topipe $run $pfind . -D rates")
        [ -z "$dfind" ] || list+=(-n "mpirun -n $n dfind -v ." "$bin/topipe $run $dfind -v .")
        [ -z "$FDU_MPI" ] || du+=(-n "mpirun -n $n fdu -s ." "$run $FDU_MPI -s .")
        [ -z "$dwalk" ] || du+=(-n "mpirun -n $n dwalk ." "$run $dwalk .")
        [ -z "$dwalk" ] || own+=("mpirun -n $n dwalk -l ." "$run $dwalk -l ." "mpirun -n $n dwalk ." "$run $dwalk .")
        [ -z "$pfind" ] || own+=("mpirun -n $n pfind -C ." "$run $pfind . -C -D rates" "mpirun -n $n pfind ." "$run $pfind . -D rates")
        [ -z "$dfind" ] || own+=("mpirun -n $n dfind -v ." "$run $dfind -v .")
        goal 0.5 "mpirun -n $n fnd -u ." "mpirun -n $n dwalk -l ."
        goal 0.7 "mpirun -n $n fnd -u ." "mpirun -n $n pfind -C ."
        goal 0.7 "mpirun -n $n fnd -u ." "mpirun -n $n pfind ."
        goal 0.5 "mpirun -n $n fdu -s ." "mpirun -n $n dwalk ."
        goal 1.15 "mpirun -n $n fnd -u ." "fnd -u ." "mpirun -n $n mpi_init"
        goal 1.15 "mpirun -n $n fdu -s ." "fdu -s ." "mpirun -n $n mpi_init"
    done
    tree_header "$name" "$tree"
    echo "listing (output to a pipe; ratios to fnd alone):"
    time_commands "$tree" "$work/list.json" --style basic --warmup 1 --runs "$runs" --prepare "$bin/floor ." "${list[@]}"
    ratios --ref "fnd" "$work/list.json"
    echo
    echo "disk usage (output to /dev/null; ratios to fdu alone):"
    time_commands "$tree" "$work/du.json" --style basic --warmup 1 --runs "$runs" --prepare "$bin/floor -s ." --output=null "${du[@]}"
    ratios --ref "fdu" "$work/du.json"
    echo
    echo "walk times the tools report (median of $own_runs runs each):"
    : >"$work/own.tsv"
    for ((i = 0; i < ${#own[@]}; i += 2)); do own_times "${own[i]}" "$tree" "${own[i + 1]}"; done
    python3 "$repo/bench/table.py" --medians "$work/own.tsv"
}

scaled() { # name tree
    local name=$1 tree=$2 n cmds=() own=() mnt=/tmp/fnd-bench-slowfs slowfs
    slowfs=$(slowfs_binary) || exit 1
    mkdir -p "$mnt"
    local mount="$repo/bench/slowfs/with-mount.sh $slowfs $tree $mnt --delay-us $delay_us --threads $slots --ttl-s 86400"
    # One client alone: the default build, no mpirun.
    cmds+=(-n "fnd -u ." "$bin/topipe $mount -- $FND -u --color=never .")
    cmds+=(-n "fnd -u --io-depth=$slots ." "$bin/topipe $mount -- $FND -u --io-depth=$slots --color=never .")
    cmds+=(-n "fdu -s ." "$bin/topipe $mount -- $FDU -s .")
    cmds+=(-n "fdu -s --io-depth=$slots ." "$bin/topipe $mount -- $FDU -s --io-depth=$slots .")
    own+=("fnd -u ." "$mount --stats -- $FND -u --color=never ." "fdu -s ." "$mount --stats -- $FDU -s .")
    for n in $ranks; do
        local run="$bin/topipe $mpirun -n $n $mount" own_run="$mpirun -n $n $mount --stats"
        local -a tools=("mpi_init" "$bin/mpi_init")
        if [ -n "$FND_MPI" ]; then
            tools+=("fnd -u ." "$FND_MPI -u --color=never .")
            tools+=("fnd -u --io-depth=$slots ." "$FND_MPI -u --io-depth=$slots --color=never .")
        fi
        if [ -n "$FDU_MPI" ]; then
            tools+=("fdu -s ." "$FDU_MPI -s ." "fdu -s --io-depth=$slots ." "$FDU_MPI -s --io-depth=$slots .")
        fi
        [ -z "$dwalk" ] || tools+=("dwalk -l ." "$dwalk -l ." "dwalk ." "$dwalk .")
        [ -z "$pfind" ] || tools+=("pfind ." "$pfind . -D rates")
        for ((i = 0; i < ${#tools[@]}; i += 2)); do
            cmds+=(-n "mpirun -n $n ${tools[i]}" "$run -- ${tools[i + 1]}")
            own+=("mpirun -n $n ${tools[i]}" "$own_run -- ${tools[i + 1]}")
        done
        goal 0.5 "mpirun -n $n fnd -u ." "mpirun -n $n dwalk -l ."
        goal 0.5 "mpirun -n $n fnd -u ." "mpirun -n $n pfind ."
        goal 0.5 "mpirun -n $n fdu -s ." "mpirun -n $n dwalk ."
    done
    tree_header "$name through slowfs, a mount per rank: ${delay_us} us per request, $slots in flight" "$tree"
    time_commands "$work" "$work/scale.json" --style basic --runs "$runs" --prepare "$bin/floor -s $tree" "${cmds[@]}"
    echo "every command (ratios to fnd alone, one client):"
    ratios --ref "fnd" "$work/scale.json"
    echo
    echo "by rank count (walk: less mpirun -n N mpi_init through the same mounts):"
    ratios --scaling mpi_init --efficiency 0.8 "$work/scale.json"
    echo
    echo "what the tools report, and what reached the file system (median of $own_runs runs each):"
    : >"$work/own.tsv"
    for ((i = 0; i < ${#own[@]}; i += 2)); do own_times "${own[i]}" "$work" "${own[i + 1]}"; done
    python3 "$repo/bench/table.py" --medians "$work/own.tsv"
}

if $scale; then
    [ "$(id -u)" = 0 ] || { echo "$script: --scale mounts file systems: run it as root" >&2; exit 1; }
    [ -e /dev/fuse ] || { echo "$script: no /dev/fuse" >&2; exit 1; }
    require unshare mountpoint
    [ ${#trees[@]} -gt 0 ] || trees=("$(tree_path src)/walk")
fi
for name in "${trees[@]}"; do
    tree=$(tree_path "$name")
    : >"$work/goals.tsv"
    if $scale; then scaled "$name" "$tree"; else hot "$name" "$tree"; fi
    echo
    echo "goals ($name; medians):"
    ratios --goals "$work/goals.tsv" "$work"/*.json
    rm -f "$work"/*.json
done
echo
echo "load average at the end: $(load)"
