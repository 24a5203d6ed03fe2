// Whether a GPU is usable, asked in a child process: CUDA initialised in a process that then
// forks (as the multi-rank tests do) cannot be used in its children.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include "cuda/runtime.h"

namespace coll::test {

// "" when a GPU is usable, else why not (for GTEST_SKIP).
inline std::string whyNoGpuInChild() {
  if (!cuda::built()) return cuda::whyNoGpu();
  int fds[2];
  if (::pipe(fds) != 0) return "pipe() failed";
  pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    std::string why = cuda::gpuPresent() ? "" : cuda::whyNoGpu();
    (void)!::write(fds[1], why.data(), why.size());
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string why;
  char buf[512];
  for (ssize_t got; (got = ::read(fds[0], buf, sizeof buf)) > 0;) why.append(buf, static_cast<size_t>(got));
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return "the GPU probe process failed";
  return why;
}

}  // namespace coll::test
