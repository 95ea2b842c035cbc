#include "globe/base/trace.h"

#include "globe/base/timeline.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>

namespace globe::trace {

namespace detail {
std::atomic<int> g_sinks{0};
}

namespace {

std::mutex& sinks_mutex() {
  static std::mutex m;
  return m;
}
std::vector<Sink*>& sinks() {
  static std::vector<Sink*> s;
  return s;
}
// The spans open on this thread, innermost last. Plain data, never destroyed: spans still open
// and close at exit (a send finished by the runtime's destructor), after a thread's objects go.
constexpr int kMaxDepth = 64;
struct Open {
  const Event* spans[kMaxDepth];
  int depth = 0;
};
thread_local Open t_open;

int rank_from_env() {
  for (const char* name : {"RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK"})
    if (const char* v = std::getenv(name)) return std::atoi(v);
  return 0;
}
std::atomic<int> g_rank{-1};  // -1: not set yet (read lazily: static initialisers may ask first)

}  // namespace

const char* kind_name(Kind kind) {
  switch (kind) {
    case Kind::module: return "module";
    case Kind::op: return "op";
    case Kind::layout: return "layout";
    case Kind::pipeline: return "pipeline";
    case Kind::comm: return "comm";
    case Kind::wait: return "wait";
    case Kind::io: return "io";
    case Kind::region: return "region";
  }
  return "?";
}

void attach(Sink* sink) {
  std::lock_guard<std::mutex> lock(sinks_mutex());
  sinks().push_back(sink);
  detail::g_sinks.store(int(sinks().size()), std::memory_order_relaxed);
}

void detach(Sink* sink) {
  std::lock_guard<std::mutex> lock(sinks_mutex());
  auto& s = sinks();
  s.erase(std::remove(s.begin(), s.end(), sink), s.end());
  detail::g_sinks.store(int(s.size()), std::memory_order_relaxed);
}

double now_us() {
  using namespace std::chrono;
  // steady_clock is CLOCK_MONOTONIC: one clock for every process on a machine, so the ranks'
  // tracks line up in a merged timeline.
  return double(duration_cast<nanoseconds>(steady_clock::now().time_since_epoch()).count()) * 1e-3;
}

std::unique_ptr<Event> begin(Kind kind, std::string name) {
  auto e = std::make_unique<Event>();
  e->kind = kind;
  e->name = std::move(name);
  if (t_open.depth > 0) {
    const Event& outer = *t_open.spans[std::min(t_open.depth, kMaxDepth) - 1];
    e->module = current_module();
    e->op = outer.op;
    e->layout = outer.layout;
    e->backward = outer.backward;
    switch (outer.kind) {
      case Kind::op: e->op = outer.name; break;
      case Kind::layout: e->layout = outer.name; break;
      case Kind::region: e->backward = e->backward || outer.name.rfind("backward", 0) == 0; break;
      default: break;
    }
  }
  e->start_us = now_us();
  return e;
}

void end(std::unique_ptr<Event> event) {
  event->end_us = now_us();
  std::lock_guard<std::mutex> lock(sinks_mutex());
  for (Sink* s : sinks()) s->record(*event);
}

std::string current_module() {
  if (t_open.depth == 0) return {};
  const Event& outer = *t_open.spans[std::min(t_open.depth, kMaxDepth) - 1];
  if (outer.kind != Kind::module) return outer.module;
  return outer.module.empty() ? outer.name : outer.module + "." + outer.name;
}

void Span::open(Kind kind, std::string name) {
  event_ = begin(kind, std::move(name));
  if (t_open.depth < kMaxDepth) t_open.spans[t_open.depth] = event_.get();
  ++t_open.depth;  // deeper than kMaxDepth: counted, and its context is the deepest kept
}

void Span::close() {
  // Spans close in the reverse of their opening on a thread (they are scopes).
  if (t_open.depth > 0) --t_open.depth;
  end(std::move(event_));
}

void set_rank(int rank) { g_rank.store(rank, std::memory_order_relaxed); }
int rank() {
  const int r = g_rank.load(std::memory_order_relaxed);
  return r >= 0 ? r : rank_from_env();
}

namespace {

// GLOBE_TRACE / GLOBE_TRACE_DIR: a timeline from the process's start to its exit.
std::unique_ptr<Timeline> timeline_from_env() {
  std::string path;
  if (const char* dir = std::getenv("GLOBE_TRACE_DIR"); dir && *dir)
    path = std::string(dir) + "/trace.rank-" + std::to_string(rank()) + ".json";
  else if (const char* file = std::getenv("GLOBE_TRACE"); file && *file)
    path = file;
  // Several ranks given one file each write their own: FILE.rank-R.json.
  const char* size = std::getenv("OMPI_COMM_WORLD_SIZE");
  if (!path.empty() && !std::getenv("GLOBE_TRACE_DIR") && size && std::atoi(size) > 1) {
    const size_t dot = path.rfind(".json");
    path = (dot == std::string::npos ? path : path.substr(0, dot)) + ".rank-" + std::to_string(rank()) + ".json";
  }
  if (path.empty()) return nullptr;
  try {
    return std::make_unique<Timeline>(path);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "[globe] %s; no timeline is written\n", e.what());
    return nullptr;
  }
}
// Here, not in timeline.cpp: every program that opens a span links this file.
const std::unique_ptr<Timeline> g_env_timeline = timeline_from_env();

}  // namespace

}  // namespace globe::trace
