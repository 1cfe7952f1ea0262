#!/usr/bin/env python3
"""Write a copy of an export in ncdu's format with a share of its entries
changed, for bench/reports.sh: of every 100 files, on average half a file
grows or shrinks, a quarter goes, and a quarter of a new file appears
beside one (so 1% of the entries change by default).

Usage: mutate_export.py IN OUT [SHARE] (SHARE: 0.01 by default)
"""
import json
import random
import sys


def main():
    src, dst = sys.argv[1], sys.argv[2]
    share = float(sys.argv[3]) if len(sys.argv) > 3 else 0.01
    rng = random.Random(42)
    with open(src, "rb") as f:
        # Names that are not UTF-8 survive as surrogates.
        doc = json.loads(f.read().decode("utf-8", "surrogateescape"))

    def walk(node):
        # A directory: [own entry, children...]; a file: an object.
        out = [node[0]]
        for child in node[1:]:
            if isinstance(child, list):
                out.append(walk(child))
                continue
            r = rng.random()
            if r < share * 0.5:
                child = dict(child)
                grow = rng.choice([-1, 1]) * rng.randint(1, 64) * 4096
                child["asize"] = max(0, child.get("asize", 0) + grow)
                child["dsize"] = max(0, child.get("dsize", 0) + grow)
                out.append(child)
            elif r < share * 0.75:
                continue
            elif r < share:
                out.append(child)
                new = {"name": child["name"] + ".new", "asize": 8192, "dsize": 8192}
                out.append(new)
            else:
                out.append(child)
        return out

    doc[3] = walk(doc[3])
    with open(dst, "wb") as f:
        f.write(json.dumps(doc, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogateescape"))


main()
