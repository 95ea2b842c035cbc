#include "globe/nn/state_dict.h"

namespace globe {

void StateDict::set(const std::string& key, const Tensor& value) {
  auto it = index_.find(key);
  if (it != index_.end()) {
    items_[it->second].second = value;
    return;
  }
  index_[key] = items_.size();
  items_.emplace_back(key, value);
}

const Tensor& StateDict::at(const std::string& key) const {
  auto it = index_.find(key);
  GLOBE_CHECK(it != index_.end(), "[state_dict] no key '", key, "'");
  return items_[it->second].second;
}

std::vector<std::string> StateDict::keys() const {
  std::vector<std::string> k;
  for (const auto& [name, t] : items_) k.push_back(name);
  return k;
}

}  // namespace globe
