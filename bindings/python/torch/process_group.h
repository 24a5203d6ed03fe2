// ProcessGroupColl: torch.distributed's backend "coll" (a c10d::ProcessGroup subclass under
// torch 1.x, a c10d::Backend under torch 2.x, which wraps backends in its own ProcessGroup).
// Each method checks its tensors, issues coll ops (which run on coll's progress thread) and
// returns at once with a CollWork that the Completer finishes. CUDA tensors go through coll's
// device-buffer path on torch's current stream (placement.h).
#pragma once

#include <torch/csrc/distributed/c10d/Store.hpp>
#include <torch/version.h>
#if TORCH_VERSION_MAJOR >= 2
#include <torch/csrc/distributed/c10d/Backend.hpp>
#else
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#endif

#include <functional>
#include <memory>
#include <atomic>
#include <mutex>

#include "coll/communicator.h"
#include "placement.h"
#include "work.h"

namespace coll::torch_backend {

// torch 2.2 settled Backend's coalescing interface (startCoalescing(), endCoalescing() ->
// Work) and made c10::optional std::optional.
#define COLL_TORCH_COALESCING (TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 2))

#if TORCH_VERSION_MAJOR >= 2
using BackendBase = c10d::Backend;
#else
using BackendBase = c10d::ProcessGroup;
#endif

class ProcessGroupColl : public BackendBase {
 public:
  // Bootstraps coll's connections through `store` (torch's prefix store for this group); every
  // op's deadline is `timeout`.
  // profiling_name: the backend's name in torch's profiler events ("coll:all_reduce"); the
  // suite driver's alias mode passes "gloo" (tests/torch_suite/run_suite.py).
  ProcessGroupColl(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                   std::chrono::milliseconds timeout, std::string profiling_name = "coll");
  ~ProcessGroupColl() override;

  const std::string getBackendName() const override { return "coll"; }

  c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor>& tensors, const c10d::BroadcastOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor>& tensors, const c10d::AllreduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce_coalesced(std::vector<at::Tensor>& tensors,
                                                     const c10d::AllreduceCoalescedOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce(std::vector<at::Tensor>& tensors, const c10d::ReduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor>& tensors, int dst, int tag) override;
  c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor>& tensors, int src, int tag) override;
  c10::intrusive_ptr<c10d::Work> recvAnysource(std::vector<at::Tensor>& tensors, int tag) override;

  // process_group_lists.cc: the collectives over lists of tensors.
  c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                           std::vector<at::Tensor>& inputs, const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _allgather_base(at::Tensor& output, at::Tensor& input,
                                                 const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather_coalesced(std::vector<std::vector<at::Tensor>>& output_lists,
                                                     std::vector<at::Tensor>& inputs,
                                                     const c10d::AllgatherOptions& opts) override;
  // As gloo's: rank 0 waits up to the timeout for every rank to check in and names the ones
  // that did not ("Rank 2 failed to pass monitoredBarrier in 1000 ms"), then releases them.
  // Under the name "coll" torch 1.13's dist.monitored_barrier refuses every backend but gloo:
  // call group.monitored_barrier(timeout, wait_all_ranks) on the process group instead.
  void monitoredBarrier(const c10d::BarrierOptions& opts, bool wait_all_ranks) override;
  // The group's collective count, equal on every rank (torch's desync debugging reads it).
  void setSequenceNumberForGroup() override { sequence_ = 0; }
  uint64_t getSequenceNumberForGroup() override { return sequence_; }
#if TORCH_VERSION_MAJOR >= 2
  // group_lifecycle.cc: what torch 2.x asks of a backend beyond the ops. Not marked override:
  // each is torch's virtual where this torch declares it (split and supportsSplitting since
  // about 2.7, abort/shutdown later than 2.4) and a plain member elsewhere.
  //
  // dist.split_group: the ranks of one split make a new group, bootstrapped through `store`
  // (torch's prefix store for it) as new_group's are; a rank not in `ranks` gets null.
  bool supportsSplitting() const { return true; }
  // What split_group hands split() (after torch sets the child's timeout and name in a copy).
  c10::intrusive_ptr<c10d::Backend::Options> getBackendOptions() {
    return c10::make_intrusive<c10d::Backend::Options>("coll", timeout_);
  }
  c10::intrusive_ptr<c10d::Backend> split(const c10::intrusive_ptr<c10d::Store>& store, const std::vector<int>& ranks,
                                          const c10::intrusive_ptr<c10d::Backend::Options>& opts);
  // dist.destroy_process_group: waits for the ops issued (each bounded by its deadline), then
  // closes the connections. An op issued afterwards is refused, naming it.
  void shutdown();
  // _abort_process_group: every pending op fails at once here ("aborted by the application"),
  // and peers waiting on this rank fail fast, their connections closed. Idempotent.
  void abort();
#endif
  c10::intrusive_ptr<c10d::Work> gather(std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
                                        const c10d::GatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> scatter(std::vector<at::Tensor>& outputs, std::vector<std::vector<at::Tensor>>& inputs,
                                         const c10d::ScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter(std::vector<at::Tensor>& outputs,
                                                std::vector<std::vector<at::Tensor>>& inputs,
                                                const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(at::Tensor& output, at::Tensor& input,
                                                      const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall_base(at::Tensor& output, at::Tensor& input,
                                               std::vector<int64_t>& output_splits,
                                               std::vector<int64_t>& input_splits,
                                               const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall(std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
                                          const c10d::AllToAllOptions& opts) override;

#if COLL_TORCH_COALESCING
  // torch 2.x's _coalescing_manager brackets ops with these when given a device. The Work
  // returned completes when every op issued in between has (their copy-backs included). (batch_isend_irecv uses
  // them only for a backend whose supportsCoalescing() is true; this one keeps torch's
  // default, false, and takes gloo's path: its point-to-point needs no group.)
  void startCoalescing() override;
  c10::intrusive_ptr<c10d::Work> endCoalescing() override;

  // tensor_coalesced.cc: all_gather_into_tensor and reduce_scatter_tensor over lists (FSDP2).
  // Not marked override: torch 2.x renamed them (..._tensor_coalesced, then
  // ..._single_coalesced, the old names forwarding); the names this torch declares virtual are
  // overridden, any other is a plain member.
  c10::intrusive_ptr<c10d::Work> allgather_into_tensor_coalesced(std::vector<at::Tensor>& outputs,
                                                                 std::vector<at::Tensor>& inputs,
                                                                 const c10d::AllgatherOptions& opts);
  c10::intrusive_ptr<c10d::Work> all_gather_single_coalesced(std::vector<at::Tensor>& outputs,
                                                             std::vector<at::Tensor>& inputs,
                                                             const c10d::AllgatherOptions& opts);
  c10::intrusive_ptr<c10d::Work> reduce_scatter_tensor_coalesced(std::vector<at::Tensor>& outputs,
                                                                 std::vector<at::Tensor>& inputs,
                                                                 const c10d::ReduceScatterOptions& opts);
  c10::intrusive_ptr<c10d::Work> reduce_scatter_single_coalesced(std::vector<at::Tensor>& outputs,
                                                                 std::vector<at::Tensor>& inputs,
                                                                 const c10d::ReduceScatterOptions& opts);
#endif

 private:
  using Issue = std::function<std::vector<coll::Work>(Communicator&)>;
  // Issues the ops (serialised: torch may call from the autograd thread and the main thread,
  // coll takes one issuing thread at a time) and hands them to the Completer. coll's own
  // refusals (coll::Error) become RuntimeErrors before anything is sent.
  // `where` is the op's placementOf: a GPU op's Future declares its device and its finish_ok
  // runs on its stream.
  c10::intrusive_ptr<c10d::Work> submit(c10d::OpType type, const Placement& where, std::vector<at::Tensor> outputs,
                                        std::vector<at::Tensor> keep, std::function<void()> finish_ok,
                                        const Issue& issue, bool point_to_point = false,
                                        std::vector<at::Tensor> inputs = {});
  c10::intrusive_ptr<c10d::Work> receive(std::vector<at::Tensor>& tensors, int src, int tag);
  // Waits for the ops issued (each bounded by its deadline), then disconnects; comm_ and
  // completer_ are null afterwards (shutdown() and the destructor).
  void close();
  // The communicator for an op named `op`; TORCH_CHECK fails once the group was shut down.
  // Called with issue_mu_ held.
  Communicator& live(const char* op);
  c10::intrusive_ptr<c10d::Work> sparseAllreduce(const at::Tensor& t, const c10d::AllreduceOptions& opts);
  // Per-peer point-to-point exchange as one coll group: chunk p of `send` to rank p, chunk p
  // of `recv` from rank p (uneven all-to-all).
  std::vector<coll::Work> exchange(Communicator& comm, const std::vector<at::Tensor>& send,
                                   const std::vector<at::Tensor>& recv, const Placement& where);

  std::mutex issue_mu_;
  // Between startCoalescing and endCoalescing: the Works of the ops issued.
  bool coalescing_ = false;
  std::vector<c10::intrusive_ptr<CollWork>> coalesced_;
  int monitored_barriers_ = 0;
  std::atomic<uint64_t> sequence_{0};
  std::chrono::milliseconds timeout_;
  std::string profiling_name_;
  // monitoredBarrier's one-byte messages: a check-in from a barrier that already failed may
  // still land here, so the bytes live as long as the group.
  std::vector<uint8_t> monitored_bytes_;
  // Both null after shutdown(): submit() then refuses the op.
  std::unique_ptr<Communicator> comm_;
  std::unique_ptr<Completer> completer_;
};

}  // namespace coll::torch_backend
