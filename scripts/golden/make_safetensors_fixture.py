#!/usr/bin/python3
"""Writes the committed safetensors test data of tests/io/ with PyTorch tensors, by hand (there is
no `safetensors` package here, and the point is a writer that shares no code with Globe).

    /usr/bin/python3 scripts/golden/make_safetensors_fixture.py

Writes
  tests/io/data/torch_fixture.safetensors  tensors made by torch 1.13: float32, float64, int64,
      a 0-d tensor, an empty tensor, a transposed (made contiguous) tensor. The header lists keys
      sorted while the data is stored in another order, and is not padded: a reader must follow the
      offsets, not assume an order or an alignment (the data section starts off an 8-byte boundary).
  tests/io/data/torch_fixture.json         the same values as JSON (the C++ test compares them);
      floats are Python reprs of the exact values, so parsing them as double is exact.
  tests/io/corpus/*.safetensors            malformed files: each must make Globe's parser throw
      globe::Error (tests/io/test_corpus.cpp); also seeds for the fuzzer (tests/io/fuzz/).
"""
import json
import os
import struct

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
DATA = os.path.join(ROOT, "tests", "io", "data")
CORPUS = os.path.join(ROOT, "tests", "io", "corpus")

NAMES = {torch.float32: ("F32", "<f4"), torch.float64: ("F64", "<f8"), torch.int64: ("I64", "<i8")}


def fixture_tensors():
    torch.manual_seed(1234)
    return {
        "layer.weight": torch.randn(4, 3),
        "layer.bias": torch.randn(3, dtype=torch.float64),
        "indices": torch.arange(-3, 5, dtype=torch.int64).reshape(2, 4) * (1 << 33),
        "scalar": torch.tensor(3.25),
        "empty": torch.zeros(0, 5),
        "transposed": torch.randn(3, 4).t().contiguous(),
    }


def write_fixture():
    tensors = fixture_tensors()
    # Data in reverse insertion order; header keys sorted: neither order matches the other.
    blobs, offset, header = [], 0, {}
    for name in reversed(list(tensors)):
        t = tensors[name]
        dtype, np_dtype = NAMES[t.dtype]
        raw = t.numpy().astype(np_dtype).tobytes()
        header[name] = {"dtype": dtype, "shape": list(t.shape), "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    header["__metadata__"] = {"format": "pt", "writer": "make_safetensors_fixture.py"}
    text = json.dumps(dict(sorted(header.items())), separators=(",", ":")).encode()
    if len(text) % 8 == 0:
        text += b" "  # keep the data section unaligned: readers must not assume padding
    with open(os.path.join(DATA, "torch_fixture.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))
    expect = {name: {"dtype": NAMES[t.dtype][0], "shape": list(t.shape), "values": t.flatten().tolist()}
              for name, t in tensors.items()}
    expect["__metadata__"] = header["__metadata__"]
    with open(os.path.join(DATA, "torch_fixture.json"), "w") as f:
        json.dump(expect, f, indent=1)
        f.write("\n")


def image(header, data=b"", length=None):
    text = header.encode() if isinstance(header, str) else header
    return struct.pack("<Q", len(text) if length is None else length) + text + data


def entry(name, dtype, shape, begin, end):
    return f'"{name}":{{"dtype":"{dtype}","shape":{json.dumps(shape)},"data_offsets":[{begin},{end}]}}'


def write_corpus():
    d8 = bytes(8)
    files = {
        "empty_file": b"",
        "short_prefix": b"\x05\x00\x00",
        "length_beyond_file": image("{}", length=1 << 20),
        "length_huge": image("{}", length=(1 << 64) - 1),
        "header_not_json": image("not json at all"),
        "header_truncated_json": image('{"a":{"dtype":"F32"'),
        "header_array": image("[1,2,3]"),
        "header_string": image('"hello"'),
        "header_invalid_utf8": image(b'{"\xff\xfe":{}}'),
        "entry_not_object": image('{"a":1}'),
        "dtype_unknown": image("{" + entry("a", "F33", [2], 0, 8) + "}", d8),
        "dtype_not_string": image('{"a":{"dtype":4,"shape":[2],"data_offsets":[0,8]}}', d8),
        "shape_negative": image('{"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}}', d8),
        "shape_float": image('{"a":{"dtype":"F32","shape":[2.5],"data_offsets":[0,8]}}', d8),
        "shape_not_array": image('{"a":{"dtype":"F32","shape":2,"data_offsets":[0,8]}}', d8),
        "shape_overflow": image("{" + entry("a", "F64", [1 << 40, 1 << 40], 0, 8) + "}", d8),
        "shape_bytes_mismatch": image("{" + entry("a", "F64", [2], 0, 8) + "}", d8),
        "offsets_out_of_range": image("{" + entry("a", "F32", [4], 0, 16) + "}", d8),
        "offsets_reversed": image("{" + entry("a", "F32", [0], 8, 0) + "}", d8),
        "offsets_three": image('{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8,8]}}', d8),
        "offsets_huge": image("{" + entry("a", "F32", [0], 18446744073709551615, 18446744073709551615) + "}", d8),
        "offsets_overlap": image("{" + entry("a", "F32", [2], 0, 8) + "," + entry("b", "F32", [1], 4, 8) + "}", d8),
        "offsets_gap": image("{" + entry("a", "F32", [1], 4, 8) + "}", d8),
        "trailing_data": image("{" + entry("a", "F32", [1], 0, 4) + "}", d8),
        "missing_offsets": image('{"a":{"dtype":"F32","shape":[2]}}', d8),
        "duplicate_key": image("{" + entry("a", "F32", [2], 0, 8) + "," + entry("a", "F32", [2], 0, 8) + "}", d8),
        "metadata_not_strings": image('{"__metadata__":{"k":[1]}}'),
        "metadata_not_object": image('{"__metadata__":"x"}'),
        "deep_nesting": image("[" * 10000 + "]" * 10000),
    }
    for name, blob in files.items():
        with open(os.path.join(CORPUS, name + ".safetensors"), "wb") as f:
            f.write(blob)

    # Sharded-checkpoint indexes (index.json) that must be rejected.
    def index(tensors, **top):
        doc = {"format": "globe-sharded-checkpoint", "version": 1, "world_size": 2, "tensors": tensors}
        doc.update(top)
        return json.dumps(doc)

    def chunk(offsets, shape, file="rank-00000-0.safetensors", key="w"):
        return {"file": file, "key": key, "offsets": offsets, "shape": shape}

    def tensor(chunks, shape=(4, 2)):
        return {"w": {"dtype": "F32", "shape": list(shape), "chunks": chunks}}

    indexes = {
        "index_not_json": "{\"format\": ",
        "index_wrong_format": index({}, format="other"),
        "index_future_version": index({}, version=2),
        "index_zero_world": index({}, world_size=0),
        "index_no_tensors": json.dumps({"format": "globe-sharded-checkpoint", "version": 1, "world_size": 1}),
        "index_bad_dtype": index({"w": {"dtype": "Q8", "shape": [1], "chunks": []}}),
        "index_hole": index(tensor([chunk([0, 0], [2, 2])])),
        "index_overlap": index(tensor([chunk([0, 0], [3, 2]), chunk([2, 0], [2, 2])])),
        "index_outside": index(tensor([chunk([0, 0], [4, 2]), chunk([4, 0], [1, 2])])),
        "index_rank_mismatch": index(tensor([chunk([0], [4])])),
        "index_negative_offset": index(tensor([chunk([-1, 0], [4, 2])])),
        "index_parent_file": index(tensor([chunk([0, 0], [4, 2], file="../w.safetensors")])),
        "index_names_itself": index(tensor([chunk([0, 0], [4, 2], file="index.json")])),
        "index_duplicate_tensor": '{"format":"globe-sharded-checkpoint","version":1,"world_size":1,'
                                  '"tensors":{"w":{"dtype":"F32","shape":[],"chunks":[]},'
                                  '"w":{"dtype":"F32","shape":[],"chunks":[]}}}',
        "index_huge_shape": index(tensor([], shape=(1 << 62, 1 << 62))),
    }
    for name, text in indexes.items():
        with open(os.path.join(CORPUS, name + ".json"), "w") as f:
            f.write(text)


def main():
    os.makedirs(DATA, exist_ok=True)
    os.makedirs(CORPUS, exist_ok=True)
    write_fixture()
    write_corpus()
    print(f"wrote {DATA}/torch_fixture.{{safetensors,json}} and {CORPUS}/*.safetensors")


if __name__ == "__main__":
    main()
