// globe::Progress (base/progress.h): a live line on a terminal, plain lines in a log, the figures.
#include <gmock/gmock.h>

#include <cstdio>
#include <string>

#include "globe/base/progress.h"

namespace globe {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// What `run` wrote to a temporary file (not a terminal).
template <class Run>
std::string written(Run&& run) {
  std::FILE* f = std::tmpfile();
  run(f);
  std::fflush(f);
  std::rewind(f);
  std::string out;
  for (int c; (c = std::fgetc(f)) != EOF;) out += char(c);
  std::fclose(f);
  return out;
}

TEST(Progress, InALogItPrintsPlainLinesWithRateAndTimeLeft) {
  const std::string out = written([](std::FILE* f) {
    Progress p("train", 4, Progress::Unit::items, {.log_interval_s = 0}, f);
    p.advance(1, "loss 2.5000");
    p.advance(1);
    p.finish();
  });
  EXPECT_THAT(out, Not(HasSubstr("\r")));
  EXPECT_THAT(out, Not(HasSubstr("\x1b")));
  EXPECT_THAT(out, HasSubstr("train  1/4 steps  25%"));
  EXPECT_THAT(out, HasSubstr("ETA "));
  EXPECT_THAT(out, HasSubstr("loss 2.5000"));  // the note stays until replaced
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 3);  // two advances and the last line
}

TEST(Progress, AShortRunSaysNothingInALog) {
  const std::string out = written([](std::FILE* f) {
    Progress p("save x", 100, Progress::Unit::bytes, f);  // log lines every 30 s
    p.advance(100);
  });
  EXPECT_EQ(out, "");
}

TEST(Progress, OnATerminalOneLineIsRewrittenInPlace) {
  const std::string out = written([](std::FILE* f) {
    Progress p("save x", int64_t(256) << 20, Progress::Unit::bytes, {.interval_s = 0, .terminal = 1}, f);
    p.advance(int64_t(128) << 20);
    p.advance(int64_t(128) << 20);
  });
  EXPECT_THAT(out, HasSubstr("\rsave x  128.0 MiB/256.0 MiB  50%"));
  EXPECT_THAT(out, HasSubstr("\x1b[K"));
  EXPECT_THAT(out, HasSubstr("256.0 MiB/256.0 MiB  100%"));
  EXPECT_EQ(out.back(), '\n');  // finished: the terminal's next line is its own
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1);
}

TEST(Progress, DurationsReadAsSecondsMinutesHours) {
  EXPECT_EQ(format_duration(45), "45s");
  EXPECT_EQ(format_duration(185), "3m05s");
  EXPECT_EQ(format_duration(7800), "2h10m");
  EXPECT_EQ(format_duration(-1), "?");
}

}  // namespace
}  // namespace globe
