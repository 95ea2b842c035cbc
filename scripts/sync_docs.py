#!/usr/bin/env python3
"""Keeps the tutorial pages (docs/*.md) true to the repository: their code listings are the
example sources, and their outputs are what the programs print.

Listings. A page includes a source file between two markers; everything between them is generated:

    <!-- include: examples/data_parallel.cpp -->
    ```cpp
    ...the file's content...
    ```
    <!-- end include -->

`<!-- include: PATH lines A-B -->` takes lines A to B only (1-based, inclusive). PATH is relative
to the root (the repository by default).

Outputs. A console block between two markers shows commands and what they print:

    <!-- output: sort-ranks -->
    ```console
    $ build/bin/globe-launch --nproc_per_node 2 build/bin/broadcast_init
    [rank0] rank 0: weight[0][0] local init -0.143711, after to_global(B) -0.143711
    [rank1] rank 1: weight[0][0] local init 0.194114, after to_global(B) -0.143711
    ```
    <!-- end output -->

A line starting with "$ " is a command (a line ending in a backslash continues it); the lines up to
the next command are its output, stdout and stderr together. The commands of a block run in order,
each in a subshell of one bash shell (so `echo $?` reports the command before), in a scratch
directory that links every top-level entry of the repository (`build` links to --build): paths
such as build/bin/... work as on the page, and the files the commands write are thrown away.
GLOBE_* and the thread-count variables are removed from the environment, so a block runs as in a
fresh shell. Each command's output is compared with the page after normalising trailing blanks,
mpirun's job ids ([[12345,1],0]) and /tmp/NAME paths, and whatever the marker's options name.
The options are shell words:

    sort-ranks        lines of different ranks ("[rankN] ...") may arrive in any order: each rank's
                      lines are compared in their own order, and the other lines in theirs; the
                      rewrite shows rank 0's lines, then rank 1's, ..., then the others
    keep=REGEX        only lines matching REGEX are shown and compared; a "..." line on the page
                      stands for lines left out (the rewrite puts one wherever lines were dropped)
    vary=REGEX        text matching REGEX differs from run to run (a timing, a rate): compared as
                      "*" (repeatable). It may not reach into a hex float (0x1.26d9b4p+1): a page
                      that shows bits shows them exactly, so a vary= there is refused (exit 2)
    exit=N            the exit status of the block's last command (default 0)
    setup=COMMAND     run first in the scratch directory, output not shown (e.g. writes a file the
                      block reads); it must exit 0
    command=COMMAND   the block shows output only (no "$ " lines): this command prints it
    timeout=SECONDS   for the whole block (default 120)
    not-in-ci=REASON  not run by the test suite (a long training run; a multi-host run can never
                      be): the page's text must say so. --all runs these blocks too

Terms. With the listings, each translation (docs/zh/*.md, prose outside code) is checked against
the term list, docs/zh/TERMS.md: a word its notes rule out (不用“X”; N in X stands for any number)
is reported by page and line, and the check fails (a person rewrites the sentence).

A block that matches is left as it is, so the numbers a page shows stay those of one real run; a
block that differs is rewritten from the new run (the page's commands and fence are kept). Markers
inside other fenced code blocks are text, so a page can show the syntax.

Pictures. With the outputs (and no --page), docs/img/*.svg are compared with what
build/bin/doc_pictures draws on 2 ranks (docs/snippets/doc_pictures.cpp) from Globe itself and
from the measured data in docs/data/: a missing, stale or no longer drawn picture counts as a
stale block, and is redrawn (or removed) unless --check.

    python3 scripts/sync_docs.py                 rewrite every stale block (listings and outputs)
    python3 scripts/sync_docs.py --check         exit 1 naming the page, the block and the first
                                                 differing line of each stale block (writes nothing)
    --listings-only / --outputs-only             only the include blocks (fast) / only the outputs
    --page TEXT                                  only the pages whose file name contains TEXT
    --all                                        also run the blocks marked not-in-ci
    --root DIR                                   DIR/docs/*.md, sources relative to DIR
    --build DIR                                  the build directory `build` stands for (default ROOT/build)
    -v                                           print each output block's run time

Exit codes: 0 in sync (or rewritten), 1 stale or failed (a timeout, a wrong exit status), 2 a
malformed page or a missing source. Only the standard library is used.
"""

import argparse
import os
import pathlib
import re
import secrets
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time

INCLUDE_RE = re.compile(r"^<!--\s*include:\s*(?P<path>\S+)(?:\s+lines\s+(?P<a>\d+)-(?P<b>\d+))?\s*-->\s*$")
OUTPUT_RE = re.compile(r"^<!--\s*output(?::\s*(?P<options>.*?))?\s*-->\s*$")
END_RE = {"include": re.compile(r"^<!--\s*end include\s*-->\s*$"), "output": re.compile(r"^<!--\s*end output\s*-->\s*$")}
FENCE_RE = re.compile(r"^(?P<fence>`{3,}|~{3,})")
RANK_RE = re.compile(r"^\[rank(\d+)\] ")
LANGUAGES = {".cpp": "cpp", ".cc": "cpp", ".h": "cpp", ".hpp": "cpp", ".py": "python", ".sh": "bash",
             ".cmake": "cmake", ".txt": "text", ".md": "markdown", ".json": "json"}
# Normalised in every output block: what differs between any two runs and never matters.
ALWAYS_VARY = [(re.compile(r"\[\[\d+,\d+\],(\d+)\]"), r"[[*,*],\1]"),  # mpirun's job id
               (re.compile(r"/tmp/[\w.-]+"), "/tmp/*")]                 # mkdtemp names
SCRUBBED_ENV = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS")  # and every GLOBE_* variable
OUTPUT_OPTIONS = {"sort-ranks", "keep", "vary", "exit", "setup", "command", "timeout", "not-in-ci"}


class PageError(Exception):
    """A malformed page or an unreadable source: exit 2."""


# ---- listings ---------------------------------------------------------------------------------

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


def include_block(ctx, page, number, match, have):
    """Returns (new body, stale detail or None)."""
    src_path, src = source_lines(ctx.root, page, number, match)
    want = fenced(src_path, src)
    if have == want:
        return want, None
    k = next((k for k in range(min(len(have), len(want))) if have[k] != want[k]), min(len(have), len(want)))
    page_has = have[k].rstrip("\n") if k < len(have) else "(end of block)"
    source_has = want[k].rstrip("\n") if k < len(want) else "(end of block)"
    first = int(match.group("a") or 1)
    where = (f"{match.group('path')} line {first + k - 1}" if 1 <= k <= len(src)
             else "the opening fence" if k == 0 else "the closing fence")
    return want, (f"first difference at page line {ctx.body_line + k} ({where}):\n"
                  f"      page:   {page_has!r}\n      source: {source_has!r}")


# ---- outputs ----------------------------------------------------------------------------------

def parse_options(page, number, text):
    """The marker's shell words as a dict; vary is a list, sort-ranks a bool."""
    try:
        words = shlex.split(text or "")
    except ValueError as e:
        raise PageError(f"{page}: block {number}: cannot read the options ({e})")
    opts = {"sort-ranks": False, "vary": [], "exit": 0, "timeout": 120.0}
    for word in words:
        key, eq, value = word.partition("=")
        if key not in OUTPUT_OPTIONS or (key == "sort-ranks") == bool(eq):
            raise PageError(f"{page}: block {number}: unknown or malformed option {word!r} "
                            f"(known: {', '.join(sorted(OUTPUT_OPTIONS))})")
        try:
            if key == "sort-ranks":
                opts[key] = True
            elif key == "vary":
                opts[key].append(re.compile(value))
            elif key == "keep":
                opts[key] = re.compile(value)
            elif key == "exit":
                opts[key] = int(value)
            elif key == "timeout":
                opts[key] = float(value)
            else:
                opts[key] = value
        except (re.error, ValueError) as e:
            raise PageError(f"{page}: block {number}: bad value in {word!r} ({e})")
    if "not-in-ci" in opts and not opts["not-in-ci"].strip():
        raise PageError(f"{page}: block {number}: not-in-ci needs a reason")
    return opts


def split_console(page, number, body, opts):
    """The fence lines and the (command lines, output lines) pairs of a console block."""
    if len(body) < 2 or not FENCE_RE.match(body[0]) or body[-1].strip() != FENCE_RE.match(body[0]).group("fence"):
        raise PageError(f"{page}: output block {number} must hold exactly one fenced code block")
    inner = [line.rstrip("\n") for line in body[1:-1]]
    steps = []
    i = 0
    if "command" in opts:
        if any(line.startswith("$ ") for line in inner):
            raise PageError(f"{page}: output block {number} has command= and '$ ' lines; use one of them")
        return body[0], body[-1], [([], inner)]
    if not inner or not inner[0].startswith("$ "):
        raise PageError(f"{page}: output block {number} must start with a '$ ' command line (or use command=)")
    while i < len(inner):
        cmd = [inner[i]]
        while cmd[-1].endswith("\\") and i + 1 < len(inner):
            i += 1
            cmd.append(inner[i])
        i += 1
        out = []
        while i < len(inner) and not inner[i].startswith("$ "):
            out.append(inner[i])
            i += 1
        steps.append((cmd, out))
    return body[0], body[-1], steps


def command_text(cmd_lines):
    """The shell text of a command as written on the page (the "$ " dropped, continuations kept)."""
    return "\n".join([cmd_lines[0][2:]] + cmd_lines[1:])


def scratch_dir(ctx):
    """A directory linking every top-level entry of the root; `build` is the build directory."""
    d = pathlib.Path(tempfile.mkdtemp(prefix="globe-docs-"))
    for entry in ctx.root.iterdir():
        if entry.name not in (".git", "build"):
            (d / entry.name).symlink_to(entry)
    (d / "build").symlink_to(ctx.build)
    return d


def run_block(ctx, steps, opts):
    """Runs the block's commands in one bash shell. Returns (outputs per command, last status,
    failure text or None)."""
    token = "@@sync_docs-" + secrets.token_hex(8) + "@@"
    script = ["exec 2>&1"]
    if "setup" in opts:
        script += ["__sync_docs_setup=$(", opts["setup"],
                   f") || {{ printf '%s\\n%s\\n' '{token}setup-failed' \"$__sync_docs_setup\"; exit 99; }}"]
    commands = [opts["command"]] if "command" in opts else [command_text(cmd) for cmd, _ in steps]
    script += ["__sync_docs_status=0"]
    for c in commands:  # each in a subshell that sees the status of the one before (for `echo $?`)
        script += [f"printf '%s\\n' '{token}'", "(exit $__sync_docs_status)", "(", c, ")", "__sync_docs_status=$?",
                   f"printf '\\n%s%s\\n' '{token}status=' \"$__sync_docs_status\""]
    env = {k: v for k, v in os.environ.items() if not k.startswith("GLOBE_") and k not in SCRUBBED_ENV}
    work = scratch_dir(ctx)
    try:
        proc = subprocess.Popen(["bash", "-c", "\n".join(script)], cwd=work, env=env, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            raw, _ = proc.communicate(timeout=opts["timeout"])
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            return None, None, f"timed out after {opts['timeout']:g} s (timeout=)"
    finally:
        shutil.rmtree(work, ignore_errors=True)
    text = raw.decode("utf-8", errors="replace")
    if token + "setup-failed" in text:
        return None, None, "setup= failed:\n" + text.split(token + "setup-failed", 1)[1]
    outputs, status = [], None
    for part in text.split(token)[1:]:
        if part.startswith("status="):
            status = int(part[len("status="):].split()[0])
            continue
        out = part.split("\n")
        if out and out[0] == "":
            out = out[1:]
        outputs.append(out)
    if len(outputs) != len(commands):
        return None, None, f"the shell stopped after {len(outputs)} of {len(commands)} commands:\n{text}"
    return outputs, status, None


def trim(lines):
    lines = [line.rstrip() for line in lines]
    while lines and not lines[-1]:
        lines.pop()
    return lines


def shown(lines, keep):
    """What the page shows of a run: lines matching keep, a "..." for each run of dropped lines."""
    if keep is None:
        return lines
    out = []
    for line in lines:
        if keep.search(line):
            out.append(line)
        elif not out or out[-1] != "...":
            out.append("...")
    return out


def normalise(lines, opts):
    if opts.get("keep") is not None:
        lines = [line for line in lines if line != "..."]
    out = []
    for line in lines:
        for pattern, repl in ALWAYS_VARY:
            line = pattern.sub(repl, line)
        for pattern in opts["vary"]:
            line = pattern.sub("*", line)
        out.append(line)
    return by_rank(out) if opts["sort-ranks"] else out


def by_rank(lines):
    """Rank 0's lines, rank 1's, ..., then the lines of no rank; each group in its own order."""
    def key(line):
        m = RANK_RE.match(line)
        return int(m.group(1)) if m else float("inf")
    return sorted(lines, key=key)  # stable


HEX_FLOAT_RE = re.compile(r"-?0x[0-9a-f]+(?:\.[0-9a-f]*)?p[-+]?[0-9]+")


def refuse_vary_over_bits(page, number, have, opts):
    """A page that shows a float's bits (a hex float) shows them exactly: a vary= pattern that
    reaches into one would hide bits gone stale, the very thing a page calling them exact promises."""
    for line in have:
        bits = [m.span() for m in HEX_FLOAT_RE.finditer(line)]
        for pattern in opts["vary"] + [p for p, _ in ALWAYS_VARY] if bits else []:
            for m in pattern.finditer(line):
                for start, end in bits:
                    if m.start() < end and start < m.end():
                        raise PageError(f"{page}: block {number}: vary={pattern.pattern!r} covers the bits "
                                        f"{line[start:end]!r}; a page that shows bits shows them exactly (show "
                                        f"the decimal value instead, or check the bits with a command such as cmp)")


def output_block(ctx, page, number, match, have):
    """Returns (new body, stale detail or None)."""
    opts = parse_options(page, number, match.group("options"))
    refuse_vary_over_bits(page, number, have, opts)
    opening, closing, steps = split_console(page, number, have, opts)
    if ("not-in-ci" in opts and not ctx.all) or not ctx.outputs:
        return have, None
    t0 = time.monotonic()
    outputs, status, failure = run_block(ctx, steps, opts)
    ctx.output_seconds += time.monotonic() - t0
    ctx.output_blocks += 1
    if ctx.verbose:
        print(f"{page}: output block {number} ran in {time.monotonic() - t0:.1f} s", file=sys.stderr)
    if failure:
        ctx.failed += 1
        return have, "the run failed: " + failure
    new_inner, detail = [], None
    for (cmd, page_out), run_out in zip(steps, outputs):
        run_lines = by_rank(trim(run_out)) if opts["sort-ranks"] else trim(run_out)
        run_shown = shown(run_lines, opts.get("keep"))
        new_inner += cmd + run_shown
        want, got = normalise(trim(page_out), opts), normalise(run_shown, opts)
        if detail is None and want != got:
            k = next((k for k in range(min(len(want), len(got))) if want[k] != got[k]), min(len(want), len(got)))
            label = f"`{command_text(cmd)}`" if cmd else f"`{opts['command']}` (command=)"
            detail = (f"{label}: first difference at output line {k + 1} (after normalising):\n"
                      f"      page: {want[k] if k < len(want) else '(end of output)'!r}\n"
                      f"      run:  {got[k] if k < len(got) else '(end of output)'!r}")
    if status != opts["exit"]:
        ctx.failed += 1
        return have, (f"the last command exited {status}, the marker expects exit={opts['exit']}"
                      + (f"; and {detail}" if detail else ""))
    if detail is None:
        return have, None
    return [opening] + [line + "\n" for line in new_inner] + [closing], detail


# ---- pages ------------------------------------------------------------------------------------

class Context:
    def __init__(self, root, build, listings, outputs, verbose):
        self.root, self.build, self.listings, self.outputs, self.verbose = root, build, listings, outputs, verbose
        self.output_seconds, self.output_blocks, self.failed, self.body_line = 0.0, 0, 0, 0
        self.all = False


def blocks_of(page, lines):
    """(kind, marker match, start, end) of each marker block: lines[start] is the marker,
    lines[end] its end marker. Markers inside ordinary code blocks are text."""
    blocks = []
    fence = None  # the fence of an ordinary code block we are inside, if any
    i = 0
    while i < len(lines):
        line = lines[i]
        if fence is not None:
            if line.rstrip().startswith(fence[0] * len(fence)) and set(line.strip()) == {fence[0]}:
                fence = None
            i += 1
            continue
        kind, m = "include", INCLUDE_RE.match(line)
        if not m:
            kind, m = "output", OUTPUT_RE.match(line)
        if not m:
            f = FENCE_RE.match(line)
            if f:
                fence = f.group("fence")
            i += 1
            continue
        end = next((j for j in range(i + 1, len(lines)) if END_RE[kind].match(lines[j])), None)
        if end is None:
            raise PageError(f"{page}: block {len(blocks) + 1} ({line.strip()}, line {i + 1}) has no <!-- end {kind} -->")
        blocks.append((kind, m, i, end))
        i = end + 1
    return blocks


def process(ctx, page_path):
    """Returns (page name, old lines, new lines, stale blocks, block counts); a stale block is
    (number, marker, page line, detail)."""
    page = page_path.relative_to(ctx.root).as_posix()
    lines = page_path.read_text(encoding="utf-8").splitlines(keepends=True)
    out, stale = [], []
    counts = {"include": 0, "output": 0}
    done = 0  # lines[:done] are handled
    for number, (kind, m, start, end) in enumerate(blocks_of(page, lines), 1):
        counts[kind] += 1
        out.extend(lines[done:start + 1])
        have = lines[start + 1:end]
        ctx.body_line = start + 2
        if kind == "include" and ctx.listings:
            body, detail = include_block(ctx, page, number, m, have)
        elif kind == "output":
            body, detail = output_block(ctx, page, number, m, have)
        else:
            body, detail = have, None
        if detail:
            stale.append((number, lines[start].strip(), start + 1, detail))
        out.extend(body)
        out.append(lines[end])
        done = end + 1
    out.extend(lines[done:])
    return page, lines, out, stale, counts


def follow(page, page_lines, translation_path, root):
    """A translation (docs/zh/NAME.md) carries its English page's blocks byte for byte, in the same
    order; only the prose around them is its own. Returns (name, old lines, new lines, stale
    blocks) with the English blocks copied in; a different number of blocks cannot be fixed here."""
    name = translation_path.relative_to(root).as_posix()
    lines = translation_path.read_text(encoding="utf-8").splitlines(keepends=True)
    theirs, mine = blocks_of(page, page_lines), blocks_of(name, lines)
    if len(theirs) != len(mine):
        return name, lines, lines, [(0, "every block", 1,
                                     f"the translation has {len(mine)} blocks where {page} has {len(theirs)}: "
                                     f"add or remove blocks (and their prose) to follow it")]
    out, stale, done = [], [], 0
    for number, ((_, _, es, ee), (_, _, ms, me)) in enumerate(zip(theirs, mine), 1):
        want = page_lines[es:ee + 1]
        out.extend(lines[done:ms])
        out.extend(want)
        if want != lines[ms:me + 1]:
            stale.append((number, lines[ms].strip(), ms + 1, f"differs from block {number} of {page}"))
        done = me + 1
    out.extend(lines[done:])
    return name, lines, out, stale


PICTURES = "docs/img"  # the tutorials' pictures, drawn by build/bin/doc_pictures


def sync_pictures(ctx, check):
    """Draws the pictures into a scratch directory and compares them with docs/img/: a missing,
    stale or no longer drawn picture is stale (rewritten unless `check`). Returns the stale count."""
    if not (ctx.root / "docs" / "snippets" / "doc_pictures.cpp").exists():
        return 0  # a root without pictures (a test fixture)
    launcher, program = ctx.build / "bin" / "globe-launch", ctx.build / "bin" / "doc_pictures"
    if not program.exists():
        print(f"sync_docs: {program} is not built; the pictures are not checked", file=sys.stderr)
        ctx.failed += 1
        return 0
    target = ctx.root / PICTURES
    with tempfile.TemporaryDirectory() as scratch:
        env = {k: v for k, v in os.environ.items() if not k.startswith("GLOBE_")}
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
        run = subprocess.run([str(launcher), "--nproc_per_node", "2", str(program), scratch,
                              str(ctx.root / "docs" / "data")], env=env,
                             capture_output=True, text=True, timeout=120)
        if run.returncode != 0:
            print(f"sync_docs: doc_pictures failed:\n{run.stdout}{run.stderr}", file=sys.stderr)
            ctx.failed += 1
            return 0
        drawn = {f.name: f.read_bytes() for f in pathlib.Path(scratch).iterdir()}
    kept = {f.name: f.read_bytes() for f in target.glob("*.svg")} if target.exists() else {}
    stale = 0
    for name in sorted(set(drawn) | set(kept)):
        if drawn.get(name) == kept.get(name):
            continue
        stale += 1
        why = "missing" if name not in kept else ("no longer drawn" if name not in drawn else "stale")
        if check:
            print(f"{PICTURES}/{name}: picture is {why}", file=sys.stderr)
            continue
        target.mkdir(parents=True, exist_ok=True)
        if name in drawn:
            (target / name).write_bytes(drawn[name])
        else:
            (target / name).unlink()
        print(f"{PICTURES}/{name}: {'removed' if name not in drawn else 'drawn'} ({why})")
    return stale


# ---- the term list ----------------------------------------------------------------------------

TERMS = "docs/zh/TERMS.md"


def forbidden_terms(root):
    """The words the term list rules out in its notes (不用“X”), N standing for any number:
    [(word, regex)]."""
    path = root / TERMS
    if not path.exists():
        return []
    words = re.findall(r"不用“([^”]+)”", path.read_text(encoding="utf-8"))
    return [(w, re.compile(re.escape(w).replace("N", r"\d+"))) for w in words]


def check_terms(root):
    """Prints each line of a translation (prose, not code) that uses a word the term list rules out;
    returns how many."""
    terms = forbidden_terms(root)
    found = 0
    for page in sorted((root / "docs" / "zh").glob("*.md")) if terms else []:
        if page.name == pathlib.Path(TERMS).name:
            continue
        in_code = False
        for n, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
            if line.startswith("```"):
                in_code = not in_code
                continue
            prose = re.sub(r"`[^`]*`", "", line)
            for word, regex in terms if not in_code else []:
                if regex.search(prose):
                    print(f"docs/zh/{page.name}: line {n} uses “{word}”, which {TERMS} rules out", file=sys.stderr)
                    found += 1
    return found


def main(argv):
    parser = argparse.ArgumentParser(description="Sync the include and output blocks of docs/*.md with the repository.")
    parser.add_argument("--check", action="store_true", help="report stale blocks and exit 1; write nothing")
    parser.add_argument("--root", default=str(pathlib.Path(__file__).resolve().parent.parent),
                        help="the directory holding docs/ and the sources (default: the repository)")
    parser.add_argument("--build", help="the build directory the pages' build/ stands for (default: ROOT/build)")
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--listings-only", action="store_true", help="only the include blocks (runs nothing)")
    which.add_argument("--outputs-only", action="store_true", help="only the output blocks")
    parser.add_argument("--page", default="", help="only pages whose file name contains this text")
    parser.add_argument("--all", action="store_true", help="also run the output blocks marked not-in-ci")
    parser.add_argument("-v", "--verbose", action="store_true", help="print each output block's run time")
    args = parser.parse_args(argv)
    root = pathlib.Path(args.root).resolve()
    build = pathlib.Path(args.build).resolve() if args.build else root / "build"
    ctx = Context(root, build, not args.outputs_only, not args.listings_only, args.verbose)
    ctx.all = args.all
    pages = [p for p in sorted((root / "docs").glob("*.md")) if args.page in p.name]
    if not pages:
        print(f"sync_docs: no pages in {root / 'docs'}" + (f" matching {args.page!r}" if args.page else ""),
              file=sys.stderr)
        return 2
    total_stale = 0
    blocks = {"include": 0, "output": 0}
    translated = 0
    try:
        for page_path in pages:
            page, old, new, stale, counts = process(ctx, page_path)
            for kind in blocks:
                blocks[kind] += counts[kind]
            updates = [(page_path, page, old, new, stale)]
            translation = root / "docs" / "zh" / page_path.name
            if translation.exists():
                name, t_old, t_new, t_stale = follow(page, new, translation, root)
                updates.append((translation, name, t_old, t_new, t_stale))
                translated += 1
            for path, page, old, new, stale in updates:
                for number, marker, at, detail in stale:
                    total_stale += 1
                    unfixable = detail.startswith("the translation has")  # blocks missing or extra
                    failed = unfixable or detail.startswith("the run failed") or \
                        detail.startswith("the last command exited")
                    if unfixable and not args.check:
                        ctx.failed += 1
                    verb = "is stale" if args.check else ("failed" if failed else "updated")
                    print(f"{page}: block {number} ({marker}, page line {at}) {verb}" +
                          (f"; {detail}" if args.check or failed else ""),
                          file=sys.stderr if args.check or failed else sys.stdout)
                if not args.check and new != old:
                    path.write_text("".join(new), encoding="utf-8")
        if ctx.outputs and not args.page:
            total_stale += sync_pictures(ctx, args.check)
    except PageError as e:
        print(f"sync_docs: {e}", file=sys.stderr)
        return 2
    wrong_terms = check_terms(root) if ctx.listings else 0
    if wrong_terms:  # nothing rewrites a translation's prose: a person fixes it
        print(f"sync_docs: {wrong_terms} line(s) of docs/zh/ use a term {TERMS} rules out", file=sys.stderr)
        return 1
    ran = f"; {ctx.output_blocks} output run(s) took {ctx.output_seconds:.1f} s" if ctx.output_blocks else ""
    if args.check and total_stale:
        print(f"sync_docs: {total_stale} stale block(s){ran}; run `python3 scripts/sync_docs.py` to rewrite them",
              file=sys.stderr)
        return 1
    if ctx.failed:
        print(f"sync_docs: {ctx.failed} output block(s) failed to run{ran}", file=sys.stderr)
        return 1
    kinds = ([f"{blocks['include']} include block(s)"] if ctx.listings else []) + \
            ([f"{blocks['output']} output block(s)"] if ctx.outputs else [])
    if args.check:
        print(f"sync_docs: {' and '.join(kinds)} in {len(pages)} page(s), and the blocks of {translated} "
              f"translation(s) (docs/zh/), are in sync{ran}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
