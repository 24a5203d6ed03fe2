// Finding an RDMA device for the verbs transport. On a machine without one (no InfiniBand or
// RoCE NIC and no soft-RoCE link configured) the reason is reported plainly at start-up and
// the registry skips the transport.
#pragma once

#include <string>

#include "base/status.h"

namespace coll::transport::verbs {

struct DeviceChoice {
  std::string name;  // e.g. "mlx5_0"
  int port = 1;
};

// The first device with an active port, or Unsupported naming why there is none.
Status findDevice(DeviceChoice* out);

}  // namespace coll::transport::verbs
