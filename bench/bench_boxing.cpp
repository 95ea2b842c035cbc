// Boxing bandwidth: Globe's to_global against the raw MPI collective moving the same bytes, in the
// same run, interleaved. Run with 2 ranks:
//   build/bin/globe-launch --nproc_per_node 2 build/bin/bench_boxing [--reps 31] [--warmup 10]
//       [--mib 1] [--mib2 16]
// Cases, for float32 tensors of --mib and --mib2 MiB (square [n, n]) on placement [0, 1]:
//   P -> B        vs MPI_Allreduce (out of place: Globe keeps its input too)
//   S(0) -> B     vs MPI_Allgather
//   P -> S(0)     vs MPI_Reduce_scatter_block
//   S(0) -> S(1)  vs MPI_Alltoall
//   [0] -> [1]    (B on rank 0 moved to rank 1) vs MPI_Send / MPI_Recv
// plus MPI_Sendrecv (both directions at once) as the point-to-point reference. Bandwidth is the
// logical tensor's bytes / time; time is the slowest rank's, each rep started after a barrier;
// the figure is the median of --reps reps after --warmup. Each case also times the non-blocking
// MPI collective Globe itself issues (MPI_Iallreduce, ... + MPI_Wait), to tell the algorithm's
// cost from Globe's own, and S(0) -> S(1) also against MPI_Alltoallw on the same strided layout
// Globe has to pack (MPI packs it then). Consistency checks are off (a separate, small message).
// Prints a human line and a "RESULT {json}" line per case (rank 0).
//
// First, the fixed cost of one tiny boxing: P -> B of a float32[1] (4 bytes), --tiny-calls calls
// per rep, with divergence fingerprints on and off, against MPI_Allreduce (and MPI_Iallreduce +
// wait) of 4 bytes: per-call microseconds and the fingerprints' overhead (paired ratio).
#include <mpi.h>
#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#else  // without valgrind's headers --count-calls counts nothing
#define CALLGRIND_ZERO_STATS
#define CALLGRIND_TOGGLE_COLLECT
#define CALLGRIND_DUMP_STATS_AT(name) (void)(name)
#endif

#include <cstdio>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <vector>

#include "bench_common.h"
#include "globe/globe.h"

using namespace globe;

namespace {

volatile float g_sink;

// Seconds fn takes on the slowest rank, each rep after a barrier.
double timed_max(const std::function<void()>& fn) {
  MPI_Barrier(MPI_COMM_WORLD);
  const double t0 = MPI_Wtime();
  fn();
  double t = MPI_Wtime() - t0, tmax = 0;
  MPI_Allreduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return tmax;
}

struct Variant {
  std::string name;
  std::function<void()> fn;
};

// Per-variant seconds of every rep, interleaved rep by rep (rotating which goes first), so a burst
// of load from elsewhere hits neighbouring measurements of every variant alike.
struct Times {
  std::vector<std::vector<double>> t;
  double operator[](size_t i) const { return bench::median(t[i]); }
  // Median over reps of t[b] / t[a] (rep by rep: robust to drifting load).
  double paired_ratio(size_t a, size_t b) const {
    std::vector<double> r;
    for (size_t k = 0; k < t[a].size(); ++k) r.push_back(t[b][k] / t[a][k]);
    return bench::median(r);
  }
};

Times measure(const std::vector<Variant>& vs, int reps, int warmup) {
  for (int w = 0; w < warmup; ++w)
    for (const Variant& v : vs) v.fn();
  Times times{std::vector<std::vector<double>>(vs.size())};
  for (int r = 0; r < reps; ++r)
    for (size_t k = 0; k < vs.size(); ++k) {
      const size_t i = (k + size_t(r)) % vs.size();
      times.t[i].push_back(timed_max(vs[i].fn));
    }
  return times;
}

void report(const std::string& name, const std::string& mpi_op, double bytes, const Times& med, int reps) {
  if (dist::world_rank() != 0) return;
  const double globe_s = med[0], mpi_s = med[1], mpi_nb_s = med[2];
  const double gb = 1e-9 * bytes;
  nlohmann::json j = {{"bench", "boxing"},
                      {"case", name},
                      {"mpi_op", mpi_op},
                      {"bytes", bytes},
                      {"ranks", dist::world_size()},
                      {"reps", reps},
                      {"globe_ms", globe_s * 1e3},
                      {"mpi_ms", mpi_s * 1e3},
                      {"globe_GBps", gb / globe_s},
                      {"mpi_GBps", gb / mpi_s},
                      {"ratio", mpi_s / globe_s},
                      {"ratio_paired_median", med.paired_ratio(0, 1)}};
  if (mpi_nb_s > 0) {
    j["mpi_nonblocking_ms"] = mpi_nb_s * 1e3;
    j["mpi_nonblocking_GBps"] = gb / mpi_nb_s;
  }
  std::printf("%-14s %6.1f MiB  globe %7.3f ms %6.2f GB/s | %-24s %7.3f ms %6.2f GB/s | ratio %.3f (paired %.3f)",
              name.c_str(), bytes / 1048576.0, globe_s * 1e3, gb / globe_s, mpi_op.c_str(), mpi_s * 1e3, gb / mpi_s,
              mpi_s / globe_s, med.paired_ratio(0, 1));
  if (mpi_nb_s > 0) std::printf(" | non-blocking %6.2f GB/s", gb / mpi_nb_s);
  std::printf("\nRESULT %s\n", bench::result(j).c_str());
  std::fflush(stdout);
}

void wait(MPI_Request& r) { MPI_Wait(&r, MPI_STATUS_IGNORE); }

void bench_size(int64_t n, int reps, int warmup) {
  const int me = dist::world_rank(), p = dist::world_size();
  const int64_t N = n * n;
  const double bytes = double(N) * 4;
  const Placement all = Placement::all();
  const int cnt = int(N / p);  // n is a multiple of 2p here: every split is even
  std::vector<float> send(size_t(N), 1.0f + float(me)), recv(size_t(N), 0.0f);

  Tensor xp = randn({n, n}, all, sbp::partial_sum);
  Tensor xs0 = randn({n, n}, all, sbp::split(0));
  auto keep = [](const Tensor& t) { g_sink = t.to_local().numel() ? t.to_local().data<float>()[0] : 0.0f; };

  {  // P -> B
    auto med = measure({{"globe", [&] { keep(xp.to_global(sbp::broadcast)); }},
                        {"mpi", [&] { MPI_Allreduce(send.data(), recv.data(), int(N), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); }},
                        {"mpi_nb", [&] {
                           MPI_Request r;
                           MPI_Iallreduce(send.data(), recv.data(), int(N), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &r);
                           wait(r);
                         }}},
                       reps, warmup);
    report("P->B", "MPI_Allreduce", bytes, med, reps);
  }
  {  // S(0) -> B
    auto med = measure({{"globe", [&] { keep(xs0.to_global(sbp::broadcast)); }},
                        {"mpi", [&] { MPI_Allgather(send.data(), cnt, MPI_FLOAT, recv.data(), cnt, MPI_FLOAT, MPI_COMM_WORLD); }},
                        {"mpi_nb", [&] {
                           MPI_Request r;
                           MPI_Iallgather(send.data(), cnt, MPI_FLOAT, recv.data(), cnt, MPI_FLOAT, MPI_COMM_WORLD, &r);
                           wait(r);
                         }}},
                       reps, warmup);
    report("S(0)->B", "MPI_Allgather", bytes, med, reps);
  }
  {  // P -> S(0)
    std::vector<int> counts(size_t(p), cnt);
    auto med = measure({{"globe", [&] { keep(xp.to_global(sbp::split(0))); }},
                        {"mpi", [&] { MPI_Reduce_scatter_block(send.data(), recv.data(), cnt, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); }},
                        {"mpi_nb", [&] {
                           MPI_Request r;
                           MPI_Ireduce_scatter(send.data(), recv.data(), counts.data(), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &r);
                           wait(r);
                         }}},
                       reps, warmup);
    report("P->S(0)", "MPI_Reduce_scatter_block", bytes, med, reps);
  }
  {  // S(0) -> S(1)
    const int per = cnt / p;
    std::vector<int> c(size_t(p), per), d(size_t(p), 0);
    for (int r = 0; r < p; ++r) d[size_t(r)] = r * per;
    // The same exchange on the real layout: member r's piece of an [n/p, n] row block is the
    // column block r, strided; MPI_Alltoallw with a vector type per peer lets MPI gather it.
    const int rows = int(n / p);
    MPI_Datatype column_block, piece;
    MPI_Type_vector(rows, rows, int(n), MPI_FLOAT, &column_block);
    MPI_Type_commit(&column_block);
    MPI_Type_contiguous(rows * rows, MPI_FLOAT, &piece);
    MPI_Type_commit(&piece);
    std::vector<int> ones(size_t(p), 1), sdispl(size_t(p), 0), rdispl(size_t(p), 0);
    std::vector<MPI_Datatype> stypes(size_t(p), column_block), rtypes(size_t(p), piece);
    for (int r = 0; r < p; ++r) {
      sdispl[size_t(r)] = r * rows * 4;         // bytes: column offset in the first row
      rdispl[size_t(r)] = r * rows * rows * 4;  // bytes: row block r of the [n, n/p] result
    }
    auto med = measure({{"globe", [&] { keep(xs0.to_global(sbp::split(1))); }},
                        {"mpi", [&] { MPI_Alltoall(send.data(), per, MPI_FLOAT, recv.data(), per, MPI_FLOAT, MPI_COMM_WORLD); }},
                        {"mpi_nb", [&] {
                           MPI_Request r;
                           MPI_Ialltoallv(send.data(), c.data(), d.data(), MPI_FLOAT, recv.data(), c.data(), d.data(),
                                          MPI_FLOAT, MPI_COMM_WORLD, &r);
                           wait(r);
                         }},
                        {"mpi_strided", [&] {
                           MPI_Alltoallw(send.data(), ones.data(), sdispl.data(), stypes.data(), recv.data(), ones.data(),
                                         rdispl.data(), rtypes.data(), MPI_COMM_WORLD);
                         }}},
                       reps, warmup);
    report("S(0)->S(1)", "MPI_Alltoall", bytes, med, reps);
    if (me == 0) {
      const double gb = 1e-9 * bytes;
      nlohmann::json j = {{"bench", "boxing"}, {"case", "S(0)->S(1) strided reference"}, {"mpi_op", "MPI_Alltoallw"},
                          {"bytes", bytes}, {"ranks", p}, {"reps", reps}, {"mpi_ms", med[3] * 1e3},
                          {"mpi_GBps", gb / med[3]}, {"globe_ms", med[0] * 1e3}, {"globe_GBps", gb / med[0]},
                          {"ratio", med[3] / med[0]}};
      std::printf("%-14s %6.1f MiB  (same layout as Globe's: strided column blocks) %-14s %7.3f ms %6.2f GB/s | "
                  "ratio %.3f\nRESULT %s\n",
                  "S(0)->S(1)", bytes / 1048576.0, "MPI_Alltoallw", med[3] * 1e3, gb / med[3], med[3] / med[0],
                  bench::result(j).c_str());
      std::fflush(stdout);
    }
    MPI_Type_free(&column_block);
    MPI_Type_free(&piece);
  }
  {  // [0] -> [1]
    const Placement p0 = placement("cpu", {0}), p1 = placement("cpu", {1});
    Tensor x0 = randn({n, n}, p0, sbp::broadcast);
    auto med = measure({{"globe", [&] { keep(x0.to_global(p1, sbp::broadcast)); }},
                        {"mpi", [&] {
                           if (me == 0) MPI_Send(send.data(), int(N), MPI_FLOAT, 1, 3, MPI_COMM_WORLD);
                           if (me == 1) MPI_Recv(recv.data(), int(N), MPI_FLOAT, 0, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                         }},
                        {"mpi_nb", [&] {
                           MPI_Request r = MPI_REQUEST_NULL;
                           if (me == 0) MPI_Isend(send.data(), int(N), MPI_FLOAT, 1, 4, MPI_COMM_WORLD, &r);
                           if (me == 1) MPI_Irecv(recv.data(), int(N), MPI_FLOAT, 0, 4, MPI_COMM_WORLD, &r);
                           wait(r);
                         }},
                        // As Globe must: into a new tensor each time (to_global returns one).
                        {"mpi_new_buffer", [&] {
                           if (me == 0) MPI_Send(send.data(), int(N), MPI_FLOAT, 1, 6, MPI_COMM_WORLD);
                           if (me != 1) return;
                           Tensor dst = Tensor::uninitialized({N}, kFloat32);
                           MPI_Recv(dst.data<float>(), int(N), MPI_FLOAT, 0, 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                           keep(dst);
                         }}},
                       reps, warmup);
    report("[0]->[1]", "MPI_Send/MPI_Recv", bytes, med, reps);
    if (me == 0)
      std::printf("[0]->[1]       %6.1f MiB  (MPI_Recv into a new tensor each time, as to_global's output) %7.3f ms "
                  "%6.2f GB/s | ratio %.3f\n",
                  bytes / 1048576.0, med[3] * 1e3, 1e-9 * bytes / med[3], med[3] / med[0]);
  }
  {  // point-to-point reference
    const int peer = me ^ 1;
    auto med = measure({{"mpi", [&] {
                          if (peer < p)
                            MPI_Sendrecv(send.data(), int(N), MPI_FLOAT, peer, 5, recv.data(), int(N), MPI_FLOAT, peer, 5,
                                         MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                        }}},
                       reps, warmup);
    if (me == 0) {
      const double gb = 1e-9 * bytes;
      nlohmann::json j = {{"bench", "boxing"}, {"case", "sendrecv"}, {"mpi_op", "MPI_Sendrecv"}, {"bytes", bytes},
                          {"ranks", p},        {"reps", reps},       {"mpi_ms", med[0] * 1e3}, {"mpi_GBps", gb / med[0]}};
      std::printf("%-14s %6.1f MiB  %-24s %7.3f ms %6.2f GB/s (each direction)\nRESULT %s\n", "p2p", bytes / 1048576.0,
                  "MPI_Sendrecv", med[0] * 1e3, gb / med[0], bench::result(j).c_str());
      std::fflush(stdout);
    }
  }
}

// The 4-byte P -> B and its MPI references, `calls` calls each: Globe with fingerprints on and
// off, MPI_Allreduce, MPI_Iallreduce + wait.
std::vector<Variant> tiny_variants(int calls) {
  struct State {
    Tensor xp = ones({1}, Placement::all(), sbp::broadcast).to_global(sbp::partial_sum);
    float in = 1.0f, out = 0.0f;
  };
  auto s = std::make_shared<State>();
  auto globe_calls = [s, calls](bool fp) {
    dist::set_fingerprints(fp);  // every rank runs the variants in the same order
    for (int i = 0; i < calls; ++i) g_sink = s->xp.to_global(sbp::broadcast).to_local().data<float>()[0];
    dist::set_fingerprints(true);
  };
  return {{"globe_fp", [=] { globe_calls(true); }},
          {"globe_nofp", [=] { globe_calls(false); }},
          {"mpi", [=] {
             for (int i = 0; i < calls; ++i) MPI_Allreduce(&s->in, &s->out, 1, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
           }},
          {"mpi_nb", [=] {
             for (int i = 0; i < calls; ++i) {
               MPI_Request r;
               MPI_Iallreduce(&s->in, &s->out, 1, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &r);
               wait(r);
             }
           }}};
}

// Instructions per call of each tiny variant, for callgrind (bench/count_tiny.sh runs rank 0 under
// `valgrind --tool=callgrind --collect-atstart=no` and rank 1 natively, so that rank 0 finds its
// peer's data already there and hardly polls): each variant runs 10 calls uncounted, then
// `calls` calls counted and dumped as a profile named after it. Natively the requests do nothing.
void count_tiny(int calls) {
  const std::vector<Variant> warm = tiny_variants(10), counted = tiny_variants(calls);
  for (size_t i = 0; i < counted.size(); ++i) {
    warm[i].fn();
    MPI_Barrier(MPI_COMM_WORLD);
    CALLGRIND_ZERO_STATS;
    CALLGRIND_TOGGLE_COLLECT;
    counted[i].fn();
    CALLGRIND_TOGGLE_COLLECT;
    CALLGRIND_DUMP_STATS_AT(counted[i].name.c_str());
  }
}

void bench_tiny(int calls, int reps, int warmup) {
  auto med = measure(tiny_variants(calls), reps, warmup);
  if (dist::world_rank() != 0) return;
  const double us = 1e6 / calls;
  const double overhead = med.paired_ratio(1, 0);  // fp / nofp, rep by rep
  nlohmann::json j = {{"bench", "boxing"},          {"case", "P->B tiny"},
                      {"bytes", 4},                 {"ranks", dist::world_size()},
                      {"calls_per_rep", calls},     {"reps", reps},
                      {"globe_fp_us", med[0] * us}, {"globe_nofp_us", med[1] * us},
                      {"mpi_us", med[2] * us},      {"mpi_nb_us", med[3] * us},
                      {"fp_over_nofp", overhead},   {"mpi_over_globe_fp", med.paired_ratio(0, 2)}};
  std::printf("%-14s 4 B: globe %.2f us/call (fingerprints off %.2f; on/off %.3f, paired) | MPI_Allreduce %.2f us, "
              "MPI_Iallreduce+wait %.2f us | ratio MPI/globe %.3f\nRESULT %s\n",
              "P->B tiny", med[0] * us, med[1] * us, overhead, med[2] * us, med[3] * us, med.paired_ratio(0, 2),
              bench::result(j).c_str());
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  bench::Flags f(argc, argv,
                 "bench_boxing: Globe's to_global against the raw MPI collective moving the same bytes "
                 "(2 ranks: globe-launch --nproc_per_node 2 bench_boxing)",
                 {{"reps", "31", "timed repetitions per case (the median counts)"},
                  {"warmup", "10", "untimed repetitions first"},
                  {"mib", "1", "the first tensor size, MiB"},
                  {"mib2", "16", "the second tensor size, MiB"},
                  {"threads", "1", "BLAS threads per process"},
                  {"tiny-calls", "200", "calls per repetition of the 4-byte P -> B (0: skip it)"},
                  {"count-calls", "0", "only count instructions of that many 4-byte calls per variant, "
                                      "for callgrind (bench/count_tiny.sh)"}});
  bench::set_threads(int(f["threads"]));
  if (dist::world_size() != 2) {
    std::fprintf(stderr, "bench_boxing: run with 2 ranks (globe-launch --nproc_per_node 2), got %d\n",
                 dist::world_size());
    return 2;
  }
  dist::set_consistency_checks(false);
  if (f["count-calls"] > 0) {
    count_tiny(int(f["count-calls"]));
    return 0;
  }
  if (f["tiny-calls"] > 0) bench_tiny(int(f["tiny-calls"]), int(f["reps"]), int(f["warmup"]));
  for (long mib : {f["mib"], f["mib2"]}) {
    if (mib <= 0) continue;
    // Square float32 [n, n] of `mib` MiB: n = 512 * sqrt(mib); 1 -> 512, 4 -> 1024, 16 -> 2048.
    int64_t n = 512;
    while (n * n * 4 < mib * 1048576) n *= 2;
    bench_size(n, int(f["reps"]), int(f["warmup"]));
  }
  return 0;
}
