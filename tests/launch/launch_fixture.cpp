// A rank program for test_launch: what it does is chosen by argv[1]. It is not an MPI program
// (see launch_mpi_fixture.cpp for that): the launcher must work for any executable.
//
//   env                       print the rank environment on one line
//   lines                     print a stdout line, a stderr line, then a stdout tail with no '\n'
//   args A B ...              print the arguments joined by '|'
//   fail DIR RANK CODE        write DIR/pid.<RANK>; rank RANK waits until every rank has done
//                             so, then exits with CODE; the others sleep
//   segv DIR RANK             like fail, but rank RANK dies by SIGSEGV
//   sleep DIR SECONDS         write DIR/pid.<RANK>, then sleep
//   orphan DIR                fork a child that writes DIR/pid.<RANK> and sleeps (keeping
//                             stdout open), wait for that file, then exit 0
//   flood N                   print flood_line(RANK, i) for i in [0, N) on stdout as fast as stdio
//                             goes (every 7th on stderr instead)
#include <dirent.h>
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>

#include "flood_lines.h"

namespace {

std::string env_or(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v != nullptr ? v : fallback;
}

int my_rank() {
  return std::atoi(env_or("RANK", "-1").c_str());
}

// One write() per message, so a message is never split between ranks' output.
void put(int fd, const std::string& s) {
  [[maybe_unused]] ssize_t n = ::write(fd, s.data(), s.size());
}

void write_pid(const std::string& dir) {
  const std::string path = dir + "/pid." + std::to_string(my_rank());
  std::ofstream(path + ".tmp") << ::getpid() << "\n";
  std::rename((path + ".tmp").c_str(), path.c_str());  // readers never see a partial file
}

int count_pid_files(const std::string& dir) {
  int n = 0;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (const dirent* e = ::readdir(d)) {
      const std::string name = e->d_name;
      if (name.rfind("pid.", 0) == 0 && name.find(".tmp") == std::string::npos) ++n;
    }
    ::closedir(d);
  }
  return n;
}

void sleep_s(double s) {
  std::this_thread::sleep_for(std::chrono::duration<double>(s));
}

// Waits (at most 30 s) until every rank has written its pid file, so the test can later check
// that the launcher stopped all of them.
void wait_for_all_ranks(const std::string& dir) {
  const int world = std::atoi(env_or("WORLD_SIZE", "1").c_str());
  for (int i = 0; i < 3000 && count_pid_files(dir) < world; ++i) sleep_s(0.01);
}

int usage() {
  std::fprintf(stderr, "launch_fixture: bad arguments\n");
  return 100;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return usage();
  const std::string mode = argv[1];
  const std::string r = std::to_string(my_rank());
  if (mode == "env") {
    put(1, "env RANK=" + env_or("RANK", "unset") + " LOCAL_RANK=" + env_or("LOCAL_RANK", "unset") +
               " WORLD_SIZE=" + env_or("WORLD_SIZE", "unset") + " LOCAL_WORLD_SIZE=" +
               env_or("LOCAL_WORLD_SIZE", "unset") + " OMP=" + env_or("OMP_NUM_THREADS", "unset") +
               " BLAS=" + env_or("OPENBLAS_NUM_THREADS", "unset") + "\n");
    return 0;
  }
  if (mode == "flood" && argc == 3) {
    const int n = std::atoi(argv[2]);
    for (int i = 0; i < n; ++i) std::fprintf(i % 7 == 6 ? stderr : stdout, "%s\n", launch_test::flood_line(my_rank(), i).c_str());
    return 0;
  }
  if (mode == "lines") {
    put(1, "out from " + r + "\n");
    put(2, "err from " + r + "\n");
    put(1, "tail " + r);
    return 0;
  }
  if (mode == "args") {
    std::string joined = "args";
    for (int i = 2; i < argc; ++i) joined += (i == 2 ? " " : "|") + std::string(argv[i]);
    put(1, joined + "\n");
    return 0;
  }
  if ((mode == "fail" && argc == 5) || (mode == "segv" && argc == 4)) {
    const std::string dir = argv[2];
    write_pid(dir);
    if (my_rank() != std::atoi(argv[3])) {
      sleep_s(120);
      return 0;
    }
    wait_for_all_ranks(dir);
    if (mode == "fail") return std::atoi(argv[4]);
    rlimit no_core{0, 0};
    ::setrlimit(RLIMIT_CORE, &no_core);  // a crash test should not leave core files around
    std::signal(SIGSEGV, SIG_DFL);
    std::raise(SIGSEGV);
    return 101;  // not reached
  }
  if (mode == "orphan" && argc == 3) {
    const std::string dir = argv[2];
    if (::fork() == 0) {
      write_pid(dir);
      sleep_s(120);
      return 0;
    }
    for (int i = 0; i < 3000 && count_pid_files(dir) < 1; ++i) sleep_s(0.01);
    put(1, "left a child behind\n");
    return 0;
  }
  if (mode == "sleep" && argc == 4) {
    write_pid(argv[2]);
    sleep_s(std::atof(argv[3]));
    return 0;
  }
  return usage();
}
