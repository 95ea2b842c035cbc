#include "globe/kernels/cpu/blas_core.h"
#include "globe/kernels/blas_info.h"

#include <cblas.h>
#include <dlfcn.h>
#include <strings.h>

#include <cstdlib>
#include <sstream>

namespace globe::kernels {

namespace {

int level_of_core(const char* core) {
  static constexpr std::pair<const char*, int> kLevels[] = {
      {"sandybridge", 1}, {"bulldozer", 1}, {"piledriver", 1}, {"steamroller", 1}, {"excavator", 2},
      {"haswell", 2},     {"zen", 2},       {"skylakex", 3},   {"cooperlake", 4}, {"sapphirerapids", 4}};
  for (const auto& [name, level] : kLevels)
    if (strcasecmp(core, name) == 0) return level;
  return 0;  // Prescott, Core2, Nehalem, ...: SSE only
}

int level_of_cpu() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512cd") &&
                      __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
                      __builtin_cpu_supports("avx512vl");
  if (avx512 && __builtin_cpu_supports("avx512bf16")) return 4;
  if (avx512) return 3;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return 2;
  if (__builtin_cpu_supports("avx")) return 1;
#endif
  return 0;
}

// OpenBLAS's name of the best kernel set for `level`, and the symbol that holds it.
std::pair<const char*, const char*> best_core(int level) {
  switch (level) {
    case 4: return {"Cooperlake", "gotoblas_COOPERLAKE"};
    case 3: return {"SkylakeX", "gotoblas_SKYLAKEX"};
    case 2: return {"Haswell", "gotoblas_HASWELL"};
    case 1: return {"Sandybridge", "gotoblas_SANDYBRIDGE"};
    default: return {nullptr, nullptr};
  }
}

int best_level() {
  int level = level_of_cpu();
  while (level > 0 && !dlsym(RTLD_DEFAULT, best_core(level).second)) --level;  // a build without that set
  return level;
}

// Runs OpenBLAS's selection again with OPENBLAS_CORETYPE set where its first choice uses less of
// the CPU than a kernel set the library holds. Only a DYNAMIC_ARCH build exports the selection
// (gotoblas_dynamic_init / _quit), so they are looked up, not linked. At load, before any BLAS call.
//
// OpenBLAS's own threads run by then (started as it loaded), and each, as it starts, allocates its
// buffer; the first allocation of the process runs the selection too (blas_memory_alloc calls
// gotoblas_dynamic_init while its memory is not yet initialised), which picks again whenever it
// finds no kernel table. A thread that started late, in the moment between quit and init here,
// put its own pick in, and the check below then emptied the table under its call: SIGSEGV at
// start-up, about once in 700 starts on a busy machine. So the memory is initialised first (one
// buffer taken and given back, under OpenBLAS's own lock): from then on no thread enters the
// selection, and the table is empty only while this thread, alone, chooses.
std::string choose() {
  const char* keep = std::getenv("GLOBE_BLAS_CORE");
  if (std::getenv("OPENBLAS_CORETYPE") || (keep && std::string(keep) == "keep")) return "";
  using Fn = void (*)();
  const auto init = reinterpret_cast<Fn>(dlsym(RTLD_DEFAULT, "gotoblas_dynamic_init"));
  const auto quit = reinterpret_cast<Fn>(dlsym(RTLD_DEFAULT, "gotoblas_dynamic_quit"));
  const auto alloc = reinterpret_cast<void* (*)(int)>(dlsym(RTLD_DEFAULT, "blas_memory_alloc"));
  const auto release = reinterpret_cast<void (*)(void*)>(dlsym(RTLD_DEFAULT, "blas_memory_free"));
  const std::string picked = openblas_get_corename();
  const int level = best_level();
  if (!init || !quit || !alloc || !release || level_of_core(picked.c_str()) >= level) return "";
  release(alloc(0));  // OpenBLAS's memory initialised: its threads no longer run the selection
  const char* name = best_core(level).first;
  setenv("OPENBLAS_CORETYPE", name, 1);
  quit();
  init();
  unsetenv("OPENBLAS_CORETYPE");
  if (strcasecmp(openblas_get_corename(), name) == 0) return "chosen by Globe: OpenBLAS picked " + picked + " for this CPU";
  quit();  // it did not take: OpenBLAS's own choice again
  init();
  return "";
}

const std::string& note() {
  static const std::string n = choose();
  return n;
}

// At load: before the program's first product (and a benchmark's own cblas calls).
[[maybe_unused]] const bool chosen_at_load = (note(), true);

}  // namespace

const std::string& blas_core_note() { return note(); }
int blas_core_level(const char* core) { return level_of_core(core); }
int blas_best_level() { return best_level(); }

std::string blas_description() {
  std::ostringstream blas;
  blas << openblas_get_config() << "; core " << openblas_get_corename();
  if (!blas_core_note().empty()) blas << " (" << blas_core_note() << ")";
  return blas.str();
}

}  // namespace globe::kernels
