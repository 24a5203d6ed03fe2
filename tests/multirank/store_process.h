// The rendezvous store of a forked-rank test, served from a process of its own rather than a
// thread of the test process: forking ranks from a process that has threads leaves the child
// whatever state those threads held at that instant (glibc's loader locks among them: a child
// once hung in dlclose, inside hwloc, waiting for a thread that existed only in the parent;
// ASan's allocator lock; and TSan kills such a child at its first thread, "dup thread with used
// id"). Any other server a test needs before it forks (collGetUniqueId's store) goes the same way.
#pragma once

#include <sys/types.h>

#include <functional>
#include <string>

#include "base/status.h"

namespace coll::test {

class StoreProcess {
 public:
  // Forks the server; returns once it listens on 127.0.0.1 (its port in port()).
  static Status start(const std::string& secret, StoreProcess* out);
  // Forks a child that runs `serve` (which may start threads: they live in the child only) and
  // returns, in *reply, the bytes `serve` returned, e.g. the address it serves on; empty means it
  // failed. The child then lives until this object is destroyed.
  static Status startWith(const std::function<std::string()>& serve, StoreProcess* out, std::string* reply);
  StoreProcess() = default;
  StoreProcess(const StoreProcess&) = delete;
  StoreProcess& operator=(const StoreProcess&) = delete;
  ~StoreProcess();  // stops it: closing our end of its pipe ends it, then it is reaped

  int port() const { return port_; }

 private:
  pid_t pid_ = -1;
  int port_ = 0;
  int keep_alive_ = -1;  // the server runs while this pipe's write end is open
};

}  // namespace coll::test
