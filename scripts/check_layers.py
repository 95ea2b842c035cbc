#!/usr/bin/env python3
"""Checks that the library's layers only look down: a file in globe/<layer>/ includes headers of
its own layer or of the layers below it, never above. This list is the layer order, from the
bottom; docs/design.md §14 explains what each layer holds.

    core      Tensor, storage, dtypes, shapes, errors, SBP values, the autograd node and grad mode
    kernels   loops over raw arrays: elementwise, matmul (BLAS), nn kernels, random fills
    ops       the op interface, dispatch, every op with its backward and SBP signatures
    autograd  the backward engine (accumulates with ops)
    dist      communicators: one interface, MPI and single-rank backends, the runtime
    global    placements, global tensors, boxing, global dispatch, gradient buckets
    nn        modules, layers, tensor-parallel layers
    optim     optimizers, clipping, schedules
    pipeline  pipeline stages and schedules
    io        safetensors, checkpoints, resharding

globe/globe.h (the umbrella header) may include everything. tools/ sits above all of them.

    python3 scripts/check_layers.py            exit 1 listing every wrong-way include
    --root DIR                                  check DIR/globe instead of the repository's

Only the standard library is used.
"""

import argparse
import pathlib
import re
import sys

LAYERS = ["core", "kernels", "ops", "autograd", "dist", "global", "nn", "optim", "pipeline", "io"]
INCLUDE_RE = re.compile(r'^\s*#\s*include\s+"globe/(?P<layer>[a-z_]+)/')


def wrong_way_includes(root):
    """(file, line number, its layer, the included layer) for every include that looks up."""
    found = []
    globe = root / "globe"
    for path in sorted(globe.rglob("*")):
        if path.suffix not in (".h", ".cpp") or path.parent == globe:
            continue
        layer = path.relative_to(globe).parts[0]
        if layer not in LAYERS:
            found.append((path.relative_to(root), 0, layer, "(a folder missing from LAYERS)"))
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            m = INCLUDE_RE.match(line)
            if m and (m.group("layer") not in LAYERS or LAYERS.index(m.group("layer")) > LAYERS.index(layer)):
                found.append((path.relative_to(root), number, layer, m.group("layer")))
    return found


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=pathlib.Path, default=pathlib.Path(__file__).resolve().parent.parent)
    args = parser.parse_args()
    found = wrong_way_includes(args.root)
    for path, number, layer, included in found:
        print(f"{path}:{number}: the {layer} layer includes {included}, which is above it "
              f"(order: {' -> '.join(LAYERS)})")
    if found:
        print(f"{len(found)} wrong-way include(s): move what the lower layer needs down, or the file up")
        return 1
    print(f"layers in order: {' -> '.join(LAYERS)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
