// Collectives and point-to-point on device (CUDA) buffers, for the communicator's progress
// thread. Two paths, chosen per op, the same on every rank that passes device buffers:
//  - cuda_ipc (ipc_collective.cc): every rank on one host. Ranks map each other's buffers
//    (cudaIpcGetMemHandle) once their inputs are ready; rank 0 does the whole op when every
//    rank is on one GPU, each rank its share directly in its peers' memory otherwise.
//  - staged (staged_collective.cc): anything else. Data crosses pinned host memory; all-reduce,
//    broadcast and reduce go chunk by chunk so the device copies overlap the transfers.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "base/config.h"
#include "exec/op.h"
#include "base/status.h"

namespace coll::cuda {

// Whether a device op takes the cuda_ipc path (the same answer on every rank for the same call).
// An op issued on a stream that takes it completes before the call returns (the communicator
// waits for it): a stream held on the GPU for it (stream_gate.h) deadlocked with this path's
// kernel and IPC event waits when two ranks shared one GPU. Ops of the staged path, copies
// only, hold the stream and return at once.
bool takesIpcPath(const OpRequest& op, int size, bool one_host, const Config& config);

struct DeviceEnv {
  int rank = 0;
  int size = 1;
  bool one_host = false;  // every rank of the communicator is on this host
  Config config;
  // Runs an op on host buffers through the usual schedules and transports, with this wire tag.
  std::function<Status(const OpRequest& host_op, uint64_t tag, std::string* algorithm)> run_host;
};

class DeviceOps {
 public:
  explicit DeviceOps(DeviceEnv env);
  ~DeviceOps();
  DeviceOps(const DeviceOps&) = delete;
  DeviceOps& operator=(const DeviceOps&) = delete;

  // "cuda_ipc" or "staged": what execute() will do with this op.
  const char* pathFor(const OpRequest& op) const;
  Status execute(const OpRequest& op, uint64_t tag, std::string* algorithm);

 private:
  bool usesIpc(const OpRequest& op) const;

  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace coll::cuda
