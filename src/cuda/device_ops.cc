#include "cuda/device_ops.h"

#include <map>

#include "base/log.h"
#include "cuda/device_reduce.h"
#include "cuda/ipc_collective.h"
#include "cuda/runtime.h"
#include "cuda/staged_collective.h"

namespace coll::cuda {

struct DeviceOps::Impl {
  explicit Impl(DeviceEnv e) : env(std::move(e)), ipc(env), staged(env) {}

  Status context(int device, DeviceContext** out) {
    auto& slot = contexts[device];
    if (!slot) {
      auto made = std::make_unique<DeviceContext>();
      COLL_RETURN_IF_ERROR(made->init(device));
      slot = std::move(made);
    }
    *out = slot.get();
    return check(cudaSetDevice(device), "cudaSetDevice");
  }

  DeviceEnv env;
  std::map<int, std::unique_ptr<DeviceContext>> contexts;  // by GPU ordinal
  IpcCollective ipc;
  StagedCollective staged;
  bool logged_ipc = false, logged_staged = false;
};

bool DeviceOps::usesIpc(const OpRequest& op) const {
  return takesIpcPath(op, impl_->env.size, impl_->env.one_host, impl_->env.config);
}

DeviceOps::DeviceOps(DeviceEnv env) : impl_(std::make_unique<Impl>(std::move(env))) {}
DeviceOps::~DeviceOps() = default;

const char* DeviceOps::pathFor(const OpRequest& op) const {
  return usesIpc(op) ? "cuda_ipc" : "staged";
}

Status DeviceOps::execute(const OpRequest& op, uint64_t tag, std::string* algorithm) {
  DeviceContext* ctx = nullptr;
  COLL_RETURN_IF_ERROR(impl_->context(op.device, &ctx));
  if (usesIpc(op)) {
    if (!impl_->logged_ipc)
      COLL_INFO("INIT", "rank %d: device buffers move by cuda_ipc (every rank on this host, GPU %d)", impl_->env.rank,
                op.device);
    impl_->logged_ipc = true;
    return impl_->ipc.run(op, tag, *ctx, algorithm);
  }
  if (!impl_->logged_staged)
    COLL_INFO("INIT", "rank %d: device buffers of %s are staged through pinned host memory (%s)", impl_->env.rank,
              toString(op.kind),
              !impl_->env.config.cuda_ipc ? "COLL_CUDA_IPC=0"
              : !impl_->env.one_host     ? "ranks on several hosts"
              : impl_->env.size > kMaxOperands ? "more ranks on this host than cuda_ipc serves"
                                               : "point-to-point ops");
  impl_->logged_staged = true;
  return impl_->staged.run(op, tag, *ctx, algorithm);
}

}  // namespace coll::cuda
