#include "cuda/staged_collective.h"

#include <algorithm>

#include "base/log.h"
#include "cuda/runtime.h"

namespace coll::cuda {
namespace {

bool elementwise(OpKind k) { return k == OpKind::allreduce || k == OpKind::broadcast || k == OpKind::reduce; }

constexpr size_t kAlign = 256;
size_t aligned(size_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }

// Pinned bytes the host twin of `op` needs (stageIn's layout: an in-place span is at most
// in + out bytes long).
size_t twinBytes(const OpRequest& op, int rank, int n) {
  BufferSizes s = sizesOf(op, rank, n);
  return aligned(s.in) + aligned(s.out);
}

Status waitFor(const OpRequest& op, DeviceContext& ctx) {
  if (!op.ready) return Status::ok();
  return check(cudaStreamWaitEvent(ctx.stream, static_cast<cudaEvent_t>(op.ready.get()), 0),
               "cudaStreamWaitEvent (the op's input)");
}

}  // namespace

Status StagedCollective::run(const OpRequest& op, uint64_t tag, DeviceContext& ctx, std::string* algorithm) {
  return elementwise(op.kind) ? runChunked(op, tag, ctx, algorithm) : runWhole(op, tag, ctx, algorithm);
}

Status StagedCollective::runChunked(const OpRequest& op, uint64_t tag, DeviceContext& ctx, std::string* algorithm) {
  const Deadline deadline = std::chrono::steady_clock::now() + env_.config.timeout;
  const size_t e = sizeOf(op.type);
  const size_t per_chunk = std::max<size_t>(1, env_.config.cuda_staging_chunk / e);
  const size_t slot_bytes = aligned(std::min(op.count, per_chunk) * e);
  COLL_RETURN_IF_ERROR(slots_.reserve(2 * slot_bytes));
  const bool is_root = op.root == env_.rank;
  const bool down = op.kind != OpKind::broadcast || is_root;        // the input is read here
  const bool up = op.kind != OpKind::reduce || is_root;             // the output is written here
  const bool up_needed = up && !(op.kind == OpKind::broadcast && is_root && op.input == op.output);
  const size_t chunks = std::max<size_t>(1, (op.count + per_chunk - 1) / per_chunk);
  auto slot = [&](size_t k) { return slots_.data() + (k % 2) * slot_bytes; };
  auto span = [&](size_t k) { return std::min(per_chunk, op.count - std::min(op.count, k * per_chunk)); };
  COLL_RETURN_IF_ERROR(waitFor(op, ctx));
  // Chunk k's download is queued after chunk k-2's upload (the slot's previous tenant) and
  // followed by an event: once that fired, the slot holds chunk k and nothing else uses it.
  auto queueDown = [&](size_t k) {
    if (down && span(k) > 0)
      COLL_RETURN_IF_ERROR(check(cudaMemcpyAsync(slot(k), static_cast<const char*>(op.input) + k * per_chunk * e,
                                                 span(k) * e, cudaMemcpyDeviceToHost, ctx.stream),
                                 "cudaMemcpyAsync (device to pinned)"));
    return check(cudaEventRecord(ctx.slot_ready[k % 2], ctx.stream), "cudaEventRecord (staging slot)");
  };
  COLL_RETURN_IF_ERROR(queueDown(0));
  for (size_t k = 0; k < chunks; ++k) {
    if (k + 1 < chunks) COLL_RETURN_IF_ERROR(queueDown(k + 1));  // overlaps chunk k's transfer
    COLL_RETURN_IF_ERROR(waitEvent(ctx.slot_ready[k % 2], deadline, "the copy of a chunk to host memory"));
    OpRequest host = op;
    host.count = span(k);
    host.input = slot(k);
    host.output = up ? slot(k) : nullptr;
    host.device = -1;
    host.ready.reset();
    COLL_RETURN_IF_ERROR(env_.run_host(host, tag, algorithm));
    if (up_needed && span(k) > 0)  // overlaps chunk k+1's transfer
      COLL_RETURN_IF_ERROR(check(cudaMemcpyAsync(static_cast<char*>(op.output) + k * per_chunk * e, slot(k),
                                                 span(k) * e, cudaMemcpyHostToDevice, ctx.stream),
                                 "cudaMemcpyAsync (pinned to device)"));
  }
  *algorithm = "staged " + *algorithm;
  return waitStream(ctx.stream, deadline, "the copy of the result to the GPU");
}

Status StagedCollective::stageIn(const OpRequest& op, DeviceContext& ctx, char* arena, size_t* used, OpRequest* host) {
  BufferSizes s = sizesOf(op, env_.rank, env_.size);
  *host = op;
  host->device = -1;
  host->ready.reset();
  host->members.reset();
  const auto in = reinterpret_cast<uintptr_t>(op.input), out = reinterpret_cast<uintptr_t>(op.output);
  const bool in_place = s.in && s.out && in == out + static_cast<uintptr_t>(s.in_place_input_at);
  char* base = arena + *used;
  if (in_place) {  // one pinned span covering both, at the same relative offsets
    uintptr_t lo = std::min(in, out), hi = std::max(in + s.in, out + s.out);
    host->input = base + (in - lo);
    host->output = base + (out - lo);
    *used += aligned(hi - lo);
  } else {
    host->input = s.in ? base : (op.input == op.output && s.out ? base + aligned(s.in) : nullptr);
    host->output = s.out ? base + aligned(s.in) : nullptr;
    *used += aligned(s.in) + aligned(s.out);
  }
  if (!s.in) return Status::ok();
  return check(cudaMemcpyAsync(const_cast<void*>(host->input), op.input, s.in, cudaMemcpyDeviceToHost, ctx.stream),
               "cudaMemcpyAsync (device to pinned)");
}

Status StagedCollective::stageOut(const OpRequest& op, const OpRequest& host, DeviceContext& ctx) {
  BufferSizes s = sizesOf(op, env_.rank, env_.size);
  if (!s.out) return Status::ok();
  return check(cudaMemcpyAsync(op.output, host.output, s.out, cudaMemcpyHostToDevice, ctx.stream),
               "cudaMemcpyAsync (pinned to device)");
}

// Whole buffers (and every member of a group of sends and receives).
Status StagedCollective::runWhole(const OpRequest& op, uint64_t tag, DeviceContext& ctx, std::string* algorithm) {
  const Deadline deadline = std::chrono::steady_clock::now() + env_.config.timeout;
  const bool group = op.kind == OpKind::group;
  std::vector<const OpRequest*> parts;
  if (group) for (const OpRequest& m : *op.members) parts.push_back(&m);
  else parts.push_back(&op);
  size_t need = 0;
  for (const OpRequest* m : parts) need += twinBytes(*m, env_.rank, env_.size);
  COLL_RETURN_IF_ERROR(whole_.reserve(std::max<size_t>(need, kAlign)));
  COLL_RETURN_IF_ERROR(waitFor(op, ctx));
  std::vector<OpRequest> twins(parts.size());
  size_t used = 0;
  for (size_t i = 0; i < parts.size(); ++i) COLL_RETURN_IF_ERROR(stageIn(*parts[i], ctx, whole_.data(), &used, &twins[i]));
  COLL_RETURN_IF_ERROR(waitStream(ctx.stream, deadline, "the copy of the input to host memory"));
  OpRequest host = group ? op : twins[0];
  if (group) {
    host.members = std::make_shared<std::vector<OpRequest>>(twins);
    host.device = -1;
    host.ready.reset();
  }
  COLL_RETURN_IF_ERROR(env_.run_host(host, tag, algorithm));
  for (size_t i = 0; i < parts.size(); ++i) COLL_RETURN_IF_ERROR(stageOut(*parts[i], twins[i], ctx));
  *algorithm = "staged " + *algorithm;
  return waitStream(ctx.stream, deadline, "the copy of the result to the GPU");
}

}  // namespace coll::cuda
