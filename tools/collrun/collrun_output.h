// collrun's output forwarding: what a rank writes to its stdout or stderr pipe reaches collrun's
// own stdout or stderr one whole line at a time, tagged "[rank] " like `mpirun --tag-output`.
// Each line goes out in a single write(), so lines of different ranks never interleave
// mid-line. Used only by collrun's main thread.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace coll::collrun {

// Writes all of data to fd, retrying on EINTR and short writes. Output nobody reads any more
// (EPIPE, with SIGPIPE ignored) is dropped: a closed terminal must not stop the job.
void writeAll(int fd, std::string_view data);

class LineForwarder {
 public:
  LineForwarder(int rank, int out_fd);

  // Takes bytes read from the rank's pipe; writes every line they complete.
  void feed(const char* data, size_t size);
  // At EOF: writes a partial last line, with a newline so the next rank's line starts clean.
  void finish();

 private:
  void emit(std::string_view text);

  std::string prefix_;
  int out_fd_;
  std::string pending_;  // the unterminated tail of what was fed
};

}  // namespace coll::collrun
