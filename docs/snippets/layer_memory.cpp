// Page 03: what Module::distribute costs in memory. Every rank builds the whole Linear(in, out)
// before it keeps its slice, so each rank's peak holds the whole layer (and a little more while
// it is laid out). Each rank prints its tensor bytes: the layer's size, its peak, what it keeps.
//
//   build/bin/globe-launch --nproc_per_node 2 build/bin/layer_memory [--in 4096] [--out 8192]
#include <cstdlib>
#include <cstring>
#include <iostream>

#include <globe/globe.h>

namespace {
int64_t flag(int argc, char** argv, const char* name, int64_t fallback) {
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], name) == 0) return std::atoll(argv[i + 1]);
  return fallback;
}
double mib(int64_t bytes) {
  return double(bytes) / (1 << 20);
}
}  // namespace

int main(int argc, char** argv) {
  namespace sbp = globe::sbp;
  const int64_t in = flag(argc, argv, "--in", 4096), out = flag(argc, argv, "--out", 8192);
  const auto p = globe::Placement::all("cpu");
  globe::manual_seed(0);
  globe::reset_peak_memory();
  const int64_t before = globe::memory_stats().current_bytes;

  globe::nn::Linear linear(in, out);  // the whole layer, on every rank
  const int64_t whole = globe::memory_stats().current_bytes - before;
  linear.distribute(p, {{"weight", sbp::split(0)}, {"bias", sbp::split(0)}}, sbp::broadcast);

  const globe::MemoryStats m = globe::memory_stats();
  std::cout << "rank " << globe::dist::world_rank() << ": Linear(" << in << ", " << out << ") is "
            << mib(whole) << " MiB; peak " << mib(m.peak_bytes - before) << " MiB; kept "
            << mib(m.current_bytes - before) << " MiB" << std::endl;
  return 0;
}
