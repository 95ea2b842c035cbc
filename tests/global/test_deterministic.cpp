// Deterministic mode (docs/design.md §10): on 1, 2 and 4 ranks, a sum over a split dim, a matmul
// over a split inner dim, products whose rows, columns or batch are split, and a data- and
// tensor-parallel training step give the single-process bits, not merely close values; a split
// that cannot keep the order is gathered instead; an axis of one rank keeps the default layouts;
// a product's bits do not depend on the thread count; and one rank adding its leaves in another
// order changes the bits (the negative control).
#include <cblas.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>

#include <cstring>

#include <gmock/gmock.h>

#include "global_test_util.h"
#include "test_util.h"
#include "globe/autograd/tree_accumulator.h"
#include "globe/kernels/cpu/matmul.h"
#include "globe/kernels/cpu/nn.h"
#include "globe/kernels/tree_order.h"
#include "globe/kernels/tree_sum.h"

namespace globe {
namespace {

using testing::error_of;
using ::testing::HasSubstr;

class Deterministic : public ::testing::Test {
 protected:
  void SetUp() override { set_deterministic(true); }
  void TearDown() override {
    detail::rotate_leaves_for_test(false);
    set_deterministic(false);
  }
};

// Bit equality of two float32 tensors' values (hex-equal, -0 against +0 included).
bool same_bits(const Tensor& got, const Tensor& want) {
  const std::vector<float> g = got.to_vector<float>(), w = want.to_vector<float>();
  return g.size() == w.size() && std::memcmp(g.data(), w.data(), g.size() * sizeof(float)) == 0;
}

// The largest |got - want| / (1 + |want|) over the elements.
double max_relative_gap(const Tensor& got, const Tensor& want) {
  const std::vector<float> g = got.to_vector<float>(), w = want.to_vector<float>();
  double gap = g.size() == w.size() ? 0 : 1e30;
  for (size_t i = 0; i < g.size() && i < w.size(); ++i) gap = std::max(gap, std::abs(double(g[i]) - w[i]) / (1 + std::abs(double(w[i]))));
  return gap;
}

Tensor values(const Shape& shape, uint64_t seed) {
  manual_seed(seed);
  return randn(shape);
}

TEST_F(Deterministic, MatmulOverASplitInnerDimGivesTheSingleProcessBits) {
  const Tensor a = values({6, 256}, 1), b = values({256, 5}, 2);  // 8 leaves of 32
  const Tensor want = matmul(a, b);
  const Placement p = Placement::all();
  const Tensor got = matmul(from_full(a, p, sbp::split(1)), from_full(b, p, sbp::split(0)));
  EXPECT_TRUE(got.sbp()[0].is_partial());
  EXPECT_TRUE(same_bits(got.to_global(p, sbp::broadcast), want));
  EXPECT_TRUE(same_bits(got.to_global(p, sbp::split(1)), want));  // P -> S: the same tree
}

TEST_F(Deterministic, SumsAndMeansOverSplitDimsGiveTheSingleProcessBits) {
  const Tensor x = values({256, 64}, 3);  // 8 leaves of 32 along dim 0, 2 along dim 1
  const Placement p = Placement::all();
  for (int64_t d : {0, 1}) {
    const Tensor g = from_full(x, p, sbp::split(d));
    EXPECT_TRUE(same_bits(sum(g, {0}), sum(x, {0}))) << "split " << d;
    EXPECT_TRUE(same_bits(sum(g, {1}), sum(x, {1}))) << "split " << d;
    EXPECT_TRUE(same_bits(sum(g), sum(x))) << "split " << d;
    EXPECT_TRUE(same_bits(mean(g), mean(x))) << "split " << d;
  }
}

// The quick start's model in miniature: layer 1 data parallel (batch split, weight broadcast),
// then a column-parallel and a row-parallel layer; three SGD steps. The losses and the weights
// after them equal one process's, bit for bit, on every rank count the mode covers.
TEST_F(Deterministic, HybridTrainingStepsGiveTheSingleProcessBits) {
  const Placement p = Placement::all();
  const Tensor x = values({32, 16}, 4), y = values({32, 8}, 5);
  const std::vector<Tensor> init = {values({32, 16}, 6) * 0.2, values({32}, 7) * 0.1, values({64, 32}, 8) * 0.2,
                                    values({8, 64}, 9) * 0.2, values({64}, 12) * 0.1, values({8}, 13) * 0.1};
  const std::vector<NdSbp> layout = {sbp::broadcast, sbp::broadcast, sbp::split(0), sbp::split(1), sbp::split(0),
                                     sbp::broadcast};
  auto train = [&](bool global, std::vector<float>& losses) {
    std::vector<Tensor> w;
    for (size_t i = 0; i < init.size(); ++i)
      // a copy: SGD updates its parameters in place
      w.push_back((global ? from_full(init[i], p, layout[i]) : init[i] * 1.0).set_requires_grad());
    optim::SGD opt(w, {.lr = 0.05, .momentum = 0.9});
    const Tensor xs = global ? from_full(x, p, sbp::split(0)) : x, ys = global ? from_full(y, p, sbp::split(0)) : y;
    for (int step = 0; step < 10; ++step) {
      Tensor h = relu(linear(xs, w[0], w[1]));
      if (global) h = h.to_global(p, sbp::broadcast);
      const Tensor loss = mse_loss(linear(relu(linear(h, w[2], w[4])), w[3], w[5]), ys);
      loss.backward();
      opt.step();
      opt.zero_grad();
      losses.push_back(loss.item<float>());
    }
    return w;
  };
  std::vector<float> want_losses, got_losses;
  const std::vector<Tensor> want = train(false, want_losses), got = train(true, got_losses);
  ASSERT_EQ(got_losses.size(), want_losses.size());
  EXPECT_EQ(std::memcmp(got_losses.data(), want_losses.data(), want_losses.size() * sizeof(float)), 0)
      << "losses " << got_losses.back() << " against " << want_losses.back();
  for (size_t i = 0; i < want.size(); ++i)
    EXPECT_TRUE(same_bits(got[i].to_global(p, sbp::broadcast), want[i])) << "weight " << i;
}

// Every element of a product is an exactly specified sum (kernels/fixed_order_matmul.h), so a rank
// that holds some of the rows, the columns or the batch entries gets the bits one process gets
// for them (BLAS's value for a row can depend on how many rows the call has).
TEST_F(Deterministic, ProductsWithSplitRowsColumnsOrBatchGiveTheSingleProcessBits) {
  const Placement p = Placement::all();
  const Tensor a = values({4, 64, 512}, 14), b = values({512, 40}, 15), w = values({40, 512}, 16);
  const Tensor want = matmul(a, b), want_nt = linear(a, w);
  for (int64_t d : {0, 1}) {
    const Tensor ga = from_full(a, p, sbp::split(d));
    EXPECT_TRUE(same_bits(matmul(ga, from_full(b, p, sbp::broadcast)).to_global(p, sbp::broadcast), want)) << "a S(" << d << ")";
    EXPECT_TRUE(same_bits(linear(ga, from_full(w, p, sbp::broadcast)).to_global(p, sbp::broadcast), want_nt))
        << "linear, a S(" << d << ")";
  }
  const Tensor ga = from_full(a, p, sbp::broadcast);
  EXPECT_TRUE(same_bits(matmul(ga, from_full(b, p, sbp::split(1))).to_global(p, sbp::broadcast), want)) << "b S(1)";
  EXPECT_TRUE(same_bits(linear(ga, from_full(w, p, sbp::split(0))).to_global(p, sbp::broadcast), want_nt)) << "w S(0)";
}

// A split the leaves cannot follow (an inner dim of n + 1 over n ranks) is not refused:
// the dispatch skips that layout and gathers, and the value keeps the single-process bits.
TEST_F(Deterministic, ASplitThatCannotKeepTheOrderIsGatheredAndKeepsTheBits) {
  const int n = dist::world_size();
  const Placement p = Placement::all();
  const Tensor a = values({4, n + 1}, 10), b = values({n + 1, 3}, 11), x = values({n + 1, 6}, 17),
               c = values({6, 5}, 20);
  EXPECT_TRUE(same_bits(matmul(from_full(a, p, sbp::split(1)), from_full(b, p, sbp::split(0))).to_global(p, sbp::broadcast),
                        matmul(a, b)));
  EXPECT_TRUE(same_bits(sum(from_full(x, p, sbp::split(0)), {0}).to_global(p, sbp::broadcast), sum(x, {0})));
  EXPECT_TRUE(same_bits(matmul(from_full(x, p, sbp::split(0)), from_full(c, p, sbp::broadcast)).to_global(p, sbp::broadcast),
                        matmul(x, c)));  // uneven rows
}

// A mesh axis of one rank cuts and sums nothing, so the mode keeps every layout the default mode
// has there: a Linear whose weight and bias are split over that axis (the GPT's data-parallel
// layouts, a [ranks, 1] mesh) computes where its operands lie, with the bias in the product,
// rather than moving them, and gives the single-process bits.
TEST_F(Deterministic, AnAxisOfOneRankKeepsItsLayoutsAndTheBits) {
  const int n = dist::world_size();
  std::vector<int> ranks;
  for (int r = 0; r < n; ++r) ranks.push_back(r);
  const Placement p("cpu", ranks, {int64_t(n), 1});
  const Tensor x = values({8 * n, 64}, 21), w = values({48, 64}, 22), bias = values({48}, 23);
  const Tensor want = linear(x, w, bias);
  const Sbp B = sbp::broadcast;
  // (input's, weight's, bias's layout on the one-rank axis; the output's there, as the default
  // mode lays it out: nothing boxed): column-parallel, row-parallel
  for (const auto& [xl, wl, bl, out] : {std::tuple{B, sbp::split(0), sbp::split(0), sbp::split(1)},
                                        std::tuple{sbp::split(1), sbp::split(1), B, sbp::partial_sum}}) {
    const Tensor got = linear(from_full(x, p, NdSbp({sbp::split(0), xl})), from_full(w, p, NdSbp({B, wl})),
                              from_full(bias, p, NdSbp({B, bl})));
    EXPECT_EQ(got.sbp(), NdSbp({sbp::split(0), out})) << "weight " << wl.to_string();
    EXPECT_TRUE(same_bits(got.to_global(p, NdSbp({B, B})), want)) << "weight " << wl.to_string();
  }
}

// The rule every rank applies alike, and the message a split that breaks it gets where a kernel
// is handed one: it names the op, the dim, its length, its pieces and the block count.
TEST_F(Deterministic, TheSplitRuleNamesTheDimItsPiecesAndTheBlocks) {
  EXPECT_EQ(leaves_of(1024), 32);  // leaves of 32 wherever 32 divides the length
  EXPECT_EQ(leaves_of(96), 3);
  EXPECT_EQ(leaves_of(784), 8);  // else a power of two of leaves, at most 8: here 98 long
  EXPECT_EQ(leaves_of(80), 2);   // 4 would be 20 long
  EXPECT_EQ(leaves_of(24), 1);
  EXPECT_TRUE(splits_into_leaves(256, 1) && splits_into_leaves(256, 2) && splits_into_leaves(256, 8) &&
              splits_into_leaves(768, 8) && splits_into_leaves(784, 8));
  EXPECT_FALSE(splits_into_leaves(256, 16) || splits_into_leaves(64, 4) || splits_into_leaves(3, 2) ||
               splits_into_leaves(768, 3) || splits_into_leaves(768, 16) || splits_into_leaves(96, 2));
  EXPECT_EQ(leaf_length("matmul", "inner dim", 256, 2), 32);
  try {
    (void)leaf_length("matmul", "inner dim", 3, 2);
    FAIL() << "an inner dim of 3 in 2 blocks was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("[matmul] deterministic mode: the inner dim (length 3, cut into 1 leaves of 3) "
                                         "is split into 2 blocks"),
              std::string::npos)
        << e.what();
  }
}

// BLAS splits one call over its threads by rows and columns, which can change a row's sums; the
// mode's kernel spreads whole columns of exactly specified sums over its threads, so the thread
// count changes no bit.
TEST_F(Deterministic, AProductsBitsDoNotDependOnBlasThreads) {
  const Tensor a = values({256, 192}, 18), b = values({192, 160}, 19);
  const int before = openblas_get_num_threads();
  openblas_set_num_threads(1);
  const Tensor one = matmul(a, b);
  openblas_set_num_threads(2);
  const Tensor two = matmul(a, b);
  openblas_set_num_threads(before);
  EXPECT_TRUE(same_bits(two, one));
}

// The product keeps its helper threads between calls (kernels/cpu/worker_pool.h); a child forked after
// they started (a Python data loader's worker, say) has none of them, and its threaded products
// still finish, with the parent's bits, instead of waiting for helpers that do not exist there.
TEST_F(Deterministic, AProcessForkedAfterThreadedProductsStillMultiplies) {
  const Tensor a = values({256, 192}, 18), b = values({192, 160}, 19);
  const int before = openblas_get_num_threads();
  openblas_set_num_threads(2);
  const Tensor parent = matmul(a, b);  // starts the helpers
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) _exit(same_bits(matmul(a, b), parent) ? 0 : 1);
  openblas_set_num_threads(before);
  int status = 0;
  pid_t done = 0;
  for (int i = 0; i < 300 && (done = waitpid(child, &status, WNOHANG)) == 0; ++i) usleep(100000);
  if (done == 0) {
    kill(child, SIGKILL);
    waitpid(child, &status, 0);
    FAIL() << "the forked child's product did not finish in 30 s";
  }
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "the child's product has other bits";
}

// The product kernel's AVX-512 and AVX2 register blocks and its scalar code give the same bits,
// edges included (rows, columns and leaves that fill no whole block): each element is the same
// chain of fused multiply-adds, whichever instruction computes it.
TEST_F(Deterministic, EveryVectorWidthOfTheProductKernelGivesTheSameBits) {
  for (const Shape& s : std::vector<Shape>{{67, 256, 45}, {8, 96, 32}, {3, 5, 7}}) {
    const Tensor a = values({s[0], s[1]}, 21), b = values({s[1], s[2]}, 22);
    ASSERT_TRUE(kernels::detail::use_fixed_order_code_for_test("plain"));
    const Tensor want = matmul(a, b), want_nt = linear(a, transpose(b, 0, 1) * 1.0);
    int ran = 0;
    for (const char* code : {"avx512", "avx2"}) {
      if (!kernels::detail::use_fixed_order_code_for_test(code)) continue;  // the CPU lacks it
      ++ran;
      EXPECT_TRUE(same_bits(matmul(a, b), want)) << code << " " << shape_str(s);
      EXPECT_TRUE(same_bits(linear(a, transpose(b, 0, 1) * 1.0), want_nt)) << code << " " << shape_str(s);
    }
    kernels::detail::use_fixed_order_code_for_test(nullptr);
    EXPECT_TRUE(same_bits(matmul(a, b), want)) << "the CPU's best code, " << shape_str(s);
    // And the values are the product's: BLAS's (the default mode's) to float rounding, with b
    // read in place and transposed (the panel packing's two paths, edges included).
    set_deterministic(false);
    const Tensor blas = matmul(a, b), blas_nt = linear(a, transpose(b, 0, 1) * 1.0);
    set_deterministic(true);
    EXPECT_LT(max_relative_gap(want, blas), 1e-5) << shape_str(s);
    EXPECT_LT(max_relative_gap(want_nt, blas_nt), 1e-5) << "b transposed, " << shape_str(s);
    if (ran == 0) std::cout << "[ note ] this CPU runs neither AVX-512 nor AVX2 + FMA: the scalar code only\n";
  }
}

// A run of consecutive summed dims is one dim of its flattened index: [16, 64, 8] summed over
// dims 0 and 1 is 1024 rows in leaves of 32, so a split of dim 0 (16, too short for leaves of
// its own) keeps partial sums that are whole subtrees rather than gathering, and the two halves'
// sums added give the whole's bits (a micro-batch of 8 rows of B).
TEST_F(Deterministic, ARunOfSummedDimsIsOneDimOfLeaves) {
  const Tensor x = values({16, 64, 8}, 50);
  const Tensor want = sum(x, {0, 1});
  EXPECT_TRUE(same_bits(sum(narrow(x, 0, 0, 8), {0, 1}) + sum(narrow(x, 0, 8, 8), {0, 1}), want));
  EXPECT_FALSE(same_bits(sum(sum(x, {1}), {0}), want));  // the control: one dim at a time
  const Placement p = Placement::all();
  const Tensor got = sum(from_full(x, p, sbp::split(0)), {0, 1});
  if (dist::world_size() > 1) {
    EXPECT_TRUE(got.sbp()[0].is_partial()) << got.sbp().to_string();
  }
  EXPECT_TRUE(same_bits(got.to_global(p, sbp::broadcast), want));
  EXPECT_TRUE(same_bits(sum(from_full(x, p, sbp::split(1)), {0, 1}).to_global(p, sbp::broadcast), want));
}

// The embedding's gradient sums its rows (the flattened indices, leaves of 32) per token in the
// tree: the sparse kernel equals each leaf's dense gradient added in the tree, a batch split of
// the indices gives the single-process bits, and two micro-batches of half the batch add up to
// the whole batch's bits.
TEST_F(Deterministic, TheEmbeddingGradientAddsItsRowsInTheTree) {
  const int64_t vocab = 11, e = 6;
  std::vector<int64_t> tokens;
  for (int64_t i = 0; i < 16 * 64; ++i) tokens.push_back((i * 7 + i / 5) % vocab);
  const Tensor idx = from_vector(tokens, {16, 64}), g = values({16, 64, e}, 61), w0 = values({vocab, e}, 62);
  std::vector<Tensor> leaves;
  for (int64_t at = 0; at < 16 * 64; at += 32)
    leaves.push_back(kernels::embedding_backward(narrow(reshape(g, {16 * 64, e}), 0, at, 32),
                                                 narrow(reshape(idx, {16 * 64}), 0, at, 32), vocab));
  const Tensor want = kernels::tree_sum(leaves);
  EXPECT_TRUE(same_bits(kernels::embedding_backward_tree(g, idx, vocab, 32), want));
  EXPECT_FALSE(same_bits(kernels::embedding_backward(g, idx, vocab), want));  // the control: rows in order
  const Placement p = Placement::all();
  const Tensor gi = from_full(idx, p, sbp::split(0)), gg = from_full(g, p, sbp::split(0));
  for (int m : {1, 2}) {
    const Tensor w = from_full(w0, p, sbp::broadcast).set_requires_grad();
    for (int k = 0; k < m; ++k)
      sum(embedding(w, narrow(gi, 0, k * 16 / m, 16 / m)) * narrow(gg, 0, k * 16 / m, 16 / m)).backward();
    EXPECT_TRUE(same_bits(w.grad().to_global(p, sbp::broadcast), want)) << m << " micro-batches";
  }
}

// The one tree (kernels/tree_order.h): a range adds its halves where its length is even, else its
// largest power of two below and the rest; the accumulator of terms whose count is not known in
// advance gives that tree for a count of 2^j, and otherwise adds its subtrees last to first.
TEST_F(Deterministic, TermsAddInTheOneTree) {
  EXPECT_EQ(kernels::tree_left(6), 3);
  EXPECT_EQ(kernels::tree_left(5), 4);
  EXPECT_EQ(kernels::tree_left(3), 2);
  EXPECT_EQ(kernels::tree_slots(1), 1);
  EXPECT_EQ(kernels::tree_slots(7), 3);
  std::vector<Tensor> t;
  for (uint64_t i = 0; i < 6; ++i) t.push_back(values({64}, 30 + i) * double(1 << (4 * i)));  // order shows in the bits
  EXPECT_TRUE(same_bits(kernels::tree_sum(t), ((t[0] + t[1]) + t[2]) + ((t[3] + t[4]) + t[5])));
  TreeAccumulator acc;
  for (size_t i = 0; i < 3; ++i) acc.add(t[i]);
  EXPECT_TRUE(same_bits(acc.value(), (t[0] + t[1]) + t[2]));
  acc.add(t[3]);
  EXPECT_TRUE(same_bits(acc.value(), kernels::tree_sum({t[0], t[1], t[2], t[3]})));
  EXPECT_FALSE(same_bits(acc.value(), ((t[0] + t[1]) + t[2]) + t[3]));  // the control: sequential order differs
}

// Gradients accumulated over backward calls add in the tree: a weight's gradient from a batch
// of 128 rows (4 leaves of 32) taken as 1, 2 or 4 micro-batches of whole leaves has the bits of
// one backward over the batch, on any rank count; so does a weight used twice in the forward
// (tied), whose two uses add their micro-batches each in its own tree.
TEST_F(Deterministic, AGradientOverPowerOfTwoMicroBatchesHasTheWholeBatchsBits) {
  const Placement p = Placement::all();
  const Tensor x = from_full(values({128, 24}, 40), p, sbp::split(0)), z = from_full(values({128, 24}, 42), p, sbp::split(0));
  const Tensor w0 = values({24, 12}, 41);
  for (bool tied : {false, true}) {
    Tensor want;
    for (int m : {1, 2, 4}) {
      const Tensor w = from_full(w0, p, sbp::broadcast).set_requires_grad();
      const int64_t rows = 128 / m;
      for (int k = 0; k < m; ++k) {
        Tensor y = matmul(narrow(x, 0, k * rows, rows), w);
        if (tied) y = y + matmul(narrow(z, 0, k * rows, rows), w) * 3.0;
        sum(y).backward();
      }
      const Tensor g = w.grad().to_global(p, sbp::broadcast);
      if (m == 1) want = g;
      else EXPECT_TRUE(same_bits(g, want)) << m << " micro-batches" << (tied ? ", tied" : "");
    }
  }
}

// The rule for micro-batches (core/deterministic.h, check_microbatches): a power of two of them,
// each the same multiple of 32 rows. Micro-batches of 96 rows (a multiple of 32, not a power of
// two) keep the whole batch's bits for every sum over the batch: a weight's gradient over the
// rows, a bias's (the rows alone), and one over the rows times 3 tokens. Micro-batches of 20 rows
// cut the rows' sums elsewhere than the batch does, and the bits differ: that is why the
// pipeline and nn.Graph refuse such a cut (the error names the batch, the cut and the rule).
TEST_F(Deterministic, MicroBatchesOfWholeLeavesKeepTheBatchsBitsAndOthersAreRefused) {
  const Placement p = Placement::all();
  auto gradients = [&](int64_t rows, int m) {
    const Tensor x = from_full(values({rows, 3, 8}, 50), p, sbp::split(0));
    const Tensor w = from_full(values({8, 5}, 51), p, sbp::broadcast).set_requires_grad();
    const Tensor b = from_full(values({5}, 52), p, sbp::broadcast).set_requires_grad();
    const Tensor pos = from_full(values({3, 5}, 53), p, sbp::broadcast).set_requires_grad();
    const int64_t each = rows / m;
    for (int k = 0; k < m; ++k) {
      const Tensor y = matmul(narrow(x, 0, k * each, each), w) + b + pos;  // pos: a sum over the rows alone
      sum(y * y).backward();
    }
    return std::vector<Tensor>{w.grad(), b.grad(), pos.grad()};
  };
  const auto whole = gradients(192, 1), halves = gradients(192, 2);
  for (size_t i = 0; i < whole.size(); ++i) EXPECT_TRUE(same_bits(halves[i], whole[i])) << "gradient " << i;
  const auto whole40 = gradients(40, 1), halves40 = gradients(40, 2);
  EXPECT_FALSE(same_bits(halves40[2], whole40[2])) << "20-row micro-batches kept the bits of a sum over the rows alone";
  for (auto [rows, m] : std::vector<std::pair<int64_t, int64_t>>{{64, 1}, {40, 1}, {64, 2}, {192, 2}, {256, 8}})
    EXPECT_NO_THROW(check_microbatches("pipeline", rows, m)) << rows << " in " << m;
  EXPECT_THAT(error_of([] { check_microbatches("pipeline", 40, 2); }),
              HasSubstr("[pipeline] deterministic mode: a batch of 40 rows in 2 micro-batches of 20 rows would not "
                        "have the whole batch's bits"));
  EXPECT_THAT(error_of([] { check_microbatches("nn.Graph", 96, 3); }), HasSubstr("96 rows in 3 micro-batches of 32"));
  EXPECT_THAT(error_of([] { check_microbatches("pipeline", 100, 3); }), HasSubstr("of unequal sizes"));
  set_deterministic(false);
  EXPECT_NO_THROW(check_microbatches("pipeline", 40, 2)) << "outside the mode every cut is taken";
}

// The negative control: rank 1 adds its leaves in a rotated order, and the bits change.
TEST_F(Deterministic, OneRankAddingItsLeavesInAnotherOrderChangesTheBits) {
  if (dist::world_size() < 2) GTEST_SKIP() << "needs 2 ranks";
  const Tensor a = values({6, 256}, 1), b = values({256, 5}, 2);  // at least 2 leaves per rank
  const Tensor want = matmul(a, b);
  const Placement p = Placement::all();
  detail::rotate_leaves_for_test(dist::world_rank() == 1);
  const Tensor got = matmul(from_full(a, p, sbp::split(1)), from_full(b, p, sbp::split(0))).to_global(p, sbp::broadcast);
  detail::rotate_leaves_for_test(false);
  EXPECT_FALSE(same_bits(got, want));
}

}  // namespace
}  // namespace globe
