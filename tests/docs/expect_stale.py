#!/usr/bin/env python3
"""Proves scripts/sync_docs.py --check can fail: on a copy of fixtures/stale it must exit 1 and
name the page, the block and the first differing line; the rewrite must then fix the page (and
change nothing on a second run); a missing source must exit 2."""

import tempfile

from check_util import copy_fixture, expect, run


with tempfile.TemporaryDirectory() as tmp:
    root, page, before = copy_fixture(tmp, "stale")

    rc, out = run(root, "--check")
    expect(rc == 1, "--check exits 1 on the stale fixture", out)
    expect("docs/page.md: block 2 (<!-- include: examples/hello.cpp lines 4-7 -->, page line 26) is stale" in out,
           "the report names the page, the block and its marker line", out)
    expect("first difference at page line 29 (examples/hello.cpp line 5)" in out and "hello, local tensors" in out
           and "hello, global tensors" in out, "the report shows the first differing line, page vs source", out)
    expect("block 1" not in out, "the in-sync block 1 is not reported", out)
    expect(page.read_text() == before, "--check writes nothing", out)

    rc, out = run(root)
    expect(rc == 0 and "block 2" in out and "updated" in out, "the rewrite updates block 2", out)
    after = page.read_text()
    expect('std::cout << "hello, global tensors"' in after.split("hello.cpp lines 4-7 -->")[1], "block 2 now holds the source", after)
    expect("examples/does_not_exist.cpp" in after, "the fenced marker example is left alone", after)
    rc, out = run(root, "--check")
    expect(rc == 0, "--check passes after the rewrite", out)
    rc, out = run(root)
    expect(rc == 0 and page.read_text() == after, "a second rewrite changes nothing", out)

    (root / "examples" / "hello.cpp").unlink()
    rc, out = run(root, "--check")
    expect(rc == 2 and "examples/hello.cpp, which does not exist" in out, "a missing source exits 2", out)
print("expect_stale: all checks passed")
