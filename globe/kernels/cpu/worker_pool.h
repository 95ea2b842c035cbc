// Threads kept for the kernels that split their own work (the fixed-order product,
// fixed_order_gemm.cpp): starting a std::thread per call cost a deterministic-mode GPT step on two
// threads more than the product's own work saved (bench/RESULTS.md, "Deterministic mode").
#pragma once

#include <functional>

namespace globe::kernels {

// Calls work() on `threads` threads at once, this one among them, and returns when all have
// returned; work() takes its items from a shared counter, so the split is its own business.
// The helpers are started on first use and kept, parked (briefly spinning, then asleep) between
// calls. A call while another runs (from another thread) runs work() on this thread alone.
void run_on_threads(int threads, const std::function<void()>& work);

}  // namespace globe::kernels
