// Copies one output stream of a rank's program to the launcher's stream, prefixing every line
// with "[rankR] ", and optionally tees the raw bytes into a log file.
#pragma once

#include <cstddef>
#include <string>
#include <utility>

#include "output_channel.h"

namespace globe_launch {

class OutputRelay {
 public:
  // out_fd: where prefixed lines go (1 or 2): through `link` to the launcher's own fd 1 or 2 when
  // there is a link, else to this process's out_fd. prefix: "" for pass-through. log_fd: -1 for none.
  OutputRelay(int out_fd, std::string prefix, int log_fd, OutputLink* link)
      : out_fd_(out_fd), prefix_(std::move(prefix)), log_fd_(log_fd), link_(link) {}

  // Forwards every complete line of `data`; keeps an unfinished last line for later.
  void feed(const char* data, std::size_t len);

  // Flushes an unfinished last line (with a newline appended, so the next rank's line does not
  // glue onto it). Call once the program has exited.
  void finish();

 private:
  // Sends the accumulated lines as one frame (see output_channel.h), or without a link in one
  // write(), which mpirun forwards whole as long as it keeps up with us.
  void flush_batch();

  int out_fd_;
  std::string prefix_;
  int log_fd_;
  OutputLink* link_;
  std::string pending_;  // bytes after the last newline seen
  std::string batch_;    // prefixed complete lines not yet written
};

}  // namespace globe_launch
