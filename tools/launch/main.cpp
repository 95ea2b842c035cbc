// globe-launch: starts the ranks of a Globe (or any) program through Open MPI's mpirun.
//
// Two modes live in one binary. The user runs the parent mode (parent.cpp), which runs mpirun;
// mpirun runs this binary again once per rank in the hidden per-rank mode (rank_child.cpp),
// which sets RANK & co., runs PROGRAM, prefixes its output and records failures. Doing the
// per-rank work in our own process (rather than asking mpirun to tag output) lets any program,
// MPI or not, see the same environment and lets us say which rank failed first and how. A third
// hidden mode is Open MPI's remote agent of a multi-node job (node_group.h).
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "common.h"
#include "globe/version.h"
#include "node_group.h"
#include "options.h"
#include "parent.h"
#include "rank_child.h"

int main(int argc, char** argv) {
  using namespace globe_launch;
  if (argc > 1 && std::strcmp(argv[1], kRankChildFlag) == 0) return run_rank_child(argc, argv);
  if (argc > 1 && std::strcmp(argv[1], kAgentFlag) == 0) return run_agent(argc, argv);

  const ParseResult parsed = parse_options(argc, argv, std::getenv("GLOBE_LAUNCH_NO_PREFIX"));
  switch (parsed.kind) {
    case ParseResult::Kind::kHelp:
      std::fputs(usage_text().c_str(), stdout);
      return 0;
    case ParseResult::Kind::kVersion:
      std::printf("globe-launch (Globe) %s\n", GLOBE_VERSION);
      return 0;
    case ParseResult::Kind::kError:
      // The usage first, so the error stays visible at the bottom of the terminal.
      if (parsed.show_usage) std::fprintf(stderr, "%s\n", usage_text().c_str());
      std::fprintf(stderr, "globe-launch: %s\n", parsed.error.c_str());
      if (!parsed.show_usage) std::fprintf(stderr, "Run 'globe-launch --help' for all options.\n");
      return 2;
    case ParseResult::Kind::kRun:
      break;
  }
  return run_parent(parsed.options);
}
