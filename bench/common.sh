# Shared by the benchmark scripts (sourced, not run): needs $repo and $dir.

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
