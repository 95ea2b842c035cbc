#include "globe/nn/remade_storage.h"

#include <unordered_map>
#include <utility>
#include <vector>

#include "globe/autograd/remade_inputs.h"
#include "globe/core/node.h"
#include "globe/device/memory.h"
#include "globe/global/global_tensor.h"

namespace globe::nn::detail {

namespace {

// A released storage: how it is made again, and where a started remake stands.
struct Entry {
  std::weak_ptr<Storage> storage;
  Remake remake;
  uint64_t group = 0;
  int ahead = 0;
  bool released = false;
  std::function<void()> finishing;  // the rest of a started remake

  // Holds its bytes: neither released nor still being made again.
  bool ready() const { return !released && !finishing; }

  void drop_bytes(Storage& st) {
    if (st.data != nullptr) globe::detail::release(st.device, st.data, st.nbytes);
    st.data = nullptr;
    released = true;
  }
  void release(Storage& st) {
    if (released) return;
    if (finishing) make_again(st);  // a collective in flight writes into its buffer: let it land first
    drop_bytes(st);
  }
  void start(Storage& st) {
    if (!released) return;
    released = false;
    try {
      finishing = remake(st);
    } catch (...) {
      drop_bytes(st);
      throw;
    }
  }
  void make_again(Storage& st) {
    start(st);
    if (finishing) {
      std::function<void()> finish = std::exchange(finishing, nullptr);
      try {
        finish();
      } catch (...) {
        drop_bytes(st);
        throw;
      }
    }
    GLOBE_CHECK(st.data != nullptr || st.nbytes == 0, "[fully_shard] a remake left the storage without its bytes");
  }
};

// A storage the plan holds (alive while the pass runs) and its entry.
struct Held {
  std::shared_ptr<Storage> storage;
  Entry* entry;
  void release() const { entry->release(*storage); }
  void make_again() const { entry->make_again(*storage); }
  void start() const { entry->start(*storage); }
};

// One backward pass's plan: which released storages each node reads, and for a full pass the
// groups in order of first read and the node after which each storage is read no more.
class Plan final : public RemadeInputs::Pass {
 public:
  Plan(std::vector<std::vector<Held>> reads, bool releases) : reads_(std::move(reads)) {
    if (!releases) return;
    std::unordered_map<Storage*, size_t> last;
    std::unordered_map<uint64_t, size_t> group_at;
    for (size_t i = 0; i < reads_.size(); ++i)
      for (const Held& h : reads_[i]) {
        if (!last.count(h.storage.get())) {
          auto [it, fresh] = group_at.emplace(h.entry->group, groups_.size());
          if (fresh) groups_.emplace_back();
          groups_[it->second].push_back(h);
          group_of_[h.storage.get()] = it->second;
        }
        last[h.storage.get()] = i;
      }
    release_after_.resize(reads_.size());
    for (size_t i = 0; i < reads_.size(); ++i)
      for (const Held& h : reads_[i])
        if (last[h.storage.get()] == i) {
          release_after_[i].push_back(h);
          last[h.storage.get()] = reads_.size();  // read twice by one node: released once
        }
  }

  void before(size_t node) override {
    for (const Held& h : reads_[node]) {
      if (h.entry->ready()) continue;
      if (auto it = group_of_.find(h.storage.get()); it != group_of_.end())
        for (size_t g = it->second + 1; g <= it->second + size_t(h.entry->ahead) && g < groups_.size(); ++g)
          for (const Held& ahead : groups_[g]) ahead.start();
      h.make_again();
    }
  }
  void after(size_t node) override {
    if (node < release_after_.size())
      for (const Held& h : release_after_[node]) h.release();
  }
  void done() override {
    for (const auto& group : groups_)
      for (const Held& h : group)
        if (!h.entry->ready() && !h.entry->released) h.release();
  }

 private:
  std::vector<std::vector<Held>> reads_;
  std::vector<std::vector<Held>> groups_;  // by group, in order of first read
  std::unordered_map<Storage*, size_t> group_of_;
  std::vector<std::vector<Held>> release_after_;
};

class Registry final : public RemadeInputs {
 public:
  std::unique_ptr<Pass> plan(const std::vector<std::shared_ptr<Node>>& order, bool releases) override {
    forget_the_gone();
    if (entries_.empty()) return nullptr;
    std::vector<std::vector<Held>> reads(order.size());
    bool any = false;
    for (size_t i = 0; i < order.size(); ++i)
      for (const Tensor& in : order[i]->inputs()) {
        const std::shared_ptr<Storage>& st = storage_on_this_rank(in);
        if (!st) continue;
        auto it = entries_.find(st.get());
        if (it == entries_.end() || it->second.storage.lock() != st) continue;
        reads[i].push_back({st, &it->second});
        any = true;
      }
    if (!any) return nullptr;
    return std::make_unique<Plan>(std::move(reads), releases);
  }

  void add(const std::shared_ptr<Storage>& st, Remake remake, uint64_t group, int ahead) {
    GLOBE_CHECK(!st->owner, "[fully_shard] only Globe's own memory may be released");
    forget_the_gone();
    Entry& e = entries_[st.get()] = Entry();
    e.storage = st;
    e.remake = std::move(remake);
    e.group = group;
    e.ahead = ahead;
    e.drop_bytes(*st);
  }

 private:
  // Entries of storages that died with their graph (a remake holds nothing that would keep
  // memory: the parameter weakly, and nothing in flight after a pass).
  void forget_the_gone() {
    std::erase_if(entries_, [](const auto& kv) { return kv.second.storage.expired(); });
  }
  std::unordered_map<const Storage*, Entry> entries_;  // stable addresses: plans point at them
};

Registry& registry() {
  static auto* r = [] {
    auto* made = new Registry();  // never destroyed: storages may outlive statics
    set_remade_inputs(made);
    return made;
  }();
  return *r;
}

}  // namespace

const std::shared_ptr<Storage>& storage_on_this_rank(const Tensor& t) {
  static const std::shared_ptr<Storage> none;
  const Tensor& local = t.is_global() ? shard_of(t) : t;
  return local.defined() ? local.impl().storage : none;
}

void release_until_backward(const std::shared_ptr<Storage>& storage, Remake remake, uint64_t group, int ahead) {
  registry().add(storage, std::move(remake), group, ahead);
}

void take_bytes(Storage& into, Storage& from) {
  GLOBE_CHECK(from.nbytes == into.nbytes && from.device == into.device && !from.owner && from.data != nullptr &&
                  into.data == nullptr,
              "[storage] take_bytes: ", from.nbytes, " bytes on ", from.device.str(), " for a storage of ", into.nbytes,
              " on ", into.device.str());
  into.data = std::exchange(from.data, nullptr);
}

}  // namespace globe::nn::detail
