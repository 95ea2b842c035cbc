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

bool StateDict::erase(const std::string& key) {
  auto it = index_.find(key);
  if (it == index_.end()) return false;
  items_.erase(items_.begin() + std::ptrdiff_t(it->second));
  index_.clear();
  for (size_t i = 0; i < items_.size(); ++i) index_[items_[i].first] = i;
  return true;
}

StateDict StateDict::filter(const std::function<bool(const std::string&)>& keep) const {
  StateDict out;
  for (const auto& [key, value] : items_)
    if (keep(key)) out.set(key, value);
  return out;
}

StateDict StateDict::select(const std::vector<std::string>& keys) const {
  StateDict out;
  for (const auto& key : keys) out.set(key, at(key));
  return out;
}

std::vector<std::string> StateDict::keys() const {
  std::vector<std::string> k;
  for (const auto& [name, t] : items_) k.push_back(name);
  return k;
}

}  // namespace globe
