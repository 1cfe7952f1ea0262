"""scan, find and disk_usage against os, fnd's command line and du."""

import os
import stat
import subprocess

import pytest

import fnd_walk


def os_paths(top, hidden=True):
    out = set()
    for d, ds, fs in os.walk(top):
        if not hidden:
            ds[:] = [x for x in ds if not x.startswith(".")]
            fs = [x for x in fs if not x.startswith(".")]
        out.update(os.path.join(d, n) for n in ds + fs)
    return out


@pytest.mark.parametrize("order", ["parallel", "bfs", "dfs"])
def test_scan_yields_every_entry_once(tree, order):
    entries = list(fnd_walk.scan(tree, order=order))
    paths = [e.path for e in entries]
    assert len(paths) == len(set(paths))
    assert set(paths) == os_paths(tree)


def test_scan_bfs_goes_level_by_level(tree):
    depths = [e.depth for e in fnd_walk.scan(tree, order="bfs")]
    assert depths == sorted(depths)


def test_scan_entries_answer_like_dir_entries(tree):
    ours = {e.path: e for e in fnd_walk.scan(tree)}
    for d, _, _ in os.walk(tree):
        for theirs in os.scandir(d):
            e = ours[theirs.path]
            assert e.name == theirs.name
            assert e.inode() == theirs.inode()
            assert e.is_symlink() == theirs.is_symlink()
            for follow in (True, False):
                try:
                    is_dir, is_file = theirs.is_dir(follow_symlinks=follow), theirs.is_file(follow_symlinks=follow)
                except OSError:  # a link to itself: ELOOP
                    is_dir = is_file = False
                assert e.is_dir(follow_symlinks=follow) == is_dir
                assert e.is_file(follow_symlinks=follow) == is_file
            assert os.fspath(e) == theirs.path
            assert e.depth == theirs.path[len(tree):].count(os.sep)


def test_scan_stat_in_bulk_matches_lstat(tree):
    for e in fnd_walk.scan(tree, stat=True):
        ours, theirs = e.stat(follow_symlinks=False), os.lstat(e.path)
        for field in ["st_mode", "st_ino", "st_dev", "st_nlink", "st_uid", "st_size", "st_mtime_ns", "st_blocks"]:
            assert getattr(ours, field) == getattr(theirs, field), field
        if stat.S_ISREG(ours.st_mode):
            assert e.stat().st_size == os.stat(e.path).st_size


def test_scan_options(tree):
    assert {e.path for e in fnd_walk.scan(tree, hidden=False)} == os_paths(tree, hidden=False)
    assert {e.depth for e in fnd_walk.scan(tree, max_depth=1)} == {1}
    assert not any(e.path.endswith(".bin") for e in fnd_walk.scan(tree, ignore=True))
    assert any(e.path.endswith(".bin") for e in fnd_walk.scan(tree))
    assert all(isinstance(e.path, bytes) for e in fnd_walk.scan(os.fsencode(tree)))
    with pytest.raises(ValueError):
        fnd_walk.scan(tree, order="sideways")


def test_scan_missing_top_raises(tmp_path):
    with pytest.raises(FileNotFoundError) as raised:
        list(fnd_walk.scan(str(tmp_path / "missing")))
    assert raised.value.filename == str(tmp_path / "missing")


QUERIES = [
    ({}, []),
    ({"extension": "rs"}, ["--extension=rs"]),
    ({"extension": ["rs", "txt"]}, ["--extension=rs", "--extension=txt"]),
    ({"pattern": "^t"}, ["^t"]),
    ({"pattern": "*.rs", "glob": True}, ["--glob", "*.rs"]),
    ({"type": "d"}, ["--type=d"]),
    ({"type": ["l", "f"]}, ["--type=l", "--type=f"]),
    ({"size": "+1k"}, ["--size=+1k"]),
    ({"changed_within": "1h"}, ["--changed-within=1h"]),
    ({"hidden": True, "ignore": False}, ["--hidden", "--no-ignore"]),
    ({"exclude": "many", "max_depth": 2}, ["--exclude=many", "--max-depth=2"]),
    ({"pattern": "E", "case_sensitive": False, "follow": True}, ["--ignore-case", "--follow", "E"]),
]


@pytest.mark.parametrize("kwargs,args", QUERIES)
def test_find_equals_fnd(tree, fnd_bin, kwargs, args):
    top = os.fsencode(tree)
    ours = list(fnd_walk.find(top, **kwargs))
    assert all(isinstance(p, bytes) for p in ours)
    flags = [a for a in args if a.startswith("--")]
    pattern = [a for a in args if not a.startswith("--")] or [""]
    cli = subprocess.run([fnd_bin, "-0", *flags, "--", *pattern, top], capture_output=True, check=True)
    # fnd ends a directory's path with a slash, as fd does.
    theirs = [p.rstrip(b"/") for p in cli.stdout.split(b"\0") if p]
    assert len(ours) == len(set(ours))
    assert set(ours) == set(theirs)
    assert ours or kwargs.get("size")  # every query finds something here


def test_find_spells_like_top(tree):
    assert all(isinstance(p, str) for p in fnd_walk.find(tree, extension="rs"))
    assert os.path.join(tree, "bad\udcff\udcfe", "x") in set(fnd_walk.find(tree, pattern="^x$"))


def test_find_bad_query(tree, tmp_path):
    with pytest.raises(ValueError):
        fnd_walk.find(tree, size="many")
    with pytest.raises(ValueError):
        fnd_walk.find(tree, pattern="(")
    with pytest.raises(FileNotFoundError):
        fnd_walk.find(str(tmp_path / "missing"))


@pytest.mark.parametrize("args,kwargs", [(["-sB1"], {}), (["-sb"], {"apparent": True}), (["-s", "--inodes"], {"inodes": True})])
def test_disk_usage_equals_du(tree, args, kwargs):
    du = subprocess.run(["du", *args, tree], capture_output=True, check=True, text=True)
    assert fnd_walk.disk_usage(tree, **kwargs) == int(du.stdout.split()[0])


def test_disk_usage_counts_hard_links_once(tmp_path):
    (tmp_path / "f").write_bytes(b"z" * 10000)
    os.link(tmp_path / "f", tmp_path / "g")
    once = fnd_walk.disk_usage(tmp_path, apparent=True)
    assert once == os.stat(tmp_path).st_size + 10000


def test_disk_usage_missing_top_raises(tmp_path):
    with pytest.raises(FileNotFoundError):
        fnd_walk.disk_usage(tmp_path / "missing")
