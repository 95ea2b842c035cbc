#include "globe/dist/error_report.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "globe/dist/runtime.h"

namespace globe::dist {

namespace {

bool write_file(const std::string& path, const std::string& body) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  size_t done = 0;
  while (done < body.size()) {
    const ssize_t n = ::write(fd, body.data() + done, body.size() - done);
    if (n <= 0) break;
    done += size_t(n);
  }
  ::close(fd);
  return done == body.size();
}

// The text filed in `path` after its "rank R" line; nothing when it cannot be read.
std::string filed_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string rank_line;
  if (!in || !std::getline(in, rank_line)) return {};
  std::ostringstream rest;
  rest << in.rdbuf();
  return rest.str();
}

// `text` with this rank's own "(rank R)", which every globe::Error ends with, made rank-free: the
// same mistake on every rank reads alike.
std::string rank_free(std::string text, int rank) {
  const std::string own = "(rank " + std::to_string(rank) + ")";
  for (size_t at = text.find(own); at != std::string::npos; at = text.find(own, at))
    text.replace(at, own.size(), "(rank *)");
  return text;
}

}  // namespace

bool print_error_here(const std::string& text) {
  const char* dir = std::getenv("GLOBE_RUN_DIR");
  if (dir == nullptr || *dir == '\0') return true;
  int rank = 0;
  try {
    rank = world_rank();
  } catch (const std::exception&) {
    return true;  // the runtime itself failed: no rank to file under
  }
  const std::string r = std::to_string(rank), d = dir, key = rank_free(text, rank);
  const std::string tmp = d + "/.error." + r + "." + std::to_string(::getpid());
  if (!write_file(tmp, "rank " + r + "\n" + key)) {
    ::unlink(tmp.c_str());
    return true;
  }
  const bool first = ::link(tmp.c_str(), (d + "/first_error").c_str()) == 0;
  ::rename(tmp.c_str(), (d + "/error." + r).c_str());
  return first || filed_text(d + "/first_error") != key;
}

}  // namespace globe::dist
