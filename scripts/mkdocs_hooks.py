"""MkDocs hooks for the Globe site (mkdocs.yml).

Before the build, the pages' listings must equal the sources and the translations' blocks their
English pages' (scripts/sync_docs.py --check --listings-only): a stale page fails the build.

The pages link to repository files outside docs/ (sources, tests, bench/RESULTS.md) and to
directories (examples/, docs/snippets/). A site must stand alone, and `mkdocs build --strict` must
be able to check every link, so these targets are copied into the site under _src/ (as plain
files, never rendered as pages), directories get a generated index.html listing their files, and
the links are rewritten to point there. Links inside code are untouched: only a target that exists
in the repository is rewritten.
"""
import html
import os
import re
import subprocess
import sys
import tempfile

from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LINK = re.compile(r"(\]\()([^)\s#]+)(#[^)\s]*)?(\))")
SKIP_DIRS = {"build", "build-asan", "__pycache__", ".git"}

_generated = tempfile.mkdtemp(prefix="globe-site-")
_rewrites = {}  # absolute target path -> path in the site, relative to docs_dir


def on_pre_build(config):
    r = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "sync_docs.py"), "--check", "--listings-only",
                        "--root", ROOT], capture_output=True, text=True)
    if r.returncode != 0:
        raise PluginError("stale listings (run python3 scripts/sync_docs.py):\n" + r.stdout + r.stderr)


def _listing(rel_dir, names):
    """An index page for a directory: its files, linked."""
    items = "\n".join(f'<li><a href="{html.escape(n)}">{html.escape(n)}</a></li>' for n in names)
    return (f"<!doctype html><html><head><meta charset=utf-8><title>{html.escape(rel_dir)}/</title></head>"
            f"<body><h1>{html.escape(rel_dir)}/</h1><ul>\n{items}\n</ul></body></html>\n")


def _static(path_in_site, abs_src, config):
    f = File(path_in_site, config["docs_dir"], config["site_dir"], config["use_directory_urls"])
    f.abs_src_path = abs_src
    f.is_documentation_page = lambda: False  # a copy to read, not a page to render
    return f


def _add_directory(target, docs, files, config):
    inside = os.path.commonpath([target, docs]) == docs
    rel = os.path.relpath(target, docs) if inside else os.path.join("_src", os.path.relpath(target, ROOT))
    names = []
    for dirpath, dirnames, filenames in os.walk(target):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS)
        for name in sorted(filenames):
            src = os.path.join(dirpath, name)
            sub = os.path.relpath(src, target)
            names.append(sub)
            if not inside:
                files.append(_static(os.path.join(rel, sub), src, config))
    index = os.path.join(rel, "index.html")
    out = os.path.join(_generated, index)
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, "w", encoding="utf-8") as fh:
        fh.write(_listing(os.path.relpath(target, ROOT), names))
    files.append(File(index, _generated, config["site_dir"], config["use_directory_urls"]))
    return index


def on_files(files, config):
    docs = os.path.abspath(config["docs_dir"])
    pages = [f for f in files if f.src_path.endswith(".md")]
    for page in pages:
        with open(page.abs_src_path, encoding="utf-8") as fh:
            text = fh.read()
        for m in LINK.finditer(text):
            link = m.group(2)
            if "://" in link or link.startswith("mailto:"):
                continue
            target = os.path.normpath(os.path.join(os.path.dirname(page.abs_src_path), link))
            if target in _rewrites or not os.path.exists(target):
                continue
            if os.path.isdir(target):
                _rewrites[target] = _add_directory(target, docs, files, config)
            elif os.path.commonpath([target, docs]) != docs:
                in_site = os.path.join("_src", os.path.relpath(target, ROOT))
                files.append(_static(in_site, target, config))
                _rewrites[target] = in_site
    return files


def on_page_markdown(markdown, page, config, files):
    docs = os.path.abspath(config["docs_dir"])
    here = os.path.dirname(page.file.abs_src_path)

    def rewrite(m):
        target = os.path.normpath(os.path.join(here, m.group(2)))
        if target not in _rewrites:
            return m.group(0)
        new = os.path.relpath(os.path.join(docs, _rewrites[target]), here)
        return m.group(1) + new + (m.group(3) or "") + m.group(4)

    return LINK.sub(rewrite, markdown)
