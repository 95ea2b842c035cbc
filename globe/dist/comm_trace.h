// CommTrace: which collectives and transfers a piece of a program caused on this rank, and why
// (docs/design.md §18). Like PyTorch's CommDebugMode, it counts them per module and per op; it
// also says which layout change caused each one, its bytes and its time.
//
//   globe::CommTrace comm;        // records from here on
//   loss = model(x); loss.backward();
//   comm.stop();
//   std::cout << comm.table();    // per module, per op and layout change
//   comm.counts();                // {"all_reduce": 2, ...}: what tests assert
//
// GLOBE_COMM_TRACE=1 records a whole program and prints each rank's table on stderr at its exit.
// Python: `with globe.CommTrace() as comm: ...` (python/globe/trace.py).
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "globe/base/trace.h"

namespace globe {

struct CommRecord {
  std::string collective;  // all_reduce, all_gather, reduce_scatter, all_to_all, broadcast, send, recv, barrier
  std::string module;      // the dotted module path it ran inside; "" at the top level
  std::string op;          // the op it ran for; "" outside any op (a to_global call)
  std::string layout;      // the layout change: "P -> B on mesh axis 1", "move [0] -> [1]", ...
  bool backward = false;   // during a backward pass
  bool in_flight = false;  // started without waiting (its time runs to its completion)
  int64_t bytes = 0;       // payload: the tensor the collective runs over (the sent one for a send)
  double seconds = 0;
  std::string group;       // world ranks, "[0, 1]"
  std::string peer;        // a transfer's other rank; "" for a collective
};

class CommTrace final : public trace::Sink {
 public:
  CommTrace();   // records from now on, on this rank
  ~CommTrace() override;
  CommTrace(const CommTrace&) = delete;
  CommTrace& operator=(const CommTrace&) = delete;

  void stop();   // records nothing more (the destructor stops too)
  std::vector<CommRecord> records() const;
  // How many of each collective ran: {"all_reduce": 2, "all_gather": 1}.
  std::map<std::string, int64_t> counts() const;
  // The records grouped per module (forward, then backward), then per op and layout change, with
  // counts, bytes and time; totals first. Without times (`with_time` false) it is the same on
  // every run: what the tutorials print.
  std::string table(bool with_time = true) const;

  void record(const trace::Event& event) override;

 private:
  mutable std::mutex mutex_;
  std::vector<CommRecord> records_;
  bool stopped_ = false;
};

}  // namespace globe
