#include "comm/paths/device_path.h"

#include "comm/device_request.h"

namespace coll {

DevicePath::DevicePath(int rank, int size, bool one_host, const Config& config, ScheduledPath& scheduled,
                       Ledger& ledger)
    : rank_(rank), size_(size), one_host_(one_host), config_(config), scheduled_(scheduled), ledger_(ledger) {}

DevicePath::~DevicePath() = default;

Status DevicePath::run(const OpRequest& op, RunReport* report) {
  if (!ops_) {
    cuda::DeviceEnv env;
    env.rank = rank_;
    env.size = size_;
    env.one_host = one_host_;
    env.config = config_;
    env.run_host = [this](const OpRequest& host_op, uint64_t tag, std::string* algorithm) {
      return scheduled_.runHost(host_op, tag, algorithm);
    };
    ops_ = std::make_unique<cuda::DeviceOps>(std::move(env));
  }
  report->algorithm = ops_->pathFor(op);
  const uint64_t tag = messageTag(op, report->algorithm);
  if (op.kind == OpKind::group) ledger_.started({op.work->sequence, kNotCollective, OpFingerprint::of(op, "")});
  else COLL_RETURN_IF_ERROR(scheduled_.begin(op, report->algorithm, &report->refused));
  return ops_->execute(op, tag, &report->algorithm);
}

bool DevicePath::finishesAtIssue(const OpRequest& op) const {
  return cuda::takesIpcPath(op, size_, one_host_, config_);
}

Status DevicePath::holdStreams(const OpRequest& op) { return coll::holdStreams(op, stream_gate_); }

}  // namespace coll
