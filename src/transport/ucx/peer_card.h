// What a rank publishes in the store for its ucx peers: its worker address, and enough to tell
// whether a peer is a process on this very kernel (boot id and pid namespace), in which case
// its death is noticed through a pidfd within 50 ms. UCX notices a dead peer over TCP at once
// (the connection resets) but over shared memory only through its keepalive, seconds later.
#pragma once

#include <sys/types.h>

#include <string>

#include "base/status.h"

namespace coll::transport::ucx {

struct PeerCard {
  std::string machine;  // boot id + pid namespace: equal means a pidfd can watch the process
  pid_t pid = 0;
  std::string address;  // the UCP worker address (bytes)

  static PeerCard local(std::string address);
  std::string encode() const;  // printable, for the store
  static Status decode(const std::string& text, PeerCard* out);
};

}  // namespace coll::transport::ucx
