// VerbsDevice over libibverbs: the one place the data path calls ibv_*. Opening takes the
// device the probe chose (device.h), a protection domain and one completion queue; queue pairs
// are RC, walked through RESET -> INIT -> RTR -> RTS with the attributes qp_state.h names.
// InfiniBand ports are addressed by LID, RoCE ports by GID (RoCE v2 preferred).
//
// Not run by coll's tests: the machines they run on have no RDMA device. The protocol above
// it is tested over tests/unit/fake_verbs_device.h instead.
#pragma once

#include <memory>

#include "base/status.h"
#include "transport/verbs/device.h"
#include "transport/verbs/verbs_device.h"

namespace coll::transport::verbs {

// cq_depth: completions the shared CQ must hold (every QP's send and receive queue together).
Status openIbvDevice(const DeviceChoice& choice, int cq_depth, std::unique_ptr<VerbsDevice>* out);

}  // namespace coll::transport::verbs
