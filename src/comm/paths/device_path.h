// The device path: ops whose buffers are CUDA device memory (cuda/device_ops.h runs them:
// cuda_ipc on one host, else staged through pinned host memory, whose host transfers go
// through the scheduled path with the device op's wire tag). An op issued on a stream holds
// that stream until it is done (cuda/stream_gate.h), as ProcessGroupNCCL's ops do.
//
// Threading: run() on the thread that holds the communicator's engine; finishesAtIssue() and
// holdStreams() on the issuing thread.
#pragma once

#include <memory>

#include "base/config.h"
#include "comm/ledger.h"
#include "comm/paths/execution_path.h"
#include "comm/paths/scheduled_path.h"
#include "cuda/device_ops.h"
#include "cuda/stream_gate.h"

namespace coll {

class DevicePath final : public ExecutionPath {
 public:
  DevicePath(int rank, int size, bool one_host, const Config& config, ScheduledPath& scheduled, Ledger& ledger);
  ~DevicePath() override;

  const char* name() const override { return "device"; }
  bool accepts(const OpRequest& op) const override { return op.device >= 0; }
  Status run(const OpRequest& op, RunReport* report) override;

  // An op on a stream that must be finished before its call returns (cuda/device_ops.h says why).
  bool finishesAtIssue(const OpRequest& op) const;
  // Makes the op's stream(s) wait for its completion (the members' streams for a group).
  Status holdStreams(const OpRequest& op);

 private:
  const int rank_, size_;
  const bool one_host_;
  const Config& config_;
  ScheduledPath& scheduled_;
  Ledger& ledger_;
  std::unique_ptr<cuda::DeviceOps> ops_;  // made by the first op that runs here
  cuda::StreamGate stream_gate_;          // issuing thread
};

}  // namespace coll
