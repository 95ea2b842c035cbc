// globe-launch, the happy paths: command line, rank environment, output prefixes and logs, and
// MPI programs finding each other. Failures, signals and timeouts: test_launch_failures.cpp.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "flood_lines.h"
#include "launcher_process.h"

namespace launch_test {
namespace {

std::string fixture() {
  return bin_dir() + "/launch_fixture";
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::stringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

TEST(Launch, HelpMentionsEveryOption) {
  const RunResult r = run_launcher({"--help"});
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  for (const char* word : {"--nproc_per_node",
                           "--nproc-per-node",
                           "--np",
                           "--hosts",
                           "--hostfile",
                           "--nnodes",
                           "--node_rank",
                           "--master_addr",
                           "--master_port",
                           "--rdzv_timeout",
                           "--no-prefix",
                           "--logdir",
                           "--timeout",
                           "--mpirun",
                           "--mca",
                           "-x VAR",
                           "-h, --help",
                           "GLOBE_LAUNCH_NO_PREFIX",
                           "RANK",
                           "LOCAL_RANK",
                           "WORLD_SIZE",
                           "LOCAL_WORLD_SIZE",
                           "OMP_NUM_THREADS",
                           "OPENBLAS_NUM_THREADS",
                           "124",
                           "130",
                           "127",
                           "Example"}) {
    EXPECT_TRUE(contains(r.out, word)) << "help lacks " << word;
  }
  EXPECT_EQ(run_launcher({"-h"}).out, r.out);
}

TEST(Launch, UnknownOptionIsAUsageError) {
  const RunResult r = run_launcher({"--bogus", fixture(), "env"});
  EXPECT_EQ(r.exit_code, 2) << describe(r);
  EXPECT_TRUE(contains(r.err, "unknown option '--bogus'")) << r.err;
  EXPECT_TRUE(contains(r.err, "Usage:")) << r.err;
  EXPECT_EQ(run_launcher({"--nproc_per_node", "0", fixture(), "env"}).exit_code, 2);
  EXPECT_EQ(run_launcher({"--nproc_per_node"}).exit_code, 2);
  EXPECT_EQ(run_launcher({}).exit_code, 2);
}

class LaunchRanks : public ::testing::TestWithParam<int> {};

TEST_P(LaunchRanks, EveryRankSeesItsEnvironment) {
  const int n = GetParam();
  const RunResult r = run_launcher({"--nproc_per_node", std::to_string(n), fixture(), "env"});
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  const std::string threads = std::to_string(std::max(1, usable_cores() / n));
  std::vector<std::string> got = lines_of(r.out), want;
  for (int i = 0; i < n; ++i) {
    const std::string s = std::to_string(i), ns = std::to_string(n);
    want.push_back("[rank" + s + "] env RANK=" + s + " LOCAL_RANK=" + s + " WORLD_SIZE=" + ns +
                   " LOCAL_WORLD_SIZE=" + ns + " OMP=" + threads + " BLAS=" + threads);
  }
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, want) << describe(r);
}

INSTANTIATE_TEST_SUITE_P(OneTwoFour, LaunchRanks, ::testing::Values(1, 2, 4));

TEST(Launch, PresetThreadCountsAreKept) {
  const RunResult r = run_launcher({"--nproc-per-node=2", fixture(), "env"},
                                   {"OMP_NUM_THREADS=7", "OPENBLAS_NUM_THREADS=5"});
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  EXPECT_TRUE(contains(r.out,
                       "[rank0] env RANK=0 LOCAL_RANK=0 WORLD_SIZE=2 LOCAL_WORLD_SIZE=2 "
                       "OMP=7 BLAS=5\n"))
      << r.out;
  EXPECT_TRUE(contains(r.out,
                       "[rank1] env RANK=1 LOCAL_RANK=1 WORLD_SIZE=2 LOCAL_WORLD_SIZE=2 "
                       "OMP=7 BLAS=5\n"))
      << r.out;
  // Only the one that is set is kept; the other still gets the default.
  const RunResult only_omp = run_launcher({fixture(), "env"}, {"OMP_NUM_THREADS=3"});
  EXPECT_TRUE(contains(only_omp.out, " OMP=3 BLAS=" + std::to_string(usable_cores()) + "\n"))
      << describe(only_omp);
}

TEST(Launch, OutputLinesArePrefixedPerStream) {
  const RunResult r = run_launcher({"--nproc_per_node", "2", fixture(), "lines"});
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  for (const char* rank : {"0", "1"}) {
    const std::string p = std::string("[rank") + rank + "] ";
    EXPECT_TRUE(contains(r.out, p + "out from " + rank + "\n")) << r.out;
    EXPECT_TRUE(contains(r.out, p + "tail " + rank + "\n")) << r.out;  // partial line flushed
    EXPECT_TRUE(contains(r.err, p + "err from " + rank + "\n")) << r.err;
  }
  EXPECT_FALSE(contains(r.out, "err from")) << r.out;
  EXPECT_FALSE(contains(r.err, "out from")) << r.err;
  const std::vector<std::string> out_lines = lines_of(r.out);
  EXPECT_EQ(out_lines.size(), 4u) << r.out;
  for (const auto& line : out_lines) EXPECT_EQ(line.rfind("[rank", 0), 0u) << line;
}

// The lines rank `rank` of `launch_fixture flood n` prints on stdout (or on stderr), in order.
std::vector<std::string> flood_expected(int rank, int n, bool on_stderr) {
  std::vector<std::string> lines;
  for (int i = 0; i < n; ++i)
    if ((i % 7 == 6) == on_stderr) lines.push_back(flood_line(rank, i));
  return lines;
}

// Under load mpirun's own forwarding cut lines at 4096-byte boundaries and glued other ranks'
// lines into them; every line must arrive whole, prefixed, in its rank's order.
TEST(Launch, EveryLineArrivesWholeUnderLoad) {
  constexpr int kRanks = 4, kLines = 5000;
  const RunResult r = run_launcher({"--nproc_per_node", std::to_string(kRanks), fixture(), "flood", std::to_string(kLines)},
                                   {}, /*deadline_s=*/120);
  ASSERT_EQ(r.exit_code, 0) << r.err.substr(0, 2000);
  for (const bool on_stderr : {false, true}) {
    std::vector<std::vector<std::string>> got(kRanks);
    int foreign = 0;
    for (const std::string& line : lines_of(on_stderr ? r.err : r.out)) {
      const std::size_t close = line.find("] ");
      const int rank = line.rfind("[rank", 0) == 0 && close != std::string::npos ? std::atoi(line.c_str() + 5) : -1;
      if (rank < 0 || rank >= kRanks) {
        ++foreign;
        continue;
      }
      got[rank].push_back(line.substr(close + 2));
    }
    EXPECT_EQ(foreign, 0) << "lines without a rank prefix on " << (on_stderr ? "stderr" : "stdout");
    for (int rank = 0; rank < kRanks; ++rank) {
      const std::vector<std::string> expected = flood_expected(rank, kLines, on_stderr);
      EXPECT_EQ(got[rank].size(), expected.size()) << "rank " << rank << (on_stderr ? " stderr" : " stdout");
      std::size_t i = 0;
      while (i < std::min(got[rank].size(), expected.size()) && got[rank][i] == expected[i]) ++i;
      const std::string wrong = i < got[rank].size() ? got[rank][i].substr(0, 80) : "(missing)";
      EXPECT_EQ(i, expected.size()) << "rank " << rank << (on_stderr ? " stderr" : " stdout") << ": line " << i
                                    << " is '" << wrong << "'";
    }
  }
  // --no-prefix stays byte-exact: one rank's stdout is exactly what it printed.
  const RunResult raw = run_launcher({"--no-prefix", fixture(), "flood", "2000"});
  ASSERT_EQ(raw.exit_code, 0) << raw.err.substr(0, 2000);
  std::string expected_raw;
  for (const std::string& line : flood_expected(0, 2000, false)) expected_raw += line + "\n";
  EXPECT_TRUE(raw.out == expected_raw) << "--no-prefix output differs (" << raw.out.size() << " bytes, expected "
                                       << expected_raw.size() << ")";
}

// `globe-launch ... | head -4`: the reader goes away while the ranks still print. The launcher once
// died of SIGPIPE there, leaving mpirun (stuck, never exiting) holding the caller's stderr open, so
// whoever waited for that stream hung. Now the output is dropped and the job runs to its end.
TEST(Launch, AReaderThatLeavesEarlyEndsNothingAndHangsNothing) {
  LauncherProcess p({"--nproc_per_node", "2", fixture(), "flood", "20000"});
  const RunResult r = p.wait(/*deadline_s=*/60, /*close_stdout_after=*/100);
  EXPECT_FALSE(r.hung) << describe(r);
  EXPECT_EQ(r.exit_code, 0) << describe(r);
  EXPECT_GE(r.out.size(), 100u);
}

TEST(Launch, NoPrefixByFlagOrEnvironment) {
  for (const bool by_env : {false, true}) {
    const RunResult r =
        by_env ? run_launcher({"--nproc_per_node", "2", fixture(), "lines"},
                              {"GLOBE_LAUNCH_NO_PREFIX=1"})
               : run_launcher({"--nproc_per_node", "2", "--no-prefix", fixture(), "lines"});
    ASSERT_EQ(r.exit_code, 0) << describe(r);
    EXPECT_TRUE(contains(r.out, "out from 0\n")) << r.out;
    EXPECT_TRUE(contains(r.out, "out from 1\n")) << r.out;
    EXPECT_TRUE(contains(r.err, "err from 1\n")) << r.err;
    EXPECT_FALSE(contains(r.out + r.err, "[rank")) << describe(r);
  }
}

TEST(Launch, LogdirKeepsOneUnprefixedLogPerRank) {
  TempDir tmp;
  const std::string logdir = tmp.path() + "/logs";  // does not exist yet
  const RunResult r =
      run_launcher({"--nproc_per_node", "2", "--logdir", logdir, fixture(), "lines"});
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  for (const char* rank : {"0", "1"}) {
    const std::string path = logdir + "/rank." + rank + ".log";
    const std::string log = read_file(path);
    EXPECT_TRUE(contains(log, std::string("out from ") + rank + "\n")) << path << ": " << log;
    EXPECT_TRUE(contains(log, std::string("err from ") + rank + "\n")) << path << ": " << log;
    EXPECT_TRUE(contains(log, std::string("tail ") + rank)) << path << ": " << log;
    EXPECT_FALSE(contains(log, "[rank")) << path << ": " << log;
    std::remove(path.c_str());
  }
  EXPECT_TRUE(contains(r.out, "[rank1] out from 1\n")) << r.out;  // the terminal still gets it
  ::rmdir(logdir.c_str());
}

TEST(Launch, ArgumentsArePassedUnchanged) {
  const RunResult r = run_launcher({fixture(), "args", "a b", "", "--np", "$HOME", "c'd"});
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  EXPECT_EQ(r.out, "[rank0] args a b||--np|$HOME|c'd\n");
  const RunResult dashdash = run_launcher({"--no-prefix", "--", fixture(), "args", "x"});
  EXPECT_EQ(dashdash.out, "args x\n") << describe(dashdash);
}

TEST(Launch, SingleNodeOneFlowFlagsAreAccepted) {
  const RunResult r =
      run_launcher({"--nnodes", "1", "--node_rank", "0", "--master_addr", "127.0.0.1",
                    "--master_port", "29500", "--nproc_per_node", "2", fixture(), "env"});
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  EXPECT_TRUE(contains(r.out, "[rank1] env RANK=1 ")) << r.out;
}

TEST(Launch, MultiNodeCommandLinesThatCannotWorkAreRefused) {
  struct Case {
    std::vector<std::string> args;
    const char* says;
  };
  const std::vector<Case> cases = {
      {{"--nnodes", "2", "--node_rank", "0"}, "needs --master_addr"},
      {{"--nnodes", "2", "--node_rank", "2", "--master_addr", "10.0.0.1"}, "--node_rank 2 is outside --nnodes 2"},
      {{"--nnodes", "2", "--master_addr", "10.0.0.1", "--hosts", "a:1,b:1"}, "use one form or the other"},
      {{"--nnodes", "2", "--master_addr", "10.0.0.1", "--master_port", "70000"}, "expected a port number"},
      {{"--nnodes", "2", "--master_addr", "10.0.0.1", "--rdzv_timeout", "0"}, "--rdzv_timeout: expected"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> args = c.args;
    args.insert(args.end(), {fixture(), "env"});
    const RunResult r = run_launcher(args);
    EXPECT_EQ(r.exit_code, 2) << describe(r);
    EXPECT_TRUE(contains(r.err, c.says)) << c.says << "\n" << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
  }
}

// The rendezvous of one launcher per node (the two-host test runs real jobs across hosts): what
// fails on one machine fails every launcher that came, within the rendezvous time, naming why.
std::vector<std::string> node_args(int node_rank, const std::string& port, const char* rdzv) {
  return {"--nnodes", "2", "--node_rank", std::to_string(node_rank), "--master_addr", "127.0.0.1",
          "--master_port", port, "--rdzv_timeout", rdzv, fixture(), "env"};
}

// A port nothing listens on now: the one the system gives a socket bound to port 0 (a fixed number
// could be taken by another test's process, and node 0 would fail for that reason).
std::string free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  socklen_t len = sizeof(addr);
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return std::to_string(ntohs(addr.sin_port));
}

TEST(Launch, ANodeThatNeverJoinsFailsNodeZeroNamingIt) {
  const RunResult r = run_launcher(node_args(0, free_port(), "1"));
  EXPECT_EQ(r.exit_code, 1) << describe(r);
  EXPECT_TRUE(contains(r.err, "node 1 of 2 did not join at 127.0.0.1:")) << r.err;
  EXPECT_TRUE(contains(r.err, "--node_rank 1")) << r.err;
  EXPECT_LT(r.seconds, 10) << describe(r);
}

TEST(Launch, ANodeZeroThatNeverComesFailsTheOthersNamingItsAddress) {
  const std::string port = free_port();
  const RunResult r = run_launcher(node_args(1, port, "1"));
  EXPECT_EQ(r.exit_code, 1) << describe(r);
  EXPECT_TRUE(contains(r.err, "node 1: could not reach node 0 at 127.0.0.1:" + port)) << r.err;
  EXPECT_LT(r.seconds, 10) << describe(r);
}

TEST(Launch, TwoNodesOnOneMachineAreRefusedOnBoth) {
  const std::string port = free_port();
  LauncherProcess zero(node_args(0, port, "20"));
  LauncherProcess one(node_args(1, port, "20"));
  const RunResult r0 = zero.wait(30), r1 = one.wait(30);
  for (const RunResult* r : {&r0, &r1}) {
    EXPECT_EQ(r->exit_code, 1) << describe(*r);
    EXPECT_TRUE(contains(r->err, "joined from node 0's own machine: run one globe-launch per machine")) << r->err;
    EXPECT_TRUE(r->out.empty()) << r->out;
  }
}

TEST(Launch, HostListAndHostfileRunLocally) {
  const RunResult hosts = run_launcher({"--hosts", "localhost:2", fixture(), "env"});
  ASSERT_EQ(hosts.exit_code, 0) << describe(hosts);
  EXPECT_TRUE(contains(hosts.out, "[rank1] env RANK=1 LOCAL_RANK=1 WORLD_SIZE=2 ")) << hosts.out;

  TempDir tmp;
  const std::string hostfile = tmp.path() + "/hostfile";
  { std::ofstream(hostfile) << "localhost slots=3\n"; }
  const RunResult file = run_launcher({"--hostfile", hostfile, "--np", "3", fixture(), "env"});
  ASSERT_EQ(file.exit_code, 0) << describe(file);
  EXPECT_TRUE(contains(file.out, "[rank2] env RANK=2 LOCAL_RANK=2 WORLD_SIZE=3 ")) << file.out;
  EXPECT_EQ(run_launcher({"--hosts", "localhost:x", fixture(), "env"}).exit_code, 2);
}

TEST(Launch, UserMcaParametersReplaceTheDefaults) {
  // mpirun refuses a parameter given twice, so the launcher must drop its own default.
  const RunResult r = run_launcher({"--mca", "odls_base_sigkill_timeout", "1", "--mca", "pml",
                                    "ob1", "--nproc_per_node", "2", fixture(), "env"});
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  EXPECT_TRUE(contains(r.out, "[rank1] env RANK=1 ")) << r.out;
  const RunResult env = run_launcher({fixture(), "env"}, {"OMPI_MCA_pml=ob1"});
  EXPECT_EQ(env.exit_code, 0) << describe(env);
}

TEST(Launch, MpirunErrorsAreReportedAsSuch) {
  const RunResult r = run_launcher({"--hostfile", "/nonexistent/hostfile", fixture(), "env"});
  EXPECT_NE(r.exit_code, 0) << describe(r);
  EXPECT_TRUE(contains(r.err, "globe-launch: mpirun exited with code")) << describe(r);
}

TEST(Launch, MpiProgramsFindEachOther) {
  for (const int n : {2, 4}) {
    const RunResult r = run_launcher(
        {"--nproc_per_node", std::to_string(n), bin_dir() + "/launch_mpi_fixture", "sum"});
    ASSERT_EQ(r.exit_code, 0) << describe(r);
    const std::string ns = std::to_string(n), sum = std::to_string(n * (n - 1) / 2);
    for (int i = 0; i < n; ++i) {
      const std::string s = std::to_string(i);
      EXPECT_TRUE(contains(
          r.out, "[rank" + s + "] mpi " + s + "/" + ns + " sum " + sum + " env " + s + "\n"))
          << describe(r);
    }
  }
}

}  // namespace
}  // namespace launch_test
