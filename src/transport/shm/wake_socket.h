// Waking a rank that waits in poll() rather than on its futex: while it waits on shared memory
// and sockets at once (hierarchical algorithms; exec/executor.cc), a futex cannot wake it, so
// peers that ring its doorbell send a one-byte datagram to its wake socket instead.
//
// The wake socket is a Unix datagram socket in the abstract namespace, named after the rank's
// segment: nothing to clean up after a crash (the name goes with the last descriptor). The
// abstract namespace belongs to a network namespace, so ranks grouped onto one host across two
// of them cannot reach each other's: set-up compares the namespaces each rank wrote into its
// segment (or, where one is unknown, sends a hello datagram) and such a rank keeps waiting in
// slices instead (see ShmTransport::pollFds).
#pragma once

#include <cstdint>
#include <string>

#include "base/fd_io.h"
#include "base/status.h"

namespace coll::transport::shm {

// The socket's name without its leading NUL: "coll-wake" + segment name. Goes into the
// segment header (SegmentHeader::wake_name) so that ringers find it.
std::string wakeSocketName(const std::string& segment_name);

class WakeSocket {
 public:
  // Binds the owner's socket, non-blocking, under wakeSocketName(segment_name).
  static Status bind(const std::string& segment_name, WakeSocket* out);
  int fd() const { return fd_.get(); }
  explicit operator bool() const { return fd_.get() >= 0; }
  // Reads every queued datagram: the waiter looks at shared memory next, whatever woke it.
  void drain() const;

 private:
  UniqueFd fd_;
};

// Sends one byte from `sender` (the ringer's own wake socket) to the socket named `name` (a
// wakeSocketName). A full queue (EAGAIN) is fine: the owner has a wake-up pending already.
// False: no such socket in this network namespace.
bool sendWake(int sender, const char* name);

// This process's network namespace: the device and inode of /proc/self/ns/net ({0, 0} where
// /proc cannot tell). Two processes reach each other's wake sockets exactly when they agree.
struct NetNamespace {
  uint64_t dev = 0;
  uint64_t ino = 0;
};
NetNamespace currentNetNamespace();

}  // namespace coll::transport::shm
