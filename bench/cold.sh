#!/usr/bin/env bash
# Cold-cache benchmark: the page, dentry and inode caches are dropped before
# every run, so each walk waits on the disk (or on whatever file system is
# under the tree). What wins there is the amount of useful I/O in flight,
# not CPU time, so fnd is compared at several thread counts and I/O depths.
#
# Usage: bench/cold.sh [-r RUNS] [--du] [--list] [--fuse] [--dir DIR] [TREE...]
#   TREE       a path, or a preset of bench/mktree.py made once under DIR
#              (default: src, in $FND_BENCH_DIR or /tmp/fnd-bench, as
#              bench/run.sh makes it)
#   -r RUNS    timed runs per command (default 7; --runs RUNS too)
#   --list     the listing comparison (default when no mode is given)
#   --du       the disk-usage comparison (fdu -s against du and friends)
#   --fuse     the listing comparison on a high-latency mount: TREE seen
#              through bench/slowfs (200 µs per metadata request, SLOWFS_US)
# Environment: FND, FDU (binaries; default: built here with cargo --release),
# FLOOR (default: bench/floor.c, built into target/bench), FND_ANCHORS (where
# bfs is looked for before PATH; default ../shared/anchors). The other tools
# are left out, with a note, when absent. The table gives each median as a
# ratio to the best of the other tools (the floor is a reference, not one).
#
# Needs root: dropping caches writes /proc/sys/vm/drop_caches. Otherwise it
# says so and exits without measuring (a warm run would be meaningless here).
set -euo pipefail
# shellcheck source=bench/common.sh
. "$(dirname "$0")/common.sh"

modes=()
own_option() {
    case $1 in
        -r) [ $# -ge 2 ] || fail_usage "-r needs a value"; runs=$2; took=2 ;;
        --du | --list | --fuse) modes+=("${1#--}"); took=1 ;;
    esac
}
parse_options "$@"
runs=${runs:-7}
[ ${#modes[@]} -gt 0 ] || modes=(list)
[ ${#trees[@]} -gt 0 ] || trees=(src)

if ! { [ "$(id -u)" = 0 ] && [ -w /proc/sys/vm/drop_caches ] && sync && echo 3 >/proc/sys/vm/drop_caches; } 2>/dev/null; then
    echo "cold.sh: cannot drop caches (needs root and a writable /proc/sys/vm/drop_caches); skipping" >&2
    exit 0
fi
command -v hyperfine >/dev/null || { echo "cold.sh: hyperfine not found; skipping" >&2; exit 0; }
require python3 cc cargo

fnd=$(release_binary fnd "${FND:-}")
fdu=$(release_binary fdu "${FDU:-}")
if [ -n "${FLOOR:-}" ]; then
    floor=$(realpath "$FLOOR")
else
    build_helpers floor
    floor=$bin/floor
fi
# The other tools, each found once ('' when absent).
for tool in bfs fd find du diskus pdu dust dua; do
    printf -v "tool_$tool" '%s' "$(find_tool "$tool" || true)"
done

drop="sh -c 'sync; echo 3 > /proc/sys/vm/drop_caches'"

run() { # name, tree, commands...
    local name=$1 tree=$2
    shift 2
    echo "== $name: $tree (cold, $runs runs each) =="
    time_commands "$tree" "$work/times.json" --style basic --runs "$runs" --prepare "$drop" "$@"
    ratios --ref-fastest-except fnd,fdu,floor "$work/times.json"
}

listing_commands() { # the listing tools, run in the tree
    cmds+=(-n floor "$floor .")
    cmds+=(-n "fnd -u" "$fnd -u")
    # Without extra I/O workers: what the automatic depth adds.
    cmds+=(-n "fnd -u --io-depth=1" "$fnd -u --io-depth=1")
    for j in 1 2 4 8 16; do cmds+=(-n "fnd -u -j$j" "$fnd -u -j$j"); done
    [ -z "$tool_bfs" ] || cmds+=(-n bfs "$tool_bfs .")
    if [ -n "$tool_fd" ]; then
        # fd's default (one thread per core), and more threads: -j32 was
        # its best here (cold src: -j8 242 ms, -j16 187, -j32 151; in a
        # second pass -j32 131, -j64 140).
        cmds+=(-n fd "$tool_fd -u" -n "fd -j8" "$tool_fd -u -j8" -n "fd -j32" "$tool_fd -u -j32")
    fi
    [ -z "$tool_find" ] || cmds+=(-n find "$tool_find .")
}

du_commands() { # the disk-usage tools, run in the tree
    cmds+=(-n "floor -s" "$floor -s .")
    cmds+=(-n "fdu -s" "$fdu -s .")
    # Without extra I/O workers, and with them from the start.
    cmds+=(-n "fdu -s --io-depth=1" "$fdu -s --io-depth=1 .")
    cmds+=(-n "fdu -s -j8" "$fdu -s -j8 .")
    [ -z "$tool_du" ] || cmds+=(-n "du -s" "$tool_du -s .")
    # diskus defaults to 3 threads per core; -j16 to -j32 was its
    # best here (cold src: 6 threads 310 ms, 16 230, 32 220, 64 230).
    [ -z "$tool_diskus" ] || cmds+=(-n diskus "$tool_diskus ." -n "diskus -j32" "$tool_diskus -j32 .")
    [ -z "$tool_pdu" ] || cmds+=(-n pdu "$tool_pdu --quantity=blocks --max-depth=1 .")
    [ -z "$tool_dust" ] || cmds+=(-n dust "$tool_dust -d 0 .")
    [ -z "$tool_dua" ] || cmds+=(-n dua "$tool_dua aggregate .")
}

mnt=
unmount() { [ -z "$mnt" ] || { umount "$mnt" 2>/dev/null; rmdir "$mnt" 2>/dev/null; mnt=; }; }
at_exit unmount

run_fuse() { # tree: mount it through slowfs and compare there (no cache drop:
    # slowfs lets the kernel cache nothing, so every run pays the latency)
    local tree=$1 slowfs
    if [ ! -e /dev/fuse ]; then echo "cold.sh: no /dev/fuse; skipping the FUSE comparison" >&2; return; fi
    slowfs=$(slowfs_binary) || { echo "cold.sh: skipping the FUSE comparison" >&2; return; }
    mnt=$(mktemp -d /tmp/slowfs-XXXXXX)
    "$slowfs" --delay-us "${SLOWFS_US:-200}" "$tree" "$mnt" &
    for _ in $(seq 50); do mountpoint -q "$mnt" && break; sleep 0.1; done
    mountpoint -q "$mnt" || { echo "cold.sh: slowfs did not mount; skipping" >&2; return; }
    cmds=()
    listing_commands
    echo "== fuse: $tree through slowfs, ${SLOWFS_US:-200} us per request ($runs runs each) =="
    time_commands "$mnt" "$work/times.json" --style basic --runs "$runs" "${cmds[@]}"
    ratios --ref-fastest-except fnd,fdu,floor "$work/times.json"
    unmount
}

for name in "${trees[@]}"; do
    tree=$(tree_path "$name")
    for mode in "${modes[@]}"; do
        cmds=()
        case $mode in
            fuse) run_fuse "$tree"; continue ;;
            list) listing_commands ;;
            du) du_commands ;;
        esac
        run "$mode" "$tree" "${cmds[@]}"
    done
done
