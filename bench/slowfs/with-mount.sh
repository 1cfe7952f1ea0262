#!/usr/bin/env bash
# Run a command in a mount namespace of its own, in which SOURCE is seen
# through slowfs at MOUNTPOINT; the command starts in MOUNTPOINT.
#
#   with-mount.sh SLOWFS SOURCE MOUNTPOINT [SLOWFS_OPTION...] -- COMMAND [ARG...]
#
# Every call has its own server (its own request slots, its own kernel cache)
# at the same path, so `mpirun -n N with-mount.sh ... -- TOOL .` gives each
# rank a client of its own, as if each ran on a node of its own. The mount
# is made before COMMAND starts and ends after it; the exit status is
# COMMAND's. unshare is exec'd, so this script keeps the PID it was started
# with; COMMAND is its child, as under any wrapper script of an MPI job.
# Needs root (or CAP_SYS_ADMIN), unshare (util-linux) and /dev/fuse.
set -euo pipefail

if [ "${WITH_MOUNT_PRIVATE:-}" != 1 ]; then
    WITH_MOUNT_PRIVATE=1 exec unshare --mount --propagation private "$0" "$@"
fi
unset WITH_MOUNT_PRIVATE

fail() {
    echo "with-mount.sh: $*" >&2
    exit 1
}

[ $# -ge 5 ] || fail "usage: with-mount.sh SLOWFS SOURCE MOUNTPOINT [SLOWFS_OPTION...] -- COMMAND [ARG...]"
slowfs=$1 source=$2 mnt=$3
shift 3
options=()
while [ $# -gt 0 ] && [ "$1" != -- ]; do
    options+=("$1")
    shift
done
[ $# -ge 2 ] || fail "no command after --"
shift
# Something already mounted there would be walked instead, without a word.
if mountpoint -q "$mnt"; then fail "$mnt is already a mount point"; fi

"$slowfs" "${options[@]}" "$source" "$mnt" &
server=$!
for _ in $(seq 1000); do
    mountpoint -q "$mnt" && break
    kill -0 "$server" 2>/dev/null || fail "slowfs ended before $mnt was mounted"
    sleep 0.005
done
if ! mountpoint -q "$mnt"; then
    kill "$server"
    fail "$mnt not mounted after 5 s"
fi

status=0
(cd "$mnt" && exec "$@") || status=$?
umount "$mnt" || status=1
wait "$server" || status=1
exit "$status"
