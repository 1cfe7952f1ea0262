"""fnd_walk.walk against os.walk on trees built here."""

import _thread
import errno
import os
import pathlib
import signal
import threading

import pytest

import fnd_walk


def as_set(walk):
    return {(d, tuple(sorted(ds)), tuple(sorted(fs))) for d, ds, fs in walk}


@pytest.mark.parametrize("topdown", [True, False])
def test_same_tuples_as_os_walk(tree, topdown):
    ours = list(fnd_walk.walk(tree, topdown=topdown))
    assert as_set(ours) == as_set(os.walk(tree, topdown=topdown))
    assert len(ours) == len(as_set(ours))  # each directory once


@pytest.mark.parametrize("top", [str, os.fsencode])
def test_names_in_os_walks_order(tree, top):
    # Within a tuple the names come as the directory lists them, as
    # os.walk gives them (the tuples themselves come in another order).
    ours = {d: (ds, fs) for d, ds, fs in fnd_walk.walk(top(tree))}
    assert ours == {d: (ds, fs) for d, ds, fs in os.walk(top(tree))}


@pytest.mark.parametrize("topdown", [True, False])
def test_bytes_top_gives_bytes(tree, topdown):
    top = os.fsencode(tree)
    ours = list(fnd_walk.walk(top, topdown=topdown))
    assert all(isinstance(x, bytes) for d, ds, fs in ours for x in [d, *ds, *fs])
    assert as_set(ours) == as_set(os.walk(top, topdown=topdown))
    assert any(b"\xff\xfe" in d for d, _, _ in ours)


def test_names_that_are_not_utf8_survive(tree):
    names = {n for _, ds, fs in fnd_walk.walk(tree) for n in ds + fs}
    assert "bad\udcff\udcfe" in names  # surrogateescape, as os does
    assert "new\nline.txt" in names and "ñ.txt" in names
    assert os.fsencode("bad\udcff\udcfe") == b"bad\xff\xfe"


def test_pathlike_and_trailing_slash(tree):
    assert as_set(fnd_walk.walk(pathlib.Path(tree))) == as_set(os.walk(pathlib.Path(tree)))
    assert as_set(fnd_walk.walk(tree + "/")) == as_set(os.walk(tree + "/"))
    here = os.getcwd()
    try:
        os.chdir(tree)
        assert as_set(fnd_walk.walk(".")) == as_set(os.walk("."))
    finally:
        os.chdir(here)


def test_top_down_order_parents_first(tree):
    seen = set()
    for d, ds, _ in fnd_walk.walk(tree):
        assert d == tree or os.path.dirname(d) in seen
        seen.add(d)


def test_bottom_up_order_children_first(tree):
    seen = set()
    for d, ds, _ in fnd_walk.walk(tree, topdown=False):
        for sub in ds:
            path = os.path.join(d, sub)
            if not os.path.islink(path):
                assert path in seen
        seen.add(d)


def test_symlinks_listed_not_followed(tree):
    top = next(iter(fnd_walk.walk(tree)))
    assert top[0] == tree
    assert "link-to-dir" in top[1]
    assert {"link-to-file", "dangling", "self"} <= set(top[2])
    assert not any("link-to-dir" in d for d, _, _ in fnd_walk.walk(tree))


def prune(walk):
    out = []
    for d, ds, fs in walk:
        ds[:] = [x for x in ds if x not in ("a", "many")]
        ds.sort()
        out.append((d, tuple(ds), tuple(sorted(fs))))
    return out


def test_pruning_dirnames_in_place(tree):
    ours = prune(fnd_walk.walk(tree))
    theirs = prune(os.walk(tree))
    assert sorted(ours) == sorted(theirs)
    assert not any(os.sep + "a" + os.sep in d or d.endswith(os.sep + "a") for d, _, _ in ours)


def test_pruning_everything(tree):
    tuples = []
    for d, ds, fs in fnd_walk.walk(tree):
        tuples.append(d)
        ds.clear()
    assert tuples == [tree]


def test_missing_top_calls_onerror(tmp_path):
    errors = []
    missing = str(tmp_path / "missing")
    assert list(fnd_walk.walk(missing, onerror=errors.append)) == []
    assert len(errors) == 1 and isinstance(errors[0], FileNotFoundError)
    assert errors[0].filename == missing and errors[0].errno == errno.ENOENT


def test_file_top_calls_onerror(tree):
    errors = []
    path = os.path.join(tree, "top.txt")
    assert list(fnd_walk.walk(path, onerror=errors.append)) == []
    theirs = []
    list(os.walk(path, onerror=theirs.append))
    assert [type(e) for e in errors] == [type(e) for e in theirs] == [NotADirectoryError]
    assert errors[0].filename == path


def test_onerror_may_raise(tmp_path):
    def stop(error):
        raise error

    with pytest.raises(FileNotFoundError):
        list(fnd_walk.walk(str(tmp_path / "missing"), onerror=stop))


def check_unreadable(tree):
    def run(walker, **kw):
        errors = []
        got = {(d, tuple(sorted(ds)), tuple(sorted(fs))) for d, ds, fs in walker(tree, onerror=errors.append, **kw)}
        return got, sorted((type(e).__name__, e.errno, e.filename) for e in errors)

    for topdown in (True, False):
        assert run(fnd_walk.walk, topdown=topdown) == run(os.walk, topdown=topdown), topdown
    assert run(fnd_walk.walk)[1] == [("PermissionError", 13, os.path.join(tree, "locked"))]


def test_unreadable_directory_calls_onerror(tmp_path):
    base = tmp_path / "u"
    base.mkdir()
    (base / "open").mkdir()
    (base / "open" / "f").write_text("")
    (base / "locked").mkdir()
    (base / "locked" / "secret").write_text("")
    os.chmod(base / "locked", 0)
    try:
        if os.geteuid() != 0:
            check_unreadable(str(base))
            return
        # Root reads any directory: the check runs as nobody, in a child
        # that has everything imported already.
        path = tmp_path
        while path != path.parent:
            os.chmod(path, os.stat(path).st_mode | 0o111)
            path = path.parent
        os.chmod(base, 0o755)
        os.chmod(base / "open", 0o755)
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                os.setgid(65534)
                os.setuid(65534)
                check_unreadable(str(base))
                code = 0
            except BaseException:
                import traceback
                traceback.print_exc()
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
    finally:
        os.chmod(base / "locked", 0o755)


def test_followlinks_walks_links_and_stops_at_loops(tree):
    errors = []
    ours = list(fnd_walk.walk(tree, followlinks=True, onerror=errors.append))
    dirs = {d for d, _, _ in ours}
    assert os.path.join(tree, "link-to-dir") in dirs
    assert os.path.join(tree, "link-to-dir", "c") in dirs
    # os.walk would walk a/b/up/b/up/... until the kernel's ELOOP; the
    # walk reports the loop once per place instead.
    assert errors and all(e.errno == errno.ELOOP for e in errors)
    assert all(isinstance(e, OSError) and e.filename for e in errors)


def test_many_threads_walk_at_once(tree):
    expected = as_set(os.walk(tree))
    results = [None] * 8

    def work(i):
        results[i] = as_set(fnd_walk.walk(tree, topdown=i % 2 == 0))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(r == expected for r in results)


def test_keyboard_interrupt_stops_a_walk(tree):
    # Run in the background (`cmd &`, nohup), Python starts with SIGINT
    # ignored and installs no handler for it, and interrupt_main() then
    # does nothing: the loop below would never end.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        timer = threading.Timer(0.2, _thread.interrupt_main)
        timer.start()
        walks = 0
        with pytest.raises(KeyboardInterrupt):
            while True:
                for _ in fnd_walk.walk(tree):
                    pass
                walks += 1
        timer.cancel()
    finally:
        signal.signal(signal.SIGINT, previous)
    # The interpreter goes on: another walk works.
    assert as_set(fnd_walk.walk(tree)) == as_set(os.walk(tree))


def test_abandoned_walk_stops(tree):
    for _ in range(50):
        it = fnd_walk.walk(tree)
        next(it)
        del it
    it = fnd_walk.walk(tree)
    next(it)
    it.close()
    assert list(it) == []


def test_a_directory_the_engine_could_split_is_one_tuple(tmp_path):
    # fnd's engine reads a big ext4 directory (over 1 MiB, past 4096 entries)
    # in parts on several threads; a tuple needs the directory whole.
    big = tmp_path / "big"
    big.mkdir()
    names = {"%05d-%s" % (i, "n" * 60) for i in range(20000)}
    for name in names:
        (big / name).touch()
    tuples = [t for t in fnd_walk.walk(str(tmp_path), threads=4) if t[0] == str(big)]
    assert len(tuples) == 1
    assert tuples[0][2] == os.listdir(big)
    assert set(tuples[0][2]) == names
