// The precision of float32 products, as torch.set_float32_matmul_precision: "highest" (the
// default: every product in full float32), "high" or "medium" (a device may use a faster mode
// with fewer mantissa bits: TF32 tensor cores on CUDA, 10 bits instead of 23 in each operand,
// float32 sums). Only CUDA has such a mode here: the CPU's products are full float32 whatever the
// setting (its BLAS has none), and so are deterministic mode's, whose every element is an exactly
// specified sum (kernels/fixed_order_matmul.h). Process-wide, starting from GLOBE_MATMUL_PRECISION;
// a product's bits depend on it, so every rank should use the same.
#pragma once

#include <string>
#include <string_view>

namespace globe {

// Throws "[set_float32_matmul_precision] ..." for anything but "highest", "high" or "medium".
void set_float32_matmul_precision(std::string_view precision);
std::string float32_matmul_precision();

namespace kernels {
// Whether a float32 product may use TF32 (the setting is "high" or "medium").
bool float32_matmul_allows_tf32();
}  // namespace kernels

}  // namespace globe
