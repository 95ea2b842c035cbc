#include "globe/dist/fingerprint.h"

#include <algorithm>
#include <cstring>

namespace globe::dist {

uint32_t mix(uint32_t h, std::string_view s) {
  size_t i = 0;
  for (; i + 8 <= s.size(); i += 8) {  // a word at a time, then the tail with the length
    uint64_t w;
    std::memcpy(&w, s.data() + i, 8);
    h = mix(h, w);
  }
  uint64_t tail = 0;
  for (size_t k = 0; i + k < s.size(); ++k) tail |= uint64_t(uint8_t(s[i + k])) << (8 * k);
  return mix(mix(h, tail), uint64_t(s.size()));
}

void OpHistory::record(std::string_view name, uint32_t detail) {
  Entry& e = log_[count_ % kLog];
  e.number = ++count_;
  e.hash = mix(mix(kMixSeed, name), detail);
  const size_t n = std::min(name.size(), size_t(kNameBytes - 1));
  std::memcpy(e.name, name.data(), n);
  e.name[n] = 0;
  hash_ = mix(hash_, e.hash);
}

namespace {

constexpr size_t kWhereBytes = 120;

// The image: where (kWhereBytes, NUL-padded), count, then the log oldest first.
struct Image {
  std::string where;
  uint64_t count = 0;
  struct Item {
    uint64_t number;
    uint32_t hash;
    std::string name;
  };
  std::vector<Item> items;  // numbers ascending
  const Item* find(uint64_t number) const {
    for (const Item& i : items)
      if (i.number == number) return &i;
    return nullptr;
  }
};

Image parse(const std::vector<char>& bytes) {
  Image img;
  const char* at = bytes.data();
  img.where.assign(at, strnlen(at, kWhereBytes));
  at += kWhereBytes;
  std::memcpy(&img.count, at, 8);
  at += 8;
  const size_t kept = size_t(std::min<uint64_t>(img.count, OpHistory::kLog));
  for (size_t k = 0; k < kept; ++k, at += 8 + 4 + OpHistory::kNameBytes) {
    Image::Item item;
    std::memcpy(&item.number, at, 8);
    std::memcpy(&item.hash, at + 8, 4);
    item.name.assign(at + 12, strnlen(at + 12, OpHistory::kNameBytes));
    img.items.push_back(item);
  }
  return img;
}

std::string latest(const Image& img);

std::string runs(const Image& img, uint64_t number) {
  const Image::Item* i = img.find(number);
  if (i) return "#" + std::to_string(number) + " (" + i->name + ")";
  return "no op #" + std::to_string(number) + " (its last is #" + std::to_string(img.count) + ")";
}

// The op an image's rank is issuing collectives for.
std::string latest(const Image& img) {
  if (img.where.empty()) return "a collective outside any global op";
  return runs(img, img.count) + " on " + img.where;
}

}  // namespace

size_t OpHistory::serial_bytes() { return kWhereBytes + 8 + size_t(kLog) * (8 + 4 + kNameBytes); }

std::vector<char> OpHistory::serialize() const {
  std::vector<char> out(serial_bytes(), 0);
  char* at = out.data();
  std::memcpy(at, where_.data(), std::min(where_.size(), kWhereBytes - 1));
  at += kWhereBytes;
  std::memcpy(at, &count_, 8);
  at += 8;
  const uint64_t kept = std::min<uint64_t>(count_, kLog);
  for (uint64_t n = count_ - kept + 1; n <= count_; ++n, at += 8 + 4 + kNameBytes) {
    const Entry& e = log_[(n - 1) % kLog];
    std::memcpy(at, &e.number, 8);
    std::memcpy(at + 8, &e.hash, 4);
    std::memcpy(at + 12, e.name, kNameBytes);
  }
  return out;
}

std::string OpHistory::first_difference(const std::vector<char>& mine, int my_rank, const std::vector<char>& theirs,
                                        int their_rank) {
  const Image a = parse(mine), b = parse(theirs);
  const std::string me = "this rank (" + std::to_string(my_rank) + ")", them = "rank " + std::to_string(their_rank);
  if (a.where != b.where) {
    return me + " runs " + latest(a) + " but " + them + " runs " + latest(b);
  }
  // The first number both logs hold whose ops differ, else the first one only one side ran.
  const uint64_t from = std::max(a.items.empty() ? 1 : a.items.front().number,
                                 b.items.empty() ? 1 : b.items.front().number);
  const uint64_t common = std::min(a.count, b.count);
  for (uint64_t n = from; n <= std::max(a.count, b.count); ++n) {
    const Image::Item *x = a.find(n), *y = b.find(n);
    if (n <= common && x && y && x->hash == y->hash) continue;
    std::string text = "global op #" + std::to_string(n) + " on " + a.where + ": " + me + " runs " + runs(a, n) +
                       " but " + them + " runs " + runs(b, n);
    if (x && y && x->name == y->name) text += " with other shapes or layouts";
    return text;
  }
  return "the last " + std::to_string(kLog) + " global ops on " + a.where + " agree with " + them +
         "'s: they differ earlier, or in a collective issued outside a global op";
}

namespace {
thread_local const OpHistory* t_current = nullptr;
}

StampScope::StampScope(const OpHistory* history) : prev_(t_current) { t_current = history; }
StampScope::~StampScope() { t_current = prev_; }
const OpHistory* current_history() { return t_current; }

uint32_t collective_fingerprint(uint64_t seq) { return mix(t_current ? t_current->hash() : kMixSeed, seq); }

}  // namespace globe::dist
