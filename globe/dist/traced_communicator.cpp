#include "globe/dist/traced_communicator.h"

#include <cstdio>
#include <cstdlib>
#include <memory>

#include "globe/base/trace.h"
#include "globe/dist/comm_trace.h"

namespace globe::dist {

namespace {

int64_t bytes_of(const Tensor& t) { return t.numel() * int64_t(itemsize(t.dtype())); }

// What a collective's event says besides its name: payload, group (world ranks, "[0, 1]") and,
// for a transfer, the peer's world rank (`peer` a group index, -1: none).
void describe(trace::Event& e, const Communicator& c, int64_t bytes, int peer) {
  const std::vector<int>& ranks = c.world_ranks();
  e.bytes = bytes;
  e.args.emplace_back("group", shape_str(Shape(ranks.begin(), ranks.end())));
  if (peer >= 0) e.args.emplace_back("peer", std::to_string(ranks[size_t(peer)]));
}

// A blocking call's span.
template <class Run>
void traced(const Communicator& c, const char* name, int64_t bytes, int peer, Run&& run) {
  trace::Span span(trace::Kind::comm, name);
  if (span) describe(*span, c, bytes, peer);
  run();
}

// A started call's span, ended when its request completes.
class TracedRequest final : public Request::Impl {
 public:
  TracedRequest(Request inner, std::unique_ptr<trace::Event> event) : inner_(std::move(inner)), event_(std::move(event)) {}
  bool test() override {
    const bool done = inner_.test();
    if (done && event_) trace::end(std::move(event_));
    return done;
  }
  // The time this rank blocks is a span of its own (kind wait), inside whatever waits.
  void wait() override {
    if (!event_) return inner_.wait();
    {
      trace::Span blocked(trace::Kind::wait, "wait for " + event_->name);
      inner_.wait();
    }
    trace::end(std::move(event_));
  }

 private:
  Request inner_;
  std::unique_ptr<trace::Event> event_;
};

template <class Start>
Request traced_start(const Communicator& c, const char* name, int64_t bytes, int peer, Start&& start) {
  if (!trace::on()) return start();
  auto event = trace::begin(trace::Kind::comm, name);
  describe(*event, c, bytes, peer);
  event->in_flight = true;
  return Request(std::make_shared<TracedRequest>(start(), std::move(event)));
}

}  // namespace

void TracedCommunicator::all_reduce_sum(const Tensor& t) {
  traced(*this, "all_reduce", bytes_of(t), -1, [&] { inner_->all_reduce_sum(t); });
}
Request TracedCommunicator::start_all_reduce_sum(const Tensor& t) {
  return traced_start(*this, "all_reduce", bytes_of(t), -1, [&] { return inner_->start_all_reduce_sum(t); });
}
void TracedCommunicator::all_gather_v(const Tensor& local, const Tensor& out, const std::vector<int64_t>& counts) {
  traced(*this, "all_gather", bytes_of(out), -1, [&] { inner_->all_gather_v(local, out, counts); });
}
Request TracedCommunicator::start_all_gather_v(const Tensor& local, const Tensor& out, const std::vector<int64_t>& counts) {
  return traced_start(*this, "all_gather", bytes_of(out), -1, [&] { return inner_->start_all_gather_v(local, out, counts); });
}
void TracedCommunicator::reduce_scatter_v(const Tensor& in, const Tensor& out, const std::vector<int64_t>& counts) {
  traced(*this, "reduce_scatter", bytes_of(in), -1, [&] { inner_->reduce_scatter_v(in, out, counts); });
}
void TracedCommunicator::all_to_all_v(const Tensor& send, const std::vector<int64_t>& send_counts, const Tensor& recv,
                                      const std::vector<int64_t>& recv_counts) {
  traced(*this, "all_to_all", bytes_of(send), -1, [&] { inner_->all_to_all_v(send, send_counts, recv, recv_counts); });
}
void TracedCommunicator::exchange(const std::vector<Tensor>& send, const std::vector<Tensor>& recv) {
  check_exchange_pieces(send, recv, size(), rank());
  int64_t bytes = 0;
  for (size_t r = 0; r < send.size(); ++r)
    if (int(r) != rank()) bytes += bytes_of(send[r]);
  traced(*this, "all_to_all", bytes, -1, [&] { inner_->exchange(send, recv); });
}
void TracedCommunicator::broadcast(const Tensor& t, int root) {
  traced(*this, "broadcast", bytes_of(t), -1, [&] { inner_->broadcast(t, root); });
}
Request TracedCommunicator::isend(const Tensor& t, int peer, int tag) {
  return traced_start(*this, "send", bytes_of(t), peer, [&] { return inner_->isend(t, peer, tag); });
}
Request TracedCommunicator::irecv(const Tensor& t, int peer, int tag) {
  return traced_start(*this, "recv", bytes_of(t), peer, [&] { return inner_->irecv(t, peer, tag); });
}
void TracedCommunicator::barrier() {
  traced(*this, "barrier", 0, -1, [&] { inner_->barrier(); });
}

namespace {

// GLOBE_COMM_TRACE=1: the whole program recorded, each rank's table printed on stderr at its exit.
// Here, not in comm_trace.cpp: every program with a group of several ranks links this file.
struct WholeProgramTrace {
  std::unique_ptr<CommTrace> trace;
  WholeProgramTrace() {
    const char* v = std::getenv("GLOBE_COMM_TRACE");
    if (v && *v && std::string(v) != "0") trace = std::make_unique<CommTrace>();
  }
  ~WholeProgramTrace() {
    if (trace) std::fprintf(stderr, "[globe] %s", trace->table().c_str());
  }
};
const WholeProgramTrace g_whole_program;

}  // namespace

}  // namespace globe::dist
