#!/usr/bin/python3
"""An independent safetensors reader: parses the format by hand with numpy (no `safetensors`
package, no Globe code), so a test can prove that files Globe writes are readable elsewhere.

    /usr/bin/python3 scripts/golden/read_safetensors.py FILE [--expect EXPECTED.json]

Checks what the format requires: the 8-byte little-endian header length, a JSON object header,
known dtypes, shape x itemsize == byte range, and data regions that tile the data section with
no gap or overlap. Prints one line per tensor. With --expect, compares every tensor bit for bit
with EXPECTED.json ({"name": {"dtype": "F32", "shape": [...], "values": [row-major numbers]}},
"__metadata__": {...} optional) and fails on any difference, missing or extra key.
Exit status: 0 good, 1 a problem (printed).
"""
import json
import struct
import sys

import numpy as np

DTYPES = {"F32": "<f4", "F64": "<f8", "I64": "<i8", "I32": "<i4", "F16": "<f2", "U8": "u1", "I8": "i1",
          "BOOL": "?", "I16": "<i2", "U16": "<u2", "U32": "<u4", "U64": "<u8"}


def fail(msg):
    print("read_safetensors: " + msg)
    sys.exit(1)


def read(path):
    with open(path, "rb") as f:
        blob = f.read()
    if len(blob) < 8:
        fail(f"{path}: shorter than the 8-byte header length")
    (n,) = struct.unpack("<Q", blob[:8])
    if 8 + n > len(blob):
        fail(f"{path}: header length {n} beyond the file ({len(blob)} bytes)")
    header = json.loads(blob[8:8 + n].decode("utf-8"))
    if not isinstance(header, dict):
        fail(f"{path}: header is not a JSON object")
    data = blob[8 + n:]
    metadata = header.pop("__metadata__", {})
    tensors, regions = {}, []
    for name, info in header.items():
        dt = np.dtype(DTYPES[info["dtype"]])
        shape = [int(d) for d in info["shape"]]
        begin, end = (int(x) for x in info["data_offsets"])
        if not 0 <= begin <= end <= len(data):
            fail(f"{path}: tensor '{name}': offsets [{begin}, {end}) outside {len(data)} data bytes")
        if int(np.prod(shape, dtype=np.int64)) * dt.itemsize != end - begin:
            fail(f"{path}: tensor '{name}': shape {shape} x {dt.itemsize} != {end - begin} bytes")
        tensors[name] = np.frombuffer(data[begin:end], dtype=dt).reshape(shape)
        regions.append((begin, end, name))
    at = 0
    for begin, end, name in sorted(regions):
        if begin != at:
            fail(f"{path}: tensor '{name}' starts at {begin}, expected {at} (gap or overlap)")
        at = end
    if at != len(data):
        fail(f"{path}: {len(data) - at} data bytes after the last tensor")
    return tensors, metadata, info_of(header)


def info_of(header):
    return {name: (h["dtype"], h["shape"]) for name, h in header.items()}


def main():
    args = sys.argv[1:]
    if not args or args[0] in ("-h", "--help"):
        print(__doc__)
        return 0 if args else 1
    path = args[0]
    try:
        tensors, metadata, info = read(path)
    except (ValueError, KeyError, TypeError, UnicodeDecodeError) as e:
        fail(f"{path}: malformed header: {e!r}")
    for name, arr in tensors.items():
        print(f"{name}: {info[name][0]} {list(arr.shape)}")
    if len(args) == 3 and args[1] == "--expect":
        with open(args[2]) as f:
            expect = json.load(f)
        want_meta = expect.pop("__metadata__", None)
        if want_meta is not None and want_meta != metadata:
            fail(f"metadata {metadata} != expected {want_meta}")
        if set(expect) != set(tensors):
            fail(f"keys {sorted(tensors)} != expected {sorted(expect)}")
        for name, e in expect.items():
            got = tensors[name]
            want = np.array(e["values"], dtype=np.dtype(DTYPES[e["dtype"]])).reshape(e["shape"])
            if info[name][0] != e["dtype"] or list(got.shape) != list(e["shape"]):
                fail(f"tensor '{name}': {info[name][0]} {list(got.shape)} != expected {e['dtype']} {e['shape']}")
            if got.tobytes() != want.tobytes():
                fail(f"tensor '{name}': values differ from the expected ones")
        print(f"OK: {len(tensors)} tensors match {args[2]} bit for bit")
    elif len(args) != 1:
        fail("usage: read_safetensors.py FILE [--expect EXPECTED.json]")
    return 0


if __name__ == "__main__":
    sys.exit(main())
