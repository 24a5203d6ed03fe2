#include "algorithms/direct_collectives.h"
#include "algorithms/sliced_chunks.h"

#include <algorithm>

namespace coll::algo {
namespace {

// Sliced, so a large message pipelines through transports with bounded staging.
Schedule build(const BuildParams& p, StepKind kind, const char* name) {
  const BufferSlices slices(p);
  ScheduleBuilder b(name, slices.size());
  b.setNumPhases(1);
  for (size_t j = 0; j < slices.size(); ++j) {
    size_t offset = slices.offset(j), bytes = slices.bytes(j);
    BufferId buffer = kind == StepKind::send ? BufferId::input : BufferId::output;
    b.add({kind, buffer, p.root, offset, bytes, 0, 0}, {}, {});
  }
  return b.finish();
}

}  // namespace

Schedule fuseSchedules(std::vector<Schedule> parts) {
  Schedule fused;
  fused.algorithm = "group";
  fused.num_phases = 1;
  for (size_t k = 0; k < parts.size(); ++k) {
    auto base = static_cast<uint32_t>(fused.steps.size());
    for (Step& step : parts[k].steps) {
      for (uint32_t& d : step.deps) d += base;
      step.op_index = static_cast<uint16_t>(k);
      fused.steps.push_back(std::move(step));
    }
    fused.scratch_bytes = std::max(fused.scratch_bytes, parts[k].scratch_bytes);
  }
  return fused;
}

Schedule buildSend(const BuildParams& p) { return build(p, StepKind::send, "p2p"); }
Schedule buildRecv(const BuildParams& p) { return build(p, StepKind::recv, "p2p"); }

}  // namespace coll::algo
