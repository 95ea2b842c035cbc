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
//
// The calls are those of the recursion "walk the left tree_left(n) pieces into the slot, the rest
// into the next slot, then add", made without recursion (CUDA threads have a small stack, and a
// recursive device function has no static bound on it): piece l goes to the slot of its range's
// slot plus the right turns on its way down, and the ranges it is the last piece of (the last
// internal nodes of that way, each entered by a right turn) are added right after it, deepest
// first, each into the slot one below its right part's.
template <class Piece, class Add>
GLOBE_HOST_DEVICE void tree_walk(int64_t lo, int64_t hi, int slot, Piece& piece, Add& add) {
  for (int64_t l = lo; l < hi; ++l) {
    int64_t a = lo, b = hi;
    int s = slot, closing = 0;
    while (b - a > 1) {
      closing = l == b - 1 ? closing + 1 : 0;
      const int64_t mid = a + tree_left(b - a);
      if (l < mid) {
        b = mid;
      } else {
        a = mid;
        ++s;
      }
    }
    piece(l, s);
    for (int t = 1; t <= closing; ++t) add(s - t);
  }
}

}  // namespace globe::kernels
