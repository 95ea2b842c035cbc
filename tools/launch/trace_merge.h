// globe-launch --trace DIR: the ranks' timelines (DIR/trace.rank-R.json, written by the library's
// base/timeline.h, one event per line) merged into DIR/trace.json, one track per rank.
#pragma once

#include <string>

namespace globe_launch {

// Merges every DIR/trace.rank-R.json into DIR/trace.json. True with `said` naming the file and
// the ranks; false with `said` the reason (no rank wrote one, a file unreadable). A rank stopped
// mid-write leaves a last line cut short: it is left out.
bool merge_traces(const std::string& dir, std::string& said);

}  // namespace globe_launch
