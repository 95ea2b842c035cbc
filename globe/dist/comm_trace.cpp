#include "globe/dist/comm_trace.h"

#include <algorithm>
#include <cstdio>
#include <iomanip>
#include <sstream>

#include "globe/base/format.h"

namespace globe {

CommTrace::CommTrace() { trace::attach(this); }

CommTrace::~CommTrace() { stop(); }

void CommTrace::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopped_) return;
    stopped_ = true;
  }
  trace::detach(this);  // outside mutex_: record() takes it under the sinks' lock
}

void CommTrace::record(const trace::Event& e) {
  if (e.kind != trace::Kind::comm) return;
  CommRecord r;
  r.collective = e.name;
  r.module = e.module;
  r.op = e.op;
  r.layout = e.layout;
  r.backward = e.backward;
  r.in_flight = e.in_flight;
  r.bytes = e.bytes;
  r.seconds = (e.end_us - e.start_us) * 1e-6;
  for (const auto& [k, v] : e.args) {
    if (k == "group") r.group = v;
    if (k == "peer") r.peer = v;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  records_.push_back(std::move(r));
}

std::vector<CommRecord> CommTrace::records() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return records_;
}

std::map<std::string, int64_t> CommTrace::counts() const {
  std::map<std::string, int64_t> n;
  for (const CommRecord& r : records()) ++n[r.collective];
  return n;
}

namespace {

std::string ms_text(double s) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(3) << s * 1e3 << " ms";
  return os.str();
}

struct Sum {
  int64_t count = 0;
  double bytes = 0, seconds = 0;
  void add(const CommRecord& r) {
    ++count;
    bytes += double(r.bytes);
    seconds += r.seconds;
  }
};

}  // namespace

std::string CommTrace::table(bool with_time) const {
  const std::vector<CommRecord> rs = records();
  // Rows in order of first appearance: a module section, then its (op, layout, collective) rows.
  std::vector<std::string> sections;
  std::map<std::string, std::vector<std::string>> rows_of;
  std::map<std::string, Sum> section_sum, row_sum;
  Sum total;
  for (const CommRecord& r : rs) {
    const std::string section = (r.module.empty() ? std::string("(top level)") : r.module) + (r.backward ? "  [backward]" : "  [forward]");
    const std::string row = (r.op.empty() ? std::string("to_global") : r.op) + " | " +
                            (r.layout.empty() ? std::string("-") : r.layout) + " | " + r.collective;
    if (!section_sum.count(section)) sections.push_back(section);
    if (!row_sum.count(section + '\n' + row)) rows_of[section].push_back(row);
    section_sum[section].add(r);
    row_sum[section + '\n' + row].add(r);
    total.add(r);
  }
  std::ostringstream os;
  os << "comm trace, rank " << trace::rank() << ": " << total.count << " collectives and transfers, "
     << format_bytes(total.bytes);
  if (with_time) os << ", " << ms_text(total.seconds);
  os << '\n';
  if (rs.empty()) return os.str();
  size_t width = 44;  // the labels' column, as wide as the widest
  for (const auto& [key, rows] : rows_of)
    for (const std::string& row : rows) width = std::max(width, row.size() + 4);
  auto line = [&](const std::string& label, const Sum& s) {
    os << std::left << std::setw(int(width)) << label << std::right << std::setw(7) << s.count << std::setw(12)
       << format_bytes(s.bytes);
    if (with_time) os << std::setw(13) << ms_text(s.seconds);
    os << '\n';
  };
  os << std::left << std::setw(int(width)) << "module / op | layout change | collective" << std::right << std::setw(7)
     << "count" << std::setw(12) << "bytes";
  if (with_time) os << std::setw(13) << "time";
  os << '\n';
  for (const std::string& section : sections) {
    line(section, section_sum[section]);
    for (const std::string& row : rows_of[section]) line("  " + row, row_sum[section + '\n' + row]);
  }
  return os.str();
}

}  // namespace globe
