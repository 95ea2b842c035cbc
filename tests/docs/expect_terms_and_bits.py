#!/usr/bin/env python3
"""Proves two rules of scripts/sync_docs.py can fail: an output block whose vary= pattern reaches
into a hex float (bits a page calls exact, which the pattern would hide when they go stale) is
refused, naming the page, the block and the bits; and a translation that uses a word the term list
(docs/zh/TERMS.md) rules out fails the check, naming the page, the line and the word, while the
same word inside code is allowed."""

import pathlib
import tempfile

from check_util import expect, run

BITS_PAGE = """# A page

<!-- output: vary=0x[0-9a-f.]+p[-+][0-9]+ -->
```console
$ echo bits 0x1.26d9b4p+1
bits 0x1.26d9b4p+1
```
<!-- end output -->
"""

TERMS = """| 英文 | 中文 | 说明 |
|---|---|---|
| reduction | 归约 | 统一用“归约”，不用“规约” |
| page N | 第 N 篇 | 不用“第 N 页” |
"""

ZH_PAGE = """# 一页

先规约再广播。

见第 3 页。

`规约` 在代码里不算。
"""


with tempfile.TemporaryDirectory() as tmp:
    root = pathlib.Path(tmp) / "bits"
    (root / "docs").mkdir(parents=True)
    (root / "docs" / "page.md").write_text(BITS_PAGE)
    rc, out = run(root, "--check", "--listings-only")
    expect(rc == 2 and "docs/page.md: block 1: vary='0x[0-9a-f.]+p[-+][0-9]+' covers the bits '0x1.26d9b4p+1'" in out,
           "a vary= over a hex float is refused, naming page, block and bits", out)
    (root / "docs" / "page.md").write_text(BITS_PAGE.replace(" vary=0x[0-9a-f.]+p[-+][0-9]+", ""))
    rc, out = run(root, "--check", "--listings-only")
    expect(rc == 0, "the same block without the vary= passes", out)

    root = pathlib.Path(tmp) / "terms"
    (root / "docs" / "zh").mkdir(parents=True)
    (root / "docs" / "page.md").write_text("# A page\n")
    (root / "docs" / "zh" / "TERMS.md").write_text(TERMS)
    (root / "docs" / "zh" / "page.md").write_text(ZH_PAGE)
    rc, out = run(root, "--check", "--listings-only")
    expect(rc == 1 and "docs/zh/page.md: line 3 uses “规约”, which docs/zh/TERMS.md rules out" in out,
           "a ruled-out word in a translation fails the check, naming the line", out)
    expect("line 5 uses “第 N 页”" in out, "N in a ruled-out phrase stands for any number", out)
    expect("line 7" not in out, "the word inside code is allowed", out)
    (root / "docs" / "zh" / "page.md").write_text(ZH_PAGE.replace("先规约", "先归约").replace("第 3 页", "第 3 篇"))
    rc, out = run(root, "--check", "--listings-only")
    expect(rc == 0, "the page passes once it follows the list", out)
print("expect_terms_and_bits: all checks passed")
