// Tracing (base/trace.h, dist/comm_trace.h, base/timeline.h) on 1, 2 and 4 ranks:
// - the tutorials' data-parallel and model-parallel steps issue exactly the collectives pages 02
//   and 03 say, recorded under the module, op and layout change that caused them;
// - a timeline is valid trace-event JSON: every event's fields, one process per rank, complete
//   events nested on their track, in-flight collectives as matched begin / end pairs;
// - a 2-stage 1F1B step's timeline shows the schedule's order, and its bubble is the one the
//   pipeline measures itself (what bench_pipeline reports).
#include <gmock/gmock.h>

#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>
#include <map>
#include <memory>

#include "test_util.h"

namespace globe {
namespace {

using ::testing::HasSubstr;
using testing::me;
using testing::world;

// Page 02's step: Linear(10, 16) broadcast, x and labels split(0) over every rank. Made first
// (that broadcasts rank 0's initial values), then stepped.
struct DataParallel {
  Placement p = Placement::all("cpu");
  nn::Linear fc{10, 16};
  std::unique_ptr<optim::SGD> opt;
  Tensor x, labels;
  DataParallel() {
    manual_seed(0);
    fc.to_global(p, sbp::broadcast);
    opt = std::make_unique<optim::SGD>(fc.parameters(), optim::SGDOptions{.lr = 0.1});
    x = randn({20, 10}, p, sbp::split(0));
    labels = randn({20, 16}, p, sbp::split(0));
  }
  void step() {
    mse_loss(fc(x), labels).backward();
    opt->step();
  }
};

TEST(CommTrace, DataParallelStepAllReducesTheGradientsOnceInBackward) {
  DataParallel dp;
  CommTrace comm;
  dp.step();
  comm.stop();
  const std::vector<CommRecord> rs = comm.records();
  if (world() == 1) {
    EXPECT_TRUE(rs.empty()) << comm.table();  // a group of one moves nothing
    return;
  }
  // Page 02: the forward, the loss and the optimizer step move nothing; accumulating dW (and db)
  // into the broadcast parameters is one all-reduce (both in one 4 MiB bucket).
  ASSERT_EQ(rs.size(), 1u) << comm.table();
  EXPECT_EQ(comm.counts(), (std::map<std::string, int64_t>{{"all_reduce", 1}}));
  EXPECT_TRUE(rs[0].backward);
  EXPECT_TRUE(rs[0].in_flight);
  EXPECT_EQ(rs[0].op, "reduce gradients");
  EXPECT_EQ(rs[0].layout, "gradient bucket (P) -> (B)");
  EXPECT_EQ(rs[0].bytes, (16 * 10 + 16) * 4);
  EXPECT_EQ(rs[0].module, "");
  EXPECT_EQ(rs[0].group, world() == 2 ? "[0, 1]" : "[0, 1, 2, 3]");
  EXPECT_EQ(rs[0].peer, "");
  EXPECT_GE(rs[0].seconds, 0.0);
  EXPECT_THAT(comm.table(), HasSubstr("reduce gradients | gradient bucket (P) -> (B) | all_reduce"));
}

// A module holding page 03's two layers, so that the records name them.
struct ColumnRow : nn::UnaryModule {
  nn::ColumnParallelLinear fc1;
  nn::RowParallelLinear fc2;
  explicit ColumnRow(const Placement& p) : fc1(10, 20, p), fc2(20, 16, p) {
    register_modules({{"fc1", fc1}, {"fc2", fc2}});
  }
  Tensor forward(const Tensor& x) override { return fc2(gelu(fc1(x))); }
};

// (op, layout change, collective) of each record, sorted.
std::vector<std::string> kinds(const std::vector<CommRecord>& rs) {
  std::vector<std::string> k;
  for (const CommRecord& r : rs) k.push_back(r.op + " | " + r.layout + " | " + r.collective);
  std::sort(k.begin(), k.end());
  return k;
}

TEST(CommTrace, ColumnThenRowParallelStepIssuesWhatPage03Says) {
  const Placement p = Placement::all("cpu");
  manual_seed(0);
  ColumnRow model(p);
  Tensor x = randn({20, 10}, p, sbp::broadcast);
  x.set_requires_grad();
  const Tensor labels = randn({20, 16}, p, sbp::broadcast);
  CommTrace comm;
  mse_loss(model(x), labels).backward();
  (void)x.grad();
  comm.stop();
  const std::vector<CommRecord> rs = comm.records();
  if (world() == 1) {
    EXPECT_TRUE(rs.empty()) << comm.table();
    return;
  }
  // Page 03: the forward moves nothing until the loss squares y (P): one all-reduce. The backward
  // reads the reduced y, so the gradient reaching y is B, as Megatron's pair has it: it meets the
  // row layer's S(1) weight and the column layer's S(0) one without moving, and only x's gradient
  // (P) is all-reduced into its B leaf, in the bucket.
  std::vector<CommRecord> fwd, bwd;
  for (const CommRecord& r : rs) (r.backward ? bwd : fwd).push_back(r);
  EXPECT_EQ(kinds(fwd), std::vector<std::string>{"mul | P -> B on mesh axis 0 | all_reduce"}) << comm.table();
  EXPECT_EQ(kinds(bwd), std::vector<std::string>{"reduce gradients | gradient bucket (P) -> (B) | all_reduce"})
      << comm.table();
  ASSERT_EQ(fwd.size(), 1u);
  EXPECT_EQ(fwd[0].bytes, 20 * 16 * 4);
  ASSERT_EQ(bwd.size(), 1u);
  EXPECT_EQ(bwd[0].bytes, 20 * 10 * 4);  // x's gradient alone
}

// A backward collective is counted under the module whose forward made the node it runs in: a
// module that splits its input (B -> S(0)) gathers the S(0) gradient back into B in its backward.
TEST(CommTrace, CountsABackwardCollectiveUnderTheModuleWhoseForwardMadeItsNode) {
  if (world() == 1) GTEST_SKIP() << "a group of one moves nothing";
  const Placement p = Placement::all("cpu");
  struct Split : nn::UnaryModule {
    Placement p;
    explicit Split(const Placement& pl) : p(pl) {}
    Tensor forward(const Tensor& x) override { return x.to_global(p, sbp::split(0)); }
  };
  struct Net : nn::UnaryModule {
    Split split;
    explicit Net(const Placement& pl) : split(pl) { register_module("split", split); }
    Tensor forward(const Tensor& x) override { return split(x); }
  };
  manual_seed(0);
  Net net(p);
  Tensor x = randn({8, 4}, p, sbp::broadcast);
  x.set_requires_grad();
  CommTrace comm;
  const Tensor y = net(x);
  sum(mul(y, y)).backward();  // y's gradient 2y stays S(0)
  (void)x.grad();
  comm.stop();
  std::vector<CommRecord> bwd;
  for (const CommRecord& r : comm.records())
    if (r.backward) bwd.push_back(r);
  ASSERT_EQ(bwd.size(), 1u) << comm.table();
  EXPECT_EQ(bwd[0].collective, "all_gather") << comm.table();
  EXPECT_EQ(bwd[0].module, "split") << comm.table();
  EXPECT_THAT(comm.table(), HasSubstr("split  [backward]"));
}

TEST(CommTrace, NamesTheModulePathAndTheOpOfAForwardCollective) {
  if (world() == 1) GTEST_SKIP() << "a group of one moves nothing";
  const Placement p = Placement::all("cpu");
  manual_seed(0);
  struct Gathered : nn::UnaryModule {  // the row layer's P output made B inside the module
    ColumnRow layers;
    explicit Gathered(const Placement& p) : layers(p) { register_module("layers", layers); }
    Tensor forward(const Tensor& x) override { return layers(x).to_global(x.placement(), sbp::broadcast); }
  };
  struct Outer : nn::UnaryModule {
    Gathered block;
    explicit Outer(const Placement& p) : block(p) { register_module("block", block); }
    Tensor forward(const Tensor& x) override { return block(x); }
  } model(p);
  const Tensor x = randn({4, 10}, p, sbp::broadcast);
  CommTrace comm;
  (void)model(x);
  comm.stop();
  // The row layer's P output is boxed to B by to_global: outside any op, inside "block" (the root
  // module has no name; "layers" had returned).
  const std::vector<CommRecord> rs = comm.records();
  ASSERT_EQ(rs.size(), 1u) << comm.table();
  EXPECT_EQ(rs[0].module, "block");
  EXPECT_EQ(rs[0].op, "");
  EXPECT_THAT(comm.table(), HasSubstr("block  [forward]"));
}

// ---- timelines ----

std::string temp_path(const std::string& name) {
  return ::testing::TempDir() + "globe_trace_" + name + "_rank" + std::to_string(me()) + ".json";
}

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);  // throws on anything that is not JSON
}

// Checks every event's fields and the tracks' structure; returns the events.
std::vector<nlohmann::json> check_trace_events(const nlohmann::json& doc) {
  EXPECT_TRUE(doc.contains("traceEvents"));
  std::vector<nlohmann::json> events;
  std::map<std::pair<int, int>, std::vector<std::pair<double, double>>> open;  // per (pid, tid): spans
  std::map<std::string, int> async_open;
  bool named_process = false;
  for (const auto& e : doc["traceEvents"]) {
    EXPECT_TRUE(e.contains("name") && e["name"].is_string()) << e.dump();
    EXPECT_TRUE(e.contains("ph") && e["ph"].is_string()) << e.dump();
    EXPECT_TRUE(e.contains("pid") && e["pid"].is_number_integer()) << e.dump();
    const std::string ph = e["ph"];
    if (ph == "M") {
      named_process |= e["name"] == "process_name";
      continue;
    }
    EXPECT_EQ(e["pid"].get<int>(), me()) << "a rank's own file holds its own track";
    EXPECT_TRUE(e.contains("tid") && e.contains("ts") && e.contains("cat")) << e.dump();
    EXPECT_TRUE(ph == "X" || ph == "b" || ph == "e") << e.dump();
    if (ph == "X") {
      EXPECT_TRUE(e.contains("dur") && e["dur"].get<double>() >= 0) << e.dump();
      events.push_back(e);
    } else {
      EXPECT_TRUE(e.contains("id")) << e.dump();
      const std::string id = e["cat"].get<std::string>() + "/" + std::to_string(e["id"].get<long>());
      async_open[id] += ph == "b" ? 1 : -1;
      EXPECT_GE(async_open[id], 0) << "an end before its begin: " << e.dump();
      if (ph == "b") events.push_back(e);
    }
  }
  EXPECT_TRUE(named_process);
  for (const auto& [id, n] : async_open) EXPECT_EQ(n, 0) << "unmatched begin " << id;
  // Complete events on one track nest: sorted by start (longer first on ties), each lies inside
  // every span still open at its start, or after it (1 us of slack: times print to 1 ns, as us).
  std::vector<std::pair<double, double>> spans;
  for (const auto& e : events)
    if (e["ph"] == "X") spans.emplace_back(e["ts"].get<double>(), e["ts"].get<double>() + e["dur"].get<double>());
  std::sort(spans.begin(), spans.end(), [](auto a, auto b) { return a.first != b.first ? a.first < b.first : a.second > b.second; });
  std::vector<double> ends;
  for (const auto& [s, t] : spans) {
    while (!ends.empty() && ends.back() <= s + 1e-3) ends.pop_back();
    if (!ends.empty()) {
      EXPECT_LE(t, ends.back() + 1e-3) << "a span crosses the end of the span it starts in";
    }
    ends.push_back(t);
  }
  return events;
}

TEST(Timeline, IsValidTraceEventJsonWithNestedSpansAndMatchedInFlightPairs) {
  const std::string path = temp_path("dp");
  {
    trace::Timeline timeline(path);
    set_grad_bucket_bytes(1);  // a bucket per gradient: several all-reduces in flight at once
    DataParallel dp;
    dp.step();
    set_grad_bucket_bytes(4 << 20);
  }
  const std::vector<nlohmann::json> events = check_trace_events(read_json(path));
  std::map<std::string, int> by_cat;
  for (const auto& e : events) ++by_cat[e["cat"].get<std::string>()];
  EXPECT_GT(by_cat["op"], 5);       // matmul, add, sub, mean, ... and their backward ops
  EXPECT_EQ(by_cat["region"], 1);   // one backward pass
  if (world() > 1) {
    // Weight and bias each all-reduced, started in backward and finished by the step.
    int in_flight = 0;
    for (const auto& e : events)
      if (e["ph"] == "b") {
        ++in_flight;
        EXPECT_EQ(e["name"], "all_reduce");
        EXPECT_TRUE(e["args"]["bytes"].get<int64_t>() == 16 * 10 * 4 || e["args"]["bytes"].get<int64_t>() == 16 * 4) << e.dump();
        EXPECT_EQ(e["args"]["op"], "reduce gradients");
        EXPECT_EQ(e["args"]["backward"], true);
      }
    EXPECT_EQ(in_flight, 2);
  }
  std::remove(path.c_str());
}

TEST(Timeline, OneFOneBStepShowsTheScheduleOrderAndItsBubble) {
  if (world() != 2) GTEST_SKIP() << "a 2-stage pipeline, one rank per stage";
  manual_seed(3);
  std::vector<std::shared_ptr<nn::UnaryModule>> layers;
  std::vector<nn::UnaryModule*> blocks;
  for (int i = 0; i < 4; ++i) {
    layers.push_back(i % 2 ? std::shared_ptr<nn::UnaryModule>(std::make_shared<nn::Tanh>())
                           : std::make_shared<nn::Linear>(256, 256));
    blocks.push_back(layers.back().get());
  }
  const int m = 4;
  pipeline::Pipeline pipe({placement("cpu", {0}), placement("cpu", {1})}, blocks, {.schedule = "1f1b", .microbatches = m});
  const Tensor x = randn({512, 256}), t = randn({512, 256});
  auto loss = [](const Tensor& y, const Tensor& target) { return mse_loss(y, target); };
  (void)pipe.step(x, t, loss);  // warm: first-use costs (groups, buffers) out of the traced step
  const std::string path = temp_path("1f1b");
  pipeline::StepResult r;
  {
    trace::Timeline timeline(path);
    r = pipe.step(x, t, loss);
  }
  const std::vector<nlohmann::json> events = check_trace_events(read_json(path));
  // The actions this rank ran, in order, are the schedule's for its stage.
  std::vector<std::string> ran, planned;
  for (const pipeline::Action& a : pipe.schedule().order())
    if (a.stage == me()) planned.push_back(pipeline::to_string(a));
  double step_start = 0, step_end = 0, busy = 0;
  for (const auto& e : events) {
    const double s = e["ts"].get<double>(), d = e.value("dur", 0.0);
    if (e["cat"] == "pipeline") {
      ran.push_back(e["name"]);
      EXPECT_EQ(e["args"]["stage"], std::to_string(me()));
      busy += d;
    }
    if (e["name"] == "pipeline step") step_start = s, step_end = s + d;
  }
  // What an action spends receiving its input is bubble, as the pipeline counts it.
  for (const auto& e : events)
    if (e["cat"] == "wait" && e["name"].get<std::string>().rfind("receive ", 0) == 0) busy -= e["dur"].get<double>();
  EXPECT_EQ(ran, planned);
  ASSERT_GT(step_end, step_start);
  const double traced_bubble = 1.0 - busy / (step_end - step_start);
  const double measured_bubble = 1.0 - r.busy_seconds / r.step_seconds;
  std::printf("rank %d: bubble %.3f from the timeline, %.3f measured by the pipeline, %.3f in theory\n", me(),
              traced_bubble, measured_bubble, pipe.schedule().simulated_bubble());
  EXPECT_NEAR(traced_bubble, measured_bubble, 0.02);  // two clocks read a few microseconds apart
  std::remove(path.c_str());
}

TEST(Timeline, AnUnwritablePathIsAnErrorNamingIt) {
  EXPECT_THAT(testing::error_of([] { trace::Timeline t("/nonexistent-dir/x.json"); }),
              HasSubstr("[trace] cannot write the timeline /nonexistent-dir/x.json"));
}

}  // namespace
}  // namespace globe
