// A progress line for long work (a training run, a large checkpoint): done / total, the rate and
// the time left. On a terminal it is one line rewritten in place at most every `interval_s`, and
// finish() leaves its last state. Anywhere else (a log file, a pipe) it is a plain line, without
// control characters, once `log_interval_s` has passed and then at most that often, and finish()
// adds a last one: a run shorter than that says nothing in a log. Under globe-launch a rank's
// output goes through the launcher's line relay, not a terminal, so ranks write log lines.
//
//   globe::Progress bar("save ckpt.safetensors", total_bytes, globe::Progress::Unit::bytes);
//   for (...) bar.advance(n);
//   bar.finish();
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

#include "globe/base/format.h"  // format_duration, format_bytes

namespace globe {

class Progress {
 public:
  enum class Unit { items, bytes };
  struct Options {
    std::string item_name = "steps";  // what an item is called (Unit::items)
    double interval_s = 0.2;          // terminal: the line's refresh
    double log_interval_s = 30;       // not a terminal: one plain line at most this often
    int terminal = -1;                // 1 / 0: is `out` a terminal; -1: ask isatty
  };
  Progress(std::string what, int64_t total, Unit unit, std::FILE* out = stderr);
  Progress(std::string what, int64_t total, Unit unit, Options options, std::FILE* out = stderr);
  ~Progress();  // finish()
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  // `n` more done; `note` (a loss, say) is shown after the figures.
  void advance(int64_t n = 1, const std::string& note = "");
  void finish();

  // The line as it would print now: "what  240/600 steps  40%  3.2 steps/s  ETA 1m52s  note".
  std::string line() const;

 private:
  void show(bool last);
  std::string what_, note_;
  int64_t total_, done_ = 0;
  Unit unit_;
  Options options_;
  std::FILE* out_;
  bool terminal_ = false, finished_ = false, shown_any_ = false;
  std::chrono::steady_clock::time_point start_, shown_;
};

}  // namespace globe
