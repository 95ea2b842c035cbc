#!/usr/bin/env python3
"""Proves the site build can fail: on a copy of docs/ and mkdocs.yml, a page with a link to a file
that does not exist, a navigation entry whose page is missing, and a stale listing must each make
`mkdocs build --strict` exit non-zero and name the problem."""

import pathlib
import shutil
import subprocess
import sys
import tempfile

from check_util import expect

ROOT = pathlib.Path(__file__).resolve().parents[2]


def build(root):
    r = subprocess.run(["mkdocs", "build", "--strict", "--site-dir", str(root / "site")], cwd=root,
                       capture_output=True, text=True)
    return r.returncode, r.stdout + r.stderr


if not shutil.which("mkdocs"):
    print("FAIL: mkdocs not found: scripts/setup.sh installs it")
    sys.exit(1)
for case in ("link", "nav", "listing"):
    with tempfile.TemporaryDirectory() as tmp:
        root = pathlib.Path(tmp)
        shutil.copytree(ROOT / "docs", root / "docs")
        shutil.copytree(ROOT / "scripts", root / "scripts")
        shutil.copy(ROOT / "mkdocs.yml", root / "mkdocs.yml")
        for linked in ("globe", "tests", "bench", "examples"):  # what the pages link to outside docs/
            (root / linked).symlink_to(ROOT / linked)
        rc, out = build(root)
        expect(rc == 0, f"({case}) the copy builds", out)
        if case == "link":
            page = root / "docs" / "04-save-load.md"
            page.write_text(page.read_text() + "\nSee [the missing page](no-such-page.md).\n")
            rc, out = build(root)
            expect(rc != 0 and "no-such-page.md" in out, "a broken link fails the strict build", out)
        elif case == "nav":
            (root / "docs" / "zh" / "06-pipeline.md").unlink()
            rc, out = build(root)
            expect(rc != 0 and "zh/06-pipeline.md" in out, "a navigation entry without its page fails the build", out)
        else:
            page = root / "docs" / "02-data-parallel.md"
            text = page.read_text()
            start = text.index("<!-- include: ")
            line_end = text.index("\n", text.index("```cpp", start))  # the listing's first code line
            page.write_text(text[:line_end + 1] + "// a line the source does not have\n" + text[line_end + 1:])
            rc, out = build(root)
            expect(rc != 0 and "stale listings" in out and "docs/02-data-parallel.md: block 1" in out,
                   "a stale listing fails the build", out)
print("expect_site_detects_broken: all checks passed")
