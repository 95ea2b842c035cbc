// An ordered name -> tensor map: what modules and optimizers save and load.
#pragma once

#include <functional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "globe/core/tensor.h"

namespace globe {

class StateDict {
 public:
  using Item = std::pair<std::string, Tensor>;

  // Adds or replaces `key`; insertion order is kept (it is the order files are written in).
  void set(const std::string& key, const Tensor& value);
  bool contains(const std::string& key) const { return index_.count(key) != 0; }
  // Throws "[state_dict] no key 'k'" when absent.
  const Tensor& at(const std::string& key) const;
  std::vector<std::string> keys() const;
  // Removes `key`; false when it was not there. The others keep their order.
  bool erase(const std::string& key);
  // The entries whose key `keep` accepts, in order:
  //   auto weights = sd.filter([](const std::string& k) { return k.ends_with(".weight"); });
  StateDict filter(const std::function<bool(const std::string&)>& keep) const;
  // The entries named by `keys`, in that order; throws "[state_dict] no key 'k'" naming the first
  // that is absent (a typo must not yield a smaller dict silently).
  StateDict select(const std::vector<std::string>& keys) const;
  size_t size() const { return items_.size(); }
  bool empty() const { return items_.empty(); }
  std::vector<Item>::const_iterator begin() const { return items_.begin(); }
  std::vector<Item>::const_iterator end() const { return items_.end(); }

 private:
  std::vector<Item> items_;
  std::unordered_map<std::string, size_t> index_;
};

}  // namespace globe
