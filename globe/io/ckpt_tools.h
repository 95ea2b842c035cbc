// Offline checkpoint tools (what `globe-ckpt` runs): inspect, verify and convert checkpoints
// without MPI or a launcher. A path is a single safetensors file or a sharded checkpoint directory
// (one holding index.json).
#pragma once

#include <string>

namespace globe::io {

// Whether `path` is a sharded checkpoint directory (it holds index.json).
bool is_sharded_dir(const std::string& path);

// A table of the checkpoint's tensors: name, dtype, shape, bytes (and chunks, for a directory),
// then the metadata.
std::string describe_checkpoint(const std::string& path);

// Checks everything — the header, every offset and size, the data's readability; for a directory
// also the index, each chunk against its file, coverage of every tensor, and that the files hold
// nothing the index does not name. Throws a globe::Error describing the first problem; returns a
// one-line summary when all is well.
std::string verify_checkpoint(const std::string& path);

// A sharded checkpoint as one safetensors file (index order; the index metadata becomes the
// file's). Reads one tensor at a time.
void merge_sharded(const std::string& dir, const std::string& out);

enum class SplitLayout { split0, broadcast };

// One safetensors file as the sharded checkpoint `ranks` ranks would save: with split0 each tensor
// is split along dim 0 (balanced; 0-d tensors are replicated), with broadcast every tensor goes
// whole into rank 0's file. Replaces an existing checkpoint in `dir` atomically (as save_sharded).
void split_to_sharded(const std::string& file, const std::string& dir, int ranks,
                      SplitLayout layout);

}  // namespace globe::io
