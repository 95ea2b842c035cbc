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
//
// mpirun's own stdout and stderr come through the same thread, over pipes: its reports (a rank's
// non-zero exit, an unreachable host) follow, in order, whatever the ranks sent before the event
// they report. Written directly, they could overtake a rank's last line still in the channel.
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
  // Listens on a Unix socket in `local_dir` for a local job (`host_for_ranks` empty; 127.0.0.1
  // if the path is too long), else on every interface, the ranks connecting to `host_for_ranks`
  // (this host's name or address as the other hosts know it). Nothing on error, with `error` set.
  //
  // Locally a Unix socket, not loopback TCP: a rank's send() is then in the parent's queue when
  // it returns, so mpirun's report of that rank's exit (relayed after the frames polled with it)
  // cannot overtake the rank's last line. Loopback TCP may deliver later, from ksoftirqd.
  static std::unique_ptr<OutputServer> listen(const std::string& host_for_ranks, const std::string& local_dir,
                                              std::string& error);
  ~OutputServer();

  // "HOST:PORT:TOKEN" or "/PATH:TOKEN", what each rank is given to connect back.
  const std::string& address() const { return address_; }

  // Pipes whose write ends become mpirun's stdout and stderr; relayed by start()'s thread after
  // the ranks' frames of the same moment. False (and `error` set) if they cannot be made: mpirun
  // then writes to the launcher's own fds.
  bool make_local_pipes(std::string& error);
  // The write end of the pipe for fd 1 or 2, for the child to dup2() (-1 without pipes).
  int local_pipe_writer(int stream) const { return local_[stream - 1].writer; }
  // Closes the parent's copies of the write ends, once mpirun has them.
  void close_local_writers();

  // Starts relaying (call with the signals the parent handles already blocked, so this thread
  // never takes them).
  void start();

  // Called once the job has ended: relays what is left until every rank's connection and
  // mpirun's pipes are closed, for at most `max_wait_s` more, then stops.
  void finish(double max_wait_s);

 private:
  OutputServer() = default;
  void serve();

  struct LocalPipe {
    int reader = -1;
    int writer = -1;
    std::string pending;  // bytes after the last newline, relayed when the line ends or at EOF
  };

  int listen_fd_ = -1;
  int stop_pipe_[2] = {-1, -1};
  LocalPipe local_[2];  // mpirun's stdout, stderr
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
