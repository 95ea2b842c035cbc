#!/usr/bin/env python3
"""Checks that the library's layers only look down: a file in globe/<layer>/ includes headers of
its own layer or of the layers below it, never above. This list is the layer order, from the
bottom; docs/design.md §14 explains what each layer holds.

    base      errors (globe::Error, GLOBE_CHECK); trace spans and the timeline writer
    device    devices, memory per device, streams and events, the CUDA runtime seam
    core      Tensor, storage, dtypes, shapes, SBP values, the autograd node and grad mode
    kernels   loops over raw arrays: elementwise, matmul (BLAS), nn kernels, random fills; the
              per-device kernel tables
    ops       the op interface, dispatch, every op with its backward and SBP signatures
    autograd  the backward engine (accumulates with ops)
    dist      communicators: one interface, MPI and single-rank backends, the runtime
    global    placements, global tensors, boxing, global dispatch, gradient buckets
    nn        modules, layers, tensor-parallel layers
    optim     optimizers, clipping, schedules
    pipeline  pipeline stages and schedules
    io        safetensors, checkpoints, resharding

globe/globe.h (the umbrella header) may include everything. tools/ sits above all of them.

One more rule inside kernels: a device's table (kernels/cpu/, kernels/cuda/, kernels/sim/) is included only by
the dispatcher, kernels/device_kernels.cpp, and by the files of that same table; everything else
reaches kernels through kernels_on(device), so no op branches on the device.

And one rule for device kinds: a kind's name and its libraries' names (for "cuda": CUDA, NCCL,
cuBLAS) appear in code only inside its own folders (globe/<layer>/<kind>/), so adding a kind edits
no file outside its folders but the CMake list (docs/design.md §16). Comments may name them, as
examples; base/host_device.h may test the compilers' macro for host-and-device functions.

    python3 scripts/check_layers.py            exit 1 listing every wrong-way include
    --root DIR                                  check DIR/globe instead of the repository's

Only the standard library is used.
"""

import argparse
import pathlib
import re
import sys

LAYERS = ["base", "device", "core", "kernels", "ops", "autograd", "dist", "global", "nn", "optim", "pipeline", "io"]
INCLUDE_RE = re.compile(r'^\s*#\s*include\s+"globe/(?P<layer>[a-z_]+)/(?P<rest>[^"]*)"')
TABLES = ("cpu", "cuda", "sim")  # kernels/<table>/
DISPATCHER = pathlib.PurePosixPath("kernels/device_kernels.cpp")


def wrong_way_includes(root):
    """(file, line number, its layer, the included layer) for every include that looks up."""
    found = []
    globe = root / "globe"
    for path in sorted(globe.rglob("*")):
        if path.suffix not in (".h", ".cpp", ".cu", ".cuh") or path.parent == globe:
            continue
        layer = path.relative_to(globe).parts[0]
        if layer not in LAYERS:
            found.append((path.relative_to(root), 0, layer, "(a folder missing from LAYERS)"))
            continue
        inside = pathlib.PurePosixPath(path.relative_to(globe).as_posix())
        own_table = inside.parts[1] if inside.parts[0] == "kernels" and len(inside.parts) > 2 else None
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            m = INCLUDE_RE.match(line)
            if not m:
                continue
            if m.group("layer") not in LAYERS or LAYERS.index(m.group("layer")) > LAYERS.index(layer):
                found.append((path.relative_to(root), number, layer, m.group("layer")))
            table = m.group("rest").split("/")[0] if m.group("layer") == "kernels" else None
            if table in TABLES and "/" in m.group("rest") and inside != DISPATCHER and own_table != table:
                found.append((path.relative_to(root), number, layer,
                              f"kernels/{table} (a device's kernel table: only {DISPATCHER} may include it)"))
    return found


# Per device kind with a vendor toolkit: the words that name it or its libraries.
KIND_WORDS = {"cuda": ("cuda", "nccl", "cublas")}
KIND_SEAMS = {pathlib.PurePosixPath("base/host_device.h")}  # __CUDACC__ marks host-and-device functions


def code_of(text):
    """The text with comments blanked (line numbers kept); string literals stay: they are code."""
    out, i, n = [], 0, len(text)
    while i < n:
        if text.startswith("//", i):
            while i < n and text[i] != "\n":
                i += 1
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            out.append("\n" * text.count("\n", i, end))
            i = end
        elif text[i] == '"':
            end = i + 1
            while end < n and text[end] != '"':
                end += 2 if text[end] == "\\" else 1
            out.append(text[i:end + 1])
            i = end + 1
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def kind_names_outside(root):
    """(file, line number, kind, the line) where code outside a kind's folders names the kind."""
    found = []
    globe = root / "globe"
    for path in sorted(globe.rglob("*")):
        if path.suffix not in (".h", ".cpp", ".cu", ".cuh", ".inc"):
            continue
        inside = pathlib.PurePosixPath(path.relative_to(globe).as_posix())
        if inside in KIND_SEAMS:
            continue
        for kind, words in KIND_WORDS.items():
            if len(inside.parts) > 2 and inside.parts[1] == kind:
                continue
            rx = re.compile("|".join(words), re.IGNORECASE)
            for number, line in enumerate(code_of(path.read_text(encoding="utf-8")).splitlines(), 1):
                if rx.search(line):
                    found.append((path.relative_to(root), number, kind, line.strip()))
    return found


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=pathlib.Path, default=pathlib.Path(__file__).resolve().parent.parent)
    args = parser.parse_args()
    found = wrong_way_includes(args.root)
    for path, number, layer, included in found:
        if included.startswith("kernels/"):
            print(f"{path}:{number}: the {layer} layer includes {included}")
        else:
            print(f"{path}:{number}: the {layer} layer includes {included}, which is above it "
                  f"(order: {' -> '.join(LAYERS)})")
    named = kind_names_outside(args.root)
    for path, number, kind, line in named:
        print(f"{path}:{number}: names the device kind {kind} outside its folders: {line}")
    if found:
        print(f"{len(found)} wrong-way include(s): move what the lower layer needs down, or the file up")
    if named:
        print(f"{len(named)} line(s) name a device kind outside its folders: move them into globe/<layer>/<kind>/")
    if found or named:
        return 1
    print(f"layers in order: {' -> '.join(LAYERS)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
