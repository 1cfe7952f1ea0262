# Shared by the benchmark scripts: sourced (not run) first thing after
# `set -euo pipefail`. A new script needs only what is below; see run.sh
# for a whole one in a few lines.
#
# Sets: $repo (the checkout), $script (the name messages start with),
#   $bin (target/bench: the C helpers), $work (a scratch directory,
#   removed on exit).
# Options and trees:
#   parse_options "$@"      --runs N, --dir DIR, -h/--help, TREE... (a
#                           script's own options through own_option)
#   tree_path TREE          a preset name (made once under $dir) or a path
#   make_tree NAME          a preset of bench/mktree.py under $dir, made once
# Tools:
#   require TOOL...         exit saying how to install the ones missing
#   find_tool NAME [HINT]   an anchor build (../shared/anchors) or NAME on
#                           PATH; a note on stderr, and status 1, when absent
#   release_binary NAME [GIVEN [CARGO_ARG...]]   our binary, built --release
#   build_helpers NAME...   bench/NAME.c compiled into $bin
#   build_mpi_helpers NAME...   the same with mpicc
#   slowfs_binary           bench/slowfs built --release (its own workspace)
# Timing and tables:
#   time_commands DIR JSON HYPERFINE_ARG...   one hyperfine run in DIR (-N)
#   ratios JSON [--ref LABEL | --ref-fastest-except PREFIXES] [RSS_KIB...]
#                           medians as ratios to a reference (bench/table.py)
#   peak_rss DIR COMMAND    KiB, the command's output drained by topipe
#   machine, tree_header NAME TREE, load, at_exit COMMAND

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
script=${0##*/}
bin=$repo/target/bench

# at_exit COMMAND: run COMMAND (one line, eval'd) when the script ends.
exit_commands=()
at_exit() {
    exit_commands+=("$*")
}
run_exit_commands() {
    local command
    for command in "${exit_commands[@]}"; do eval "$command" || true; done
}
trap run_exit_commands EXIT
work=$(mktemp -d /tmp/fnd-bench-XXXXXX)
at_exit rm -rf "$work"

# parse_options "$@": the options every script takes.
#   --runs N    $runs: timed runs per command (empty: the script's default)
#   --dir DIR   $dir: where the trees are (default $FND_BENCH_DIR, else
#               /tmp/fnd-bench)
#   -h, --help  the script's leading comment, then exit
#   TREE...     $trees
# A script with options of its own defines own_option before the call: it
# gets the arguments left and sets $took to the number of words it used
# (leaving it 0 when the first one is not its own).
parse_options() {
    runs=
    dir=${FND_BENCH_DIR:-/tmp/fnd-bench}
    trees=()
    while [ $# -gt 0 ]; do
        took=0
        if declare -F own_option >/dev/null; then own_option "$@"; fi
        if [ "$took" -gt 0 ]; then
            shift "$took"
            continue
        fi
        case $1 in
            --runs | --dir)
                [ $# -ge 2 ] || fail_usage "$1 needs a value"
                if [ "$1" = --runs ]; then runs=$2; else dir=$2; fi
                shift 2 ;;
            -h | --help) usage; exit 0 ;;
            -*) fail_usage "unknown option '$1'" ;;
            *) trees+=("$1"); shift ;;
        esac
    done
}

# The comment at the top of the script, without its '#'s.
usage() {
    awk 'NR == 1 { next } /^#/ { sub(/^# ?/, ""); print; next } { exit }' "$0"
}

fail_usage() {
    echo "$script: $1 (see --help)" >&2
    exit 2
}

# require TOOL...: exit with how to install the ones missing.
require() {
    local tool missing=()
    for tool; do
        command -v "$tool" >/dev/null || missing+=("$tool")
    done
    [ ${#missing[@]} -eq 0 ] && return
    echo "$script: missing ${missing[*]} (Debian: apt-get install hyperfine python3 gcc; fd: cargo install --locked fd-find; cargo: rustup)" >&2
    exit 1
}

# find_tool NAME [HINT]: the path of a tool to compare with. The builds in
# $FND_ANCHORS (default ../shared/anchors beside the checkout: bfs 4.1.4,
# mpi/bin/dwalk, dfind, pfind) come first, then ~/.cargo/bin (where `cargo
# install` puts fd, diskus, pdu, dust, dua), then PATH.
# When there is none, says so on stderr (with HINT, how to install it) and
# returns 1: the caller leaves it out of the table.
find_tool() {
    local name=$1 hint=${2:+; $2} anchors=${FND_ANCHORS:-$repo/../shared/anchors} candidate
    for candidate in "$anchors/$name" "$anchors/mpi/bin/$name"; do
        if [ -f "$candidate" ] && [ -x "$candidate" ]; then
            realpath "$candidate"
            return
        fi
    done
    if candidate=$(PATH=$HOME/.cargo/bin:$PATH command -v "$name"); then
        echo "$candidate"
        return
    fi
    echo "note: $name not found (in $anchors or on PATH$hint); left out" >&2
    return 1
}

# build_helpers NAME...: bench/NAME.c compiled into $bin.
build_helpers() {
    mkdir -p "$bin"
    local name
    for name; do
        ${helper_cc:-cc} -O2 -pthread -o "$bin/$name" "$repo/bench/$name.c"
    done
}

# build_mpi_helpers NAME...: bench/NAME.c compiled with mpicc into $bin.
build_mpi_helpers() {
    helper_cc=mpicc build_helpers "$@"
}

# slowfs_binary: the path of bench/slowfs (the FUSE file system that adds a
# delay to every metadata request), built --release; status 1, saying so,
# when it does not build.
slowfs_binary() {
    cargo build --quiet --release --manifest-path "$repo/bench/slowfs/Cargo.toml" || {
        echo "$script: cannot build bench/slowfs" >&2
        return 1
    }
    echo "${CARGO_TARGET_DIR:-$repo/bench/slowfs/target}/release/slowfs"
}

load() {
    cut -d' ' -f1-3 /proc/loadavg
}

# machine: one line on the machine and the file system the trees are on.
machine() {
    mkdir -p "$dir"
    echo "machine: $(nproc) cores, $(free -g | awk '/^Mem:/ {print $2}') GiB, kernel $(uname -r), trees on $(df -T "$dir" | awk 'NR==2 {print $2}')"
}

# tree_header NAME TREE: the line before a tree's table.
tree_header() {
    echo
    echo "== $1 ($2), load average: $(load)"
}

# release_binary NAME [GIVEN [CARGO_ARG...]]: GIVEN as an absolute path
# when set, else NAME built here with cargo --release (and CARGO_ARGs, such
# as --features mpi; run it as `CARGO_TARGET_DIR=DIR release_binary ...` to
# keep such a build beside the default one). Status 1 when the build fails
# (callers run it in $(...), where set -e does not reach).
release_binary() {
    local name=$1 given=${2:-}
    shift $(($# < 2 ? $# : 2))
    if [ -z "$given" ]; then
        (cd "$repo" && cargo build --release --quiet -p "$name" "$@") || return 1
        given=${CARGO_TARGET_DIR:-$repo/target}/release/$name
    fi
    # The commands run inside each tree, so relative paths would break.
    case $given in */*) given=$(realpath "$given") ;; esac
    echo "$given"
}

# make_tree NAME: the path of preset NAME under $dir, made once with
# bench/mktree.py (the big trees take minutes).
make_tree() {
    local tree=$dir/$1
    if [ ! -e "$tree" ]; then
        mkdir -p "$dir"
        echo "making $1 in $tree (once; big trees take minutes)" >&2
        rm -rf "$tree.partial"
        python3 "$repo/bench/mktree.py" "$1" "$tree.partial"
        mv "$tree.partial" "$tree"
    fi
    echo "$tree"
}

# tree_path TREE: a path (it has a '/') as it is, else the preset of that
# name under $dir (made once).
tree_path() {
    case $1 in
        */*)
            [ -d "$1" ] || { echo "$script: no directory $1" >&2; exit 1; }
            realpath "$1" ;;
        *) make_tree "$1" ;;
    esac
}

# time_commands DIR JSON HYPERFINE_ARG...: one hyperfine run (-N: no shell)
# in DIR, its results in JSON for `ratios`; hyperfine's own report is not
# shown.
time_commands() {
    local in=$1 json=$2
    shift 2
    (cd "$in" && hyperfine -N --export-json "$json" "$@" >/dev/null)
}

# ratios JSON [OPTION...] [RSS_KIB...]: each command's median as a ratio to
# the reference, with its CPU time and peak RSS (see bench/table.py: the
# first command is the reference unless --ref-fastest-except says otherwise).
ratios() {
    python3 "$repo/bench/table.py" "$@"
}

# peak_rss DIR COMMAND: the command's peak RSS in KiB, run once in DIR with
# its output drained by topipe (needs build_helpers topipe) and its stderr
# (progress bars) dropped; '-' when it fails.
peak_rss() {
    local in=$1 rss_file=$work/rss
    shift
    # shellcheck disable=SC2086 # the command line is split into words on purpose
    if (cd "$in" && "$bin/topipe" -r "$rss_file" $* 2>/dev/null); then cat "$rss_file"; else echo -; fi
}
