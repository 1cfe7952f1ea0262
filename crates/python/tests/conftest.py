"""Trees the tests build, and the reference tools they compare with."""

import os
import shutil

import pytest


def build_tree(root):
    """A small tree with the names and links os.walk has rules for."""
    root = os.fsencode(root)
    j = os.path.join
    for d in [b"a/b/c", b"a/empty", b"d e/f", b".hidden/g", b"many", "ünï/çødé".encode(), b"bad\xff\xfe/x"]:
        os.makedirs(j(root, d))
    for f in [b"top.txt", b"a/one.rs", b"a/b/two.rs", b"a/b/c/three.txt", b"d e/f/sp ace.rs",
              b".hidden/g/h.rs", b".hidden.rs", b"new\nline.txt", b"bad\xff\xfe/x/y\x80.rs",
              "ünï/çødé/ñ.txt".encode()]:
        with open(j(root, f), "wb") as out:
            out.write(b"x" * 100)
    for i in range(700):  # more than one batch of the walk
        open(j(root, b"many", b"f%d" % i), "wb").close()
    with open(j(root, b"big.bin"), "wb") as out:
        out.write(b"y" * 50000)
    os.link(j(root, b"big.bin"), j(root, b"a/big-link.bin"))
    os.symlink(b"a/b", j(root, b"link-to-dir"))
    os.symlink(b"top.txt", j(root, b"link-to-file"))
    os.symlink(b"nowhere", j(root, b"dangling"))
    os.symlink(b"self", j(root, b"self"))  # ELOOP
    os.symlink(b"..", j(root, b"a/b/up"))  # a loop when followed
    with open(j(root, b".gitignore"), "wb") as out:
        out.write(b"*.txt\n")  # obeyed only in a git repository, as fd does
    with open(j(root, b".ignore"), "wb") as out:
        out.write(b"*.bin\n")
    return root


@pytest.fixture
def tree(tmp_path):
    return build_tree(str(tmp_path / "t")).decode(errors="surrogateescape")


@pytest.fixture(scope="session")
def fnd_bin():
    """The fnd binary of this checkout (.ci/run builds it first)."""
    here = os.path.dirname(os.path.abspath(__file__))
    candidates = [os.environ.get("FND_BIN", "")]
    for profile in ("debug", "release"):
        candidates.append(os.path.join(here, "..", "..", "..", "target", profile, "fnd"))
    candidates.append(shutil.which("fnd") or "")
    for c in candidates:
        if c and os.access(c, os.X_OK):
            return os.path.abspath(c)
    if os.environ.get("FND_REQUIRE_REFERENCE") == "1":
        pytest.fail("no fnd binary: build it with `cargo build -p fnd` or set FND_BIN")
    pytest.skip("no fnd binary")
