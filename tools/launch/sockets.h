// TCP and Unix-socket helpers of globe-launch: connecting with a time limit, listening, and
// text lines over a stream (the launchers of a multi-node job talk in lines, node_group.h).
#pragma once

#include <optional>
#include <string>

namespace globe_launch {

// Connects to HOST:PORT (a name or an address), trying each address for at most `timeout_ms`.
// A blocking, close-on-exec socket with TCP_NODELAY, or -1 with `error` set.
int connect_tcp(const std::string& host, const std::string& port, int timeout_ms, std::string& error);

// Listens on `port` (0: any free one) of every interface, or of 127.0.0.1 only. -1 with `error`.
int listen_tcp(int port, bool every_interface, std::string& error);

// The port a listening socket got.
int local_port(int fd);

// The numeric address of a connected socket's peer ("10.0.0.2"), and whether the peer is this
// machine (its address is the one this end has, as for a connection over 127.0.0.1).
std::string peer_address(int fd);
bool peer_is_this_machine(int fd);

// Listens on / connects to a Unix socket at `path`. -1 with `error` set.
int listen_unix(const std::string& path, std::string& error);
int connect_unix(const std::string& path, std::string& error);

// A line may carry any bytes: '\n' and '\\' travel escaped.
std::string escape_line(const std::string& s);
std::string unescape_line(const std::string& s);

// One end of a stream that carries text lines.
class LineStream {
 public:
  explicit LineStream(int fd = -1) : fd_(fd) {}
  LineStream(LineStream&& o) noexcept : fd_(o.fd_), in_(std::move(o.in_)) { o.fd_ = -1; }
  LineStream& operator=(LineStream&& o) noexcept;
  ~LineStream() { close(); }

  int fd() const { return fd_; }
  bool open() const { return fd_ >= 0; }
  void close();
  // Sends `line` and a '\n'; false once the other end is gone.
  bool send(const std::string& line);
  // Reads what has arrived (call when poll says the fd is readable); false on end or error.
  bool fill();
  // The next complete line, without its '\n'.
  std::optional<std::string> next();
  // Waits up to `timeout_ms` for the next line; nothing on end, error or timeout.
  std::optional<std::string> read(int timeout_ms);

 private:
  int fd_ = -1;
  std::string in_;
};

}  // namespace globe_launch
