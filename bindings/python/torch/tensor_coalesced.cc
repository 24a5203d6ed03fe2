// all_gather_into_tensor and reduce_scatter_tensor over lists of tensors, as FSDP2 (fully_shard)
// issues them per parameter group: each (output, input) pair is its own coll op, issued in list
// order on every rank, and one Work covers all of them (waiting on it waits for every member's
// copy-back, as a coalesced block's does).
#include "process_group.h"

#if COLL_TORCH_COALESCING

namespace coll::torch_backend {
namespace {

using Member = c10::intrusive_ptr<CollWork>;

template <class Issue>
c10::intrusive_ptr<c10d::Work> eachPair(int rank, std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
                                        const char* name, Issue&& issue) {
  TORCH_CHECK(outputs.size() == inputs.size(), "coll ", name, ": ", outputs.size(), " output tensors for ", inputs.size(),
              " inputs (one output per input)");
  std::vector<Member> members;
  members.reserve(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    c10::intrusive_ptr<c10d::Work> work = issue(outputs[i], inputs[i]);
    members.push_back(c10::static_intrusive_pointer_cast<CollWork>(work));
  }
  return c10::make_intrusive<CoalescedWork>(rank, std::move(members));
}

}  // namespace

c10::intrusive_ptr<c10d::Work> ProcessGroupColl::allgather_into_tensor_coalesced(std::vector<at::Tensor>& outputs,
                                                                                 std::vector<at::Tensor>& inputs,
                                                                                 const c10d::AllgatherOptions& opts) {
  return eachPair(rank_, outputs, inputs, "all_gather_into_tensor_coalesced",
                  [&](at::Tensor& out, at::Tensor& in) { return _allgather_base(out, in, opts); });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupColl::all_gather_single_coalesced(std::vector<at::Tensor>& outputs,
                                                                             std::vector<at::Tensor>& inputs,
                                                                             const c10d::AllgatherOptions& opts) {
  return allgather_into_tensor_coalesced(outputs, inputs, opts);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupColl::reduce_scatter_tensor_coalesced(std::vector<at::Tensor>& outputs,
                                                                                 std::vector<at::Tensor>& inputs,
                                                                                 const c10d::ReduceScatterOptions& opts) {
  return eachPair(rank_, outputs, inputs, "reduce_scatter_tensor_coalesced",
                  [&](at::Tensor& out, at::Tensor& in) { return _reduce_scatter_base(out, in, opts); });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupColl::reduce_scatter_single_coalesced(std::vector<at::Tensor>& outputs,
                                                                                 std::vector<at::Tensor>& inputs,
                                                                                 const c10d::ReduceScatterOptions& opts) {
  return reduce_scatter_tensor_coalesced(outputs, inputs, opts);
}

}  // namespace coll::torch_backend

#endif  // COLL_TORCH_COALESCING
