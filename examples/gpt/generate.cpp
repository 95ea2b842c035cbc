#include "generate.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

namespace gpt {

using globe::Tensor;

namespace {

// The next token from one row of logits (the same choice on every rank: same values, same seed).
int64_t choose(const std::vector<float>& logits, const Sampling& s, std::mt19937_64& rng) {
  const int64_t V = int64_t(logits.size());
  if (s.temperature <= 0) return int64_t(std::max_element(logits.begin(), logits.end()) - logits.begin());
  std::vector<int64_t> order(static_cast<size_t>(V));
  std::iota(order.begin(), order.end(), 0);
  const int64_t k = s.top_k > 0 ? std::min(s.top_k, V) : V;
  std::partial_sort(order.begin(), order.begin() + k, order.end(),
                    [&](int64_t a, int64_t b) { return logits[size_t(a)] > logits[size_t(b)]; });
  std::vector<double> w(static_cast<size_t>(k));
  const double top = logits[size_t(order[0])];
  double total = 0;
  for (int64_t i = 0; i < k; ++i) total += w[size_t(i)] = std::exp((logits[size_t(order[size_t(i)])] - top) / s.temperature);
  if (s.top_p < 1.0) {  // the shortest likeliest prefix whose probability reaches top_p
    double sum = 0;
    size_t keep = 0;
    while (keep < w.size() && sum < s.top_p * total) sum += w[keep++];
    w.resize(std::max<size_t>(keep, 1));
  }
  std::discrete_distribution<int64_t> pick(w.begin(), w.end());
  return order[size_t(pick(rng))];
}

// An int64 [1, n] batch of `ids` on `p`, the same on every rank of it.
Tensor ids_on(const std::vector<int64_t>& ids, const globe::Placement& p) {
  return globe::from_full(globe::from_vector(ids, {1, int64_t(ids.size())}), p, globe::replicated(p.mesh_ndim()));
}

}  // namespace

std::vector<int64_t> generate_ids(globe::pipeline::Pipeline& pipe, std::vector<int64_t> ids, int64_t block,
                                  const Sampling& s) {
  GLOBE_CHECK(!ids.empty(), "[generate] the prompt is empty");
  GLOBE_CHECK(s.top_p > 0 && s.top_p <= 1, "[generate] top_p ", s.top_p, " is not in (0, 1]");
  const globe::Placement& first = pipe.placement_of(0);
  const globe::Placement& last = pipe.placement_of(pipe.stages() - 1);
  std::mt19937_64 rng(s.seed);
  std::vector<int64_t> out;
  for (int64_t n = 0; n < s.tokens; ++n) {
    const std::vector<int64_t> window =
        s.incremental && n > 0
            ? std::vector<int64_t>{ids.back()}
            : std::vector<int64_t>(ids.end() - std::min<std::ptrdiff_t>(std::ptrdiff_t(ids.size()), block), ids.end());
    // The "loss" of this pass is the chosen token: the last stage picks it from the last position's
    // logits [1, T, V] and the pipeline hands it to every rank as it does a loss.
    auto pick_next = [&](const Tensor& logits, const Tensor&) {
      const int64_t T = logits.shape()[1];
      const Tensor row = globe::narrow(logits, 1, T - 1, 1).to_global(last, globe::replicated(last.mesh_ndim()));
      const int64_t next = choose(globe::to_dtype(row, globe::kFloat32).to_local().to_vector<float>(), s, rng);
      return globe::full({}, double(next), last, globe::replicated(last.mesh_ndim()));
    };
    const Tensor next = pipe.evaluate(ids_on(window, first), ids_on(window, last), pick_next);
    const int64_t token = int64_t(std::lround(next.item<float>()));
    ids.push_back(token);
    out.push_back(token);
  }
  return out;
}

std::string generate(globe::pipeline::Pipeline& pipe, const std::string& prompt, int64_t block, const Sampling& s) {
  GLOBE_CHECK(!prompt.empty(), "[gpt] generate: the prompt is empty");
  GLOBE_CHECK(int64_t(prompt.size()) <= block, "[gpt] generate: the prompt has ", prompt.size(),
              " bytes but the context holds ", block, " (--block); shorten it");
  std::vector<int64_t> ids(prompt.begin(), prompt.end());
  for (auto& v : ids) v = int64_t(uint8_t(v));
  std::string out;
  for (const int64_t token : generate_ids(pipe, ids, block, s)) out.push_back(char(uint8_t(token)));
  return out;
}

}  // namespace gpt
