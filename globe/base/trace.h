// Tracing: what a step did, as spans (docs/design.md §18). Each layer opens a span for what it
// runs: a module call, an op, a boxing step's layout change, a pipeline action, a collective or
// transfer, a wait, checkpoint I/O. Sinks attached here receive every span when it ends, with the
// module, op and layout change it ran inside. Two sinks exist: CommTrace (dist/comm_trace.h) keeps
// the collectives for a table; the timeline (GLOBE_TRACE=FILE, or globe-launch --trace DIR) writes
// every span as a Chrome trace event that Perfetto and chrome://tracing open.
//
// With no sink attached, opening a span is one relaxed atomic load: nothing is formatted, copied
// or timed.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace globe::trace {

enum class Kind : uint8_t { module, op, layout, pipeline, comm, wait, io, region };
const char* kind_name(Kind kind);

struct Event {
  Kind kind = Kind::region;
  std::string name;              // "fc1", "matmul", "P -> B on mesh axis 1", "all_reduce", ...
  double start_us = 0, end_us = 0;  // the machine's monotonic clock, in microseconds
  std::string module;            // the enclosing modules' names, dotted ("" outside any)
  std::string op;                // the innermost enclosing op ("" outside any)
  std::string layout;            // the innermost enclosing layout change ("" outside any)
  bool backward = false;         // inside a backward pass
  bool in_flight = false;        // started without waiting: it overlaps what ran after its start
  int64_t bytes = -1;            // a collective's or transfer's payload, -1 for other spans
  std::vector<std::pair<std::string, std::string>> args;  // more, as text
};

// Receives every span when it ends, from any thread (a sink guards its own state).
class Sink {
 public:
  virtual ~Sink() = default;
  virtual void record(const Event& event) = 0;
};
void attach(Sink* sink);
void detach(Sink* sink);

namespace detail {
extern std::atomic<int> g_sinks;
}
// Whether any sink listens.
inline bool on() { return detail::g_sinks.load(std::memory_order_relaxed) > 0; }

double now_us();

// An event begun now, with the enclosing spans' context; ended (and given to the sinks) by end().
// What an in-flight collective uses: it ends in another call than the one that began it.
std::unique_ptr<Event> begin(Kind kind, std::string name);
void end(std::unique_ptr<Event> event);

// A span for the scope's lifetime, and the context of what runs inside it. Inert when no sink
// listens; `if (span)` guards work that only feeds it (formatting a name).
class Span {
 public:
  Span(Kind kind, std::string_view name) {
    if (on()) open(kind, std::string(name));
  }
  // Named once open (`if (span) span->name = ...`): a name that costs something to make.
  explicit Span(Kind kind) {
    if (on()) open(kind, {});
  }
  ~Span() {
    if (event_) close();
  }
  Span(const Span&) = delete;
  Span& operator=(const Span&) = delete;

  explicit operator bool() const { return event_ != nullptr; }
  Event* operator->() { return event_.get(); }
  Event& operator*() { return *event_; }

 private:
  void open(Kind kind, std::string name);
  void close();
  std::unique_ptr<Event> event_;
};

// The dotted module path of the spans open on this thread ("" outside any module): what an
// autograd node keeps, so that its backward's spans name the module whose forward made it.
std::string current_module();

// The rank this process's events belong to (the timeline's process id): set by the distributed
// runtime; before that, the launcher's RANK, else 0.
void set_rank(int rank);
int rank();

}  // namespace globe::trace
