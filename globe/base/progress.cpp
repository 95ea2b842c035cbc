#include "globe/base/progress.h"

#include <unistd.h>

#include <cstdio>

#include "globe/base/format.h"

namespace globe {

namespace {

double seconds_between(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

std::string amount(double v, Progress::Unit unit) {
  if (unit == Progress::Unit::bytes) return format_bytes(v);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f", v);
  return buf;
}

}  // namespace

Progress::Progress(std::string what, int64_t total, Unit unit, std::FILE* out)
    : Progress(std::move(what), total, unit, Options{}, out) {}

Progress::Progress(std::string what, int64_t total, Unit unit, Options options, std::FILE* out)
    : what_(std::move(what)), total_(total), unit_(unit), options_(std::move(options)), out_(out) {
  terminal_ = options_.terminal >= 0 ? options_.terminal == 1 : ::isatty(::fileno(out_)) == 1;
  start_ = shown_ = std::chrono::steady_clock::now();
}

Progress::~Progress() { finish(); }

std::string Progress::line() const {
  const double elapsed = seconds_between(start_, std::chrono::steady_clock::now());
  const double rate = elapsed > 0 ? double(done_) / elapsed : 0;
  std::string s = what_ + "  " + amount(double(done_), unit_) + "/" +
                  amount(double(total_), unit_);
  if (unit_ == Unit::items) s += " " + options_.item_name;
  char buf[64];
  if (total_ > 0) {
    std::snprintf(buf, sizeof buf, "  %.0f%%", 100.0 * double(done_) / double(total_));
    s += buf;
  }
  if (rate > 0) {
    s += "  " + amount(rate, unit_) + (unit_ == Unit::items ? " " + options_.item_name : "") + "/s";
    if (done_ < total_) s += "  ETA " + format_duration(double(total_ - done_) / rate);
    else s += "  in " + format_duration(elapsed);
  }
  if (!note_.empty()) s += "  " + note_;
  return s;
}

void Progress::advance(int64_t n, const std::string& note) {
  if (finished_) return;
  done_ += n;
  if (!note.empty()) note_ = note;
  const auto now = std::chrono::steady_clock::now();
  if (seconds_between(shown_, now) >= (terminal_ ? options_.interval_s : options_.log_interval_s)) {
    shown_ = now;
    show(false);
  }
}

void Progress::finish() {
  if (finished_) return;
  finished_ = true;
  if (terminal_ || shown_any_) show(true);  // a short run says nothing in a log
}

void Progress::show(bool last) {
  shown_any_ = true;
  const std::string s = line();
  // A terminal's line is rewritten in place ("\r", then erase to its end); a log gets whole lines.
  if (terminal_) std::fprintf(out_, "\r%s\x1b[K%s", s.c_str(), last ? "\n" : "");
  else std::fprintf(out_, "%s\n", s.c_str());
  std::fflush(out_);
}

}  // namespace globe
