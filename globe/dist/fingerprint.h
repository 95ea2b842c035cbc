// Divergence fingerprints (docs/design.md §9): every collective carries a 32-bit fingerprint of
// what the ranks must agree on — the global ops each ran on the placement so far (a running hash
// of names, shapes and layouts) and the collective's sequence number on its communicator. Every
// member sends it to every other member in a stamp, which carries a small collective's data and
// travels beside a large one's, so ranks that diverged fail on every rank instead of reading mixed
// numbers.
//
// The global layer keeps one OpHistory per placement and records each op in it; a StampScope
// names the history whose op is issuing collectives now. The communicator does the rest.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>


namespace globe::dist {

// Steps of a 32-bit running hash: a word at a time (a multiply-xorshift finaliser of the state
// and the value, inline: every boxing and op hashes its shapes and layouts), strings in 8-byte
// words, then the tail and the length. Only
// ranks of one run compare these values, so they may change between versions.
inline uint32_t mix(uint32_t h, uint64_t v) {
  uint64_t x = (v ^ (uint64_t(h) << 32 | h)) * 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 29)) * 0xbf58476d1ce4e5b9ull;
  return uint32_t(x ^ (x >> 32));
}
uint32_t mix(uint32_t h, std::string_view s);
constexpr uint32_t kMixSeed = 2166136261u;

// The global ops this rank ran on one placement: how many, a running hash of all of them, and
// the last kLog of them (number, hash, name) to name the first difference when ranks disagree.
class OpHistory {
 public:
  static constexpr int kLog = 32;
  static constexpr int kNameBytes = 36;
  explicit OpHistory(std::string where) : where_(std::move(where)) {}
  // Records op `name`, `detail` being a hash of its shapes and layouts.
  void record(std::string_view name, uint32_t detail);
  uint32_t hash() const { return hash_; }
  uint64_t count() const { return count_; }
  const std::string& where() const { return where_; }
  // A fixed-size image of the history (the same size on every rank) for a roll call.
  std::vector<char> serialize() const;
  static size_t serial_bytes();
  // Where two images first differ, in the words of consistency mode: "global op #5 on
  // placement(cpu, [0, 1]): this rank (0) runs (mul_scalar) but rank 1 runs #5 (sum)".
  static std::string first_difference(const std::vector<char>& mine, int my_rank, const std::vector<char>& theirs,
                                      int their_rank);

 private:
  struct Entry {
    uint64_t number = 0;
    uint32_t hash = 0;
    char name[kNameBytes] = {};
  };
  std::string where_;
  uint64_t count_ = 0;
  uint32_t hash_ = kMixSeed;
  Entry log_[kLog];
};

// Names the history whose op issues the collectives run during the scope's life (the innermost
// scope wins; none: collectives carry only their sequence number).
class StampScope {
 public:
  explicit StampScope(const OpHistory* history);
  ~StampScope();
  StampScope(const StampScope&) = delete;
  StampScope& operator=(const StampScope&) = delete;

 private:
  const OpHistory* prev_;
};
const OpHistory* current_history();
// The fingerprint of collective number `seq` issued now.
uint32_t collective_fingerprint(uint64_t seq);

}  // namespace globe::dist
