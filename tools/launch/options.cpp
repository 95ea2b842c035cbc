// Parsing of globe-launch's user-facing options (see usage_text() for the contract).
#include "options.h"

#include <charconv>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string_view>

namespace globe_launch {
namespace {

bool parse_int(std::string_view s, int& out) {
  if (s.empty()) return false;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && ptr == s.data() + s.size();
}

bool parse_seconds(const std::string& s, double& out) {
  if (s.empty()) return false;
  char* end = nullptr;
  out = std::strtod(s.c_str(), &end);
  return end == s.c_str() + s.size() && out > 0 && out < 1e9;
}

// Gives every entry of "h1:2,h2" a slot count ("h2" -> "h2:N"), returns the sum via `total`.
// Returns an error text, empty on success.
std::string normalise_hosts(const std::string& list, int default_slots, std::string& out,
                            int& total) {
  std::stringstream in(list);
  std::string item;
  total = 0;
  out.clear();
  while (std::getline(in, item, ',')) {
    if (item.empty()) return "--hosts: empty host name in '" + list + "'";
    int slots = default_slots;
    const auto colon = item.rfind(':');
    std::string host = item;
    if (colon != std::string::npos) {
      host = item.substr(0, colon);
      if (host.empty() || !parse_int(std::string_view(item).substr(colon + 1), slots) ||
          slots < 1) {
        return "--hosts: expected host:N with N >= 1, got '" + item + "'";
      }
    }
    out += (out.empty() ? "" : ",") + host + ":" + std::to_string(slots);
    total += slots;
  }
  if (out.empty()) return "--hosts: empty host list";
  return "";
}

bool truthy(const char* v) {
  return v != nullptr && *v != '\0' && std::strcmp(v, "0") != 0 && std::strcmp(v, "false") != 0;
}

}  // namespace

ParseResult parse_options(int argc, char** argv, const char* env_no_prefix) {
  ParseResult r;
  LaunchOptions& o = r.options;
  o.no_prefix = truthy(env_no_prefix);
  auto fail = [&r](std::string msg) {
    r.kind = ParseResult::Kind::kError;
    r.error = std::move(msg);
    return r;
  };

  int i = 1;
  for (; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--") {
      ++i;
      break;
    }
    if (arg.empty() || arg[0] != '-' || arg == "-") break;  // first program word
    // "--opt=value" is accepted for every option that takes one value.
    std::string name = arg;
    std::optional<std::string> inline_value;
    if (arg.rfind("--", 0) == 0) {
      if (auto eq = arg.find('='); eq != std::string::npos) {
        name = arg.substr(0, eq);
        inline_value = arg.substr(eq + 1);
      }
    }
    auto value = [&](std::string& out) -> bool {
      if (inline_value) {
        out = *inline_value;
        return true;
      }
      if (i + 1 >= argc) return false;
      out = argv[++i];
      return true;
    };
    std::string v;
    auto missing = [&] { return fail("option " + name + " needs a value"); };

    if (name == "-h" || name == "--help") {
      r.kind = ParseResult::Kind::kHelp;
      return r;
    } else if (name == "--version") {
      r.kind = ParseResult::Kind::kVersion;
      return r;
    } else if (name == "--nproc_per_node" || name == "--nproc-per-node") {
      if (!value(v)) return missing();
      if (!parse_int(v, o.nproc_per_node) || o.nproc_per_node < 1)
        return fail(name + ": expected an integer >= 1, got '" + v + "'");
      o.nproc_per_node_given = true;
    } else if (name == "--np") {
      int np = 0;
      if (!value(v)) return missing();
      if (!parse_int(v, np) || np < 1)
        return fail("--np: expected an integer >= 1, got '" + v + "'");
      o.np = np;
    } else if (name == "--hosts") {
      if (!value(o.hosts)) return missing();
    } else if (name == "--hostfile") {
      if (!value(o.hostfile)) return missing();
    } else if (name == "--nnodes") {
      if (!value(v)) return missing();
      if (!parse_int(v, o.nnodes) || o.nnodes < 1)
        return fail("--nnodes: expected an integer >= 1, got '" + v + "'");
    } else if (name == "--node_rank" || name == "--node-rank") {
      if (!value(v)) return missing();
      if (!parse_int(v, o.node_rank) || o.node_rank < 0)
        return fail(name + ": expected an integer >= 0, got '" + v + "'");
    } else if (name == "--master_addr" || name == "--master-addr") {
      if (!value(o.master_addr)) return missing();
    } else if (name == "--master_port" || name == "--master-port") {
      if (!value(v)) return missing();
      if (!parse_int(v, o.master_port) || o.master_port < 1 || o.master_port > 65535)
        return fail(name + ": expected a port number 1-65535, got '" + v + "'");
    } else if (name == "--rdzv_timeout" || name == "--rdzv-timeout") {
      if (!value(v)) return missing();
      if (!parse_seconds(v, o.rdzv_timeout_s))
        return fail(name + ": expected a number of seconds > 0, got '" + v + "'");
    } else if (name == "--no-prefix" || name == "--no_prefix") {
      o.no_prefix = true;
    } else if (name == "--logdir") {
      if (!value(o.logdir)) return missing();
      if (o.logdir.empty()) return fail("--logdir: empty directory name");
    } else if (name == "--trace") {
      if (!value(o.trace_dir)) return missing();
      if (o.trace_dir.empty()) return fail("--trace: empty directory name");
    } else if (name == "--timeout") {
      if (!value(v)) return missing();
      if (!parse_seconds(v, o.timeout_s))
        return fail("--timeout: expected a number of seconds > 0, got '" + v + "'");
    } else if (name == "--max-restarts" || name == "--max_restarts") {
      if (!value(v)) return missing();
      if (!parse_int(v, o.max_restarts) || o.max_restarts < 0)
        return fail(name + ": expected an integer >= 0, got '" + v + "'");
    } else if (name == "--mpirun") {
      if (!value(o.mpirun)) return missing();
    } else if (name == "--mca") {
      if (inline_value || i + 2 >= argc) return fail("--mca needs two values: --mca KEY VALUE");
      o.mca.emplace_back(argv[i + 1], argv[i + 2]);
      i += 2;
    } else if (name == "-x") {
      if (i + 1 >= argc) return fail("-x needs a value: -x VAR or -x VAR=VALUE");
      o.export_env.emplace_back(argv[++i]);
    } else {
      r.show_usage = true;
      return fail("unknown option '" + arg + "'");
    }
  }
  for (; i < argc; ++i) o.program.emplace_back(argv[i]);

  if (o.node_rank >= o.nnodes)
    return fail("--node_rank " + std::to_string(o.node_rank) + " is outside --nnodes " + std::to_string(o.nnodes) +
                " (node ranks are 0.." + std::to_string(o.nnodes - 1) + ")");
  if (o.nnodes > 1) {
    if (o.master_addr.empty())
      return fail("--nnodes " + std::to_string(o.nnodes) +
                  " needs --master_addr: the address of node 0, where every node's globe-launch meets");
    if (!o.hosts.empty() || !o.hostfile.empty() || o.np)
      return fail("--nnodes starts one globe-launch per node; --hosts, --hostfile and --np are for one globe-launch "
                  "that starts every node over ssh: use one form or the other");
  }
  if (!o.hosts.empty() && !o.hostfile.empty())
    return fail("--hosts and --hostfile are mutually exclusive");
  if (!o.hosts.empty()) {
    int total = 0;
    std::string normalised;
    if (auto err = normalise_hosts(o.hosts, o.nproc_per_node, normalised, total); !err.empty())
      return fail(err);
    o.hosts = normalised;
    if (!o.np) o.np = total;
  } else if (o.hostfile.empty() && o.np) {
    // Without hosts, --np is just another way to say how many local ranks.
    if (o.nproc_per_node_given && *o.np != o.nproc_per_node)
      return fail("--np and --nproc_per_node disagree on a single node");
    o.nproc_per_node = *o.np;
  }
  if (o.program.empty()) {
    r.show_usage = true;
    return fail("no PROGRAM given");
  }
  return r;
}

std::string usage_text() {
  return R"USAGE(Usage: globe-launch [options] PROGRAM [ARGS...]

Starts ranks of PROGRAM with Open MPI's mpirun underneath, so MPI programs find each other.
PROGRAM may be any executable (MPI or not); it is looked up in PATH when it has no slash.

Options:
  --nproc_per_node N, --nproc-per-node N
                       ranks on this node (default 1); with --hosts, the slots of a host
                       given without ":N"; with --hostfile, ranks per listed node
  --np N               total number of ranks with --hosts/--hostfile (default: the sum of
                       the host slots for --hosts; the hostfile's slots for --hostfile)
  --hosts H1:N1,H2:N2  run on these hosts (passed to mpirun --host); remote hosts need
                       passwordless ssh and globe-launch + PROGRAM at the same paths
  --hostfile FILE      run on the hosts of an Open MPI hostfile (passed to mpirun --hostfile)
  --nnodes N           one globe-launch per node, as torchrun and OneFlow's launcher: run the
                       same command on each of N nodes, with its --node_rank; no ssh needed.
                       Node 0 gathers the others at --master_addr:--master_port, then starts
                       the N x nproc_per_node ranks (Open MPI's daemons reach the other nodes
                       through their waiting globe-launch); every rank's output is written by
                       node 0's globe-launch, and every launcher exits with the job's status
  --node_rank R        this node's index, 0..N-1 (default 0); node 0 runs the job
  --master_addr ADDR   node 0's address, as the other nodes reach it (needed with --nnodes > 1)
  --master_port PORT   the port node 0 listens on for the other nodes (default 29500)
  --rdzv_timeout SEC   how long the nodes wait for each other at the start (default 300);
                       a node missing by then fails every launcher, naming it
  --no-prefix          do not prefix output lines with "[rankR] " (also: env
                       GLOBE_LAUNCH_NO_PREFIX=1)
  --logdir DIR         also write each rank's unprefixed stdout+stderr to DIR/rank.R.log
                       (DIR is created)
  --trace DIR          write a timeline: every rank records its modules, ops, collectives,
                       transfers, pipeline actions, waits and checkpoint I/O to
                       DIR/trace.rank-R.json, merged at the end into DIR/trace.json (one
                       track per rank; open it in ui.perfetto.dev or chrome://tracing)
  --timeout SEC        whole-job time limit; when it passes every rank is stopped and
                       globe-launch exits 124
  --max-restarts N     when a rank fails, report it, stop every rank and start them all
                       again, up to N times (torchrun's --max-restarts); each start sees
                       GLOBE_RESTART_COUNT (0, 1, ...). Resume from a checkpoint to continue
                       (globe::CheckpointManager). Not after --timeout or a signal to globe-launch
  --mpirun PATH        the mpirun to use (default: mpirun from PATH)
  --mca KEY VALUE      pass an Open MPI MCA parameter to mpirun (repeatable)
  --version            print Globe's version and exit
  -x VAR[=VALUE]       export an environment variable to all ranks, also remote ones
                       (passed to mpirun -x; repeatable)
  -h, --help           show this help
  --                   end of options; the next word is PROGRAM
Options taking a value also accept --option=value.

Environment seen by each rank:
  RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE
                       this rank's global and node-local index and the two sizes
  OMP_NUM_THREADS, OPENBLAS_NUM_THREADS
                       max(1, cores / ranks on the node), each unless already set
  OMPI_ALLOW_RUN_AS_ROOT=1, OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
                       set for mpirun so that running as root works
mpirun is run with --oversubscribe --bind-to none, --mca odls_base_sigkill_timeout 0 (fast
stop of the other ranks after a failure), --mca pml ob1 (fast start-up) and --mca
orte_allowed_exit_without_sync 1 (a rank that ends without MPI_Finalize, as a Globe program
does after it handled a collective timeout, is not a failure), and with --hosts/--hostfile
--mca plm_rsh_args "-o ConnectTimeout=10 -o BatchMode=yes" (a host ssh cannot reach, or that
asks for a password, fails within seconds; not when plm_rsh_agent is set); each of these only
unless set by --mca or an OMPI_MCA_* environment variable.

Output: every line a rank prints comes back whole to globe-launch over a channel of its own
(a TCP port on 127.0.0.1, or on this host for --hosts/--hostfile) and is written prefixed with
"[rankR] " (nothing with --no-prefix) to globe-launch's stdout or stderr, as the rank wrote it.

Failures: when a rank exits non-zero or dies by a signal, all other ranks are stopped within
seconds and globe-launch reports "rank R failed first: exit code C" (or "signal S (SIGxxx)").
A Globe program's error that several ranks raise alike (a Python traceback, an example's error
line) is printed once, and the report names the ranks: "ranks 0, 1 raised the same error".

Exit codes:
  0        every rank exited 0
  C        the exit code of the rank that failed first
  128+S    the rank that failed first died by signal S
  124      --timeout passed
  130/143  globe-launch got SIGINT/SIGTERM (forwarded to every rank)
  127/126  PROGRAM or mpirun cannot be run (not found / found but not executable)
  2        bad command line
  other    mpirun's own exit code when it failed without a rank failure

Example:
  globe-launch --nproc_per_node 2 --logdir logs build/bin/data_parallel --iters 30
)USAGE";
}

}  // namespace globe_launch
