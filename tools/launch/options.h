// Command-line options of globe-launch's user-facing (parent) mode.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace globe_launch {

// Everything the user asked for; filled by parse_options().
struct LaunchOptions {
  int nproc_per_node = 1;
  bool nproc_per_node_given = false;  // distinguishes the default from an explicit value
  std::optional<int> np;              // total ranks; only meaningful with --hosts/--hostfile
  std::string hosts;                  // "h1:n1,h2:n2" (normalised: every host has ":n")
  std::string hostfile;
  // One launcher per node (torchrun / OneFlow form, node_group.h): node 0 listens at
  // master_addr:master_port, the others join it there.
  int nnodes = 1;
  int node_rank = 0;
  std::string master_addr;
  int master_port = 29500;
  double rdzv_timeout_s = 300;  // how long the launchers wait for each other
  bool no_prefix = false;
  std::string logdir;
  std::string trace_dir;  // --trace: each rank's timeline there, merged into DIR/trace.json
  double timeout_s = 0;  // 0 = no whole-job timeout
  int max_restarts = 0;  // times every rank is started again after a rank failed
  std::string mpirun = "mpirun";
  std::vector<std::pair<std::string, std::string>> mca;  // --mca K V, in order
  std::vector<std::string> export_env;                   // -x VAR[=VALUE], in order
  std::vector<std::string> program;                      // PROGRAM ARGS...
};

// Outcome of parsing: either options to run, a request for help, or an error.
struct ParseResult {
  enum class Kind { kRun, kHelp, kVersion, kError } kind = Kind::kRun;
  LaunchOptions options;
  std::string error;        // for kError: one line, without the "globe-launch: " prefix
  bool show_usage = false;  // for kError: the command line's shape was wrong (unknown option...)
};

// Parses argv[1..] of the parent mode. `env_no_prefix` is GLOBE_LAUNCH_NO_PREFIX's value (or
// null), passed in so the parser stays a pure function that tests could call.
ParseResult parse_options(int argc, char** argv, const char* env_no_prefix);

// The full --help text.
std::string usage_text();

}  // namespace globe_launch
