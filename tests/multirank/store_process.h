// The rendezvous store of a forked-rank test, served from a process of its own rather than a
// thread of the test process: forking ranks from a process that has threads leaves the child
// whatever state those threads held at that instant (glibc's loader locks among them: a child
// once hung in dlclose, inside hwloc, waiting for a thread that existed only in the parent).
#pragma once

#include <sys/types.h>

#include <string>

#include "core/status.h"

namespace coll::test {

class StoreProcess {
 public:
  // Forks the server; returns once it listens on 127.0.0.1 (its port in port()).
  static Status start(const std::string& secret, StoreProcess* out);
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
