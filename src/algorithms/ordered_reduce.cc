#include "algorithms/ordered_reduce.h"

#include <algorithm>

#include "algorithms/direct_phases.h"
#include "algorithms/reduce_slots.h"

namespace coll::algo {
namespace {

constexpr uint32_t kFoldPhase = 0, kSpreadPhase = 1;

// Rank r's fold of slice j of its chunk: operands in rank order into the output.
void addFold(const BuildParams& p, const SlicedChunks& sl, size_t j, ReduceSlots* slots, ScheduleBuilder& b) {
  const int r = p.rank;
  const size_t at = sl.offset(r, j), bytes = sl.bytes(r, j), region = sl.region(r, j);
  const size_t stash_at = slots->reserved() + (at - sl.chunkOffset(r));
  const bool own_first = r == 0;
  if (!own_first) {
    if (p.in_place) b.add({StepKind::stash, BufferId::output, -1, at, bytes, stash_at, kFoldPhase}, {region}, {});
    b.add({StepKind::recv, BufferId::output, 0, at, bytes, 0, kFoldPhase}, {}, {region});
  }
  for (int k = 1; k < p.nranks; ++k) {
    if (k == r) {
      const BufferId operand = p.in_place ? BufferId::output : BufferId::input;
      b.add({StepKind::combine, operand, -1, at, bytes, stash_at, kFoldPhase}, {region}, {region});
      continue;
    }
    // Rank 0 folding: its first combine reads its input (x0 op x1), no copy up front.
    const BufferId source = own_first && k == 1 && !p.in_place ? BufferId::input : BufferId::output;
    slots->add(b, {StepKind::recvReduce, source, k, at, bytes, 0, kFoldPhase}, region);
  }
  if (p.average) b.add({StepKind::divide, BufferId::output, -1, at, bytes, 0, kFoldPhase}, {region}, {region});
}

// Every rank's slices of every other chunk to its owner, then this rank's folds.
void addOrderedReduceScatter(const BuildParams& p, const SlicedChunks& sl, ScheduleBuilder& b) {
  addSendToOwners(p, sl, b, kFoldPhase);
  ReduceSlots slots(p);
  for (size_t j = 0; j < sl.slices(p.rank); ++j) addFold(p, sl, j, &slots, b);
  const bool stashes = p.in_place && p.rank != 0;
  b.setScratchBytes(stashes ? slots.reserved() + sl.chunkBytes(p.rank) : slots.bytes());
}

// The one-rank case and the empty buffer: a copy where out of place, else nothing.
bool addTrivial(const BuildParams& p, ScheduleBuilder& b) {
  if (p.count == 0) return true;
  if (p.nranks > 1) return false;
  if (!p.in_place) b.addWritingAll({StepKind::copy, BufferId::input, -1, 0, p.count * p.elem_size});
  return true;
}

}  // namespace

Schedule buildOrderedAllreduce(const BuildParams& p) {
  SlicedChunks sl(p);
  ScheduleBuilder b("ordered", sl.numRegions());
  b.setNumPhases(p.nranks > 1 ? 2 : 1);
  if (addTrivial(p, b)) return b.finish();
  addOrderedReduceScatter(p, sl, b);
  addDirectAllGather(p, sl, b, kSpreadPhase);
  return b.finish();
}

// The schedule's buffer is the n chunks (op.cc, planOp): the result is chunk r.
Schedule buildOrderedReduceScatter(const BuildParams& p) {
  SlicedChunks sl(p);
  ScheduleBuilder b("ordered", sl.numRegions());
  b.setNumPhases(1);
  if (p.count == 0) return b.finish();
  if (p.nranks == 1) {
    b.add({StepKind::copy, BufferId::input, -1, sl.chunkOffset(0), sl.chunkBytes(0), 0, 0}, {}, {});
    return b.finish();
  }
  addOrderedReduceScatter(p, sl, b);
  return b.finish();
}

// Non-roots fold in a workspace and send their chunk to the root.
Schedule buildOrderedReduce(const BuildParams& p) {
  SlicedChunks sl(p);
  ScheduleBuilder b("ordered", sl.numRegions());
  b.setNumPhases(p.nranks > 1 ? 2 : 1);
  if (addTrivial(p, b)) return b.finish();
  addOrderedReduceScatter(p, sl, b);
  const int r = p.rank;
  if (r != p.root) {
    for (size_t j = 0; j < sl.slices(r); ++j)
      b.add({StepKind::send, BufferId::output, p.root, sl.offset(r, j), sl.bytes(r, j), 0, kSpreadPhase},
            {sl.region(r, j)}, {});
    return b.finish();
  }
  for (int owner : peersInTurn(p))
    for (size_t j = 0; j < sl.slices(owner); ++j)
      b.add({StepKind::recv, BufferId::output, owner, sl.offset(owner, j), sl.bytes(owner, j), 0, kSpreadPhase}, {},
            {sl.region(owner, j)});
  return b.finish();
}

}  // namespace coll::algo
