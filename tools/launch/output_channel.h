// The launcher's own channel for the ranks' output: every rank connects back to the parent over
// TCP and sends its output as frames of whole lines; the parent alone writes them to its stdout
// and stderr, one frame per write, so lines of different ranks never mix inside a line.
//
// Why not mpirun's forwarding: mpirun reads each rank's stream in chunks of its own choosing; when
// a rank writes faster than mpirun reads, one chunk ends in the middle of a line and another
// rank's chunk is written next — a broken line, whatever batching the rank does.
//
// Frame: 1 byte stream (1 = stdout, 2 = stderr, 0 = hello), 4 bytes little-endian length, payload.
// The first frame is the hello, whose payload is the job's token (a random secret the parent
// hands to the ranks on their command line), so nothing else that reaches the port is printed.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>

namespace globe_launch {

// Parent side: listens, and relays frames to fds 1 and 2 on its own thread.
class OutputServer {
 public:
  // Listens on 127.0.0.1 for a local job (`host_for_ranks` empty), else on every interface, the
  // ranks connecting to `host_for_ranks` (this host's name or address as the other hosts know
  // it). Nothing on error, with `error` set.
  static std::unique_ptr<OutputServer> listen(const std::string& host_for_ranks, std::string& error);
  ~OutputServer();

  // "HOST:PORT:TOKEN", what each rank is given to connect back.
  const std::string& address() const { return address_; }

  // Starts relaying (call with the signals the parent handles already blocked, so this thread
  // never takes them).
  void start();

  // Called once the job has ended: relays what is left until every rank's connection is closed,
  // for at most `max_wait_s` more, then stops.
  void finish(double max_wait_s);

 private:
  OutputServer() = default;
  void serve();

  int listen_fd_ = -1;
  int stop_pipe_[2] = {-1, -1};
  double max_wait_s_ = 0;
  std::string token_;
  std::string address_;
  std::thread thread_;
};

// Rank side: one connection to the parent.
class OutputLink {
 public:
  // Connects to `address` (as given by OutputServer::address()). Nothing on error, with `error`
  // set; the rank then writes to its own stdout / stderr as before (lines may break under load).
  static std::optional<OutputLink> connect(const std::string& address, int rank, std::string& error);
  OutputLink(OutputLink&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  OutputLink& operator=(OutputLink&& other) noexcept {
    std::swap(fd_, other.fd_);
    return *this;
  }
  ~OutputLink();

  // Sends `len` bytes of whole lines for fd 1 or 2 as one frame. False once the parent is gone.
  bool send(int stream, const char* data, std::size_t len);

 private:
  explicit OutputLink(int fd) : fd_(fd) {}
  int fd_ = -1;
};

}  // namespace globe_launch
