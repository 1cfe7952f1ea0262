# Shared by the benchmark scripts (sourced, not run, first thing after
# `set -euo pipefail`). Sets $repo (the checkout) and $script (the name
# messages start with).

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
script=${0##*/}

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

# build_helpers NAME...: bench/NAME.c compiled into $bin/NAME
# ($bin: target/bench in the checkout).
build_helpers() {
    bin=$repo/target/bench
    mkdir -p "$bin"
    local name
    for name; do
        cc -O2 -o "$bin/$name" "$repo/bench/$name.c"
    done
}

load() {
    cut -d' ' -f1-3 /proc/loadavg
}

# release_binary NAME [GIVEN]: GIVEN as an absolute path when set, else
# NAME built here with cargo --release.
release_binary() {
    local name=$1 given=${2:-}
    if [ -z "$given" ]; then
        (cd "$repo" && cargo build --release --quiet -p "$name")
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
        echo "making $1 in $tree (once; big trees take minutes)" >&2
        rm -rf "$tree.partial"
        python3 "$repo/bench/mktree.py" "$1" "$tree.partial"
        mv "$tree.partial" "$tree"
    fi
    echo "$tree"
}
