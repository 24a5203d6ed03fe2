#include "comm/split.h"

#include <algorithm>

#include "base/log.h"
#include "comm/communicator_impl.h"

namespace coll {

Status planSplit(const CommOptions& parent, int rank, const std::vector<SplitChoice>& choices, uint64_t generation,
                 CommOptions* out, bool* joins) {
  if (rank < 0 || static_cast<size_t>(rank) >= choices.size())
    return internalError(format("split: rank %d of %zu", rank, choices.size()));
  const int color = choices[rank].color;
  *joins = color >= 0;
  if (!*joins) return Status::ok();
  std::vector<int> members;
  for (size_t r = 0; r < choices.size(); ++r)
    if (choices[r].color == color) members.push_back(static_cast<int>(r));
  std::stable_sort(members.begin(), members.end(),
                   [&](int a, int b) { return choices[a].key < choices[b].key; });  // ties: old rank order
  *out = parent;
  out->rank = static_cast<int>(std::find(members.begin(), members.end(), rank) - members.begin());
  out->size = static_cast<int>(members.size());
  out->local_rank = -1;     // the group's host grouping decides it again
  out->host_store = false;  // the store keeps running where it runs (the parent's rank 0)
  out->name = parent.name + "/split" + std::to_string(generation) + "-c" + std::to_string(color);
  return Status::ok();
}

// Every rank's (color, key) by an all-gather over this communicator, then a communicator per
// color created as any other is (its own transports, p2p engine and selector), sharing the
// store (and, on the rank that serves it, the store server).
Status CommunicatorImpl::split(int color, int key, std::unique_ptr<CommunicatorImpl>* out) {
  refuseInForkedChild("split");
  out->reset();
  if (color < 0 && color != kSplitNoColor)
    return invalidArgument(format("split: color %d is negative and not kSplitNoColor (%d)", color, kSplitNoColor));
  const uint64_t generation = ++splits_;
  std::vector<SplitChoice> choices(size_);
  SplitChoice mine{color, key};
  OpRequest gather;
  gather.kind = OpKind::allgather;
  gather.input = &mine;
  gather.output = choices.data();
  gather.count = sizeof(SplitChoice) / 4;
  gather.type = DataType::i32;
  try {
    enqueue(std::move(gather)).wait();
  } catch (const Error& e) {
    return Status(e.code(), format("split #%llu: exchanging colors and keys: %s",
                                   static_cast<unsigned long long>(generation), e.what()));
  }
  CommOptions plan;
  bool joins = false;
  COLL_RETURN_IF_ERROR(planSplit(options_, rank_, choices, generation, &plan, &joins));
  if (!joins) {
    COLL_INFO("INIT", "rank %d of %d: split #%llu with no color: joins no communicator", rank_, size_,
              static_cast<unsigned long long>(generation));
    return Status::ok();
  }
  COLL_INFO("INIT", "rank %d of %d splits (color %d, key %d) to rank %d of %d as '%s'", rank_, size_, color, key,
            plan.rank, plan.size, plan.name.c_str());
  return create(plan, config_, out, store_server_);
}

}  // namespace coll
