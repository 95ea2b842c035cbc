// The consistency harness (docs/design.md §10): every op × every valid input layout × (1, 2, 4 ranks) ×
// even and uneven shapes gives the single-process result, forward and gradients. One table drives
// it: each row names an op, its input shapes and how to call it.
#include <cmath>
#include <functional>
#include <limits>

#include "global_test_util.h"
#include "globe/device/backend.h"  // device_type_names

namespace globe {
namespace {

using Fn = std::function<Tensor(const std::vector<Tensor>&)>;

// An input: a float64 tensor from randn, or int64 indices in [0, bound).
struct Input {
  Shape shape;
  int64_t index_bound = 0;  // > 0: int64 indices
};

struct OpCase {
  std::string name;
  std::vector<Input> inputs;
  Fn fn;
};

Input F(Shape s) { return {std::move(s), 0}; }
Input I(Shape s, int64_t bound) { return {std::move(s), bound}; }

std::vector<OpCase> cases() {
  using V = const std::vector<Tensor>&;
  auto positive = [](const Tensor& x) { return add(mul(x, x), 0.5); };
  return {
      {"add", {F({5, 3}), F({5, 3})}, [](V x) { return add(x[0], x[1]); }},
      {"add_bcast_row", {F({5, 3}), F({3})}, [](V x) { return add(x[0], x[1]); }},
      {"add_outer", {F({4, 1}), F({1, 3})}, [](V x) { return add(x[0], x[1]); }},
      {"sub", {F({3, 5}), F({3, 5})}, [](V x) { return sub(x[0], x[1]); }},
      {"mul", {F({5, 3}), F({5, 3})}, [](V x) { return mul(x[0], x[1]); }},
      {"mul_bcast", {F({2, 5, 3}), F({5, 1})}, [](V x) { return mul(x[0], x[1]); }},
      {"div", {F({5, 3}), F({5, 3})}, [=](V x) { return div(x[0], positive(x[1])); }},
      {"scalar_ops", {F({7})}, [](V x) { return (x[0] * 3.0 + 1.5) / 2.0 - 1.0; }},
      {"pow", {F({5, 3})}, [](V x) { return pow(x[0], 3.0); }},
      {"neg", {F({5, 3})}, [](V x) { return neg(x[0]); }},
      {"exp", {F({5, 3})}, [](V x) { return exp(x[0]); }},
      {"log", {F({5, 3})}, [=](V x) { return log(positive(x[0])); }},
      {"sqrt", {F({5, 3})}, [=](V x) { return sqrt(positive(x[0])); }},
      {"relu", {F({5, 3})}, [](V x) { return relu(x[0]); }},
      {"gelu", {F({5, 3})}, [](V x) { return gelu(x[0]); }},
      {"gelu_tanh", {F({5, 3})}, [](V x) { return gelu_tanh(x[0]); }},
      {"tanh", {F({5, 3})}, [](V x) { return tanh(x[0]); }},
      {"sigmoid", {F({5, 3})}, [](V x) { return sigmoid(x[0]); }},
      {"silu", {F({5, 3})}, [](V x) { return silu(x[0]); }},
      {"swiglu", {F({5, 3}), F({5, 3})}, [](V x) { return swiglu(x[0], x[1]); }},
      {"swiglu_bcast", {F({2, 5, 3}), F({5, 1})}, [](V x) { return swiglu(x[0], x[1]); }},
      {"to_dtype", {F({5, 3})}, [](V x) { return to_dtype(to_dtype(x[0], kFloat32), kFloat64); }},
      {"matmul", {F({5, 4}), F({4, 3})}, [](V x) { return matmul(x[0], x[1]); }},
      {"matmul_tview", {F({5, 4}), F({3, 4})}, [](V x) { return matmul(x[0], transpose(x[1], 0, 1)); }},
      {"matmul_nt", {F({5, 4}), F({3, 4})}, [](V x) { return matmul_nt(x[0], x[1]); }},
      {"matmul_nt_batched", {F({2, 5, 4}), F({2, 3, 4})}, [](V x) { return matmul_nt(x[0], x[1]); }},
      {"linear", {F({2, 5, 4}), F({3, 4}), F({3})}, [](V x) { return linear(x[0], x[1], x[2]); }},
      {"linear_2d", {F({5, 4}), F({3, 4}), F({3})}, [](V x) { return linear(x[0], x[1], x[2]); }},
      {"linear_1d", {F({4}), F({3, 4}), F({3})}, [](V x) { return linear(x[0], x[1], x[2]); }},
      {"matmul_nt_bias_batched", {F({2, 5, 4}), F({2, 3, 4}), F({2, 1, 3})},
       [](V x) { return matmul_nt(x[0], x[1], x[2]); }},
      // GPT's q, k, v: one input against three stacked weights, a bias per weight
      {"matmul_nt_bias_stacked", {F({1, 5, 4}), F({3, 2, 4}), F({3, 1, 2})},
       [](V x) { return matmul_nt(x[0], x[1], x[2]); }},
      {"matmul_batched", {F({2, 5, 4}), F({2, 4, 3})}, [](V x) { return matmul(x[0], x[1]); }},
      {"matmul_shared_rhs", {F({3, 5, 4}), F({4, 3})}, [](V x) { return matmul(x[0], x[1]); }},
      {"sum_all", {F({5, 3})}, [](V x) { return sum(x[0]); }},
      {"sum_dim0", {F({5, 3})}, [](V x) { return sum(x[0], {0}); }},
      {"sum_dim1_keep", {F({5, 3})}, [](V x) { return sum(x[0], {1}, true); }},
      {"sum_dims_3d", {F({2, 5, 3})}, [](V x) { return sum(x[0], {0, 2}); }},
      {"mean", {F({5, 3})}, [](V x) { return mean(x[0], {1}); }},
      {"max_dim", {F({5, 3})}, [](V x) { return max(x[0], {1}); }},
      {"max_all", {F({5, 3})}, [](V x) { return max(x[0]); }},
      {"argmax", {F({5, 3})}, [](V x) { return argmax(x[0], 1); }},
      {"reshape_split", {F({6, 5})}, [](V x) { return reshape(x[0], {3, 2, 5}); }},
      {"reshape_merge", {F({2, 3, 5})}, [](V x) { return reshape(x[0], {6, 5}); }},
      {"reshape_flat", {F({5, 3})}, [](V x) { return reshape(x[0], {-1}); }},
      {"unsqueeze_squeeze", {F({5, 3})}, [](V x) { return squeeze(unsqueeze(x[0], 1), 1) * 2.0; }},
      {"transpose", {F({5, 3})}, [](V x) { return transpose(x[0], 0, 1); }},
      {"permute", {F({2, 5, 3})}, [](V x) { return permute(x[0], {2, 0, 1}); }},
      {"contiguous", {F({5, 3})}, [](V x) { return contiguous(transpose(x[0], 0, 1)); }},
      {"expand", {F({5, 1})}, [](V x) { return expand(x[0], {5, 3}); }},
      {"narrow0", {F({7, 3})}, [](V x) { return narrow(x[0], 0, 2, 4); }},
      {"slice1", {F({3, 7})}, [](V x) { return slice(x[0], 1, -5, -1); }},
      {"cat0", {F({3, 4}), F({2, 4})}, [](V x) { return cat({x[0], x[1]}, 0); }},
      {"cat1", {F({3, 4}), F({3, 2})}, [](V x) { return cat({x[0], x[1]}, 1); }},
      {"gather", {F({5, 4}), I({5, 3}, 4)}, [](V x) { return gather(x[0], 1, x[1]); }},
      {"scatter_add", {I({5, 3}, 4), F({5, 3})}, [](V x) { return scatter_add({5, 4}, 1, x[0], x[1]); }},
      {"softmax1", {F({5, 3})}, [](V x) { return softmax(x[0], 1); }},
      {"causal_fill", {F({2, 5, 5})}, [](V x) { return causal_fill(x[0], -3.0); }},
      {"causal_fill_wide", {F({3, 5})}, [](V x) { return causal_fill(x[0], 0.0); }},
      {"causal_softmax", {F({2, 5, 5})}, [](V x) { return causal_softmax(x[0], 0.5); }},
      {"causal_softmax_wide", {F({3, 5})}, [](V x) { return causal_softmax(x[0], 2.0); }},
      // A transformer's attention on [B, H, T, D]: causal softmax(q k^T / sqrt(D)) v.
      {"attention_4d", {F({2, 2, 4, 3}), F({2, 2, 4, 3}), F({2, 2, 4, 3})},
       [](V x) {
         Tensor att = causal_fill(mul(matmul(x[0], transpose(x[1], -2, -1)), 1.0 / std::sqrt(3.0)),
                                  -std::numeric_limits<double>::infinity());
         return matmul(softmax(att, -1), x[2]);
       }},
      {"attention_4d_fused", {F({2, 2, 4, 3}), F({2, 2, 4, 3}), F({2, 2, 4, 3})},
       [](V x) { return matmul(causal_softmax(matmul_nt(x[0], x[1]), 1.0 / std::sqrt(3.0)), x[2]); }},
      // The same as one op on packed q, k, v [3, B, H, T, D]; and GPT's form of it: a [3, B*T, E]
      // projection viewed as heads, the output's heads merged back into [B, T, E].
      {"causal_attention", {F({3, 2, 2, 4, 3})}, [](V x) { return causal_attention(x[0], 1.0 / std::sqrt(3.0)); }},
      {"causal_attention_heads", {F({3, 8, 4})},
       [](V x) {
         Tensor heads = permute(reshape(x[0], {3, 2, 4, 2, 2}), {0, 1, 3, 2, 4});
         return reshape(transpose(causal_attention(heads, 0.7), 1, 2), {2, 4, 4});
       }},
      // [B, T, E] -> [B, H, T, D] and back.
      {"heads_split_merge", {F({2, 4, 6})},
       [](V x) {
         Tensor h = transpose(reshape(x[0], {2, 4, 2, 3}), 1, 2);
         return reshape(transpose(mul(h, h), 1, 2), {2, 4, 6});
       }},
      {"softmax0", {F({5, 3})}, [](V x) { return softmax(x[0], 0); }},
      {"log_softmax", {F({5, 3})}, [](V x) { return log_softmax(x[0], -1); }},
      {"embedding", {F({7, 4}), I({5}, 7)}, [](V x) { return embedding(x[0], x[1]); }},
      {"embedding_2d", {F({7, 4}), I({2, 3}, 7)}, [](V x) { return embedding(x[0], x[1]); }},
      {"layer_norm", {F({5, 6}), F({6}), F({6})},
       [](V x) { return layer_norm(x[0], {6}, x[1], x[2]); }},
      {"layer_norm_3d", {F({2, 3, 4})}, [](V x) { return layer_norm(x[0], {4}, Tensor(), Tensor()); }},
      {"layer_norm_affine_3d", {F({2, 3, 4}), F({4}), F({4})},
       [](V x) { return layer_norm(x[0], {4}, x[1], x[2]); }},
      {"layer_norm_weight_only", {F({5, 6}), F({6})}, [](V x) { return layer_norm(x[0], {6}, x[1], Tensor()); }},
      {"layer_norm_bias_only", {F({5, 6}), F({6})}, [](V x) { return layer_norm(x[0], {6}, Tensor(), x[1]); }},
      {"rms_norm", {F({5, 6}), F({6})}, [](V x) { return rms_norm(x[0], x[1], 1e-6); }},
      {"rms_norm_3d", {F({2, 3, 4})}, [](V x) { return rms_norm(x[0], Tensor(), 1e-5); }},
      {"rotary_embedding", {F({2, 3, 4}), F({3, 2}), F({3, 2})},
       [](V x) { return rotary_embedding(x[0], x[1], x[2]); }},
      {"rotary_embedding_heads", {F({2, 4, 2, 6}), F({4, 3}), F({4, 3})},
       [](V x) { return rotary_embedding(transpose(x[0], 1, 2), x[1], x[2]); }},
      {"dropout", {F({5, 3})}, [](V x) { return dropout(x[0], 0.5); }},
      {"mse_loss", {F({5, 3}), F({5, 3})}, [](V x) { return mse_loss(x[0], x[1]); }},
      {"cross_entropy", {F({5, 4}), I({5}, 4)}, [](V x) { return cross_entropy(x[0], x[1]); }},
      {"cross_entropy_3d", {F({2, 3, 5}), I({2, 3}, 5)}, [](V x) { return cross_entropy(x[0], x[1]); }},
      // torch's reduction=: the sum, and the per-element losses (class-split logits too).
      {"mse_loss_sum", {F({5, 3}), F({5, 3})}, [](V x) { return mse_loss_with(x[0], x[1], Reduction::sum); }},
      {"mse_loss_none", {F({5, 3}), F({5, 3})}, [](V x) { return mse_loss_with(x[0], x[1], Reduction::none); }},
      {"cross_entropy_sum", {F({5, 4}), I({5}, 4)}, [](V x) { return cross_entropy_with(x[0], x[1], Reduction::sum); }},
      {"cross_entropy_none_3d", {F({2, 3, 5}), I({2, 3}, 5)},
       [](V x) { return cross_entropy_with(x[0], x[1], Reduction::none); }},
      {"pick", {F({5, 4}), I({5}, 4)}, [](V x) { return pick(x[0], x[1]); }},
      // Element-wise selection (randn values on both sides of the bounds).
      {"clamp", {F({5, 3})}, [](V x) { return clamp(x[0], -0.5, 0.7); }},
      {"clamp_min", {F({5, 3})}, [](V x) { return clamp(x[0], 0.1, std::nullopt); }},
      {"clamp_max", {F({3, 5})}, [](V x) { return clamp(x[0], std::nullopt, -0.2); }},
      {"abs", {F({5, 3})}, [](V x) { return abs(x[0]); }},
      {"masked_fill", {F({5, 3}), I({5, 3}, 2)}, [](V x) { return masked_fill(x[0], x[1], -1.5); }},
      {"scale_grad", {F({5, 3})}, [](V x) { return scale_grad(x[0], 0.25); }},
      // Comparisons give bool (no gradient); where picks by them (gradients to the side taken).
      {"eq", {F({5, 3})}, [](V x) { return eq(x[0], relu(x[0])); }},
      {"ne_scalar", {F({5, 3})}, [](V x) { return ne(relu(x[0]), 0.0); }},
      {"lt_bcast_row", {F({5, 3}), F({3})}, [](V x) { return lt(x[0], x[1]); }},
      {"le_scalar", {F({5, 3})}, [](V x) { return x[0] <= 0.25; }},
      {"gt_outer", {F({4, 1}), F({1, 3})}, [](V x) { return gt(x[0], x[1]); }},
      {"ge", {F({3, 5}), F({3, 5})}, [](V x) { return x[0] >= x[1]; }},
      {"count_true", {F({5, 3})}, [](V x) { return sum(x[0] > 0.0, {0}); }},
      {"bool_cast_mul", {F({5, 3})}, [](V x) { return mul(to_dtype(x[0] > 0.1, x[0].dtype()), x[0]); }},
      // The narrow integers as storage: casts in and out, moved in every layout (never partial).
      {"int32_round_trip", {F({5, 3})}, [](V x) { return to_dtype(to_dtype(mul(x[0], 10.0), kInt32), kInt64); }},
      {"int8_compare", {F({5, 3})}, [](V x) { return to_dtype(mul(x[0], 20.0), kInt8) > 3.0; }},
      {"where", {F({5, 3}), F({5, 3})}, [](V x) { return where(gt(x[0], x[1]), x[0], x[1]); }},
      {"where_bcast_scalar", {F({5, 3}), F({3})}, [](V x) { return where(lt(x[0], x[1]), mul(x[0], x[1]), 0.5); }},
      {"masked_fill_bool", {F({5, 3})}, [](V x) { return masked_fill(x[0], gt(x[0], 0.2), -1.5); }},
      {"masked_fill_bcast", {F({5, 3}), F({3})}, [](V x) { return masked_fill(mul(x[0], x[1]), gt(x[1], 0.0), 2.0); }},
  };
}

// The full (single-process) value of input i of a case, from its own seed.
Tensor input_value(const Input& in, uint64_t seed) {
  manual_seed(seed);
  if (in.index_bound == 0) return randn(in.shape, kFloat64);
  Tensor u = rand(in.shape, kFloat64);
  std::vector<int64_t> idx;
  for (double v : u.to_vector<double>()) idx.push_back(std::min(in.index_bound - 1, int64_t(v * double(in.index_bound))));
  return from_vector(idx, in.shape);
}

// Layouts an input may take on a 1-D mesh.
std::vector<NdSbp> layouts_1d(const Input& in) {
  std::vector<NdSbp> v;
  for (const Sbp& s : testing::all_sbps(int64_t(in.shape.size()), in.index_bound == 0)) v.push_back(s);
  return v;
}

// A few 2-D layouts per input (the full product would be too slow on 2 cores).
std::vector<NdSbp> layouts_2d(const Input& in) {
  const int64_t last = int64_t(in.shape.size()) - 1;
  std::vector<NdSbp> v = {{sbp::split(0), sbp::broadcast}, {sbp::broadcast, sbp::split(last)},
                          {sbp::split(0), sbp::split(0)}};
  if (in.index_bound == 0) {
    v.push_back({sbp::partial_sum, sbp::split(last)});
    v.push_back({sbp::split(last), sbp::partial_sum});
  }
  return v;
}

// Within rounding: float64 runs agree to 1e-9; bfloat16 and float16 runs (8- and 11-bit
// mantissas, each op's result rounded once) to 3e-2 of values of order one, a tenth of what a
// wrong element or a lost partial sum would change.
bool close(const std::vector<double>& got, const std::vector<double>& want, double tol = 1e-9) {
  if (got.size() != want.size()) return false;
  for (size_t i = 0; i < got.size(); ++i)
    if (!(std::abs(got[i] - want[i]) <= tol + tol * std::abs(want[i]))) return false;
  return true;
}

// Runs one case under one combination of layouts and compares with the local run. With `dtype`
// bfloat16 or float16 the global run computes in that dtype and the local float64 reference on the same
// values (the inputs rounded to that dtype first).
// `exact`: the global run must give the single-process values exactly (deterministic mode).
void check_case(const OpCase& c, const Placement& p, const std::vector<NdSbp>& layout, DType dtype = kFloat64,
                bool exact = false) {
  std::string what = c.name + " on " + p.to_string() + " in " + dtype_name(dtype) + (exact ? " (exact)" : "") + " with";
  for (const NdSbp& s : layout) what += " " + s.to_string();
  const double tol = exact ? 0.0 : is_reduced_precision(dtype) ? 3e-2 : 1e-9;
  const size_t n = c.inputs.size();
  std::vector<Tensor> local(n), global(n);
  for (size_t i = 0; i < n; ++i) {
    Tensor v = input_value(c.inputs[i], 100 + i);
    const bool floating = c.inputs[i].index_bound == 0;
    if (floating && dtype != kFloat64) v = to_dtype(to_dtype(v, dtype), kFloat64);
    local[i] = v;
    global[i] = from_full(floating ? to_dtype(v, dtype) : v, p, layout[i]);
    if (c.inputs[i].index_bound == 0) {
      local[i] = v.detach().set_requires_grad();
      global[i].set_requires_grad();
    }
  }
  manual_seed(7);  // ops that draw random numbers (dropout) draw the same stream in both runs
  Tensor want = c.fn(local);
  manual_seed(7);
  Tensor got = c.fn(global);
  ASSERT_TRUE(got.is_global()) << what;
  ASSERT_EQ(got.shape(), want.shape()) << what;
  EXPECT_TRUE(close(got.to_vector<double>(), want.to_vector<double>(), tol)) << what << ": forward differs";
  if (!want.requires_grad()) return;
  // d(sum(out * w))/d(inputs) with a fixed random w: every output element matters.
  manual_seed(99);
  const Tensor w = randn(want.shape(), kFloat64);
  sum(mul(want, w)).backward();
  sum(mul(got, from_full(to_dtype(w, got.dtype()), p, replicated(p.mesh_ndim())))).backward();
  for (size_t i = 0; i < n; ++i) {
    if (c.inputs[i].index_bound) continue;
    ASSERT_TRUE(global[i].grad().defined()) << what << ": no gradient for input " << i;
    EXPECT_EQ(global[i].grad().sbp(), global[i].sbp()) << what << ": gradient of input " << i
                                                       << " not in its leaf's layout";
    EXPECT_EQ(global[i].grad().dtype(), dtype) << what << ": gradient of input " << i << " in another dtype";
    EXPECT_TRUE(close(global[i].grad().to_vector<double>(), local[i].grad().to_vector<double>(), tol))
        << what << ": gradient of input " << i << " differs";
  }
}

// Every combination of the given per-input layouts.
void for_each_combination(const std::vector<std::vector<NdSbp>>& options,
                          const std::function<void(const std::vector<NdSbp>&)>& fn) {
  std::vector<size_t> at(options.size(), 0);
  while (true) {
    std::vector<NdSbp> pick;
    for (size_t i = 0; i < options.size(); ++i) pick.push_back(options[i][at[i]]);
    fn(pick);
    size_t i = 0;
    while (i < options.size() && ++at[i] == options[i].size()) at[i++] = 0;
    if (i == options.size()) return;
  }
}

// Every combination of 1-D layouts on every rank; `exact` as in check_case.
void check_one_dimensional(const OpCase& c, bool exact = false) {
  std::vector<std::vector<NdSbp>> options;
  for (const Input& in : c.inputs) options.push_back(layouts_1d(in));
  for_each_combination(options,
                       [&](const std::vector<NdSbp>& l) { check_case(c, Placement::all(), l, kFloat64, exact); });
}

// A few 2-D layouts on a 2 x 2 mesh (4 ranks), ops of at most two inputs.
void check_two_dimensional(const OpCase& c, bool exact = false) {
  if (dist::world_size() != 4) GTEST_SKIP() << "needs 4 ranks";
  if (c.inputs.size() > 2) GTEST_SKIP() << "2-D combinations limited to ops of at most 2 inputs";
  std::vector<std::vector<NdSbp>> options;
  for (const Input& in : c.inputs) options.push_back(layouts_2d(in));
  const Placement p = placement("cpu", {{0, 1}, {2, 3}});
  for_each_combination(options, [&](const std::vector<NdSbp>& l) { check_case(c, p, l, kFloat64, exact); });
}

class Consistency : public ::testing::TestWithParam<OpCase> {};

TEST_P(Consistency, OneDimensionalMesh) { check_one_dimensional(GetParam()); }

// The device axis: the same cases with the global tensors on a placement of every other device
// kind this process sees (each rank's shard on its device: the sim device always, a GPU where
// one is visible), compared with the CPU's single-process result, gradients too. So every
// cross-device copy, device check and host-staged collective of the harness runs in CI.
TEST_P(Consistency, OneDimensionalMeshOnEveryDevice) {
  const OpCase& c = GetParam();
  std::vector<std::vector<NdSbp>> options;
  for (const Input& in : c.inputs) options.push_back(layouts_1d(in));
  int kinds = 0;
  for (const std::string& kind : device_type_names()) {
    if (kind == "cpu" || device_count(kind) == 0) continue;
    ++kinds;
    SCOPED_TRACE("placement " + kind);
    for_each_combination(options, [&](const std::vector<NdSbp>& l) { check_case(c, Placement::all(kind), l); });
  }
  EXPECT_GE(kinds, 1);  // the sim device at least
}

// The 16-bit axis: every op on bfloat16 and on float16 inputs in every 1-D layout (kernels compute
// in float32, each result rounded once; kernels/via_float32.h), against the float64
// single-process result on the same rounded values.
TEST_P(Consistency, SixteenBitFloatsOneDimensionalMesh) {
  const OpCase& c = GetParam();
  std::vector<std::vector<NdSbp>> options;
  for (const Input& in : c.inputs) options.push_back(layouts_1d(in));
  for (DType low : {kBFloat16, kFloat16})
    for_each_combination(options, [&](const std::vector<NdSbp>& l) { check_case(c, Placement::all(), l, low); });
}

TEST_P(Consistency, SubsetPlacement) {
  if (dist::world_size() < 2) GTEST_SKIP() << "needs 2 ranks";
  // Ranks outside the placement hold nothing and still run every op; the order is reversed.
  const Placement p = placement("cpu", {1, 0});
  const OpCase& c = GetParam();
  std::vector<NdSbp> l;
  for (const Input& in : c.inputs) l.push_back(in.index_bound ? NdSbp(sbp::broadcast) : NdSbp(sbp::split(0)));
  check_case(c, p, l);
}

TEST_P(Consistency, RanksOutsideThePlacement) {
  // 2 ranks show it (rank 0 is outside); 4 would add minutes to the sanitizer build's run and nothing more
  if (dist::world_size() != 2) GTEST_SKIP() << "runs on 2 ranks";
  // The last rank alone holds the values; the others are outside the placement and run every op
  // on nothing, as a pipeline's other stages do. Inputs split by rows, then by their last dim (over
  // one rank: nothing moves, but the split layouts' code runs, vocab-parallel cross-entropy's too).
  const Placement p = placement("cpu", std::vector<int>{dist::world_size() - 1});
  const OpCase& c = GetParam();
  for (const bool last : {false, true}) {
    std::vector<NdSbp> l;
    for (const Input& in : c.inputs)
      l.push_back(in.index_bound || in.shape.empty() ? NdSbp(sbp::broadcast)
                                                      : NdSbp(sbp::split(last ? int64_t(in.shape.size()) - 1 : 0)));
    check_case(c, p, l);
  }
}

TEST_P(Consistency, TwoDimensionalMesh) { check_two_dimensional(GetParam()); }

INSTANTIATE_TEST_SUITE_P(AllOps, Consistency, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<OpCase>& info) { return info.param.name; });

// Deterministic mode (docs/design.md §10): the same table, and sums long enough to have several
// leaves (core/deterministic.h: a dim of 128 has 4 leaves of 32, so 2 and 4 ranks split it into
// whole subtrees and add them in the tree; shorter dims are gathered), must give the
// single-process values exactly, gradients too, in every 1-D layout and (ops of at most two
// inputs) on a 2 x 2 mesh.
std::vector<OpCase> leafy_cases() {
  using V = const std::vector<Tensor>&;
  return {
      {"leafy_matmul", {F({3, 128}), F({128, 4})}, [](V x) { return matmul(x[0], x[1]); }},
      {"leafy_matmul_nt", {F({128, 4}), F({3, 4})}, [](V x) { return matmul_nt(x[0], x[1]); }},
      {"leafy_linear", {F({128, 4}), F({3, 4}), F({3})}, [](V x) { return linear(x[0], x[1], x[2]); }},
      {"leafy_sum_rows", {F({128, 3})}, [](V x) { return sum(x[0], {0}); }},
      {"leafy_mean_all", {F({128, 2})}, [](V x) { return mean(x[0]); }},
      {"leafy_layer_norm", {F({128, 4}), F({4}), F({4})}, [](V x) { return layer_norm(x[0], {4}, x[1], x[2]); }},
      {"leafy_rms_norm", {F({128, 4}), F({4})}, [](V x) { return rms_norm(x[0], x[1], 1e-6); }},
      {"leafy_mse_loss", {F({128, 2}), F({128, 2})}, [](V x) { return mse_loss(x[0], x[1]); }},
      {"leafy_cross_entropy", {F({128, 5}), I({128}, 5)}, [](V x) { return cross_entropy(x[0], x[1]); }},
      {"leafy_embedding", {F({7, 4}), I({128}, 7)}, [](V x) { return embedding(x[0], x[1]); }},
  };
}

std::vector<OpCase> deterministic_cases() {
  std::vector<OpCase> all = cases();
  for (OpCase& c : leafy_cases()) all.push_back(std::move(c));
  return all;
}

class DeterministicConsistency : public ::testing::TestWithParam<OpCase> {
 protected:
  void SetUp() override {
    was_on_ = deterministic();
    set_deterministic(true);
  }
  void TearDown() override { set_deterministic(was_on_); }

 private:
  bool was_on_ = false;
};

TEST_P(DeterministicConsistency, OneDimensionalMeshIsExact) { check_one_dimensional(GetParam(), true); }
TEST_P(DeterministicConsistency, TwoDimensionalMeshIsExact) { check_two_dimensional(GetParam(), true); }

INSTANTIATE_TEST_SUITE_P(AllOps, DeterministicConsistency, ::testing::ValuesIn(deterministic_cases()),
                         [](const ::testing::TestParamInfo<OpCase>& info) { return info.param.name; });

}  // namespace
}  // namespace globe
