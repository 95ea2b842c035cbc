#include "node_group.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include "common.h"

namespace globe_launch {
namespace {

constexpr const char* kProtocol = "globe-launch/1";
constexpr const char* kAgentSocketEnv = "GLOBE_LAUNCH_AGENT_SOCKET";

std::string where(const LaunchOptions& o) { return o.master_addr + ":" + std::to_string(o.master_port); }

// "1, 3" from {1, 3}.
std::string list(const std::vector<int>& v) {
  std::string s;
  for (int x : v) s += (s.empty() ? "" : ", ") + std::to_string(x);
  return s;
}

// The first word of `line`, and the rest after one space.
std::pair<std::string, std::string> split_word(const std::string& line) {
  const auto sp = line.find(' ');
  if (sp == std::string::npos) return {line, ""};
  return {line.substr(0, sp), line.substr(sp + 1)};
}

// How a waited-for child ended, as a shell reports it: its exit code, or 128 + signal.
int shell_status(int status) { return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status); }

}  // namespace

std::unique_ptr<NodeGroup> NodeGroup::gather(const LaunchOptions& o, std::string& error) {
  std::unique_ptr<NodeGroup> g(new NodeGroup);
  g->nproc_per_node_ = o.nproc_per_node;
  g->self_host_ = host_name();
  const int listen_fd = listen_tcp(o.master_port, true, error);
  if (listen_fd < 0) {
    error = "node 0: " + error + " (--master_port; is another job using it?)";
    return nullptr;
  }
  std::vector<LineStream> arriving;  // connected, not yet introduced
  auto refuse = [&](const std::string& why) {
    for (auto& n : g->nodes_) n.link.send("abort " + escape_line(why));
    ::close(listen_fd);
    error = why;
    return nullptr;
  };
  const double deadline = now_s() + o.rdzv_timeout_s;
  while (static_cast<int>(g->nodes_.size()) < o.nnodes - 1) {
    const double left = deadline - now_s();
    if (left <= 0) {
      std::vector<int> missing;
      for (int r = 1; r < o.nnodes; ++r)
        if (std::none_of(g->nodes_.begin(), g->nodes_.end(), [r](const Node& n) { return n.node_rank == r; }))
          missing.push_back(r);
      return refuse(std::string(missing.size() == 1 ? "node " : "nodes ") + list(missing) + " of " +
                    std::to_string(o.nnodes) + " did not join at " + where(o) + " within " +
                    std::to_string(static_cast<int>(o.rdzv_timeout_s)) +
                    " s (--rdzv_timeout): run the same globe-launch command there with --node_rank " +
                    std::to_string(missing[0]) + ", and check that it can reach " + where(o));
    }
    std::vector<pollfd> fds{{listen_fd, POLLIN, 0}};
    for (auto& a : arriving) fds.push_back({a.fd(), POLLIN, 0});
    if (::poll(fds.data(), fds.size(), static_cast<int>(left * 1000) + 1) < 0 && errno != EINTR) {
      return refuse(std::string("node 0: poll: ") + std::strerror(errno));
    }
    if (fds[0].revents & POLLIN) {
      const int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd >= 0) arriving.emplace_back(fd);
    }
    for (std::size_t i = 1; i < fds.size(); ++i) {
      LineStream& a = arriving[i - 1];
      if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      if (!a.fill()) {
        a.close();
        continue;
      }
      const auto hello = a.next();
      if (!hello) continue;
      std::istringstream in(*hello);
      std::string word, protocol, hostname;
      int rank = -1, nproc = 0;
      if (!(in >> word >> protocol >> rank >> nproc >> hostname) || word != "hello" || protocol != kProtocol) {
        a.send("abort " + escape_line(std::string("node 0 speaks ") + kProtocol +
                                      ": run the same globe-launch on every node"));
        a.close();
        continue;
      }
      const std::string from = peer_address(a.fd());
      const std::string who = "node " + std::to_string(rank) + " (" + hostname + ", " + from + ")";
      Node node{rank, from, hostname, std::move(a)};
      g->nodes_.push_back(std::move(node));  // told why, too, if refused below
      if (rank < 1 || rank >= o.nnodes)
        return refuse("a launcher joined as " + who + ", outside --nnodes " + std::to_string(o.nnodes));
      for (std::size_t k = 0; k + 1 < g->nodes_.size(); ++k) {
        const Node& other = g->nodes_[k];
        if (other.node_rank == rank)
          return refuse("two launchers joined as node " + std::to_string(rank) + " (from " + other.address + " and " +
                        from + "): give each node its own --node_rank");
        if (other.address == from)
          return refuse("nodes " + std::to_string(other.node_rank) + " and " + std::to_string(rank) +
                        " both joined from " + from + ": run one globe-launch per machine, with --nproc_per_node for "
                        "its ranks");
      }
      if (nproc != o.nproc_per_node)
        return refuse(who + " has --nproc_per_node " + std::to_string(nproc) + " where node 0 has " +
                      std::to_string(o.nproc_per_node) + ": every node must run as many ranks");
      if (peer_is_this_machine(g->nodes_.back().link.fd()))
        return refuse(who + " joined from node 0's own machine: run one globe-launch per machine, with "
                      "--nproc_per_node for its ranks");
    }
    std::erase_if(arriving, [](const LineStream& a) { return !a.open(); });
  }
  ::close(listen_fd);
  for (auto& a : arriving) a.send("abort " + escape_line("every node of the job has joined already"));
  std::sort(g->nodes_.begin(), g->nodes_.end(), [](const Node& a, const Node& b) { return a.node_rank < b.node_rank; });

  // mpirun's agents find us through a Unix socket of our own.
  const char* tmp = std::getenv("TMPDIR");
  g->agent_dir_ = std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/globe-launch-agent.XXXXXX";
  if (::mkdtemp(g->agent_dir_.data()) == nullptr) {
    g->agent_dir_.clear();
    return refuse(std::string("node 0: cannot create a directory for the agent socket: ") + std::strerror(errno));
  }
  g->agent_path_ = g->agent_dir_ + "/socket";
  g->agent_listen_ = listen_unix(g->agent_path_, error);
  if (g->agent_listen_ < 0 || ::pipe2(g->stop_pipe_, O_CLOEXEC) != 0) return refuse("node 0: " + error);
  ::setenv(kAgentSocketEnv, g->agent_path_.c_str(), 1);
  for (auto& n : g->nodes_) n.link.send("ok");
  return g;
}

NodeGroup::~NodeGroup() {
  if (thread_.joinable()) finish(1);
  for (int fd : {agent_listen_, stop_pipe_[0], stop_pipe_[1]})
    if (fd >= 0) ::close(fd);
  if (!agent_path_.empty()) ::unlink(agent_path_.c_str());
  if (!agent_dir_.empty()) ::rmdir(agent_dir_.c_str());
  ::unsetenv(kAgentSocketEnv);
}

std::string NodeGroup::hosts() const {
  std::string h = self_host_ + ":" + std::to_string(nproc_per_node_);
  for (const auto& n : nodes_) h += "," + n.address + ":" + std::to_string(nproc_per_node_);
  return h;
}

std::vector<std::pair<std::string, std::string>> NodeGroup::mca() const {
  // No tree spawn: every daemon is started from node 0, where the agent can reach us.
  return {{"plm_rsh_agent", self_exe_path() + " " + kAgentFlag}, {"plm_rsh_no_tree_spawn", "1"}};
}

void NodeGroup::start() {
  // The launcher's main thread waits for its signals synchronously; none may land here.
  sigset_t all, old;
  sigfillset(&all);
  ::pthread_sigmask(SIG_BLOCK, &all, &old);
  thread_ = std::thread([this] { serve(); });
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

void NodeGroup::finish(int exit_code) {
  if (thread_.joinable()) {
    [[maybe_unused]] ssize_t n = ::write(stop_pipe_[1], "x", 1);
    thread_.join();
  }
  for (auto& n : nodes_) {
    n.link.send("done " + std::to_string(exit_code));
    n.link.close();
  }
}

void NodeGroup::on_agent(LineStream& agent, const std::string& line, std::map<int, LineStream*>& waiting) {
  const auto [word, rest] = split_word(line);
  const auto [host, command] = split_word(rest);
  if (word != "spawn") return;
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    Node& n = nodes_[i];
    if (host != n.address && host != n.hostname) continue;
    const int id = next_id_++;
    if (!n.link.send("run " + std::to_string(id) + " " + command)) {
      agent.send("error " + escape_line("node " + std::to_string(n.node_rank) + " (" + n.address + ") has left the job"));
      return;
    }
    waiting[id] = &agent;
    spawned_on_[id] = static_cast<int>(i);
    return;
  }
  std::string known;
  for (const auto& n : nodes_) known += (known.empty() ? "" : ", ") + n.address;
  agent.send("error " + escape_line("no node of this job is " + host + " (the others are " + known + ")"));
}

void NodeGroup::on_node(const std::string& line, std::map<int, LineStream*>& waiting) {
  std::istringstream in(line);
  std::string word;
  int id = 0, status = 0;
  if (!(in >> word >> id >> status) || word != "exit") return;
  if (auto it = waiting.find(id); it != waiting.end()) {
    it->second->send("exit " + std::to_string(status));
    waiting.erase(it);
  }
  spawned_on_.erase(id);
}

void NodeGroup::serve() {
  std::vector<std::unique_ptr<LineStream>> agents;
  std::map<int, LineStream*> waiting;  // spawn id -> the agent that waits for it
  for (;;) {
    std::vector<pollfd> fds{{stop_pipe_[0], POLLIN, 0}, {agent_listen_, POLLIN, 0}};
    for (auto& a : agents) fds.push_back({a->fd(), POLLIN, 0});
    for (auto& n : nodes_) fds.push_back({n.link.fd(), POLLIN, 0});  // -1 (left) is skipped by poll
    if (::poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[0].revents) return;
    if (fds[1].revents & POLLIN) {
      const int fd = ::accept4(agent_listen_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd >= 0) agents.push_back(std::make_unique<LineStream>(fd));
    }
    std::size_t at = 2;
    for (auto& a : agents) {
      const short ev = fds[at++].revents;
      if (!ev) continue;
      if (!a->fill()) {
        // mpirun stopped the agent: stop the daemon it started.
        for (auto it = waiting.begin(); it != waiting.end();) {
          if (it->second != a.get()) {
            ++it;
            continue;
          }
          if (auto s = spawned_on_.find(it->first); s != spawned_on_.end())
            nodes_[static_cast<std::size_t>(s->second)].link.send("kill " + std::to_string(it->first));
          it = waiting.erase(it);
        }
        a->close();
        continue;
      }
      while (auto line = a->next()) on_agent(*a, *line, waiting);
    }
    for (auto& n : nodes_) {
      const short ev = fds[at++].revents;
      if (!ev || !n.link.open()) continue;
      if (!n.link.fill()) {
        const std::string why = "node " + std::to_string(n.node_rank) + " (" + n.address + ") left the job";
        say(why);
        for (auto s = spawned_on_.begin(); s != spawned_on_.end();) {
          if (&nodes_[static_cast<std::size_t>(s->second)] != &n) {
            ++s;
            continue;
          }
          if (auto w = waiting.find(s->first); w != waiting.end()) {
            w->second->send("error " + escape_line(why));
            waiting.erase(w);
          }
          s = spawned_on_.erase(s);
        }
        n.link.close();
        continue;
      }
      while (auto line = n.link.next()) on_node(*line, waiting);
    }
    std::erase_if(agents, [](const std::unique_ptr<LineStream>& a) { return !a->open(); });
  }
}

namespace {

// The daemons a follower runs: pid (its own process group) -> spawn id.
struct Daemons {
  std::map<pid_t, int> running;

  void start(int id, const std::string& command, const sigset_t& old_mask) {
    const pid_t parent = ::getpid();
    const pid_t pid = ::fork();
    if (pid < 0) return;
    if (pid == 0) {
      ::setpgid(0, 0);
      ::prctl(PR_SET_PDEATHSIG, SIGTERM);
      if (::getppid() != parent) ::_exit(1);
      ::sigprocmask(SIG_SETMASK, &old_mask, nullptr);
      ::signal(SIGPIPE, SIG_DFL);
      // ssh runs the command words through the remote user's shell; so do we.
      ::execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
    ::setpgid(pid, pid);
    running[pid] = id;
  }
  void kill(int id, int sig) {
    for (const auto& [pid, i] : running)
      if (i == id) ::kill(-pid, sig);
  }
  // Stops every daemon: SIGTERM, then SIGKILL after `grace_s`; reaps them.
  void stop_all(double grace_s) {
    for (const auto& [pid, id] : running) ::kill(-pid, SIGTERM);
    const double until = now_s() + grace_s;
    while (!running.empty()) {
      for (auto it = running.begin(); it != running.end();) {
        int status = 0;
        it = ::waitpid(it->first, &status, WNOHANG) == 0 ? std::next(it) : running.erase(it);
      }
      if (now_s() > until)
        for (const auto& [pid, id] : running) ::kill(-pid, SIGKILL);
      if (!running.empty()) ::usleep(10000);
    }
  }
};

}  // namespace

int run_follower(const LaunchOptions& o) {
  const std::string me = "node " + std::to_string(o.node_rank);
  const double deadline = now_s() + o.rdzv_timeout_s;
  std::string error;
  int fd = -1;
  // Node 0 may start after us: try again until the rendezvous time is up.
  while ((fd = connect_tcp(o.master_addr, std::to_string(o.master_port), 5000, error)) < 0) {
    if (now_s() + 0.5 > deadline) {
      say(me + ": could not reach node 0 at " + where(o) + " within " +
          std::to_string(static_cast<int>(o.rdzv_timeout_s)) + " s (--rdzv_timeout): " + error +
          ". Is globe-launch --node_rank 0 running there, and is --master_addr node 0's address?");
      return 1;
    }
    ::usleep(500000);
  }
  LineStream link(fd);
  link.send(std::string("hello ") + kProtocol + " " + std::to_string(o.node_rank) + " " +
            std::to_string(o.nproc_per_node) + " " + host_name());
  // Node 0 answers by its own deadline, which may be up to one rendezvous time after ours.
  const auto answer = link.read(static_cast<int>(2 * o.rdzv_timeout_s * 1000) + 10000);
  if (!answer || answer->rfind("abort ", 0) == 0) {
    say(me + ": the job did not start: " +
        (answer ? unescape_line(answer->substr(6)) : "node 0 at " + where(o) + " did not answer"));
    return 1;
  }
  if (*answer != "ok") {
    say(me + ": " + where(o) + " is not a globe-launch node 0 (it said '" + answer->substr(0, 80) + "')");
    return 1;
  }

  sigset_t handled, old_mask;
  sigemptyset(&handled);
  for (int sig : {SIGCHLD, SIGINT, SIGTERM, SIGHUP}) sigaddset(&handled, sig);
  ::sigprocmask(SIG_BLOCK, &handled, &old_mask);
  const int sig_fd = ::signalfd(-1, &handled, SFD_CLOEXEC);
  Daemons daemons;
  auto end = [&](int code, const std::string& why) {
    daemons.stop_all(5.0);
    if (!why.empty()) say(me + ": " + why);
    ::close(sig_fd);
    ::sigprocmask(SIG_SETMASK, &old_mask, nullptr);
    return code;
  };
  for (;;) {
    pollfd fds[2] = {{link.fd(), POLLIN, 0}, {sig_fd, POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return end(1, std::string("poll: ") + std::strerror(errno));
    }
    if (fds[1].revents & POLLIN) {
      signalfd_siginfo info{};
      if (::read(sig_fd, &info, sizeof(info)) == sizeof(info) && info.ssi_signo != SIGCHLD) {
        const int sig = static_cast<int>(info.ssi_signo);
        return end(128 + sig, std::string("got SIG") + sigabbrev_np(sig) + "; stopped this node's part of the job");
      }
      int status = 0;
      for (pid_t pid; (pid = ::waitpid(-1, &status, WNOHANG)) > 0;) {
        auto it = daemons.running.find(pid);
        if (it == daemons.running.end()) continue;
        link.send("exit " + std::to_string(it->second) + " " + std::to_string(shell_status(status)));
        daemons.running.erase(it);
      }
    }
    if (fds[0].revents) {
      if (!link.fill()) return end(1, "lost the connection to node 0 (" + where(o) + "); stopped this node's part");
      while (auto line = link.next()) {
        const auto [word, rest] = split_word(*line);
        if (word == "run") {
          const auto [id, command] = split_word(rest);
          daemons.start(std::atoi(id.c_str()), unescape_line(command), old_mask);
        } else if (word == "kill") {
          daemons.kill(std::atoi(rest.c_str()), SIGTERM);
        } else if (word == "abort") {
          return end(1, "the job was stopped: " + unescape_line(rest));
        } else if (word == "done") {
          const int code = std::atoi(rest.c_str());
          return end(code, code == 0 ? "" : "the job failed (exit code " + rest + "); node 0's output says why");
        }
      }
    }
  }
}

int run_agent(int argc, char** argv) {
  const char* path = std::getenv(kAgentSocketEnv);
  if (argc < 4 || path == nullptr) {
    std::fprintf(stderr, "globe-launch %s: Open MPI's remote agent of a multi-node globe-launch (--nnodes); "
                         "not for direct use\n", kAgentFlag);
    return 255;
  }
  // mpirun runs `AGENT HOST COMMAND...`, as for ssh: the words make one shell command.
  const std::string host = argv[2];
  std::string command;
  for (int i = 3; i < argc; ++i) command += (i > 3 ? " " : "") + std::string(argv[i]);
  std::string error;
  const int fd = connect_unix(path, error);
  if (fd < 0) {
    std::fprintf(stderr, "globe-launch: cannot reach node 0's launcher: %s\n", error.c_str());
    return 255;
  }
  LineStream link(fd);
  link.send("spawn " + host + " " + escape_line(command));
  // The daemon runs as long as the job: wait for how it ended, as ssh does.
  const auto answer = link.read(INT_MAX);
  if (answer && answer->rfind("exit ", 0) == 0) return std::atoi(answer->c_str() + 5);
  std::fprintf(stderr, "globe-launch: cannot run Open MPI's daemon on %s: %s\n", host.c_str(),
               answer ? unescape_line(split_word(*answer).second).c_str() : "node 0's launcher went away");
  return 255;
}

}  // namespace globe_launch
