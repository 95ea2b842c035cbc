#!/usr/bin/env python3
"""Proves a translation (docs/zh/NAME.md) cannot drift from its English page: its include and
output blocks must equal the English page's, byte for byte and in order. On a copy of
fixtures/stale (brought in sync first) with a Chinese page built from the English one's blocks:
--check passes; a block the translation did not follow is reported (exit 1) and the rewrite copies
the English block in without touching the prose; a translation with a block missing is reported,
and the rewrite cannot fix it (exit 1)."""

import sys
import tempfile

from check_util import copy_fixture, expect, run

sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parents[2] / "scripts"))
from sync_docs import blocks_of  # noqa: E402


with tempfile.TemporaryDirectory() as tmp:
    root, page, _ = copy_fixture(tmp, "stale")
    rc, out = run(root)
    expect(rc == 0, "the fixture is brought in sync", out)
    english = page.read_text().splitlines(keepends=True)
    blocks = blocks_of("docs/page.md", english)
    expect(len(blocks) == 2, "the English page has two blocks", "".join(english))
    zh = root / "docs" / "zh" / "page.md"
    zh.parent.mkdir()
    text = "# 示例页面\n\n"
    for k, (_, _, start, end) in enumerate(blocks, 1):
        text += f"第 {k} 段说明。\n\n" + "".join(english[start:end + 1]) + "\n"
    zh.write_text(text, encoding="utf-8")

    rc, out = run(root, "--check")
    expect(rc == 0 and "1 translation(s)" in out, "a translation that follows its page passes", out)

    # The English listing changed (here: the translation kept an older copy of block 2).
    stale = text.replace("hello, global tensors", "hello, old tensors")
    expect(stale != text, "the fixture's block 2 holds the line changed here", text)
    zh.write_text(stale, encoding="utf-8")
    rc, out = run(root, "--check")
    expect(rc == 1 and "docs/zh/page.md: block 2" in out and "differs from block 2 of docs/page.md" in out,
           "--check names the translation's block that did not follow", out)
    rc, out = run(root)
    expect(rc == 0 and zh.read_text(encoding="utf-8") == text, "the rewrite copies the English block in", out)
    expect("第 2 段说明。" in zh.read_text(encoding="utf-8"), "the translation's prose is kept", zh.read_text())

    # A block the translation lacks cannot be filled in: its prose is missing too.
    start, end = blocks[0][2], blocks[0][3]
    zh.write_text(text.replace("".join(english[start:end + 1]), ""), encoding="utf-8")
    rc, out = run(root, "--check")
    expect(rc == 1 and "the translation has 1 blocks where docs/page.md has 2" in out,
           "--check reports a missing block", out)
    rc, out = run(root)
    expect(rc == 1 and "the translation has 1 blocks" in out, "the rewrite reports it and fails", out)
print("expect_translation_follows: all checks passed")
