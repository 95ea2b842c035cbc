// Small helpers shared by the example programs: their command-line flags and rank-0 printing.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include <globe/globe.h>

namespace example {

// An example's flags, each `--name value` (or a bare `--name` switch), read as the program asks
// for them with a default and a meaning; done() then answers `--help` with every flag, its
// default and meaning (exit 0) and refuses a flag nobody asked for (exit 2). Every example takes
// `--device cpu|cuda`: the device type of its placements (a GPU per rank, or ranks sharing one:
// docs/design.md §16).
class Args {
 public:
  Args(int argc, char** argv, std::string about) : argv_(argv + 1, argv + argc), about_(std::move(about)) {
    device_ = text("--device", "cpu", "device type of the placements: cpu, cuda, or sim (a CPU-side test device)");
  }
  int integer(const char* name, int fallback, const char* meaning) {
    return std::atoi(text(name, std::to_string(fallback), meaning).c_str());
  }
  // A number; a value that is not one is an error naming the flag.
  double number(const char* name, double fallback, const char* meaning) {
    std::ostringstream def;
    def << fallback;
    const std::string v = text(name, def.str(), meaning);
    size_t used = 0;
    double x = 0;
    try {
      x = std::stod(v, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    GLOBE_CHECK(used == v.size() && !v.empty(), name, " takes a number, not '", v, "'");
    return x;
  }
  std::string text(const char* name, const std::string& fallback, const char* meaning) {
    known_.push_back({name, fallback, meaning, false});
    for (size_t i = 0; i + 1 < argv_.size(); ++i)
      if (argv_[i] == name) return argv_[i + 1];
    return fallback;
  }
  bool flag(const char* name, const char* meaning) {
    known_.push_back({name, "off", meaning, true});
    for (const std::string& a : argv_)
      if (a == name) return true;
    return false;
  }
  void done() const {
    for (const std::string& a : argv_)
      if (a == "--help" || a == "-h") {
        std::cout << about_ << "\n\nflags:\n";
        for (const Known& k : known_)
          std::cout << "  " << k.name << (k.is_switch ? "" : " VALUE") << "\n      " << k.meaning << " (default "
                    << (k.fallback.empty() ? "none" : k.fallback) << ")\n";
        std::exit(0);
      }
    for (size_t i = 0; i < argv_.size(); ++i) {
      const Known* k = find(argv_[i]);
      if (k == nullptr) {
        std::cerr << (argv_[i].rfind("--", 0) == 0 ? "unknown flag " : "unexpected argument ") << argv_[i]
                  << " (--help lists the flags)\n";
        std::exit(2);
      }
      if (!k->is_switch && ++i == argv_.size()) {
        std::cerr << "flag " << k->name << " needs a value (--help lists the flags)\n";
        std::exit(2);
      }
    }
  }
  const std::string& device() const { return device_; }

 private:
  struct Known {
    std::string name, fallback, meaning;
    bool is_switch;
  };
  const Known* find(const std::string& name) const {
    for (const Known& k : known_)
      if (k.name == name) return &k;
    return nullptr;
  }
  std::vector<std::string> argv_;
  std::string about_, device_;
  std::vector<Known> known_;
};

// Collective: the largest of every rank's `v`.
inline int64_t max_over_ranks(double v) {
  const globe::Tensor t = globe::from_vector(std::vector<double>{v}, {1});
  return int64_t(globe::max(t.to_global(globe::Placement::all(), globe::sbp::split(0))).item<double>());
}

// Prints from rank 0 only (every rank runs the same program).
inline bool is_rank0() { return globe::dist::world_rank() == 0; }

// A step's batch of `shape` [batch, tokens] as a global tensor split over the data-parallel axis
// (axis 0) of `p`: this rank's rows from read_rows(first, n) (int64 [n, tokens]); ranks outside
// `p` hold nothing. The GPT's byte windows and the Llama's token file both come in through it.
template <class ReadRows>
globe::Tensor batch_on(const globe::Placement& p, const globe::Shape& shape, ReadRows&& read_rows) {
  const globe::NdSbp s({globe::sbp::split(0), globe::sbp::broadcast});
  const int me = globe::dist::world_rank();
  if (!p.contains(me)) return globe::make_global(globe::Tensor::empty({0, 0}, globe::kInt64), shape, p, s);
  const globe::Block b = globe::local_block(shape, p, s, me);
  return globe::make_global(read_rows(b.start[0], b.shape[0]), shape, p, s);
}

// "iter I loss V" from rank 0; in deterministic mode (GLOBE_DETERMINISTIC=1) also the float's
// exact bits as a hex float, the same on every layout (docs/02-data-parallel.md).
inline void print_loss(int iter, float value, const std::string& tag = "") {
  if (!is_rank0()) return;
  std::cout << tag << (tag.empty() ? "" : " ") << "iter " << iter << " loss " << value;
  if (globe::deterministic()) std::cout << " bits " << std::hexfloat << value << std::defaultfloat;
  std::cout << std::endl;
}

// An example's main: runs `run` and turns an exception that leaves it (a globe::Error: bad input,
// a missing device, ...) into one line on stderr, "<program>: error on rank R: <message>", and exit
// status 1, where an uncaught exception would abort (SIGABRT, exit 134) after terminate's own line.
// Under globe-launch a message another rank already printed is not printed again: the launcher's
// last line names the ranks that failed alike (dist::print_error_here).
// With other ranks it ends as Python's traceback hook does (dist::exit_after_failure): the others
// are told it failed and stop at once, and nothing waits at exit for collectives or paused passes
// its failure left unfinished.
inline int main(int (*run)(int, char**), int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    const char* slash = std::strrchr(argv[0], '/');
    int rank = -1, ranks = 1;
    try {  // the runtime itself may be what failed
      rank = globe::dist::world_rank();
      ranks = globe::dist::world_size();
    } catch (const std::exception&) {
    }
    // One write: under `globe-launch --no-prefix` bytes pass straight through, so a line written
    // in pieces could interleave with another rank's.
    const std::string line = std::string(slash ? slash + 1 : argv[0]) + ": error on rank " +
                             (rank >= 0 ? std::to_string(rank) : std::string("?")) + ": " + e.what() + "\n";
    if (ranks == 1 || globe::dist::print_error_here(std::string(e.what()) + "\n"))
      std::fwrite(line.data(), 1, line.size(), stderr);
    std::fflush(stderr);
    if (ranks > 1) globe::dist::exit_after_failure(1);
    return 1;
  }
}

}  // namespace example
