// The issuing thread's part of an op on device (CUDA) buffers (src/cuda/device_ops.h runs it).
#pragma once

#include <memory>
#include <vector>

#include "exec/op.h"
#include "base/status.h"
#include "cuda/stream_gate.h"

namespace coll {

// Marks an op whose buffers are device memory (op.device) and records an event on its stream
// that the op's input must wait for. Refuses, before anything is sent, a host buffer beside a
// device one and buffers on two GPUs. Host buffers: nothing changes.
Status markDevice(OpRequest& op, int rank, int nranks);

// A group of sends and receives: all host or all device; the group waits for its last
// member's event (later on the same stream than the others').
Status markDeviceGroup(OpRequest& group);

// Makes the op's stream(s) wait for its completion (the members' streams for a group).
Status holdStreams(const OpRequest& op, cuda::StreamGate& gate);

}  // namespace coll
