// The collective glue of checkpoint calls: every rank enters the same call, and every rank leaves
// it the same way — all return, or all throw the same error — even when only one rank's file
// operation failed. Runs on the world communicator; a world of one never touches MPI.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "globe/base/progress.h"
#include "globe/core/tensor.h"
#include "globe/nn/state_dict.h"

namespace globe::io {

// States "this rank runs `what`" and waits for every rank to state the same (the communicator's
// consistency check, always on here). A rank that calls something else, or does not arrive within
// GLOBE_TIMEOUT seconds, makes the others throw an error naming the op and the missing ranks.
void enter_collective(const std::string& what);

// `s` from world rank `root` on every rank.
void broadcast_string(std::string& s, int root);

// The message of the globe::Error `fn` throws, or "" when it succeeds: what agree_on_errors takes.
template <class Fn>
std::string capture_error(Fn&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// Every rank passes its own error ("" when it succeeded). If any rank failed, every rank throws the
// lowest failing rank's message; otherwise returns. Doubles as a barrier.
void agree_on_errors(const std::string& my_error);
// Same when only `root` can have failed: its error (or "") decides for everyone.
void agree_on_root_error(const std::string& root_error, int root);

// A short hash of what each key is (name, dtype, shape, layout): equal state dicts give equal
// fingerprints on every rank, so enter_collective can compare them.
std::string layout_fingerprint(const StateDict& state);

// The progress of reading or writing `bytes` (base/progress.h: a line on a terminal, plain lines in
// a log when it takes long), or null when the checkpoint (`checkpoint_bytes`, all ranks' together;
// -1: `bytes`) is under 256 MiB. One rank shows it: the ranks' lines would interleave.
std::unique_ptr<Progress> checkpoint_progress(const std::string& what, int64_t bytes, int64_t checkpoint_bytes = -1);

}  // namespace globe::io
