// Two connected TCP sockets over 127.0.0.1, for fuzz targets that play a hostile peer against
// the real socket code. Blocking; every call is bounded by the kernel's loopback buffers.
#pragma once

#include "base/fd_io.h"

namespace coll::fuzz {

struct LoopbackPair {
  UniqueFd ours;    // handed to the code under test
  UniqueFd theirs;  // the hostile peer writes the fuzz input here
};

// Aborts if loopback sockets cannot be made (the fuzz run is meaningless then).
LoopbackPair makeLoopbackPair();

}  // namespace coll::fuzz
