#!/usr/bin/env bash
# Cold-cache benchmark: the page, dentry and inode caches are dropped before
# every run, so each walk waits on the disk (or on whatever file system is
# under the tree). What wins there is the amount of useful I/O in flight,
# not CPU time, so fnd is compared at several thread counts and I/O depths.
#
# Usage: bench/cold.sh [-r RUNS] [--du] [--list] [--fuse] [TREE...]
#   TREE       default ${FND_BENCH_DIR:-/tmp/fnd-bench}/src (bench/run.sh makes it)
#   --list     the listing comparison (default when no mode is given)
#   --du       the disk-usage comparison (fdu -s against du and friends)
#   --fuse     the listing comparison on a high-latency mount: TREE seen
#              through bench/slowfs (200 µs per metadata request, SLOWFS_US)
# Environment: FND, FDU (binaries; default target/release/*), FLOOR
# (default /tmp/floor, built from floor.c next to the trees if missing).
#
# Needs root: dropping caches writes /proc/sys/vm/drop_caches. Otherwise it
# says so and exits without measuring (a warm run would be meaningless here).
set -euo pipefail

# shellcheck source=bench/common.sh
. "$(dirname "$0")/common.sh"
here=$repo
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
[ ${#trees[@]} -gt 0 ] || trees=("$dir/src")

if ! { [ "$(id -u)" = 0 ] && [ -w /proc/sys/vm/drop_caches ] && sync && echo 3 >/proc/sys/vm/drop_caches; } 2>/dev/null; then
    echo "cold.sh: cannot drop caches (needs root and a writable /proc/sys/vm/drop_caches); skipping" >&2
    exit 0
fi
command -v hyperfine >/dev/null || { echo "cold.sh: hyperfine not found; skipping" >&2; exit 0; }

fnd=${FND:-$here/target/release/fnd}
fdu=${FDU:-$here/target/release/fdu}
floor=${FLOOR:-/tmp/floor}
if [ ! -x "$floor" ] && [ -f /work/shared/floor.c ]; then
    cc -O2 -o "$floor" /work/shared/floor.c
fi

drop="sh -c 'sync; echo 3 > /proc/sys/vm/drop_caches'"
have() { command -v "$1" >/dev/null 2>&1 || [ -x "$1" ]; }

summarize() { # json: median of each command, and its ratio to the best anchor
    # (the fastest other tool; the floor is a reference, not an anchor)
    python3 - "$1" <<'PY'
import json, statistics, sys
res = json.load(open(sys.argv[1]))["results"]
med = {r["command"]: statistics.median(r["times"]) for r in res}
anchors = {c: t for c, t in med.items() if not c.startswith(("fnd", "fdu", "floor"))}
best = min(anchors.values()) if anchors else None
best_name = min(anchors, key=anchors.get) if anchors else "-"
print(f"{'command':<34} {'median ms':>10} {'x best anchor':>14}")
for c, t in med.items():
    ratio = f"{t / best:.2f}" if best else "-"
    print(f"{c:<34} {t * 1000:>10.1f} {ratio:>14}")
print(f"best anchor: {best_name}")
PY
}

run() { # name, tree, commands...
    local name=$1 tree=$2; shift 2
    local json
    json=$(mktemp /tmp/cold-XXXXXX.json)
    echo "== $name: $tree (cold, $runs runs each) =="
    (cd "$tree" && hyperfine -N --style basic --runs "$runs" --prepare "$drop" --export-json "$json" "$@" >/dev/null)
    summarize "$json"
    rm -f "$json"
}

listing_commands() { # the listing tools, run in the tree
    cmds+=(-n floor "$floor .")
    cmds+=(-n "fnd -u" "$fnd -u")
    # Without extra I/O workers: what the automatic depth adds.
    cmds+=(-n "fnd -u --io-depth=1" "$fnd -u --io-depth=1")
    for j in 1 2 4 8 16; do cmds+=(-n "fnd -u -j$j" "$fnd -u -j$j"); done
    have bfs && cmds+=(-n bfs "bfs .")
    if have fd; then
        # fd's default (one thread per core), and more threads: -j32 was
        # its best here (cold src: -j8 242 ms, -j16 187, -j32 151; in a
        # second pass -j32 131, -j64 140).
        cmds+=(-n fd "fd -u" -n "fd -j8" "fd -u -j8" -n "fd -j32" "fd -u -j32")
    fi
    have find && cmds+=(-n find "find .")
}

mnt=
unmount() { [ -z "$mnt" ] || { umount "$mnt" 2>/dev/null; rmdir "$mnt" 2>/dev/null; mnt=; }; }
trap unmount EXIT

run_fuse() { # tree: mount it through slowfs and compare there (no cache drop:
    # slowfs lets the kernel cache nothing, so every run pays the latency)
    local tree=$1 slowfs=${CARGO_TARGET_DIR:-$here/bench/slowfs/target}/release/slowfs
    if [ ! -e /dev/fuse ]; then echo "cold.sh: no /dev/fuse; skipping the FUSE comparison" >&2; return; fi
    cargo build --quiet --release --manifest-path "$here/bench/slowfs/Cargo.toml" || {
        echo "cold.sh: cannot build bench/slowfs; skipping the FUSE comparison" >&2; return; }
    mnt=$(mktemp -d /tmp/slowfs-XXXXXX)
    "$slowfs" --delay-us "${SLOWFS_US:-200}" "$tree" "$mnt" &
    for _ in $(seq 50); do mountpoint -q "$mnt" && break; sleep 0.1; done
    mountpoint -q "$mnt" || { echo "cold.sh: slowfs did not mount; skipping" >&2; return; }
    cmds=()
    listing_commands
    local json
    json=$(mktemp /tmp/cold-XXXXXX.json)
    echo "== fuse: $tree through slowfs, ${SLOWFS_US:-200} us per request ($runs runs each) =="
    (cd "$mnt" && hyperfine -N --style basic --runs "$runs" --export-json "$json" "${cmds[@]}" >/dev/null)
    summarize "$json"
    rm -f "$json"
    unmount
}

for tree in "${trees[@]}"; do
    for mode in "${modes[@]}"; do
        cmds=()
        if [ "$mode" = fuse ]; then
            run_fuse "$tree"
            continue
        elif [ "$mode" = list ]; then
            listing_commands
        else
            cmds+=(-n "floor -s" "$floor -s .")
            if have "$fdu"; then
                cmds+=(-n "fdu -s" "$fdu -s .")
                # Without extra I/O workers, and with them from the start.
                cmds+=(-n "fdu -s --io-depth=1" "$fdu -s --io-depth=1 .")
                cmds+=(-n "fdu -s -j8" "$fdu -s -j8 .")
            fi
            cmds+=(-n "du -s" "du -s .")
            # diskus defaults to 3 threads per core; -j16 to -j32 was its
            # best here (cold src: 6 threads 310 ms, 16 230, 32 220, 64 230).
            have diskus && cmds+=(-n diskus "diskus ." -n "diskus -j32" "diskus -j32 .")
            have pdu && cmds+=(-n pdu "pdu --quantity=blocks --max-depth=1 .")
            have dust && cmds+=(-n dust "dust -d 0 .")
            have dua && cmds+=(-n dua "dua aggregate .")
        fi
        run "$mode" "$tree" "${cmds[@]}"
    done
done
