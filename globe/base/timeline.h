// The timeline: every span (base/trace.h) written as a Chrome trace event, one file per process,
// which Perfetto (ui.perfetto.dev) and chrome://tracing open. The process id is the rank, so
// globe-launch --trace DIR merges the ranks' files into one with a track per rank
// (docs/design.md §18). Spans are written as they end (one event per line): a long run's trace
// grows on disk, not in memory, and a rank that dies leaves what it had written.
//
//   GLOBE_TRACE=FILE       this process writes FILE from its start to its exit
//   GLOBE_TRACE_DIR=DIR    written by globe-launch --trace DIR: rank R writes DIR/trace.rank-R.json
//
// Events: a span is a complete event ("ph":"X") on the rank's track, nested as the spans were;
// a collective started without waiting is an async pair ("b" / "e", matched by id), since it
// overlaps the work after its start. Every event's args carry the module, op and layout change
// it ran inside, and a collective's bytes.
#pragma once

#include <cstdio>
#include <mutex>
#include <string>

#include "globe/base/trace.h"

namespace globe::trace {

class Timeline final : public Sink {
 public:
  // Starts recording into `path` (created or truncated); throws globe::Error if it cannot.
  explicit Timeline(const std::string& path);
  ~Timeline() override;  // close()
  // Stops recording and ends the file: a valid JSON document from then on. Once only.
  void close();
  Timeline(const Timeline&) = delete;
  Timeline& operator=(const Timeline&) = delete;

  void record(const Event& event) override;
  const std::string& path() const { return path_; }

 private:
  void line(const std::string& json);
  std::string path_;
  std::FILE* file_ = nullptr;
  std::mutex mutex_;
  long next_id_ = 1;
  bool closed_ = false;
};

// Text as a JSON string, quotes included.
std::string json_string(const std::string& text);

}  // namespace globe::trace
