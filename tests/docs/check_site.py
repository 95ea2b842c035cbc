#!/usr/bin/env python3
"""The documentation site, built and opened in a browser.

Builds the site with `mkdocs build --strict` (mkdocs.yml: every page in the navigation, no broken
link, the hooks' copies of sources outside docs/), serves it on 127.0.0.1, and opens every page of
the navigation in headless Chromium (Debian's `chromium`), reading the DOM after the page's scripts
ran. Each page must have its title, the same number of code blocks as its Markdown source has
fences or more (the included listings and outputs among them; indented blocks count too) with the first listed line present, a working
navigation (every link in it, and every relative link of the page, leads to a file of the site),
the language switch, and the search box; every picture of its Markdown source is an image of the
page whose file is in the site and is an SVG (or PNG) that parses; Chinese pages must be in Chinese. Prints one line per
page; exits 1 on the first failing expectation.

    tests/docs/check_site.py [--site-dir DIR]      (default: a temporary directory)
"""

import argparse
import functools
import html.parser
import http.server
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import urllib.parse
import xml.etree.ElementTree

ROOT = pathlib.Path(__file__).resolve().parents[2]
FENCE = re.compile(r"^(```|~~~)")


def fail(what, detail=""):
    print(f"FAIL: {what}" + (f"\n{detail}" if detail else ""))
    sys.exit(1)


def nav_pages(config_text):
    """(title, markdown path) of every page in mkdocs.yml's nav, in order."""
    pages = []
    for line in config_text.splitlines():
        m = re.match(r"^\s*-\s*(.+?):\s*(\S+\.md)\s*$", line)
        if m:
            pages.append((m.group(1), m.group(2)))
    return pages


def fences(markdown):
    """The page's fenced code blocks, each as its list of lines."""
    blocks, current, fence = [], None, None
    for line in markdown.splitlines():
        m = FENCE.match(line.strip())
        if current is None and m:
            current, fence = [], m.group(1)
        elif current is not None and line.strip().startswith(fence) and set(line.strip()) == {fence[0]}:
            blocks.append(current)
            current = None
        elif current is not None:
            current.append(line)
    return blocks


class Dom(html.parser.HTMLParser):
    """What the checks read from a rendered page."""

    def __init__(self):
        super().__init__()
        self.title, self.in_title = "", False
        self.pre = 0
        self.text = []
        self.nav_links, self.links, self.images = [], [], []
        self.stack = []  # classes of the open elements
        self.has_search = False
        self.alternates = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        cls = a.get("class", "") or ""
        if tag not in ("meta", "link", "input", "img", "br", "hr"):
            self.stack.append(cls)
        if tag == "title":
            self.in_title = True
        if tag == "pre":
            self.pre += 1
        if tag == "img" and a.get("src"):
            self.images.append(a["src"])
        if tag == "input" and "md-search__input" in cls:
            self.has_search = True
        if tag == "a" and a.get("href"):
            href = a["href"]
            if "md-select__link" in cls:
                self.alternates.append(href)
            elif any("md-nav" in c for c in self.stack):
                self.nav_links.append(href)
            else:
                self.links.append(href)

    def handle_endtag(self, tag):
        if tag == "title":
            self.in_title = False
        if tag not in ("meta", "link", "input", "img", "br", "hr") and self.stack:
            self.stack.pop()

    def handle_data(self, data):
        if self.in_title:
            self.title += data
        self.text.append(data)


def target_of(site, page_html, href):
    """The site's file a relative link of the page at `page_html` names (None: not a relative link)."""
    parts = urllib.parse.urlsplit(href)
    if parts.scheme or parts.netloc or href.startswith("#") or not parts.path:
        return None
    path = urllib.parse.unquote(parts.path)
    target = (site / path.lstrip("/")) if path.startswith("/") else (site / page_html).parent / path
    target = pathlib.Path(os.path.normpath(target))
    return target / "index.html" if target.is_dir() else target


def resolves(site, page_html, href):
    """Whether a relative link of the page at `page_html` leads to a file of the site."""
    target = target_of(site, page_html, href)
    return target is None or target.is_file()


def picture_fails(site, page_html, src):
    """Why an image of the page does not show ("" when it does): a file of the site that parses."""
    target = target_of(site, page_html, src)
    if target is None or not target.is_file():
        return f"{src}: no such file in the site"
    data = target.read_bytes()
    if target.suffix == ".png":
        return "" if data.startswith(b"\x89PNG") else f"{src}: not a PNG"
    try:
        root = xml.etree.ElementTree.fromstring(data)
    except xml.etree.ElementTree.ParseError as e:
        return f"{src}: not well-formed XML ({e})"
    return "" if root.tag.endswith("svg") and len(root) > 1 else f"{src}: not a drawing (root {root.tag}, {len(root)} elements)"


def serve(site):
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    handler = functools.partial(Quiet, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def render(url, profile):
    r = subprocess.run(["chromium", "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
                        f"--user-data-dir={profile}", "--virtual-time-budget=3000", "--dump-dom", url],
                       capture_output=True, text=True, timeout=120)
    if r.returncode != 0 or "<html" not in r.stdout:
        fail(f"chromium could not render {url} (exit {r.returncode})", r.stderr[-2000:])
    return r.stdout


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--site-dir", help="where to build the site (default: a temporary directory)")
    args = parser.parse_args()
    for tool in ("mkdocs", "chromium"):
        if not shutil.which(tool):
            fail(f"{tool} not found: scripts/setup.sh installs it (Debian's mkdocs, mkdocs-material, chromium)")
    with tempfile.TemporaryDirectory(prefix="globe-site-") as tmp:
        site = pathlib.Path(args.site_dir).resolve() if args.site_dir else pathlib.Path(tmp) / "site"
        r = subprocess.run(["mkdocs", "build", "--strict", "--config-file", str(ROOT / "mkdocs.yml"),
                            "--site-dir", str(site)], capture_output=True, text=True, cwd=ROOT)
        if r.returncode != 0:
            fail("mkdocs build --strict", r.stdout + r.stderr)
        print("ok: mkdocs build --strict")
        index = site / "search" / "search_index.json"
        if not index.is_file() or index.stat().st_size < 10000:
            fail("the search index was built", str(index))
        server = serve(site)
        base = f"http://127.0.0.1:{server.server_address[1]}/"
        pages = nav_pages((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
        if len(pages) < 10:
            fail("mkdocs.yml's nav lists the pages", str(pages))
        profile = pathlib.Path(tmp) / "chromium"
        for title, md in pages:
            page_html = md[:-3].replace("README", "index") + ".html"
            dom_text = render(base + page_html, profile)
            dom = Dom()
            dom.feed(dom_text)
            source = (ROOT / "docs" / md).read_text(encoding="utf-8")
            code = fences(source)
            text = "".join(dom.text)
            # The home page's title is the site's name alone.
            if (title not in dom.title and md != "README.md") or "Globe" not in dom.title:
                fail(f"{md}: the title names the page", f"title {dom.title!r}, expected {title!r}")
            if dom.pre < len(code):  # indented code blocks render as <pre> too
                fail(f"{md}: every code block renders", f"{dom.pre} <pre> in the page, {len(code)} fences in {md}")
            first = next((line.strip() for block in code for line in block if len(line.strip()) > 12), None)
            if first and first not in text.replace("\u00a0", " "):
                fail(f"{md}: the code blocks hold the listed code", f"line not found: {first!r}")
            if len(dom.nav_links) < len(pages):
                fail(f"{md}: the navigation lists every page", f"{len(dom.nav_links)} links")
            broken = [h for h in dom.nav_links + dom.links if not resolves(site, page_html, h)]
            if broken:
                fail(f"{md}: every link leads to a page or file of the site", "\n".join(broken[:10]))
            pictures = len(re.findall(r"!\[[^\]]*\]\(", "\n".join(line for line in source.splitlines()
                                                                 if not line.startswith("    "))))
            if len(dom.images) < pictures:
                fail(f"{md}: every picture shows", f"{len(dom.images)} images in the page, {pictures} in {md}")
            bad = [why for why in (picture_fails(site, page_html, src) for src in dom.images) if why]
            if bad:
                fail(f"{md}: every image is a picture file of the site", "\n".join(bad[:10]))
            if not any("zh/" in a for a in dom.alternates) or len(dom.alternates) < 2:
                fail(f"{md}: the language switch offers English and Chinese", str(dom.alternates))
            if not dom.has_search:
                fail(f"{md}: the search box is there")
            if md.startswith("zh/") and len(re.findall(r"[\u4e00-\u9fff]", text)) < 300:
                fail(f"{md}: a Chinese page is in Chinese")
            print(f"ok: {md}: title {dom.title!r}, {dom.pre} code blocks, {len(dom.nav_links)} navigation links, "
                  f"{len(dom.links)} other links, {len(dom.images)} pictures")
        server.shutdown()
    print(f"check_site: all {len(pages)} pages passed")


if __name__ == "__main__":
    main()
