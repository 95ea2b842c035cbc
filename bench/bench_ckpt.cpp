// Checkpoint I/O against plain file I/O of the same bytes, in the same run (one process).
//
//   build/bin/bench_ckpt [--tensors 64] [--numel 1048576] [--reps 5]
//
// A state dict of `tensors` float32 tensors of `numel` elements (default 64 x 4 MiB = 256 MiB):
//   save    globe::save (safetensors, temporary file + fsync + rename + directory fsync)
//   write   plain: open, write each tensor's bytes, fsync, close
//   load    globe::load (header + one pread per tensor into new tensors)
//   read    plain: open, pread each tensor's bytes into a new buffer (same allocator as tensors)
// plus save_sharded / load_sharded of the same state. Files go to ./bench_ckpt_tmp (removed after).
// Reads hit the page cache (the file was just written; dropping caches would disturb other users
// of the machine), so they measure the software path. Prints medians and one "RESULT {json}" line;
// goal: save >= 0.8x plain write, load >= 0.8x plain read (throughput).
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>

#include "bench_common.h"
#include "globe/globe.h"

namespace {

void plain_write(const std::string& path, const globe::StateDict& sd) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) throw std::runtime_error("open " + path);
  for (const auto& [key, t] : sd) {
    const char* p = static_cast<const char*>(t.raw_data());
    size_t n = size_t(t.numel()) * 4;
    while (n > 0) {
      const ssize_t w = ::write(fd, p, n);
      if (w <= 0) throw std::runtime_error("write " + path);
      p += w;
      n -= size_t(w);
    }
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) throw std::runtime_error("fsync " + path);
}

// Reads the file back tensor by tensor into new buffers from the same allocator as tensors (so
// both sides get the same memory: Globe keeps freed memory in the heap). Returns a checksum so the
// read cannot be optimised away.
size_t plain_read(const std::string& path, size_t tensors, size_t tensor_bytes) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) throw std::runtime_error("open " + path);
  size_t sum = 0;
  std::vector<void*> bufs;
  for (size_t i = 0; i < tensors; ++i) {
    char* buf = static_cast<char*>(std::aligned_alloc(64, tensor_bytes));
    bufs.push_back(buf);
    size_t at = 0;
    while (at < tensor_bytes) {
      const ssize_t r = ::pread(fd, buf + at, tensor_bytes - at, off_t(i * tensor_bytes + at));
      if (r <= 0) throw std::runtime_error("read " + path);
      at += size_t(r);
    }
    sum += size_t(buf[tensor_bytes / 2]);
  }
  for (void* b : bufs) std::free(b);
  ::close(fd);
  return sum;
}

template <class Fn>
double timed(Fn&& fn) {
  const double t0 = bench::now_s();
  fn();
  return bench::now_s() - t0;
}

}  // namespace

int main(int argc, char** argv) {
  bench::Flags flags(argc, argv, "bench_ckpt: Globe's checkpoint save and load against plain write() / read() of the same bytes",
                     {{"tensors", "64", "tensors in the state dict"},
                      {"numel", "1048576", "float32 elements per tensor"},
                      {"reps", "5", "timed repetitions (the median counts)"}});
  bench::set_threads(1);
  const std::string dir = "bench_ckpt_tmp";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);

  globe::manual_seed(0);
  globe::StateDict sd;
  for (long i = 0; i < flags["tensors"]; ++i)
    sd.set("layer" + std::to_string(i) + ".weight", globe::randn({flags["numel"]}));
  const double bytes = double(flags["tensors"]) * double(flags["numel"]) * 4;

  std::map<std::string, std::vector<double>> t;
  size_t sink = 0;
  for (long rep = 0; rep < flags["reps"]; ++rep) {
    // Alternate the order each repetition so neither side always runs first.
    auto write_pair = [&] {
      t["plain_write"].push_back(timed([&] { plain_write(dir + "/plain.bin", sd); }));
      t["save"].push_back(timed([&] { globe::save(sd, dir + "/ckpt.safetensors"); }));
    };
    auto read_pair = [&] {
      t["plain_read"].push_back(timed([&] {
        sink +=
            plain_read(dir + "/plain.bin", size_t(flags["tensors"]), size_t(flags["numel"]) * 4);
      }));
      t["load"].push_back(
          timed([&] { sink += size_t(globe::load(dir + "/ckpt.safetensors").size()); }));
    };
    if (rep % 2 == 0) {
      write_pair();
      read_pair();
    } else {
      t["save"].push_back(timed([&] { globe::save(sd, dir + "/ckpt.safetensors"); }));
      t["plain_write"].push_back(timed([&] { plain_write(dir + "/plain.bin", sd); }));
      t["load"].push_back(
          timed([&] { sink += size_t(globe::load(dir + "/ckpt.safetensors").size()); }));
      t["plain_read"].push_back(timed([&] {
        sink +=
            plain_read(dir + "/plain.bin", size_t(flags["tensors"]), size_t(flags["numel"]) * 4);
      }));
    }
    t["save_sharded"].push_back(timed([&] { globe::save_sharded(sd, dir + "/sharded"); }));
    t["load_sharded"].push_back(
        timed([&] { sink += globe::load_sharded(dir + "/sharded", sd).size(); }));
  }
  std::filesystem::remove_all(dir);

  nlohmann::json res = {
      {"bench", "ckpt"}, {"bytes", bytes}, {"tensors", flags["tensors"]}, {"reps", flags["reps"]}};
  std::printf("state dict: %ld float32 tensors x %ld elements = %.0f MiB; medians of %ld reps\n",
              flags["tensors"], flags["numel"], bytes / (1 << 20), flags["reps"]);
  for (const char* k :
       {"plain_write", "save", "save_sharded", "plain_read", "load", "load_sharded"}) {
    const double s = bench::median(t[k]);
    res[std::string(k) + "_s"] = s;
    res[std::string(k) + "_gbps"] = bytes / s / 1e9;
    const auto [lo, hi] = std::minmax_element(t[k].begin(), t[k].end());
    std::printf("  %-13s %7.3f s  %6.2f GB/s   (min %.3f, max %.3f s)\n", k, s, bytes / s / 1e9,
                *lo, *hi);
  }
  res["save_vs_plain"] = bench::median(t["plain_write"]) / bench::median(t["save"]);
  res["load_vs_plain"] = bench::median(t["plain_read"]) / bench::median(t["load"]);
  res["save_sharded_vs_plain"] = bench::median(t["plain_write"]) / bench::median(t["save_sharded"]);
  res["load_sharded_vs_plain"] = bench::median(t["plain_read"]) / bench::median(t["load_sharded"]);
  std::printf("  save %.2fx plain write, load %.2fx plain read (goal >= 0.8x); checksum %zu\n",
              double(res["save_vs_plain"]), double(res["load_vs_plain"]), sink % 10);
  std::printf("RESULT %s\n", bench::result(res).c_str());
  return 0;
}
