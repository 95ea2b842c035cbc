#!/usr/bin/env python3
"""Runs a program under `globe-launch --trace DIR` and checks the merged DIR/trace.json: valid
JSON, every event's required fields, one named track per rank, begin / end pairs matched, and the
categories the program must show.

    check_trace.py LAUNCHER NPROC CATEGORIES PROGRAM [ARGS...]    CATEGORIES: comma-separated
"""
import collections
import json
import os
import subprocess
import sys
import tempfile


def main(launcher, nproc, categories, *program):
    with tempfile.TemporaryDirectory() as d:
        run = subprocess.run([launcher, "--nproc_per_node", nproc, "--trace", d, *program],
                             capture_output=True, text=True, timeout=240)
        assert run.returncode == 0, run.stdout + run.stderr
        assert "trace.json" in run.stderr + run.stdout, "the launcher names the merged file"
        with open(os.path.join(d, "trace.json")) as f:
            events = json.load(f)["traceEvents"]
    ranks = set(range(int(nproc)))
    named = {e["pid"] for e in events if e["ph"] == "M" and e["name"] == "process_name"}
    assert named == ranks, f"one named track per rank: {named}"
    seen, pairs = collections.Counter(), collections.Counter()
    for e in events:
        for key in ("name", "ph", "pid"):
            assert key in e, f"{key} missing: {e}"
        if e["ph"] == "M":
            continue
        for key in ("cat", "ts", "tid"):
            assert key in e, f"{key} missing: {e}"
        assert e["ph"] in ("X", "b", "e"), e
        if e["ph"] == "X":
            assert e["dur"] >= 0, e
        else:
            pairs[(e["pid"], e["cat"], e["id"])] += 1 if e["ph"] == "b" else -1
        seen[(e["pid"], e["cat"])] += 1
    assert all(n == 0 for n in pairs.values()), "unmatched begin / end pairs"
    for rank in ranks:
        for cat in categories.split(","):
            assert seen[(rank, cat)] > 0, f"rank {rank} shows no {cat} event: {dict(seen)}"
    print(f"trace of {len(events)} events, ranks {sorted(ranks)}: {dict(seen)}")


if __name__ == "__main__":
    main(*sys.argv[1:])
