// globe-launch's hidden per-rank mode. mpirun starts
//   globe-launch --_rank-child [--no-prefix] [--logdir DIR] [--run-dir DIR] -- PROGRAM ARGS...
// once per rank; it sets the rank environment, runs PROGRAM, relays its output with rank
// prefixes, and records a failure for the parent launcher.
#pragma once

namespace globe_launch {

// argv[1] is kRankChildFlag. Returns the process exit status.
int run_rank_child(int argc, char** argv);

}  // namespace globe_launch
