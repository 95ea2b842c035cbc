"""Shared by the tests that prove scripts/sync_docs.py can fail (expect_stale*.py): run the script
on a fixture root, and report each expectation."""

import pathlib
import subprocess
import sys

SCRIPT = pathlib.Path(__file__).resolve().parent.parent.parent / "scripts" / "sync_docs.py"


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
