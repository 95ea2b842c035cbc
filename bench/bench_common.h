// Small helpers shared by the benchmarks: flag parsing, thread setup, statistics, the machine.
#pragma once

#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "globe/dist/machine.h"

namespace bench {

// One flag: its name, default and meaning (what --help prints).
struct Flag {
  const char* name;
  const char* fallback;
  const char* meaning;
};

// "--name value" or "--name=value" flags over a fixed set. --help (or -h) prints `about`, then
// every flag with its meaning and default, and exits 0; a bad flag exits 2, naming it.
class Flags {
 public:
  Flags(int argc, char** argv, const char* about, std::vector<Flag> specs) : specs_(std::move(specs)) {
    for (const Flag& f : specs_) values_[f.name] = f.fallback;
    for (int i = 1; i < argc; ++i) {
      std::string a = argv[i];
      if (a == "--help" || a == "-h") {
        std::printf("%s\n\nflags:\n", about);
        for (const Flag& f : specs_) std::printf("  --%-14s %s (default %s)\n", f.name, f.meaning, f.fallback);
        std::exit(0);
      }
      if (a.rfind("--", 0) != 0) fail(argv[0], "unexpected argument " + a + " (--help lists the flags)");
      std::string name = a.substr(2), value;
      if (auto eq = name.find('='); eq != std::string::npos) {
        value = name.substr(eq + 1);
        name = name.substr(0, eq);
      } else {
        if (i + 1 >= argc) fail(argv[0], "flag --" + name + " needs a value");
        value = argv[++i];
      }
      if (!values_.count(name)) fail(argv[0], "unknown flag --" + name + " (--help lists the flags)");
      values_[name] = value;
    }
    for (const Flag& f : specs_) (void)number(f.name, argv[0]);  // a whole-number flag given a word fails here
  }
  // The value as a whole number (checked when parsed, for flags whose default is one).
  long operator[](const std::string& name) const { return number(name, "bench"); }
  const std::string& str(const std::string& name) const { return values_.at(name); }

 private:
  [[noreturn]] static void fail(const char* program, const std::string& why) {
    std::fprintf(stderr, "%s: %s\n", program, why.c_str());
    std::exit(2);
  }
  static bool whole(const std::string& v, long& x) {
    size_t used = 0;
    try {
      x = std::stol(v, &used);
    } catch (const std::exception&) {
      return false;
    }
    return used == v.size() && !v.empty();
  }
  // A flag whose default is a whole number must be given one.
  long number(const std::string& name, const char* program) const {
    long x = 0, fallback = 0;
    const std::string& v = values_.at(name);
    if (whole(v, x)) return x;
    for (const Flag& f : specs_)
      if (name == f.name && whole(f.fallback, fallback)) fail(program, "--" + name + " takes a whole number, not '" + v + "'");
    return 0;
  }

  std::vector<Flag> specs_;
  std::map<std::string, std::string> values_;
};

// Fixes the BLAS/OpenMP thread count for this process. Must run before the first BLAS call:
// Debian's pthread OpenBLAS ignores OMP_NUM_THREADS, so it is set through its own API too.
inline void set_threads(int threads) {
  const std::string n = std::to_string(threads);
  setenv("OMP_NUM_THREADS", n.c_str(), 1);
  setenv("OPENBLAS_NUM_THREADS", n.c_str(), 1);
  openblas_set_num_threads(threads);
}

inline double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  if (n == 0) return 0;
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// The machine this runs on (globe::dist::machine_info: CPU, cores, ISA, BLAS, MPI, GPUs), which
// every RESULT line carries: bench/RESULTS.md keeps its figures per machine kind.
inline const nlohmann::json& machine() {
  static const nlohmann::json m = [] {
    nlohmann::json j = nlohmann::json::object();
    for (const auto& [k, v] : globe::dist::machine_info()) j[k] = v;
    return j;
  }();
  return m;
}

// A RESULT line's JSON: the measurement's fields and "machine".
inline std::string result(nlohmann::json fields) {
  fields["machine"] = machine();
  return fields.dump();
}

}  // namespace bench
