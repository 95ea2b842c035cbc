// Training checkpoints that make resuming one line, and that a crash can never spoil:
//
//   globe::CheckpointManager ckpt("ckpt/run1", {.keep = 2});
//   int64_t step = ckpt.resume(model, optimizer);        // 0 when there is nothing to resume
//   for (; step < steps; ++step) {
//     ...train one step...
//     if ((step + 1) % 100 == 0) ckpt.save(step + 1, model, optimizer);
//   }
//
// DIR holds one sharded checkpoint (globe/io/sharded.h) per saved step, "DIR/step-<12 digits>/".
// A checkpoint is complete once its index.json exists: save_sharded writes that file last, after
// every rank's shard is on disk, so a save interrupted by a crash or a kill leaves a directory
// without it, which latest() never returns. After a complete save the oldest complete ones beyond
// `keep` are deleted, and incomplete ones older than the new one with them. Loading reshards to
// any number of ranks and any layout, as load_sharded does. Collective where marked.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "globe/nn/module.h"
#include "globe/nn/state_dict.h"
#include "globe/optim/optimizer.h"

namespace globe {

struct CheckpointManagerOptions {
  int keep = 3;  // complete checkpoints kept (at least 1)
};

struct SavedCheckpoint {
  int64_t step;
  std::string path;  // DIR/step-<12 digits>
};

// The newest complete checkpoint in `dir`, or nothing (no directory, none complete).
std::optional<SavedCheckpoint> latest_checkpoint(const std::string& dir);

class CheckpointManager {
 public:
  explicit CheckpointManager(std::string dir, CheckpointManagerOptions options = {});

  // Collective. Saves the model ("model.*"), the optimizer's state ("optim.*", when there is one)
  // and `step` as DIR/step-<step>, then prunes. Saving a step that exists replaces it.
  void save(int64_t step, const nn::Module& model, const optim::Optimizer* optimizer = nullptr);
  void save(int64_t step, const nn::Module& model, const optim::Optimizer& optimizer) { save(step, model, &optimizer); }

  // Collective. Loads the newest complete checkpoint into the model (in its current layout) and
  // the optimizer, and returns its step; returns 0 and changes nothing when there is none.
  int64_t resume(nn::Module& model, optim::Optimizer* optimizer = nullptr);
  int64_t resume(nn::Module& model, optim::Optimizer& optimizer) { return resume(model, &optimizer); }

  // The same for state of any shape (the GPT names its optimizer's state by parameter). Collective.
  // save: writes `state` and `step` as DIR/step-<step>, then prunes. load_latest: the newest
  // complete checkpoint's keys of `like`, each in like's layout (as load_sharded), and its step;
  // nothing when there is none.
  void save(int64_t step, const StateDict& state);
  struct Loaded {
    int64_t step;
    StateDict state;
  };
  std::optional<Loaded> load_latest(const StateDict& like) const;

  std::optional<SavedCheckpoint> latest() const { return latest_checkpoint(dir_); }
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
  CheckpointManagerOptions options_;
};

}  // namespace globe
