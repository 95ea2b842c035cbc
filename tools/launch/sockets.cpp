#include "sockets.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common.h"

namespace globe_launch {

int connect_tcp(const std::string& host, const std::string& port, int timeout_ms, std::string& error) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (const int rc = ::getaddrinfo(host.c_str(), port.c_str(), &hints, &found); rc != 0) {
    error = "cannot resolve " + host + ": " + ::gai_strerror(rc);
    return -1;
  }
  int fd = -1;
  error = "cannot connect to " + host + ":" + port;
  for (addrinfo* a = found; a != nullptr && fd < 0; a = a->ai_next) {
    fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
    if (fd < 0) continue;
    int rc = ::connect(fd, a->ai_addr, a->ai_addrlen);
    if (rc != 0 && errno == EINPROGRESS) {
      pollfd p{fd, POLLOUT, 0};
      int so_error = ETIMEDOUT;
      socklen_t len = sizeof(so_error);
      if (::poll(&p, 1, timeout_ms) == 1) ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &so_error, &len);
      rc = so_error == 0 ? 0 : -1;
      errno = so_error;
    }
    if (rc != 0) {
      error += std::string(": ") + std::strerror(errno);
      ::close(fd);
      fd = -1;
    }
  }
  ::freeaddrinfo(found);
  if (fd < 0) return -1;
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  return fd;
}

int listen_tcp(int port, bool every_interface, std::string& error) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const int one = 1;
  if (fd >= 0) ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(every_interface ? INADDR_ANY : INADDR_LOOPBACK);
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::listen(fd, SOMAXCONN) != 0) {
    error = "cannot listen on port " + std::to_string(port) + ": " + std::strerror(errno);
    if (fd >= 0) ::close(fd);
    return -1;
  }
  return fd;
}

int local_port(int fd) {
  sockaddr_in addr{};
  socklen_t len = sizeof(addr);
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return -1;
  return ntohs(addr.sin_port);
}

namespace {
std::string numeric(const sockaddr_storage& a, socklen_t len) {
  char host[NI_MAXHOST] = {};
  if (::getnameinfo(reinterpret_cast<const sockaddr*>(&a), len, host, sizeof(host), nullptr, 0, NI_NUMERICHOST) != 0)
    return "";
  return host;
}
}  // namespace

std::string peer_address(int fd) {
  sockaddr_storage a{};
  socklen_t len = sizeof(a);
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) return "";
  return numeric(a, len);
}

bool peer_is_this_machine(int fd) {
  sockaddr_storage a{};
  socklen_t len = sizeof(a);
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) return false;
  const std::string peer = peer_address(fd);
  return !peer.empty() && peer == numeric(a, len);
}

namespace {
bool unix_address(const std::string& path, sockaddr_un& addr, std::string& error) {
  addr = {};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof(addr.sun_path)) {
    error = "socket path too long: " + path;
    return false;
  }
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  return true;
}
}  // namespace

int listen_unix(const std::string& path, std::string& error) {
  sockaddr_un addr;
  if (!unix_address(path, addr, error)) return -1;
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || ::listen(fd, SOMAXCONN) != 0) {
    error = "cannot listen on " + path + ": " + std::strerror(errno);
    if (fd >= 0) ::close(fd);
    return -1;
  }
  return fd;
}

int connect_unix(const std::string& path, std::string& error) {
  sockaddr_un addr;
  if (!unix_address(path, addr, error)) return -1;
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0 || ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    error = "cannot connect to " + path + ": " + std::strerror(errno);
    if (fd >= 0) ::close(fd);
    return -1;
  }
  return fd;
}

std::string escape_line(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '\\') out += "\\\\";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

std::string unescape_line(const std::string& s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 1 < s.size()) {
      ++i;
      out += s[i] == 'n' ? '\n' : s[i];
    } else {
      out += s[i];
    }
  }
  return out;
}

LineStream& LineStream::operator=(LineStream&& o) noexcept {
  if (this != &o) {
    close();
    fd_ = o.fd_;
    in_ = std::move(o.in_);
    o.fd_ = -1;
  }
  return *this;
}

void LineStream::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

bool LineStream::send(const std::string& line) {
  // MSG_NOSIGNAL: a peer that went away is an error here, not a SIGPIPE.
  std::string data = line + "\n";
  const char* p = data.data();
  std::size_t left = data.size();
  while (fd_ >= 0 && left > 0) {
    const ssize_t n = ::send(fd_, p, left, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    left -= static_cast<std::size_t>(n);
  }
  return fd_ >= 0;
}

bool LineStream::fill() {
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(fd_, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    in_.append(buf, static_cast<std::size_t>(n));
    return true;
  }
}

std::optional<std::string> LineStream::next() {
  const auto nl = in_.find('\n');
  if (nl == std::string::npos) return std::nullopt;
  std::string line = in_.substr(0, nl);
  in_.erase(0, nl + 1);
  return line;
}

std::optional<std::string> LineStream::read(int timeout_ms) {
  const double until = now_s() + timeout_ms / 1000.0;
  for (;;) {
    if (auto line = next()) return line;
    const int left = static_cast<int>((until - now_s()) * 1000);
    if (fd_ < 0 || left <= 0) return std::nullopt;
    pollfd p{fd_, POLLIN, 0};
    const int rc = ::poll(&p, 1, left);
    if (rc < 0 && errno == EINTR) continue;
    if (rc <= 0 || !fill()) return std::nullopt;
  }
}

}  // namespace globe_launch
