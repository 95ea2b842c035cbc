#!/usr/bin/env python3
"""Proves the output check of scripts/sync_docs.py can fail, and that its normalising lets through
only what the markers allow. On a copy of fixtures/outputs (shell scripts stand in for programs):
--check must exit 1 naming the stale blocks and their first differing line, and pass the blocks
that differ only in the ranks' order (sort-ranks), a timing (vary=), an mpirun job id or lines left
out (keep=); the rewrite must fix the page from real runs and change nothing on a second run; a
wrong exit status and a timeout must fail without rewriting; an unknown option must exit 2."""

import tempfile

from check_util import copy_fixture, expect, run as run_script


def run(root, *args):
    return run_script(root, "--outputs-only", *args)


def block(text, number_marker):
    """The text of the block that starts at the marker line containing number_marker."""
    start = text.index(number_marker)
    return text[start:text.index("<!-- end output -->", start)]


with tempfile.TemporaryDirectory() as tmp:
    root, page, before = copy_fixture(tmp, "outputs")

    rc, out = run(root, "--check")
    expect(rc == 1, "--check exits 1 on the stale fixture", out)
    expect("docs/page.md: block 2 (<!-- output -->, page line 18) is stale; `sh examples/greet.sh 2`: first "
           "difference at output line 1" in out and "'hello, local tensors'" in out and "'hello, global tensors'" in out,
           "the report names the page, the block, the command and the first differing line, page vs run", out)
    expect("block 6 (" in out and "'[rank1] hello from rank 1'" in out,
           "without sort-ranks, lines of another rank's order are a difference", out)
    for n in (1, 3, 4, 5, 7):
        expect(f"block {n} (" not in out, f"block {n} passes (sort-ranks, vary, job id, keep, exit=, not-in-ci, echo $?)", out)
    expect(page.read_text() == before, "--check writes nothing", out)

    rc, out = run(root)
    expect(rc == 0 and "block 2" in out and "updated" in out, "the rewrite updates block 2", out)
    after = page.read_text()
    b2 = block(after, "<!-- output -->")
    expect("$ sh examples/greet.sh 2\nhello, global tensors\nfrom 2 ranks\n```" in b2,
           "block 2 now holds the command and its real output, stderr included", b2)
    expect("took 0.25 s" in block(after, "<!-- output: sort-ranks"), "a block that matches is left as written", after)
    rc, out = run(root, "--check")
    expect(rc == 0, "--check passes after the rewrite", out)
    rc, out = run(root)
    expect(rc == 0 and page.read_text() == after, "a second rewrite changes nothing", out)

    # A program whose printed text changes: every block that shows it goes stale; keep= blocks are
    # rewritten with "..." for the lines left out.
    ranks = root / "examples" / "ranks.sh"
    ranks.write_text(ranks.read_text().replace("hello from rank 0", "hi from rank 0"))
    rc, out = run(root, "--check")
    expect(rc == 1 and all(f"block {n} (" in out for n in (1, 3, 6)), "changing a program's text fails --check", out)
    rc, out = run(root)
    b1 = block(page.read_text(), "<!-- output: sort-ranks")
    expect("$ sh examples/ranks.sh\n[rank0] hi from rank 0\n[rank1] hello from rank 1\n[rank1] bye from rank 1\ntook" in b1,
           "the rewrite of a sort-ranks block shows rank 0's lines, rank 1's, then the others", b1)
    b3 = block(page.read_text(), "<!-- output: keep=")
    expect(rc == 0 and "$ cat out.txt\n...\n[rank0] hi from rank 0\n...\n$ grep" in b3,
           "the rewrite of a keep= block shows the kept lines and '...' for the others", b3)

    text = page.read_text()
    page.write_text(text.replace("exit 3' exit=3", "exit 3' exit=0"))
    rc, out = run(root)
    expect(rc == 1 and "block 4" in out and "exited 3, the marker expects exit=0" in out,
           "a wrong exit status fails", out)
    expect("exit=0 -->\n```text\nfailing\n```" in page.read_text(), "a failed block is not rewritten", out)

    page.write_text(text.replace("command='echo failing; exit 3' exit=3", "command='sleep 30' timeout=1"))
    rc, out = run(root, "--check")
    expect(rc == 1 and "block 4" in out and "timed out after 1 s" in out, "a block that runs too long fails", out)

    page.write_text(text.replace("<!-- output -->", "<!-- output: sorted-ranks -->"))
    rc, out = run(root, "--check")
    expect(rc == 2 and "unknown or malformed option 'sorted-ranks'" in out, "an unknown option exits 2", out)
print("expect_stale_outputs: all checks passed")
