// Deterministic mode (docs/design.md §10, "Deterministic mode"): every sum whose terms a layout
// may spread over ranks is taken in one order fixed by the global shapes alone, so that a program
// prints the same bits on any number of ranks and any layout the mode covers.
//
// The order: a reduced dim of global length L is cut into leaves(L) equal leaves (leaves_of below);
// a leaf's partial is the kernel's ordinary sum over its L / leaves(L) consecutive indices; the
// leaves' partials are added in a fixed binary tree over leaf index (kernels/tree_order.h). A
// rank whose block of the dim is a whole subtree computes that subtree; the boxing that sums
// partial values adds the ranks' subtrees in the same tree, and gradients accumulated over
// micro-batches add in it too (autograd/tree_accumulator.h).
//
// A leaf's partial must also be the same code whichever rank computes it: a matmul's leaves run
// on a kernel whose every element is an exactly specified sum (kernels/fixed_order_matmul.h), as
// BLAS's value for a row can depend on the call's row count and thread split.
#pragma once

#include <cstdint>

namespace globe {

// On or off for the whole process (every rank must agree). Starts from GLOBE_DETERMINISTIC
// (1 = on; unset or 0 = off).
bool deterministic();
void set_deterministic(bool on);

// The leaf length of a reduced dim whose length is a multiple of it: fixed, so that a
// micro-batch's leaves along a batch-derived dim (the rows a weight's gradient sums) are the
// batch's own, and its sum a subtree of the batch's. Each leaf's sum is stored and added to the
// others: with leaves of 16, a 1024 x 128 x 384 product took 1.4x BLAS's time, with 32 1.2x.
constexpr int64_t kLeafLength = 32;
// A dim whose length is not a multiple of kLeafLength is cut into at most this many leaves.
constexpr int64_t kMaxOddLeaves = 8;

// Leaves of a reduced dim of global length `length`: length / kLeafLength where kLeafLength divides
// it; else the largest power of two dividing it, at most kMaxOddLeaves, halved while a leaf would
// be shorter than kLeafLength (1 for a short dim).
int64_t leaves_of(int64_t length);

// Whether a dim of global length `length` split into `parts` equal blocks gives each block a
// whole subtree of its leaves (kernels/tree_order.h): parts is 1, or a power of two dividing
// leaves_of(length).
bool splits_into_leaves(int64_t length, int64_t parts);

// The length of one leaf of a reduced dim of global length `length` cut into `parts` equal blocks
// (the ranks that split it; 1 when unsplit). Throws "[op] deterministic mode: ..." naming the
// dim, its length, its leaves and the parts when a block would not be a whole subtree (uneven
// blocks, or a part count that is not a power of two dividing the leaf count). Every rank decides
// alike: the answer depends on the global length and the part count only.
int64_t leaf_length(const char* op, const char* dim, int64_t length, int64_t parts);

// The mode's rule for micro-batches (docs/design.md §10): `count` micro-batches cut from a batch
// of `rows` rows along dim 0 give the whole batch's gradients to the bit when the count is a power
// of two and each micro-batch holds the same multiple of kLeafLength rows. Every sum over the
// batch (a bias's gradient sums the rows, a weight's the rows times the tokens) is then cut into
// leaves of 32 that the micro-batches' own sums hold whole, and the micro-batches' subtrees add
// in the batch's tree. Any other cut gives other bits than the batch, so where Globe cuts the
// micro-batches (the pipeline, nn.Graph's gradient accumulation) it throws "[op] deterministic
// mode: ..." naming the batch, the cut and the rule, rather than leave the guarantee silently.
// Nothing when the mode is off or count is 1.
void check_microbatches(const char* op, int64_t rows, int64_t count);

namespace detail {
// Test hook: with `on`, this process adds its leaves in a rotated order (the negative control of
// tests/global/test_deterministic.cpp: one rank's changed order must change the bits).
void rotate_leaves_for_test(bool on);
bool leaves_rotated_for_test();
// The leaf a sum computes at position l of its n: l, or l + 1 (cyclically) under the hook above.
int64_t leaf_in_test_order(int64_t l, int64_t n);
}  // namespace detail

}  // namespace globe
