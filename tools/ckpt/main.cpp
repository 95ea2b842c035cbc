// globe-ckpt: inspect, verify and convert Globe checkpoints. A plain program: no MPI, no launcher.
//
//   globe-ckpt ls FILE|DIR                       keys, dtypes, shapes, sizes
//   globe-ckpt verify FILE|DIR                   checks everything; the first problem -> exit 1
//   globe-ckpt merge DIR OUT.safetensors         sharded checkpoint -> one file
//   globe-ckpt split FILE DIR --ranks N --sbp split0|broadcast
//                                                one file -> the sharded layout of N ranks
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "globe/base/error.h"
#include "globe/io/ckpt_tools.h"

namespace {

constexpr const char* kUsage =
    "usage: globe-ckpt COMMAND ARGS\n"
    "  ls FILE|DIR                                   list tensors: name, dtype, shape, size\n"
    "  verify FILE|DIR                               check header, offsets, sizes, index and "
    "chunk\n"
    "                                                coverage; report the first problem (exit 1)\n"
    "  merge DIR OUT.safetensors                     sharded checkpoint -> one safetensors file\n"
    "  split FILE DIR --ranks N --sbp split0|broadcast\n"
    "                                                one file -> sharded checkpoint for N ranks\n"
    "FILE is a safetensors file; DIR a sharded checkpoint directory (with index.json).\n";

int usage_error(const std::string& msg) {
  std::cerr << "globe-ckpt: " << msg << "\n" << kUsage;
  return 2;
}

// Error text without the trailing " (rank 0)" the library adds: there are no ranks here.
std::string plain(const std::string& what) {
  const std::string suffix = " (rank 0)";
  if (what.size() >= suffix.size() &&
      what.compare(what.size() - suffix.size(), suffix.size(), suffix) == 0)
    return what.substr(0, what.size() - suffix.size());
  return what;
}

int run(const std::vector<std::string>& args) {
  using namespace globe::io;
  if (args.empty() || args[0] == "-h" || args[0] == "--help") {
    std::cout << kUsage;
    return args.empty() ? 2 : 0;
  }
  const std::string& cmd = args[0];
  if (cmd == "ls" || cmd == "verify") {
    if (args.size() != 2) return usage_error(cmd + " takes one path");
    if (cmd == "ls")
      std::cout << describe_checkpoint(args[1]);
    else
      std::cout << verify_checkpoint(args[1]) << "\n";
    return 0;
  }
  if (cmd == "merge") {
    if (args.size() != 3) return usage_error("merge takes DIR and OUT.safetensors");
    merge_sharded(args[1], args[2]);
    std::cout << "merged " << args[1] << " into " << args[2] << "\n";
    return 0;
  }
  if (cmd == "split") {
    std::vector<std::string> pos;
    int ranks = -1;
    std::string sbp;
    for (size_t i = 1; i < args.size(); ++i) {
      std::string a = args[i], value;
      const auto eq = a.find('=');
      if (a.rfind("--", 0) == 0 && eq != std::string::npos) {
        value = a.substr(eq + 1);
        a = a.substr(0, eq);
      } else if (a == "--ranks" || a == "--sbp") {
        if (i + 1 >= args.size()) return usage_error(a + " needs a value");
        value = args[++i];
      }
      if (a == "--ranks") {
        char* end = nullptr;
        const long n = std::strtol(value.c_str(), &end, 10);
        if (value.empty() || *end != '\0' || n < 1 || n > 1000000)
          return usage_error("--ranks: expected N >= 1, got '" + value + "'");
        ranks = int(n);
      } else if (a == "--sbp") {
        sbp = value;
      } else if (a.rfind("--", 0) == 0) {
        return usage_error("unknown option " + a);
      } else {
        pos.push_back(a);
      }
    }
    if (pos.size() != 2) return usage_error("split takes FILE and DIR");
    if (ranks < 0) return usage_error("split needs --ranks N");
    if (sbp != "split0" && sbp != "broadcast")
      return usage_error("split needs --sbp split0 or --sbp broadcast");
    split_to_sharded(pos[0], pos[1], ranks,
                     sbp == "split0" ? SplitLayout::split0 : SplitLayout::broadcast);
    std::cout << "split " << pos[0] << " into " << pos[1] << " for " << ranks << " ranks (" << sbp
              << ")\n";
    return 0;
  }
  return usage_error("unknown command '" + cmd + "'");
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(std::vector<std::string>(argv + 1, argv + argc));
  } catch (const globe::Error& e) {
    std::cerr << "globe-ckpt: error: " << plain(e.what()) << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "globe-ckpt: error: " << e.what() << "\n";
    return 1;
  }
}
