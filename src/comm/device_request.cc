#include "comm/device_request.h"

#include <algorithm>

#include "base/log.h"
#include "cuda/runtime.h"

namespace coll {

Status markDevice(OpRequest& op, int rank, int nranks) {
  if (!cuda::gpuPresent()) {
    if (op.stream) return unsupportedError(format("a CUDA stream was given but %s", cuda::whyNoGpu().c_str()));
    return Status::ok();
  }
  BufferSizes s = sizesOf(op, rank, nranks);
  cuda::Pointer in = s.in ? cuda::inspect(op.input) : cuda::Pointer{};
  cuda::Pointer out = s.out ? cuda::inspect(op.output) : cuda::Pointer{};
  if (!in.device && !out.device) {
    if (op.stream) return unsupportedError("a CUDA stream was given with host buffers: streams order device buffers only");
    return Status::ok();
  }
  if (s.in && s.out && in.device != out.device)
    return invalidArgument(format("the send buffer is %s memory but the receive buffer is %s memory",
                                  in.device ? "device" : "host", out.device ? "device" : "host"));
  if (in.device && out.device && in.ordinal != out.ordinal)
    return invalidArgument(format("the send buffer is on GPU %d but the receive buffer on GPU %d", in.ordinal,
                                  out.ordinal));
  op.device = in.device ? in.ordinal : out.ordinal;
  return cuda::recordReady(op.stream, op.device, &op.ready);
}

Status markDeviceGroup(OpRequest& group) {
  const std::vector<OpRequest>& members = *group.members;
  auto on_device = [](const OpRequest& m) { return m.device >= 0; };
  if (std::none_of(members.begin(), members.end(), on_device)) return Status::ok();
  if (!std::all_of(members.begin(), members.end(), on_device))
    return invalidArgument("a group mixes sends and receives of host memory with ones of device memory");
  group.device = members.back().device;
  group.ready = members.back().ready;
  return Status::ok();
}

Status holdStreams(const OpRequest& op, cuda::StreamGate& gate) {
  if (op.device < 0) return Status::ok();
  std::vector<void*> streams;
  if (op.members) {
    for (const OpRequest& m : *op.members)
      if (m.stream && std::find(streams.begin(), streams.end(), m.stream) == streams.end()) streams.push_back(m.stream);
  } else if (op.stream) {
    streams.push_back(op.stream);
  }
  for (void* s : streams) COLL_RETURN_IF_ERROR(gate.hold(s, op.work));
  return Status::ok();
}

}  // namespace coll
