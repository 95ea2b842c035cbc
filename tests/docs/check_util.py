"""Shared by the tests that prove scripts/sync_docs.py can fail (expect_stale*.py): run the script
on a fixture root, and report each expectation."""

import pathlib
import shutil
import subprocess
import sys

HERE = pathlib.Path(__file__).resolve().parent
SCRIPT = HERE.parent.parent / "scripts" / "sync_docs.py"


def copy_fixture(tmp, name):
    """Copies fixtures/NAME into the directory `tmp`: (its root, its docs/page.md, the page's text)."""
    root = pathlib.Path(tmp) / name
    shutil.copytree(HERE / "fixtures" / name, root)
    page = root / "docs" / "page.md"
    return root, page, page.read_text()


def run(root, *args):
    """Runs sync_docs.py on `root` with `args`: (exit code, stdout + stderr)."""
    r = subprocess.run([sys.executable, str(SCRIPT), "--root", str(root), *args], capture_output=True, text=True)
    return r.returncode, r.stdout + r.stderr


def expect(cond, what, output=""):
    """Prints "ok: what", or "FAIL: what" with the output and exits 1."""
    if not cond:
        print(f"FAIL: {what}\n--- output ---\n{output}")
        sys.exit(1)
    print(f"ok: {what}")
