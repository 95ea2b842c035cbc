#!/usr/bin/env python3
"""Keeps the code in the tutorial pages (docs/*.md) identical to the example sources.

A page includes a source file between two markers; everything between them is generated:

    <!-- include: examples/data_parallel.cpp -->
    ```cpp
    ...the file's content...
    ```
    <!-- end include -->

`<!-- include: PATH lines A-B -->` takes lines A to B only (1-based, inclusive). PATH is relative
to the root (the repository by default). Markers inside other fenced code blocks are ignored, so a
page can show the syntax.

    python3 scripts/sync_docs.py            rewrite every include block from the sources
    python3 scripts/sync_docs.py --check    exit 1 naming the page, the block and the first
                                            differing line when a block is stale (nothing written)
    --root DIR                              use DIR/docs/*.md and sources relative to DIR

Exit codes: 0 in sync (or rewritten), 1 stale (--check), 2 a malformed page or a missing source.
Only the standard library is used.
"""

import argparse
import pathlib
import re
import sys

INCLUDE_RE = re.compile(r"^<!--\s*include:\s*(?P<path>\S+)(?:\s+lines\s+(?P<a>\d+)-(?P<b>\d+))?\s*-->\s*$")
END_RE = re.compile(r"^<!--\s*end include\s*-->\s*$")
FENCE_RE = re.compile(r"^(?P<fence>`{3,}|~{3,})")
LANGUAGES = {".cpp": "cpp", ".cc": "cpp", ".h": "cpp", ".hpp": "cpp", ".py": "python", ".sh": "bash",
             ".cmake": "cmake", ".txt": "text", ".md": "markdown", ".json": "json"}


class PageError(Exception):
    """A malformed page or an unreadable source: exit 2."""


def language_of(path):
    if path.name == "CMakeLists.txt":
        return "cmake"
    return LANGUAGES.get(path.suffix, "")


def fenced(path, lines):
    """The generated body of a block: the source lines in a fence longer than any inside them."""
    longest = max((len(m.group("fence")) for m in map(FENCE_RE.match, lines) if m and m.group("fence")[0] == "`"),
                  default=0)
    fence = "`" * max(3, longest + 1)
    return [fence + language_of(path) + "\n"] + lines + [fence + "\n"]


def source_lines(root, page, number, match):
    rel = match.group("path")
    path = root / rel
    if not path.is_file():
        raise PageError(f"{page}: block {number} includes {rel}, which does not exist under {root}")
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    if match.group("a"):
        a, b = int(match.group("a")), int(match.group("b"))
        if not 1 <= a <= b <= len(lines):
            raise PageError(f"{page}: block {number} asks for lines {a}-{b} of {rel}, which has {len(lines)} lines")
        lines = lines[a - 1:b]
    return path, lines


def process(root, page_path):
    """Returns (page name, old lines, new lines, stale blocks, block count); a stale block is
    (number, marker, page line, detail)."""
    page = page_path.relative_to(root).as_posix()
    lines = page_path.read_text(encoding="utf-8").splitlines(keepends=True)
    out, stale = [], []
    number = 0
    fence = None  # the fence of an ordinary code block we are inside, if any
    i = 0
    while i < len(lines):
        line = lines[i]
        if fence is not None:
            out.append(line)
            if line.rstrip().startswith(fence[0] * len(fence)) and set(line.strip()) == {fence[0]}:
                fence = None
            i += 1
            continue
        m = INCLUDE_RE.match(line)
        if not m:
            f = FENCE_RE.match(line)
            if f:
                fence = f.group("fence")
            out.append(line)
            i += 1
            continue
        number += 1
        start = i
        end = next((j for j in range(i + 1, len(lines)) if END_RE.match(lines[j])), None)
        if end is None:
            raise PageError(f"{page}: block {number} ({line.strip()}, line {start + 1}) has no <!-- end include -->")
        src_path, src = source_lines(root, page, number, m)
        want = fenced(src_path, src)
        have = lines[start + 1:end]
        if have != want:
            k = next((k for k in range(min(len(have), len(want))) if have[k] != want[k]), min(len(have), len(want)))
            page_has = have[k].rstrip("\n") if k < len(have) else "(end of block)"
            source_has = want[k].rstrip("\n") if k < len(want) else "(end of block)"
            first = int(m.group("a") or 1)
            where = (f"{m.group('path')} line {first + k - 1}" if 1 <= k <= len(src)
                     else "the opening fence" if k == 0 else "the closing fence")
            stale.append((number, line.strip(), start + 1,
                          f"first difference at page line {start + 2 + k} ({where}):\n"
                          f"      page:   {page_has!r}\n      source: {source_has!r}"))
        out.append(line)
        out.extend(want)
        out.append(lines[end])
        i = end + 1
    return page, lines, out, stale, number


def main(argv):
    parser = argparse.ArgumentParser(description="Sync the include blocks of docs/*.md with their sources.")
    parser.add_argument("--check", action="store_true", help="report stale blocks and exit 1; write nothing")
    parser.add_argument("--root", default=str(pathlib.Path(__file__).resolve().parent.parent),
                        help="the directory holding docs/ and the sources (default: the repository)")
    args = parser.parse_args(argv)
    root = pathlib.Path(args.root).resolve()
    pages = sorted((root / "docs").glob("*.md"))
    if not pages:
        print(f"sync_docs: no pages in {root / 'docs'}", file=sys.stderr)
        return 2
    total_stale, blocks = 0, 0
    try:
        for page_path in pages:
            page, old, new, stale, count = process(root, page_path)
            blocks += count
            for number, marker, at, detail in stale:
                total_stale += 1
                verb = "is stale" if args.check else "updated"
                print(f"{page}: block {number} ({marker}, page line {at}) {verb}" +
                      (f"; {detail}" if args.check else ""), file=sys.stderr if args.check else sys.stdout)
            if not args.check and new != old:
                page_path.write_text("".join(new), encoding="utf-8")
    except PageError as e:
        print(f"sync_docs: {e}", file=sys.stderr)
        return 2
    if args.check and total_stale:
        print(f"sync_docs: {total_stale} stale block(s); run `python3 scripts/sync_docs.py` to rewrite them",
              file=sys.stderr)
        return 1
    if args.check:
        print(f"sync_docs: {blocks} include block(s) in {len(pages)} page(s) are in sync")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
