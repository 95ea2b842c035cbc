#include "output_relay.h"

#include <cstring>

#include "common.h"

namespace globe_launch {
namespace {
// Lines are sent in batches of up to a pipe's atomic write size (what suits mpirun's forwarding
// when there is no link; small enough for a frame to show without delay when there is).
constexpr std::size_t kBatchBytes = 4096;
// A "line" that never ends (a progress bar without newlines) is cut here so memory stays bounded.
constexpr std::size_t kMaxLineBytes = 64 * 1024;
}  // namespace

void OutputRelay::feed(const char* data, std::size_t len) {
  if (log_fd_ >= 0) write_all(log_fd_, data, len);
  if (prefix_.empty()) {  // --no-prefix: pass bytes straight through, no line buffering
    batch_.assign(data, len);
    flush_batch();
    return;
  }
  while (len > 0) {
    const char* nl = static_cast<const char*>(std::memchr(data, '\n', len));
    const std::size_t take = nl != nullptr ? static_cast<std::size_t>(nl - data) + 1 : len;
    pending_.append(data, take);
    data += take;
    len -= take;
    if (nl != nullptr || pending_.size() >= kMaxLineBytes) {
      if (pending_.back() != '\n') pending_.push_back('\n');
      if (batch_.size() + prefix_.size() + pending_.size() > kBatchBytes) flush_batch();
      batch_ += prefix_;
      batch_ += pending_;
      pending_.clear();
    }
  }
  flush_batch();
}

void OutputRelay::finish() {
  if (!pending_.empty()) {
    batch_ += prefix_;
    batch_ += pending_;
    batch_ += '\n';
    pending_.clear();
  }
  flush_batch();
}

void OutputRelay::flush_batch() {
  if (batch_.empty()) return;
  if (link_ != nullptr && !link_->send(out_fd_, batch_.data(), batch_.size()))
    link_ = nullptr;  // the launcher is gone; what follows goes where mpirun takes it
  if (link_ == nullptr) write_all(out_fd_, batch_);
  batch_.clear();
}

}  // namespace globe_launch
