#include "globe/io/checkpoint_manager.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <system_error>
#include <vector>

#include "globe/dist/runtime.h"
#include "globe/io/chunk_reader.h"
#include "globe/io/sharded.h"
#include "globe/io/sharded_index.h"
#include "globe/ops/ops.h"

namespace globe {

namespace {

namespace fs = std::filesystem;

const std::string kModel = "model.", kOptim = "optim.", kStep = "train.step";

std::string step_name(int64_t step) {
  char name[32];
  std::snprintf(name, sizeof(name), "step-%012lld", static_cast<long long>(step));
  return name;
}

// Every "step-<digits>" directory in `dir`: {step, path, complete}, ascending by step.
struct Found {
  int64_t step;
  fs::path path;
  bool complete;
};
std::vector<Found> list_steps(const std::string& dir) {
  std::vector<Found> found;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (!e.is_directory() || name.rfind("step-", 0) != 0 || name.size() != 17) continue;
    if (name.find_first_not_of("0123456789", 5) != std::string::npos) continue;
    found.push_back({std::stoll(name.substr(5)), e.path(), fs::exists(e.path() / io::kIndexFile)});
  }
  std::sort(found.begin(), found.end(), [](const Found& a, const Found& b) { return a.step < b.step; });
  return found;
}

StateDict with_prefix(const std::string& prefix, const StateDict& sd) {
  StateDict out;
  for (const auto& [key, value] : sd) out.set(prefix + key, value);
  return out;
}

// The entries of `sd` under `prefix`, without it.
StateDict under(const std::string& prefix, const StateDict& sd) {
  StateDict out;
  for (const auto& [key, value] : sd)
    if (key.rfind(prefix, 0) == 0) out.set(key.substr(prefix.size()), value);
  return out;
}

// Loads the keys of `like` (in like's layouts) and the step from a complete checkpoint.
CheckpointManager::Loaded load_from(const SavedCheckpoint& found, StateDict like) {
  like.set(kStep, from_vector(std::vector<int64_t>{0}, {}));
  StateDict got = load_sharded(found.path, like);
  const int64_t step = got.at(kStep).item<int64_t>();
  got.erase(kStep);
  return {step, std::move(got)};
}

}  // namespace

std::optional<SavedCheckpoint> latest_checkpoint(const std::string& dir) {
  const std::vector<Found> found = list_steps(dir);
  for (auto it = found.rbegin(); it != found.rend(); ++it)
    if (it->complete) return SavedCheckpoint{it->step, it->path.string()};
  return std::nullopt;
}

CheckpointManager::CheckpointManager(std::string dir, CheckpointManagerOptions options)
    : dir_(std::move(dir)), options_(options) {
  GLOBE_CHECK(!dir_.empty(), "[CheckpointManager] needs a directory");
  GLOBE_CHECK(options_.keep >= 1, "[CheckpointManager] keep must be at least 1, got ", options_.keep);
}

void CheckpointManager::save(int64_t step, const nn::Module& model, const optim::Optimizer* optimizer) {
  StateDict sd = with_prefix(kModel, model.state_dict());
  if (optimizer != nullptr)
    for (const auto& [key, value] : optimizer->state_dict()) sd.set(kOptim + key, value);
  save(step, sd);
}

void CheckpointManager::save(int64_t step, const StateDict& state) {
  GLOBE_CHECK(step >= 0, "[CheckpointManager] step must not be negative, got ", step);
  StateDict sd = state;
  sd.set(kStep, from_vector(std::vector<int64_t>{step}, {}));
  const fs::path path = fs::path(dir_) / step_name(step);
  // A complete checkpoint of the same step is replaced: save_sharded keeps it valid until the new
  // index is written. Collective: returns once the index is on disk.
  save_sharded(sd, path.string());
  if (dist::world_rank() != 0) return;
  // Prune: keep the newest `keep` complete ones; older incomplete ones (interrupted saves) go too.
  const std::vector<Found> found = list_steps(dir_);
  int complete_newer = 0;
  for (auto it = found.rbegin(); it != found.rend(); ++it) {
    if (it->step > step) continue;  // a later run's checkpoints are not ours to judge
    const bool keep = it->complete && complete_newer < options_.keep;
    if (it->complete) ++complete_newer;
    if (keep || it->step == step) continue;
    std::error_code ec;
    fs::remove_all(it->path, ec);  // best effort: a leftover is skipped by latest() anyway
  }
}

std::optional<CheckpointManager::Loaded> CheckpointManager::load_latest(const StateDict& like) const {
  const std::optional<SavedCheckpoint> found = latest();
  if (!found) return std::nullopt;
  return load_from(*found, like);
}

int64_t CheckpointManager::resume(nn::Module& model, optim::Optimizer* optimizer) {
  const std::optional<SavedCheckpoint> found = latest();
  if (!found) return 0;
  // The model loads straight into its parameters' layouts; the optimizer's state is read whole
  // (local tensors on every rank) and its load_state_dict lays each out like its parameter.
  StateDict like = with_prefix(kModel, model.state_dict());
  if (optimizer != nullptr) {
    for (const io::IndexEntry& e : io::read_index(found->path, "CheckpointManager").tensors)
      if (e.name.rfind(kOptim, 0) == 0) like.set(e.name, zeros(e.shape, io::entry_dtype(e, found->path)));
  }
  const Loaded got = load_from(*found, std::move(like));  // the checkpoint found above, not a newer listing
  model.load_state_dict(under(kModel, got.state));
  if (optimizer != nullptr) optimizer->load_state_dict(under(kOptim, got.state));
  return got.step;
}

}  // namespace globe
