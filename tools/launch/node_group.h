// A job over several nodes without ssh: the same globe-launch command runs on every node, each
// told its --node_rank and node 0's --master_addr:--master_port (torchrun's and OneFlow's form).
//
// Node 0 listens there and waits for the other N-1 launchers (the rendezvous). It then runs
// mpirun over all nodes as --hosts would, but with globe-launch itself as Open MPI's remote
// agent (plm_rsh_agent) in place of ssh: where mpirun would ssh to a node to start its daemon,
// the agent hands the daemon's command line to node 0's launcher, which sends it to that node's
// waiting launcher; that one runs it, and reports how it ended, which the agent returns to
// mpirun as ssh would. From there everything is Open MPI's: the daemons connect back to mpirun,
// start the ranks, and carry their MPI traffic.
//
// The launchers speak text lines over TCP (sockets.h):
//   node -> 0:     hello globe-launch/1 NODE_RANK NPROC_PER_NODE HOSTNAME
//   0 -> node:     ok | abort WHY | run ID COMMAND | kill ID | done EXIT_CODE
//   node -> 0:     exit ID STATUS
//   agent -> 0:    spawn HOST COMMAND      (over a Unix socket named by GLOBE_LAUNCH_AGENT_SOCKET)
//   0 -> agent:    exit STATUS | error WHY
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "options.h"
#include "sockets.h"

namespace globe_launch {

// Hidden first argument of the agent mode: mpirun runs `globe-launch --_agent HOST COMMAND...`.
inline constexpr const char* kAgentFlag = "--_agent";

// Node 0's side: the other nodes' launchers, and the agents mpirun starts.
class NodeGroup {
 public:
  // Waits (up to o.rdzv_timeout_s) for the other nodes to join. Nothing on failure, with `error`
  // set (a node that never came, two launchers with one node rank, ...); every node that did come
  // is told why and ends.
  static std::unique_ptr<NodeGroup> gather(const LaunchOptions& o, std::string& error);
  ~NodeGroup();

  // The --hosts list of the job: this node, then every other one by the address it came from.
  std::string hosts() const;
  // The --mca settings that make mpirun reach the nodes through us.
  std::vector<std::pair<std::string, std::string>> mca() const;

  // Serves the agents on a thread of its own (signals blocked there) until finish().
  void start();
  // Tells every node the job ended with `exit_code` (they exit with it), and stops.
  void finish(int exit_code);

 private:
  struct Node {
    int node_rank = 0;
    std::string address;  // as seen from here
    std::string hostname;
    LineStream link;
  };
  NodeGroup() = default;
  void serve();
  void on_agent(LineStream& agent, const std::string& line, std::map<int, LineStream*>& waiting);
  void on_node(const std::string& line, std::map<int, LineStream*>& waiting);

  int nproc_per_node_ = 1;
  std::string self_host_;
  std::string agent_dir_, agent_path_;
  int agent_listen_ = -1;
  int stop_pipe_[2] = {-1, -1};
  std::vector<Node> nodes_;  // nodes 1..N-1, in node order
  std::map<int, int> spawned_on_;  // spawn id -> index into nodes_
  int next_id_ = 1;
  std::thread thread_;
};

// Node R > 0: joins node 0 and runs what it is sent, until the job ends. Returns the exit code.
int run_follower(const LaunchOptions& o);

// The agent mode (argv: globe-launch --_agent HOST COMMAND...). Returns the exit code.
int run_agent(int argc, char** argv);

}  // namespace globe_launch
