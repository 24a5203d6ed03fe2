#include "collrun_output.h"

#include <cerrno>
#include <unistd.h>

namespace coll::collrun {
namespace {

// A rank that prints without newlines must not make collrun buffer without bound; past this
// size the tail goes out as a line of its own.
constexpr size_t kMaxPendingLine = 64 * 1024;

}  // namespace

void writeAll(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return;  // EPIPE, EBADF, ...: nowhere to put it
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
}

LineForwarder::LineForwarder(int rank, int out_fd)
    : prefix_("[" + std::to_string(rank) + "] "), out_fd_(out_fd) {}

void LineForwarder::feed(const char* data, size_t size) {
  pending_.append(data, size);
  size_t start = 0;
  for (size_t nl = pending_.find('\n'); nl != std::string::npos;
       nl = pending_.find('\n', start)) {
    emit(std::string_view(pending_).substr(start, nl + 1 - start));
    start = nl + 1;
  }
  pending_.erase(0, start);
  if (pending_.size() >= kMaxPendingLine) {
    pending_.push_back('\n');
    emit(pending_);
    pending_.clear();
  }
}

void LineForwarder::finish() {
  if (pending_.empty()) return;
  pending_.push_back('\n');
  emit(pending_);
  pending_.clear();
}

void LineForwarder::emit(std::string_view text) {
  std::string line;
  line.reserve(prefix_.size() + text.size());
  line.append(prefix_).append(text);
  writeAll(out_fd_, line);
}

}  // namespace coll::collrun
