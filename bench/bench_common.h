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

// "--name value" or "--name=value" flags with integer values; unknown flags are an error.
class Flags {
 public:
  Flags(int argc, char** argv, std::map<std::string, long> defaults) : values_(std::move(defaults)) {
    for (int i = 1; i < argc; ++i) {
      std::string a = argv[i];
      if (a == "--help" || a == "-h") {
        std::printf("flags (default):");
        for (auto& [k, v] : values_) std::printf(" --%s (%ld)", k.c_str(), v);
        std::printf("\n");
        std::exit(0);
      }
      if (a.rfind("--", 0) != 0) throw std::invalid_argument("unexpected argument " + a);
      std::string name = a.substr(2), value;
      if (auto eq = name.find('='); eq != std::string::npos) {
        value = name.substr(eq + 1);
        name = name.substr(0, eq);
      } else {
        if (i + 1 >= argc) throw std::invalid_argument("flag --" + name + " needs a value");
        value = argv[++i];
      }
      if (!values_.count(name)) throw std::invalid_argument("unknown flag --" + name);
      values_[name] = std::stol(value);
    }
  }
  long operator[](const std::string& name) const { return values_.at(name); }

 private:
  std::map<std::string, long> values_;
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
