#include "algorithms/direct_collectives.h"

#include <algorithm>

namespace coll::algo {
namespace {

// Sliced, so a large message pipelines through transports with bounded staging.
Schedule build(const BuildParams& p, StepKind kind, const char* name) {
  const size_t per = std::max<size_t>(1, p.slice_bytes / p.elem_size);
  const size_t slices = (p.count + per - 1) / per;
  ScheduleBuilder b(name, slices);
  b.setNumPhases(1);
  for (size_t j = 0; j < slices; ++j) {
    size_t offset = j * per * p.elem_size, bytes = std::min(per, p.count - j * per) * p.elem_size;
    BufferId buffer = kind == StepKind::send ? BufferId::input : BufferId::output;
    b.add({kind, buffer, p.root, offset, bytes, 0, 0}, {}, {});
  }
  return b.finish();
}

}  // namespace

Schedule buildSend(const BuildParams& p) { return build(p, StepKind::send, "p2p"); }
Schedule buildRecv(const BuildParams& p) { return build(p, StepKind::recv, "p2p"); }

}  // namespace coll::algo
