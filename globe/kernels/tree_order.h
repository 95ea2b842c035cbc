// Deterministic mode's one order of addition (core/deterministic.h), for the host and for CUDA
// device code alike: n consecutive pieces of a sum are added in a fixed binary tree over piece
// index. A range of n > 1 pieces adds the sum of its first tree_left(n) pieces and the sum of the
// rest, in that order: its halves where n is even, else the largest power of two below n and the
// rest. So a range cut into 2^j equal blocks, 2^j dividing its length, is cut into whole
// subtrees: whoever holds a block (a rank, a micro-batch, a leaf loop) computes the same value,
// and the blocks' values added in the same tree give the range's.
#pragma once

#include <cstdint>

#include "globe/base/host_device.h"

namespace globe::kernels {

GLOBE_HOST_DEVICE constexpr int64_t tree_left(int64_t n) {
  if (n % 2 == 0) return n / 2;
  int64_t half = 1;
  while (2 * half < n) half *= 2;
  return half;
}

// The slots tree_walk uses for n pieces: a right subtree is at most half its range, so one more
// slot per halving.
GLOBE_HOST_DEVICE constexpr int tree_slots(int64_t n) {
  int s = 1;
  for (; n > 1; n /= 2) ++s;
  return s;
}

// Walks the tree over pieces [lo, hi) into slot `slot` (slots slot .. slot + tree_slots - 1 are
// scratch): piece(l, s) writes piece l's value into slot s; add(s) sets slot s to slot s plus slot
// s + 1. Pieces are made in index order, so a caller may compute each when it is asked for.
template <class Piece, class Add>
GLOBE_HOST_DEVICE void tree_walk(int64_t lo, int64_t hi, int slot, Piece& piece, Add& add) {
  if (hi - lo == 1) {
    piece(lo, slot);
    return;
  }
  const int64_t mid = lo + tree_left(hi - lo);
  tree_walk(lo, mid, slot, piece, add);
  tree_walk(mid, hi, slot + 1, piece, add);
  add(slot);
}

}  // namespace globe::kernels
