#include "globe/dist/machine.h"

#include <mpi.h>
#include <sched.h>

#include <fstream>
#include <sstream>

#include "globe/device/device.h"
#include "globe/kernels/blas_info.h"

namespace globe::dist {

namespace {

// The first /proc/cpuinfo line starting with `key`, after its colon; "" where there is none.
std::string cpuinfo(const std::string& key) {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);)
    if (line.rfind(key, 0) == 0) {
      const size_t colon = line.find(':');
      if (colon == std::string::npos) continue;
      const size_t start = line.find_first_not_of(' ', colon + 1);
      return start == std::string::npos ? "" : line.substr(start);
    }
  return "";
}

bool has_flag(const std::string& flags, const std::string& flag) {
  return (" " + flags + " ").find(" " + flag + " ") != std::string::npos;
}

std::string isa() {
#if defined(__x86_64__)
  const std::string flags = cpuinfo("flags");
  // vector_clones.h: the x86-64-v3 copies run where the CPU has AVX2 and FMA.
  std::string s = has_flag(flags, "avx2") && has_flag(flags, "fma") ? "x86-64-v3 (AVX2, FMA)" : "x86-64 (SSE2)";
  std::string beyond;
  for (const auto& [flag, name] : {std::pair<const char*, const char*>{"avx512f", "AVX-512"}, {"avx512_bf16", "AVX-512 BF16"},
                                   {"amx_tile", "AMX"}})
    if (has_flag(flags, flag)) beyond += (beyond.empty() ? "" : ", ") + std::string(name);
  return beyond.empty() ? s : s + "; the CPU also has " + beyond;
#else
  return "not x86-64";
#endif
}

std::string mpi_version() {
  char v[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int len = 0;
  if (MPI_Get_library_version(v, &len) != MPI_SUCCESS) return "unknown";
  std::string s(v, size_t(len));
  const size_t cut = s.find_first_of(",\n");  // "Open MPI v4.1.4, package: ..." -> its first words
  return s.substr(0, cut);
}

}  // namespace

std::vector<std::pair<std::string, std::string>> machine_info() {
  cpu_set_t set;
  CPU_ZERO(&set);
  const int cores = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 0;
  return {{"cpu", cpuinfo("model name")},
          {"cores", std::to_string(cores)},
          {"isa", isa()},
          {"blas", kernels::blas_description()},
          {"mpi", mpi_version()},
          {"gpus", std::to_string(accelerator_count())}};
}

}  // namespace globe::dist
