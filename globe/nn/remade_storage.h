// Bytes released while the graph still refers to them and made again for the backward: a fully
// sharded module's gathered parameters (nn/parameter_use.cpp; PyTorch FSDP's
// reshard_after_forward). This is the autograd engine's RemadeInputs (autograd/remade_inputs.h),
// installed on the first release: before a backward node runs, its inputs' released bytes are
// made again; a full backward releases them again after the last node that reads them.
//
// A remake is started, then finished: its gather is in flight between the two and lands in a
// buffer that becomes the storage's without a copy (take_bytes). Storages come in groups (one
// module call's parameters); a full backward numbers the groups in the order it first reads them,
// and reaching one starts the next `ahead` groups' remakes (ZeRO-3's backward prefetch). A group
// started ahead whose nodes the pass skipped lands and is released at the pass's end, so no
// collective stays in flight after a backward.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

#include "globe/core/tensor.h"

namespace globe::nn::detail {

// Starts making the bytes of a storage again and returns what finishes that (or nothing, when
// done at once); whichever finishes gives the storage its bytes: allocated and filled, or taken
// from the buffer they landed in.
using Remake = std::function<std::function<void()>(Storage&)>;

// Releases `storage`'s bytes now, to be made again by `remake` when the backward reads them.
void release_until_backward(const std::shared_ptr<Storage>& storage, Remake remake, uint64_t group, int ahead);

// The storage a tensor's data on this rank lives in: its own, or a global tensor's shard's (null
// for none). Released storages are found by it.
const std::shared_ptr<Storage>& storage_on_this_rank(const Tensor& t);

// Makes `from`'s bytes (as many, on the same device) those of `into`, which has none, leaving
// `from` empty: a remake's buffer becomes the storage without a copy. `from` must have no other user.
void take_bytes(Storage& into, Storage& from);

}  // namespace globe::nn::detail
