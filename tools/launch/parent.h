// globe-launch's user-facing mode: runs mpirun, which runs globe-launch's per-rank mode once
// per rank; supervises it (signals, timeout) and turns the outcome into one message + exit code.
#pragma once

#include "options.h"

namespace globe_launch {

// Returns the launcher's exit status (see usage_text()).
int run_parent(const LaunchOptions& options);

}  // namespace globe_launch
