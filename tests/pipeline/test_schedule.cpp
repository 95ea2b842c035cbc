// Schedules as data: the printed tables, the bubble and memory each schedule is known for, and a
// global order that every (p, m) either runs without deadlock or refuses with the reason.
#include <gmock/gmock.h>

#include <map>
#include <set>

#include "globe/pipeline/schedule.h"
#include "test_util.h"

namespace globe::pipeline {
namespace {

using ::testing::HasSubstr;
using testing::error_of;

// Model chunks per rank group each schedule runs with.
int chunks_for(const std::string& name) { return name == "interleaved" || name == "zbv" ? 2 : 1; }

TEST(Schedule, OneFOneBTablePrintsStageByTime) {
  const Schedule s = Schedule::make("1F1B", 2, 3);
  EXPECT_EQ(s.name(), "1f1b");
  EXPECT_EQ(s.to_string(),
            "schedule 1f1b: 2 stages x 3 micro-batches; unit times F 1, B 2; bubble 25%\n"
            "stage 0 | F0 F1 .  .  B0 B0 F2 B1 B1 .  B2 B2\n"
            "stage 1 | .  F0 B0 B0 F1 B1 B1 F2 B2 B2 .  . \n");
}

TEST(Schedule, BubblesMatchTheory) {
  // p = 4, m = 8: GPipe and 1F1B idle (p-1)/(m+p-1) = 27.3 %; interleaved with v = 2 chunks
  // divides the bubble by v: 1.5/9.5 = 15.8 %; zb-h1 (F = I = W = 1) the paper's
  // (p-1)/(3m+p-1) = 3/27 = 11.1 %, and 3/15 = 20 % at m = 4.
  EXPECT_NEAR(Schedule::make("gpipe", 4, 8).simulated_bubble(), 3.0 / 11, 1e-9);
  EXPECT_NEAR(Schedule::make("1f1b", 4, 8).simulated_bubble(), 3.0 / 11, 1e-9);
  EXPECT_NEAR(Schedule::make("interleaved", 4, 8, 2).simulated_bubble(), 1.5 / 9.5, 1e-9);
  EXPECT_NEAR(Schedule::make("zb-h1", 4, 8).simulated_bubble(), 3.0 / 27, 1e-9);
  EXPECT_NEAR(Schedule::make("zb-h1", 4, 4).simulated_bubble(), 3.0 / 15, 1e-9);
  EXPECT_NEAR(Schedule::make("zb-h1", 2, 8).simulated_bubble(), 1.0 / 25, 1e-9);
}

TEST(Schedule, ZbvRunsInAVWithLessBubbleThanZbH1AtOneF1BsMemory) {
  // Group g runs stages g and 2p-1-g: the first and the last stage on group 0, the turn of the V
  // (stages p-1 and p) on group p-1.
  const Schedule s = Schedule::make("zbv", 4, 8, 2);
  EXPECT_EQ(s.stages(), 8);
  for (int st = 0; st < 8; ++st) EXPECT_EQ(s.group_of(st), st < 4 ? st : 7 - st) << "stage " << st;
  EXPECT_TRUE(s.splits_backward());
  // Each action of a chunk is half a stage's work, so the unit times compare as fractions: below
  // zb-h1's 3/27 (11.1 %) and far below 1F1B's 27.3 %; with more micro-batches it shrinks.
  for (auto [p, m] : {std::pair{2, 4}, {2, 8}, {4, 8}, {4, 16}, {8, 16}}) {
    const double zbv = Schedule::make("zbv", p, m, 2).simulated_bubble();
    EXPECT_LE(zbv, Schedule::make("zb-h1", p, m).simulated_bubble()) << "p " << p << " m " << m;
    EXPECT_LT(zbv, 0.08) << "p " << p << " m " << m;
  }
  EXPECT_LT(Schedule::make("zbv", 4, 16, 2).simulated_bubble(), Schedule::make("zbv", 4, 8, 2).simulated_bubble());
  // At most 2p chunks (half a stage each) alive per group: 1F1B's first stage's p stages.
  for (int p : {2, 3, 4, 8})
    for (int peak : Schedule::make("zbv", p, 3 * p, 2).simulated_peak_alive()) EXPECT_LE(peak, 2 * p) << "p " << p;
}

TEST(Schedule, MemoryBounds) {
  // GPipe holds every micro-batch; 1F1B at most p - r on stage r; ZB-H1 at most p on every stage
  // (until their W), the bound of 1F1B's first stage, which holds the most.
  EXPECT_EQ(Schedule::make("gpipe", 4, 8).simulated_peak_alive(), (std::vector<int>{8, 8, 8, 8}));
  EXPECT_EQ(Schedule::make("1f1b", 4, 8).simulated_peak_alive(), (std::vector<int>{4, 3, 2, 1}));
  EXPECT_EQ(Schedule::make("zb-h1", 4, 8).simulated_peak_alive(), (std::vector<int>{4, 4, 4, 4}));
  EXPECT_EQ(Schedule::make("zb-h1", 4, 2).simulated_peak_alive(), (std::vector<int>{2, 2, 2, 2}));
}

// Every action appears once; each comes after the actions it needs; a group's actions keep their
// program order.
void expect_valid_order(const Schedule& s) {
  std::set<std::tuple<int, int, int>> done;
  auto has = [&](int st, int k, Phase ph) { return done.count({st, k, int(ph)}) > 0; };
  const Phase back = s.splits_backward() ? Phase::input_grad : Phase::backward;
  for (const Action& a : s.order()) {
    switch (a.phase) {
      case Phase::forward:
        if (a.stage > 0) {
          EXPECT_TRUE(has(a.stage - 1, a.microbatch, Phase::forward)) << to_string(a);
        }
        break;
      case Phase::backward:
      case Phase::input_grad:
        EXPECT_TRUE(has(a.stage, a.microbatch, Phase::forward)) << to_string(a);
        if (a.stage < s.stages() - 1) {
          EXPECT_TRUE(has(a.stage + 1, a.microbatch, back)) << to_string(a);
        }
        break;
      case Phase::weight_grad: EXPECT_TRUE(has(a.stage, a.microbatch, Phase::input_grad)) << to_string(a); break;
    }
    EXPECT_TRUE(done.insert({a.stage, a.microbatch, int(a.phase)}).second) << "twice: " << to_string(a);
  }
  EXPECT_EQ(done.size(), size_t(s.stages() * s.microbatches() * (s.splits_backward() ? 3 : 2)));
}

TEST(Schedule, EveryMicrobatchCountRunsOrIsRefusedWithTheReason) {
  for (const char* name : {"gpipe", "1f1b", "interleaved", "zb-h1", "zbv"})
    for (int p = 1; p <= 5; ++p)
      for (int m = 1; m <= 12; ++m) {
        const int v = chunks_for(name);
        SCOPED_TRACE(std::string(name) + " p=" + std::to_string(p) + " m=" + std::to_string(m));
        try {
          expect_valid_order(Schedule::make(name, p, m, v));
        } catch (const Error& e) {
          // Only interleaved refuses, and says why and what works.
          EXPECT_EQ(std::string(name), "interleaved");
          EXPECT_NE(m % p, 0);
          EXPECT_THAT(e.what(), HasSubstr("a multiple of the number of rank groups always runs"));
        }
      }
}

TEST(Schedule, RequiredMicrobatchCountsAllRun) {
  // m in {1, p-1, p, 2p+1} for p = 2 and 4, every schedule (the pipeline tests run these).
  for (const char* name : {"gpipe", "1f1b", "interleaved", "zb-h1", "zbv"})
    for (int p : {2, 4})
      for (int m : {1, p - 1, p, 2 * p + 1})
        EXPECT_NO_THROW(Schedule::make(name, p, m, chunks_for(name))) << name << p << m;
}

TEST(Schedule, BadArguments) {
  EXPECT_THAT(error_of([] { Schedule::make("chimera", 2, 4); }), HasSubstr("unknown schedule 'chimera'"));
  EXPECT_THAT(error_of([] { Schedule::make("1f1b", 2, 0); }), HasSubstr("at least 1, got 0"));
  EXPECT_THAT(error_of([] { Schedule::make("1f1b", 0, 4); }), HasSubstr("at least one stage"));
  EXPECT_THAT(error_of([] { Schedule::make("interleaved", 2, 4, 1); }), HasSubstr("at least 2 model chunks"));
  EXPECT_THAT(error_of([] { Schedule::make("interleaved", 5, 7, 2); }), HasSubstr("stalls"));
  EXPECT_THAT(error_of([] { Schedule::make("zbv", 2, 4); }), HasSubstr("exactly 2 model chunks per rank group"));
  EXPECT_THAT(error_of([] { Schedule::make("zbv", 2, 4, 3); }), HasSubstr("(chunks = 3); give chunks = 2"));
}

}  // namespace
}  // namespace globe::pipeline
