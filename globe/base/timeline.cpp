#include "globe/base/timeline.h"

#include <cerrno>
#include <cstring>
#include <memory>

#include "globe/base/error.h"

namespace globe::trace {

std::string json_string(const std::string& text) {
  std::string out = "\"";
  for (unsigned char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += char(c);
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += char(c);
    }
  }
  return out + "\"";
}

namespace {

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", v);
  return buf;
}

// The fields every event of `e` shares, up to and including its phase.
std::string head(const Event& e, int pid, const char* phase) {
  return "{\"name\":" + json_string(e.name) + ",\"cat\":\"" + kind_name(e.kind) + "\",\"ph\":\"" + phase +
         "\",\"pid\":" + std::to_string(pid) + ",\"tid\":0";
}

std::string args(const Event& e) {
  std::string a;
  auto add = [&](const std::string& key, const std::string& json) {
    a += (a.empty() ? "" : ",") + json_string(key) + ":" + json;
  };
  if (!e.module.empty()) add("module", json_string(e.module));
  if (!e.op.empty()) add("op", json_string(e.op));
  if (!e.layout.empty()) add("layout", json_string(e.layout));
  if (e.backward) add("backward", "true");
  if (e.bytes >= 0) add("bytes", std::to_string(e.bytes));
  for (const auto& [k, v] : e.args) add(k, json_string(v));
  return "{" + a + "}";
}

}  // namespace

Timeline::Timeline(const std::string& path) : path_(path) {
  file_ = std::fopen(path.c_str(), "w");
  GLOBE_CHECK(file_ != nullptr, "[trace] cannot write the timeline ", path, ": ", std::strerror(errno));
  const std::string pid = std::to_string(rank());
  std::fputs("{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n", file_);
  // Named tracks, ordered by rank.
  std::fputs(("{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":" + pid + ",\"args\":{\"name\":\"rank " + pid +
              "\"}}").c_str(), file_);
  line("{\"name\":\"process_sort_index\",\"ph\":\"M\",\"pid\":" + pid + ",\"args\":{\"sort_index\":" + pid + "}}");
  attach(this);
}

Timeline::~Timeline() { close(); }

void Timeline::close() {
  detach(this);
  std::lock_guard<std::mutex> lock(mutex_);
  if (closed_) return;
  closed_ = true;
  std::fputs("\n]}\n", file_);
  std::fclose(file_);
}

void Timeline::line(const std::string& json) {
  std::fputs(",\n", file_);
  std::fputs(json.c_str(), file_);
}

void Timeline::record(const Event& e) {
  const int pid = rank();
  std::lock_guard<std::mutex> lock(mutex_);
  if (closed_) return;
  if (e.in_flight) {
    const std::string id = ",\"id\":" + std::to_string(next_id_++);
    line(head(e, pid, "b") + id + ",\"ts\":" + number(e.start_us) + ",\"args\":" + args(e) + "}");
    line(head(e, pid, "e") + id + ",\"ts\":" + number(e.end_us) + "}");
  } else {
    line(head(e, pid, "X") + ",\"ts\":" + number(e.start_us) + ",\"dur\":" + number(e.end_us - e.start_us) +
         ",\"args\":" + args(e) + "}");
  }
}

}  // namespace globe::trace
