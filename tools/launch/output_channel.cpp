#include "output_channel.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <vector>

#include "common.h"
#include "sockets.h"

namespace globe_launch {
namespace {

constexpr std::size_t kHeaderBytes = 5;
// A frame holds whole lines (each cut at 64 KiB by the rank); anything larger is not ours.
constexpr std::uint32_t kMaxFrameBytes = 4u << 20;
// How long a rank waits for the parent to accept its connection.
constexpr int kConnectTimeoutMs = 10000;

std::string random_token() {
  unsigned char bytes[16] = {};
  const int fd = ::open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    [[maybe_unused]] ssize_t n = ::read(fd, bytes, sizeof(bytes));
    ::close(fd);
  }
  static const char kHex[] = "0123456789abcdef";
  std::string token;
  for (unsigned char b : bytes) token += {kHex[b >> 4], kHex[b & 15]};
  return token;
}

std::string frame(int stream, const char* data, std::size_t len) {
  std::string f(kHeaderBytes, '\0');
  f[0] = static_cast<char>(stream);
  for (int i = 0; i < 4; ++i) f[1 + i] = static_cast<char>((len >> (8 * i)) & 0xff);
  f.append(data, len);
  return f;
}

// One rank's connection on the parent side: bytes received but not yet relayed.
struct Connection {
  int fd;
  std::string pending;
  bool greeted = false;
};

// Relays every complete frame in c.pending. False when the peer broke the protocol.
bool relay_frames(Connection& c, const std::string& token) {
  std::size_t at = 0;
  bool ok = true;
  while (c.pending.size() - at >= kHeaderBytes) {
    const auto* h = reinterpret_cast<const unsigned char*>(c.pending.data() + at);
    const int stream = h[0];
    const std::uint32_t len = std::uint32_t(h[1]) | std::uint32_t(h[2]) << 8 |
                              std::uint32_t(h[3]) << 16 | std::uint32_t(h[4]) << 24;
    if (len > kMaxFrameBytes) {
      ok = false;
      break;
    }
    if (c.pending.size() - at < kHeaderBytes + len) break;
    const char* payload = c.pending.data() + at + kHeaderBytes;
    at += kHeaderBytes + len;
    if (!c.greeted) {
      c.greeted = stream == 0 && std::string(payload, len) == token;
      if (!c.greeted) {
        ok = false;
        break;
      }
    } else if (stream == 1 || stream == 2) {
      write_all(stream, payload, len);
    }
  }
  c.pending.erase(0, at);
  return ok;
}

// Reads what is there. False at the end of the stream, on an error, or on a protocol breach.
bool read_available(Connection& c, const std::string& token) {
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(c.fd, buf, sizeof(buf));
    if (n > 0) {
      c.pending.append(buf, static_cast<std::size_t>(n));
      if (!relay_frames(c, token)) return false;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
  }
}

// Appends what a pipe holds to `pending`. False at EOF (or on an error).
bool read_pipe(int fd, std::string& pending) {
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n > 0) {
      pending.append(buf, static_cast<std::size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
  }
}

// Writes pending's whole lines to `stream` (all of it when `all`, or when no line ends in 64 KiB).
void write_lines(int stream, std::string& pending, bool all) {
  const std::size_t end = all || pending.size() >= 65536 ? pending.size() : pending.rfind('\n') + 1;  // npos + 1 == 0
  if (end == 0) return;
  write_all(stream, pending.data(), end);
  pending.erase(0, end);
}

}  // namespace

std::unique_ptr<OutputServer> OutputServer::listen(const std::string& host_for_ranks, const std::string& local_dir,
                                                   std::string& error) {
  std::unique_ptr<OutputServer> s(new OutputServer);
  const bool remote_ranks = !host_for_ranks.empty();
  std::string where;
  if (!remote_ranks && !local_dir.empty() && local_dir[0] == '/') {
    const std::string path = local_dir + "/output.sock";
    std::string unix_error;
    s->listen_fd_ = listen_unix(path, unix_error);
    if (s->listen_fd_ >= 0) where = path;
  }
  if (s->listen_fd_ < 0) {
    s->listen_fd_ = listen_tcp(0, remote_ranks, error);
    if (s->listen_fd_ >= 0)
      where = (remote_ranks ? host_for_ranks : "127.0.0.1") + ":" + std::to_string(local_port(s->listen_fd_));
  }
  if (s->listen_fd_ < 0 || ::pipe2(s->stop_pipe_, O_CLOEXEC) != 0) {
    error = "cannot open the output channel: " + (s->listen_fd_ < 0 ? error : std::string(std::strerror(errno)));
    return nullptr;
  }
  ::fcntl(s->listen_fd_, F_SETFL, ::fcntl(s->listen_fd_, F_GETFL) | O_NONBLOCK);
  s->token_ = random_token();
  s->address_ = where + ":" + s->token_;
  return s;
}

OutputServer::~OutputServer() {
  if (thread_.joinable()) finish(0);
  close_local_writers();
  for (int fd : {listen_fd_, stop_pipe_[0], stop_pipe_[1], local_[0].reader, local_[1].reader})
    if (fd >= 0) ::close(fd);
}

bool OutputServer::make_local_pipes(std::string& error) {
  for (LocalPipe& p : local_) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) {
      error = std::string("cannot make a pipe for mpirun's output: ") + std::strerror(errno);
      return false;
    }
    p.reader = fds[0];
    p.writer = fds[1];
    ::fcntl(p.reader, F_SETFL, ::fcntl(p.reader, F_GETFL) | O_NONBLOCK);
  }
  return true;
}

void OutputServer::close_local_writers() {
  for (LocalPipe& p : local_) {
    if (p.writer >= 0) ::close(p.writer);
    p.writer = -1;
  }
}

void OutputServer::start() { thread_ = std::thread([this] { serve(); }); }

void OutputServer::finish(double max_wait_s) {
  if (!thread_.joinable()) return;
  max_wait_s_ = max_wait_s;  // read by serve() after it sees the stop byte
  const char byte = 0;
  write_all(stop_pipe_[1], &byte, 1);
  thread_.join();
}

void OutputServer::serve() {
  std::vector<Connection> conns;
  bool stopping = false;
  double deadline = 0;
  for (;;) {
    const bool pipes_open = local_[0].reader >= 0 || local_[1].reader >= 0;
    if (stopping && ((conns.empty() && !pipes_open) || now_s() >= deadline)) break;
    // fds[4 + i] is conns[i]; poll() skips a negative fd (the stop pipe once seen, a closed pipe).
    std::vector<pollfd> fds = {{listen_fd_, POLLIN, 0},
                               {stopping ? -1 : stop_pipe_[0], POLLIN, 0},
                               {local_[0].reader, POLLIN, 0},
                               {local_[1].reader, POLLIN, 0}};
    for (const auto& c : conns) fds.push_back({c.fd, POLLIN, 0});
    const int timeout_ms = stopping ? std::max(0, static_cast<int>((deadline - now_s()) * 1000) + 1) : -1;
    if (::poll(fds.data(), fds.size(), timeout_ms) < 0 && errno != EINTR) break;
    if (!stopping && fds[1].revents != 0) {
      stopping = true;
      deadline = now_s() + max_wait_s_;
    }
    // mpirun's output is read first and written last: what it reports (a rank's end) happened
    // after that rank sent its last frames, which are therefore in their sockets by now, even
    // where poll() saw them empty; every connection is read once more then, new ones included.
    bool from_mpirun = false, ended[2] = {false, false};
    for (int k = 0; k < 2; ++k) {
      LocalPipe& p = local_[k];
      if (fds[2 + k].revents == 0) continue;
      const std::size_t had = p.pending.size();
      ended[k] = !read_pipe(p.reader, p.pending);
      from_mpirun |= p.pending.size() > had;
    }
    const std::size_t polled = conns.size();
    for (;;) {
      const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) break;
      conns.push_back({fd, {}, false});
    }
    std::vector<Connection> open;
    for (std::size_t i = 0; i < conns.size(); ++i) {
      const bool look = i >= polled || from_mpirun || fds[4 + i].revents != 0;
      if (!look || read_available(conns[i], token_)) {
        open.push_back(std::move(conns[i]));
      } else {
        ::close(conns[i].fd);
      }
    }
    conns = std::move(open);
    for (int k = 0; k < 2; ++k) {
      LocalPipe& p = local_[k];
      write_lines(k + 1, p.pending, ended[k]);
      if (ended[k]) {
        ::close(p.reader);
        p.reader = -1;
      }
    }
  }
  for (const auto& c : conns) ::close(c.fd);
  for (int k = 0; k < 2; ++k) {  // what is left at the deadline, without waiting
    LocalPipe& p = local_[k];
    if (p.reader >= 0) read_pipe(p.reader, p.pending);
    write_lines(k + 1, p.pending, true);
  }
}

std::optional<OutputLink> OutputLink::connect(const std::string& address, int rank, std::string& error) {
  const std::size_t token_at = address.rfind(':');
  const bool unix_path = !address.empty() && address[0] == '/';
  const std::size_t port_at =
      token_at == std::string::npos || unix_path ? token_at : address.rfind(':', token_at - 1);
  if (port_at == std::string::npos) {
    error = "malformed output channel address '" + address + "'";
    return std::nullopt;
  }
  const std::string token = address.substr(token_at + 1);
  const int fd = unix_path ? connect_unix(address.substr(0, token_at), error)
                           : connect_tcp(address.substr(0, port_at), address.substr(port_at + 1, token_at - port_at - 1),
                                         kConnectTimeoutMs, error);
  if (fd < 0) return std::nullopt;
  OutputLink link(fd);
  if (!link.send(0, token.data(), token.size())) {
    error = "the launcher closed the output channel (rank " + std::to_string(rank) + ")";
    return std::nullopt;
  }
  return link;
}

OutputLink::~OutputLink() {
  if (fd_ >= 0) ::close(fd_);
}

bool OutputLink::send(int stream, const char* data, std::size_t len) {
  return fd_ >= 0 && write_all(fd_, frame(stream, data, len));
}

}  // namespace globe_launch
