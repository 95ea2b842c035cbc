// The communicator layer (globe/dist): every method of Communicator on float32, float64 and int64
// with exact values, uneven (and zero) counts, subset groups, the group cache and its errors.
// Runs with 1 process (the group of one) and under globe-launch with 2 and 4 ranks.
#include <cblas.h>
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <functional>
#include <thread>

#include "globe/globe.h"
#include "globe/kernels/cpu/blas_core.h"
#include "test_util.h"

namespace globe {
namespace {

using testing::error_of;
using testing::me;
using testing::world;

using dist::Communicator;


std::vector<int> first_ranks(int n) {
  std::vector<int> r(n);
  for (int i = 0; i < n; ++i) r[i] = i;
  return r;
}

Communicator& world_comm() { return dist::group(first_ranks(world())); }

const std::vector<DType> kDtypes = {kFloat32, kFloat64, kInt64};

// A 1-D tensor of `dtype` holding exactly the (integral, small) values `v`.
Tensor make(const std::vector<int64_t>& v, DType dtype) {
  Tensor t = from_vector(v, {int64_t(v.size())});
  return dtype == kInt64 ? t : to_dtype(t, dtype);
}

// The values of a local tensor, exactly (they are integers below 2^24).
std::vector<int64_t> values(const Tensor& t) {
  std::vector<int64_t> out;
  for (double x : t.to_vector<double>()) out.push_back(int64_t(x));
  return out;
}


// Runs `fn` on the world communicator and on every subset group this rank belongs to: {0},
// the reversed world and, with 4 ranks, the pairs {1, 3} and {2, 0}.
void for_each_group(const std::function<void(Communicator&, const std::string&)>& fn) {
  std::vector<std::vector<int>> groups = {first_ranks(world())};
  std::vector<int> rev = first_ranks(world());
  std::reverse(rev.begin(), rev.end());
  if (world() > 1) groups.push_back(rev);
  groups.push_back({0});
  if (world() >= 4) {
    groups.push_back({1, 3});
    groups.push_back({2, 0});
  }
  for (const auto& g : groups) {
    if (std::find(g.begin(), g.end(), me()) == g.end()) continue;
    std::string name = "group [";
    for (size_t i = 0; i < g.size(); ++i) name += (i ? ", " : "") + std::to_string(g[i]);
    fn(dist::group(g), name + "]");
  }
}

TEST(Communicator, RankSizeMembers) {
  Communicator& c = world_comm();
  EXPECT_EQ(c.size(), world());
  EXPECT_EQ(c.rank(), me());
  EXPECT_EQ(c.world_ranks(), first_ranks(world()));
  if (world() >= 2 && me() < 2) {
    Communicator& r = dist::group({1, 0});
    EXPECT_EQ(r.size(), 2);
    EXPECT_EQ(r.world_ranks(), (std::vector<int>{1, 0}));
    EXPECT_EQ(r.rank(), 1 - me());  // group order, not world order
  }
}

TEST(Communicator, GroupIsCached) {
  Communicator& a = world_comm();
  Communicator& b = dist::group(first_ranks(world()));
  EXPECT_EQ(&a, &b);
  Communicator& one = dist::group({me()});
  EXPECT_EQ(&one, &dist::group({me()}));
  EXPECT_EQ(one.size(), 1);
  EXPECT_EQ(one.rank(), 0);
  if (world() >= 2 && me() < 2) {
    EXPECT_EQ(&dist::group({1, 0}), &dist::group({1, 0}));
    EXPECT_NE(&dist::group({1, 0}), &dist::group({0, 1}));  // order is part of the key
  }
}

TEST(Communicator, AllReduceSum) {
  for_each_group([](Communicator& c, const std::string& g) {
    const int n = c.size();
    for (DType dt : kDtypes) {
      // Member r holds (r + 1) * (i + 1); the sum is n(n+1)/2 * (i + 1).
      std::vector<int64_t> v, want;
      for (int64_t i = 0; i < 5; ++i) {
        v.push_back((c.rank() + 1) * (i + 1));
        want.push_back(int64_t(n) * (n + 1) / 2 * (i + 1));
      }
      Tensor t = make(v, dt);
      c.all_reduce_sum(t);
      EXPECT_EQ(values(t), want) << g << " " << dtype_name(dt);
      EXPECT_EQ(t.dtype(), dt);
    }
  });
}

TEST(Communicator, AllGatherVUnevenWithZeros) {
  for_each_group([](Communicator& c, const std::string& g) {
    const int n = c.size();
    // Count patterns: uneven with member 0 empty, all but the last empty, even.
    std::vector<std::vector<int64_t>> patterns;
    std::vector<int64_t> uneven(n), last_only(n, 0), even(n, 2);
    for (int r = 0; r < n; ++r) uneven[r] = r == 0 ? 0 : r + 1;
    last_only[n - 1] = 3;
    patterns = {uneven, last_only, even};
    for (const auto& counts : patterns)
      for (DType dt : kDtypes) {
        std::vector<int64_t> mine, want;
        for (int64_t i = 0; i < counts[c.rank()]; ++i) mine.push_back(100 * c.rank() + i + 1);
        for (int r = 0; r < n; ++r)
          for (int64_t i = 0; i < counts[r]; ++i) want.push_back(100 * r + i + 1);
        Tensor out = Tensor::empty({int64_t(want.size())}, dt);
        c.all_gather_v(make(mine, dt), out, counts);
        EXPECT_EQ(values(out), want) << g << " " << dtype_name(dt) << " counts[0]=" << counts[0];
      }
  });
}

TEST(Communicator, ReduceScatterVUneven) {
  for_each_group([](Communicator& c, const std::string& g) {
    const int n = c.size();
    std::vector<int64_t> counts(n);
    for (int r = 0; r < n; ++r) counts[r] = (r + 2) % 3;  // 2, 0, 1, 2, ...
    for (DType dt : kDtypes) {
      // Chunk m element i on member r is (r + 1) * (1000 m + i); member m receives
      // n(n+1)/2 * (1000 m + i).
      std::vector<int64_t> in;
      for (int m = 0; m < n; ++m)
        for (int64_t i = 0; i < counts[m]; ++i) in.push_back((c.rank() + 1) * (1000 * m + i));
      std::vector<int64_t> want;
      for (int64_t i = 0; i < counts[c.rank()]; ++i) want.push_back(int64_t(n) * (n + 1) / 2 * (1000 * c.rank() + i));
      Tensor send = make(in, dt);
      Tensor out = Tensor::empty({counts[c.rank()]}, dt);
      c.reduce_scatter_v(send, out, counts);
      EXPECT_EQ(values(out), want) << g << " " << dtype_name(dt);
      EXPECT_EQ(values(send), in) << g << " " << dtype_name(dt) << ": the input changed";
    }
  });
}

TEST(Communicator, AllToAllVUneven) {
  for_each_group([](Communicator& c, const std::string& g) {
    const int n = c.size(), r = c.rank();
    // Member s sends (s + d) % 3 elements to member d: value 10000 s + 100 d + i.
    auto count = [](int s, int d) { return int64_t((s + d) % 3); };
    for (DType dt : kDtypes) {
      std::vector<int64_t> send, send_counts, recv_counts, want;
      for (int d = 0; d < n; ++d) {
        send_counts.push_back(count(r, d));
        for (int64_t i = 0; i < count(r, d); ++i) send.push_back(10000 * r + 100 * d + i);
      }
      for (int s = 0; s < n; ++s) {
        recv_counts.push_back(count(s, r));
        for (int64_t i = 0; i < count(s, r); ++i) want.push_back(10000 * s + 100 * r + i);
      }
      Tensor out = Tensor::empty({int64_t(want.size())}, dt);
      c.all_to_all_v(make(send, dt), send_counts, out, recv_counts);
      EXPECT_EQ(values(out), want) << g << " " << dtype_name(dt);
    }
  });
}

// Large reductions take the point-to-point ring inside MpiCommunicator (256 KiB and up): uneven
// and empty chunks, every dtype, exact values (integers, exactly representable in float32).
TEST(Communicator, LargeReductionsOnTheRing) {
  for_each_group([](Communicator& c, const std::string& g) {
    const int n = c.size();
    const int64_t factor = int64_t(n) * (n + 1) / 2;
    auto v = [](int64_t chunk, int64_t i) { return (7 * chunk + i) % 1000; };
    for (DType dt : kDtypes) {
      // all-reduce of an element count that does not divide by the group size
      const int64_t len = 300001;
      std::vector<int64_t> mine(len), want(len);
      for (int64_t i = 0; i < len; ++i) {
        mine[size_t(i)] = (c.rank() + 1) * v(0, i);
        want[size_t(i)] = factor * v(0, i);
      }
      Tensor t = make(mine, dt);
      c.all_reduce_sum(t);
      EXPECT_EQ(values(t), want) << g << " " << dtype_name(dt) << ": all-reduce";
      // reduce-scatter: member 0's chunk empty, the others uneven
      std::vector<int64_t> counts(n);
      for (int r = 0; r < n; ++r) counts[size_t(r)] = r == 0 && n > 1 ? 0 : 70001 * (r + 1) + r;
      std::vector<int64_t> in, expect;
      for (int m = 0; m < n; ++m)
        for (int64_t i = 0; i < counts[size_t(m)]; ++i) in.push_back((c.rank() + 1) * v(m, i));
      for (int64_t i = 0; i < counts[size_t(c.rank())]; ++i) expect.push_back(factor * v(c.rank(), i));
      Tensor send = make(in, dt), out = Tensor::empty({counts[size_t(c.rank())]}, dt);
      c.reduce_scatter_v(send, out, counts);
      EXPECT_EQ(values(out), expect) << g << " " << dtype_name(dt) << ": reduce-scatter";
      EXPECT_EQ(values(send), in) << g << " " << dtype_name(dt) << ": reduce-scatter changed its input";
    }
  });
}

// All-reduces started without waiting, of every size (stamped, Open MPI's, the ring), run beside
// blocking collectives on the same communicator and each other, moved on by test() in any
// interleaving, and all come out right: the ring's steps are tagged by their collective.
TEST(Communicator, StartedAllReducesBesideBlockingOnes) {
  for_each_group([](Communicator& c, const std::string& g) {
    const int n = c.size();
    const int64_t factor = int64_t(n) * (n + 1) / 2;
    for (DType dt : kDtypes) {
      std::vector<Tensor> started;
      std::vector<std::vector<int64_t>> want;
      std::vector<dist::Request> reqs;
      for (int64_t len : {int64_t(3), int64_t(20001), int64_t(300001), int64_t(5)}) {
        std::vector<int64_t> mine(static_cast<size_t>(len)), sum(static_cast<size_t>(len));
        for (int64_t i = 0; i < len; ++i) {
          mine[size_t(i)] = (c.rank() + 1) * (i % 997);
          sum[size_t(i)] = factor * (i % 997);
        }
        started.push_back(make(mine, dt));
        want.push_back(sum);
        reqs.push_back(c.start_all_reduce_sum(started.back()));
        // A blocking ring all-reduce of the same size in between, and some progress.
        Tensor now = make(mine, dt);
        c.all_reduce_sum(now);
        EXPECT_EQ(values(now), sum) << g << " " << dtype_name(dt) << ": blocking beside started, " << len;
        for (dist::Request& r : reqs) r.test();
      }
      for (size_t k = reqs.size(); k-- > 0;) reqs[k].wait();  // finished in reverse order
      for (size_t k = 0; k < started.size(); ++k)
        EXPECT_EQ(values(started[k]), want[k]) << g << " " << dtype_name(dt) << ": started all-reduce " << k;
    }
  });
}

// With fingerprints off, small all-reduces over 2 or 4 members go by recursive doubling (point to
// point; other counts take Open MPI's): the sums are right, every member holds the same bits,
// started or blocking, beside a large one on the ring (1, 2 and 4 ranks; the subgroups of 1 and 2
// members too).
TEST(Communicator, SmallAllReducesWithoutFingerprintsAgreeToTheBit) {
  dist::set_fingerprints(false);
  for_each_group([](Communicator& c, const std::string& g) {
    const int n = c.size();
    for (DType dt : {kFloat32, kFloat64, kBFloat16}) {
      std::vector<Tensor> got;
      std::vector<std::vector<double>> want;
      std::vector<dist::Request> reqs;
      for (int64_t len : {int64_t(1), int64_t(7), int64_t(16384), int64_t(16385), int64_t(70000)}) {
        // Member r holds sin(1 + 0.37 r + 0.011 i): sums that round differently in other orders.
        std::vector<double> mine(size_t(len), 0.0), sum(size_t(len), 0.0);
        for (int64_t i = 0; i < len; ++i) {
          mine[size_t(i)] = std::sin(1.0 + 0.37 * c.rank() + 0.011 * double(i));
          for (int r = 0; r < n; ++r) sum[size_t(i)] += std::sin(1.0 + 0.37 * r + 0.011 * double(i));
        }
        got.push_back(to_dtype(from_vector(mine, {len}), dt));
        want.push_back(sum);
        if (len % 2) reqs.push_back(c.start_all_reduce_sum(got.back()));
        else c.all_reduce_sum(got.back());
        Tensor big = to_dtype(from_vector(std::vector<double>(300001, double(c.rank())), {300001}), dt);
        c.all_reduce_sum(big);  // the ring beside them
      }
      for (dist::Request& r : reqs) r.wait();
      const double tol = dt == kBFloat16 ? 0.05 : 1e-5;
      for (size_t k = 0; k < got.size(); ++k) {
        const std::vector<double> v = to_dtype(got[k], kFloat64).to_vector<double>();
        for (size_t i = 0; i < v.size(); ++i)
          ASSERT_NEAR(v[i], want[k][i], tol * n) << g << " " << dtype_name(dt) << " all-reduce " << k << " element " << i;
        // Every member's result, gathered: the same bits everywhere.
        const int64_t len = got[k].numel();
        Tensor all = Tensor::empty({len * n}, dt);
        c.all_gather_v(got[k], all, std::vector<int64_t>(size_t(n), len));
        const std::vector<double> every = to_dtype(all, kFloat64).to_vector<double>();
        for (int r = 1; r < n; ++r)
          for (int64_t i = 0; i < len; ++i)
            ASSERT_EQ(every[size_t(r * len + i)], every[size_t(i)])
                << g << " " << dtype_name(dt) << " all-reduce " << k << ": member " << r << " differs at " << i;
      }
    }
  });
  dist::set_fingerprints(true);
}

// Started all-gathers (ZeRO-3's prefetch): small (stamped, done at once) and large (in flight), with
// blocking collectives issued in between, test() now and then, finished in reverse order.
TEST(Communicator, StartedAllGathersBesideBlockingOnes) {
  for_each_group([](Communicator& c, const std::string& g) {
    const int n = c.size();
    for (DType dt : kDtypes) {
      std::vector<Tensor> outs;
      std::vector<std::vector<int64_t>> want;
      std::vector<dist::Request> reqs;
      for (int64_t per : {int64_t(3), int64_t(40001)}) {
        std::vector<int64_t> counts(static_cast<size_t>(n)), mine, all;
        for (int r = 0; r < n; ++r) counts[size_t(r)] = per + r;  // uneven
        for (int r = 0; r < n; ++r)
          for (int64_t i = 0; i < counts[size_t(r)]; ++i) {
            all.push_back(r * 7 + i % 1009);
            if (r == c.rank()) mine.push_back(r * 7 + i % 1009);
          }
        outs.push_back(Tensor::empty({int64_t(all.size())}, dt));
        want.push_back(all);
        reqs.push_back(c.start_all_gather_v(make(mine, dt), outs.back(), counts));
        Tensor now = make({c.rank() + 1}, dt);
        c.all_reduce_sum(now);
        EXPECT_EQ(values(now), std::vector<int64_t>{int64_t(n) * (n + 1) / 2}) << g << ": blocking beside started";
        for (dist::Request& r : reqs) r.test();
      }
      for (size_t k = reqs.size(); k-- > 0;) reqs[k].wait();
      for (size_t k = 0; k < outs.size(); ++k)
        EXPECT_EQ(values(outs[k]), want[k]) << g << " " << dtype_name(dt) << ": started all-gather " << k;
    }
  });
}

// OpenBLAS's kernels use the CPU's widest vector ISA that the library holds kernels for: where its
// own pick used less (Prescott on an Emerald Rapids), Globe chose again at load (kernels/cpu/blas_core.h).
TEST(Machine, BlasKernelsUseTheCpusVectorIsa) {
  if (std::getenv("OPENBLAS_CORETYPE") || std::getenv("GLOBE_BLAS_CORE")) GTEST_SKIP() << "the kernels were chosen by hand";
  if (!dlsym(RTLD_DEFAULT, "gotoblas_dynamic_init")) GTEST_SKIP() << "OpenBLAS without DYNAMIC_ARCH: one kernel set";
  const std::string core = openblas_get_corename();
  const std::string note = kernels::blas_core_note();
  EXPECT_GE(kernels::blas_core_level(core.c_str()), kernels::blas_best_level()) << core << "; " << note;
  const auto info = dist::machine_info();
  for (const auto& [k, v] : info) {
    if (k == "blas") {
      EXPECT_NE(v.find("core " + core + (note.empty() ? "" : " (" + note + ")")), std::string::npos) << v;
    }
  }
}

// What a benchmark's RESULT says of the machine: the six fields, in order, filled from this one.
TEST(Machine, NamesTheCpuCoresIsaBlasMpiAndGpus) {
  const auto info = dist::machine_info();
  std::vector<std::string> keys;
  for (const auto& [k, v] : info) keys.push_back(k);
  EXPECT_EQ(keys, (std::vector<std::string>{"cpu", "cores", "isa", "blas", "mpi", "gpus"}));
  const auto value = [&](const std::string& k) {
    for (const auto& [key, v] : info)
      if (key == k) return v;
    return std::string();
  };
  EXPECT_GE(std::stoi(value("cores")), 1);
  EXPECT_EQ(value("blas").rfind("OpenBLAS", 0), 0u) << value("blas");
  EXPECT_EQ(value("mpi").rfind("Open MPI v", 0), 0u) << value("mpi");
  EXPECT_EQ(value("gpus"), std::to_string(cuda_device_count()));
#if defined(__x86_64__)
  EXPECT_EQ(value("isa").rfind("x86-64", 0), 0u) << value("isa");
#endif
}

// exchange: member r sends member s a piece of s * 10 + r + 1 elements holding r * 1000 + s (the
// own piece untouched), then a piece whose size the receiver does not expect is an error naming
// both sizes, and the communicator goes on working.
TEST(Communicator, ExchangeOfSeparatePieces) {
  for_each_group([](Communicator& c, const std::string& g) {
    const int p = c.size(), r = c.rank();
    for (DType dt : kDtypes) {
      std::vector<Tensor> send(static_cast<size_t>(p)), recv(static_cast<size_t>(p));
      for (int s = 0; s < p; ++s) {
        send[size_t(s)] = make(std::vector<int64_t>(size_t(s * 10 + r + 1), r * 1000 + s), dt);
        recv[size_t(s)] = make(std::vector<int64_t>(size_t(r * 10 + s + 1), -1), dt);
      }
      c.exchange(send, recv);
      for (int s = 0; s < p; ++s) {
        const int64_t want = s == r ? -1 : s * 1000 + r;  // this member's own slot is not touched
        EXPECT_EQ(values(recv[size_t(s)]), std::vector<int64_t>(size_t(r * 10 + s + 1), want))
            << g << " " << dtype_name(dt) << " from member " << s;
      }
    }
  });
  if (world() < 2) return;
  Communicator& c = world_comm();
  std::vector<Tensor> send(static_cast<size_t>(world())), recv(static_cast<size_t>(world()));
  for (int s = 0; s < world(); ++s) {
    send[size_t(s)] = make(std::vector<int64_t>(me() == 1 ? 3 : 2, 7), kInt64);  // member 1 sends 3
    recv[size_t(s)] = make(std::vector<int64_t>(2, 0), kInt64);
  }
  if (me() == 1) {
    c.exchange(send, recv);  // its own pieces arrive as expected
  } else {
    const std::string msg = error_of([&] { c.exchange(send, recv); });
    EXPECT_NE(msg.find("[exchange] rank 1 sent 3 elements where 2 were expected"), std::string::npos) << msg;
  }
  // A member with no tensor for another (where an empty one belongs) is refused before anything
  // is sent: every member must take part in every exchange, a GPU group's path decision included.
  send[size_t((me() + 1) % world())] = Tensor();
  const std::string none = error_of([&] { c.exchange(send, recv); });
  EXPECT_NE(none.find("[exchange] member " + std::to_string(me()) + " has no send tensor for member " +
                      std::to_string((me() + 1) % world()) + ": pass an empty one (0 elements)"),
            std::string::npos)
      << none;
  Tensor t = make({1}, kInt64);
  c.all_reduce_sum(t);
  EXPECT_EQ(values(t), std::vector<int64_t>{world()});
}

TEST(Communicator, BroadcastFromEveryRoot) {
  for_each_group([](Communicator& c, const std::string& g) {
    for (int root = 0; root < c.size(); ++root)
      for (DType dt : kDtypes) {
        Tensor t = make({7 + c.rank(), -3 * c.rank(), 1000 + c.rank()}, dt);
        c.broadcast(t, root);
        EXPECT_EQ(values(t), (std::vector<int64_t>{7 + root, -3 * root, 1000 + root}))
            << g << " root " << root << " " << dtype_name(dt);
      }
  });
}

TEST(Communicator, SendRecvRing) {
  if (world() < 2) GTEST_SKIP() << "needs 2 ranks";
  Communicator& c = world_comm();
  const int n = c.size(), next = (c.rank() + 1) % n, prev = (c.rank() + n - 1) % n;
  for (DType dt : kDtypes) {
    Tensor out = Tensor::empty({4}, dt);
    dist::Request recv = c.irecv(out, prev, 5);
    dist::Request send = c.isend(make({c.rank(), 1, 2, 3}, dt), next, 5);  // handle dropped at once
    send.wait();
    recv.wait();
    EXPECT_TRUE(recv.test());
    EXPECT_EQ(values(out), (std::vector<int64_t>{prev, 1, 2, 3})) << dtype_name(dt);
  }
}

TEST(Communicator, SendKeepsBufferAliveAfterHandleDropped) {
  if (world() < 2) GTEST_SKIP() << "needs 2 ranks";
  Communicator& c = world_comm();
  // Large enough that MPI cannot copy it eagerly: the data is read when the receiver matches.
  const int64_t n = int64_t(1) << 20;
  for (DType dt : {kFloat32, kInt64}) {
    if (c.rank() == 0) {
      dist::Request send;
      {
        Tensor t = to_dtype(arange(0.0, double(n), 1.0, kFloat64), dt);
        send = c.isend(t, 1, 9);
      }  // the only handle to t is gone
      // Freed memory would be reused by these and overwritten.
      std::vector<Tensor> junk;
      for (int k = 0; k < 4; ++k) junk.push_back(full({n}, -7.0, dt));
      c.barrier();  // the receiver posts its receive only now
      send.wait();
    } else if (c.rank() == 1) {
      c.barrier();
      Tensor out = Tensor::empty({n}, dt);
      c.irecv(out, 0, 9).wait();
      const std::vector<double> v = out.to_vector<double>();
      int64_t wrong = 0;
      for (int64_t i = 0; i < n; ++i) wrong += v[size_t(i)] != double(i);
      EXPECT_EQ(wrong, 0) << dtype_name(dt) << ": the send buffer changed before it was sent";
    } else {
      c.barrier();
    }
  }
}

TEST(Communicator, RecvKeepsBufferAliveAfterHandleDropped) {
  if (world() < 2) GTEST_SKIP() << "needs 2 ranks";
  Communicator& c = world_comm();
  const int64_t n = int64_t(1) << 20;
  if (c.rank() == 1) {
    dist::Request recv;
    { recv = c.irecv(Tensor::empty({n}, kFloat32), 0, 11); }
    // If the receive buffer were freed, these could take its memory and be overwritten.
    std::vector<Tensor> mine;
    for (int k = 0; k < 4; ++k) mine.push_back(full({n}, 3.0, kFloat32));
    c.barrier();
    recv.wait();
    for (const Tensor& t : mine) {
      const std::vector<float> v = t.to_vector<float>();
      EXPECT_EQ(std::count(v.begin(), v.end(), 3.0f), n) << "a live tensor was overwritten by the receive";
    }
  } else if (c.rank() == 0) {
    c.barrier();
    c.isend(full({n}, 5.0, kFloat32), 1, 11).wait();
  } else {
    c.barrier();
  }
}

TEST(Communicator, BarrierWaitsForEveryone) {
  if (world() < 2) GTEST_SKIP() << "needs 2 ranks";
  Communicator& c = world_comm();
  c.barrier();
  const auto start = std::chrono::steady_clock::now();
  if (c.rank() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(300));
  c.barrier();
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_GE(waited, 0.25) << "the barrier returned before rank 0 arrived";
  EXPECT_LT(waited, 5.0);
}

TEST(Communicator, DisjointSubgroupsAtOnce) {
  if (world() < 4) GTEST_SKIP() << "needs 4 ranks";
  // {0, 2} and {3, 1} reduce at the same time, each only among its own members.
  const std::vector<int> g = me() % 2 == 0 ? std::vector<int>{0, 2} : std::vector<int>{3, 1};
  Communicator& c = dist::group(g);
  EXPECT_EQ(c.world_ranks(), g);
  Tensor t = make({me()}, kInt64);
  c.all_reduce_sum(t);
  EXPECT_EQ(values(t), (std::vector<int64_t>{g[0] + g[1]}));
  Tensor all = Tensor::empty({2}, kInt64);
  c.all_gather_v(make({me()}, kInt64), all, {1, 1});
  EXPECT_EQ(values(all), (std::vector<int64_t>{g[0], g[1]}));  // in group order
}

TEST(Communicator, GroupOfOneIsLocal) {
  Communicator& c = dist::group({me()});
  EXPECT_EQ(c.world_ranks(), std::vector<int>{me()});
  Tensor t = make({1, 2}, kFloat64);
  c.all_reduce_sum(t);
  EXPECT_EQ(values(t), (std::vector<int64_t>{1, 2}));
  Tensor out = Tensor::empty({2}, kFloat64);
  c.all_gather_v(t, out, {2});
  EXPECT_EQ(values(out), (std::vector<int64_t>{1, 2}));
  c.barrier();
  const std::string msg = error_of([&] { c.isend(t, 0, 1); });
  EXPECT_EQ(msg.rfind("[send]", 0), 0u) << msg;
}

TEST(CommunicatorErrors, NonMember) {
  if (world() < 2) GTEST_SKIP() << "needs 2 ranks";
  const int other = me() == 0 ? 1 : 0;
  const std::string msg = error_of([&] { dist::group({other}); });
  EXPECT_EQ(msg.rfind("[group]", 0), 0u) << msg;
  EXPECT_NE(msg.find("rank " + std::to_string(me())), std::string::npos) << msg;
  EXPECT_NE(msg.find("not a member"), std::string::npos) << msg;
}

TEST(CommunicatorErrors, RankOutsideWorld) {
  const std::string msg = error_of([&] { dist::group({me(), world() + 3}); });
  EXPECT_EQ(msg.rfind("[group]", 0), 0u) << msg;
  EXPECT_NE(msg.find("rank " + std::to_string(world() + 3)), std::string::npos) << msg;
}

TEST(CommunicatorErrors, CountsMismatch) {
  if (world() < 2) GTEST_SKIP() << "needs 2 ranks";
  Communicator& c = world_comm();
  // Every member passes counts of the wrong length: all fail before communicating.
  const std::string msg = error_of([&] {
    c.all_gather_v(make({1}, kFloat32), Tensor::empty({1}, kFloat32), {1});
  });
  EXPECT_EQ(msg.rfind("[all_gather]", 0), 0u) << msg;
  // Non-contiguous tensors are refused.
  Tensor m = Tensor::empty({2, 2}, kFloat32);
  const std::string msg2 = error_of([&] { c.all_reduce_sum(transpose(m, 0, 1)); });
  EXPECT_EQ(msg2.rfind("[all_reduce]", 0), 0u) << msg2;
  // The communicator still works.
  Tensor t = make({1}, kInt64);
  c.all_reduce_sum(t);
  EXPECT_EQ(values(t), std::vector<int64_t>{world()});
}

}  // namespace
}  // namespace globe
