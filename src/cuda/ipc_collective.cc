#include "cuda/ipc_collective.h"

#include <cstring>

#include "base/log.h"
#include "cuda/device_copy.h"
#include "cuda/device_reduce.h"
#include "cuda/runtime.h"

namespace coll::cuda {
namespace {

struct Descriptor {
  cudaIpcMemHandle_t input;
  cudaIpcMemHandle_t output;
  char bus_id[16];  // the GPU's PCI bus id
  uint64_t input_offset;
  uint64_t output_offset;
  int32_t has_input;
  int32_t has_output;
};
constexpr size_t kDescriptorBytes = 256;
static_assert(sizeof(Descriptor) <= kDescriptorBytes);

// Second exchange of an op ("done"): the op's tag with a bit no op kind uses.
constexpr uint64_t kDoneTagBit = 0x80;

}  // namespace

bool takesIpcPath(const OpRequest& op, int size, bool one_host, const Config& config) {
  if (!one_host || !config.cuda_ipc || size > kMaxOperands) return false;
  if (config.deterministic && reduces(op.kind)) return false;  // staged: the host's rank-order fold
  return op.kind != OpKind::send && op.kind != OpKind::recv && op.kind != OpKind::group && op.kind != OpKind::barrier;
}

namespace {
double usSince(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t).count();
}
}  // namespace

Status IpcCollective::run(const OpRequest& op, uint64_t tag, DeviceContext& ctx, std::string* algorithm) {
  *algorithm = "cuda_ipc";
  const auto t0 = std::chrono::steady_clock::now();
  const Deadline deadline = t0 + env_.config.timeout;
  // The host waits for the input, not this rank's stream for its peers' events: a stream of one
  // process waiting on another's event made the GPU switch between them for every op.
  if (op.ready)
    COLL_RETURN_IF_ERROR(waitEvent(static_cast<cudaEvent_t>(op.ready.get()), deadline, "the op's input (cuda_ipc)"));
  Peers peers;
  COLL_RETURN_IF_ERROR(exchange(op, tag, ctx, &peers));
  const double exchanged = usSince(t0);
  if (!logged_mode_ && env_.rank == 0)
    COLL_INFO("CUDA", "cuda_ipc: %s", peers.one_gpu ? "every rank on one GPU: rank 0 does each op whole"
                                                    : "ranks on several GPUs: each rank does its share");
  logged_mode_ = true;
  if (!peers.one_gpu) COLL_RETURN_IF_ERROR(doShare(op, peers, env_.rank, ctx));
  else if (env_.rank == 0) COLL_RETURN_IF_ERROR(doWhole(op, peers, ctx));
  const double queued = usSince(t0);
  COLL_RETURN_IF_ERROR(waitStream(ctx.stream, deadline, "this rank's part of the op (cuda_ipc)"));
  COLL_TRACE("CUDA", "%s of %s: input ready and descriptors exchanged at %.1f us, work queued at %.1f, done at %.1f",
             toString(op.kind), formatBytes(op.bytes()).c_str(), exchanged, queued, usSince(t0));
  uint8_t done = 1;
  std::vector<uint8_t> all(static_cast<size_t>(env_.size));
  OpRequest bye;
  bye.kind = OpKind::allgather;
  bye.input = &done;
  bye.output = all.data();
  bye.count = 1;
  bye.type = DataType::u8;
  std::string ignored;
  return env_.run_host(bye, tag ^ kDoneTagBit, &ignored);
}

// Step 2: every rank's descriptor, then each peer's buffers mapped.
Status IpcCollective::exchange(const OpRequest& op, uint64_t tag, DeviceContext& ctx, Peers* peers) {
  const size_t n = static_cast<size_t>(env_.size);
  BufferSizes sizes = sizesOf(op, env_.rank, env_.size);
  mine_.assign(kDescriptorBytes, 0);
  all_.assign(kDescriptorBytes * n, 0);
  Descriptor d{};
  d.has_input = sizes.in > 0;
  d.has_output = sizes.out > 0;
  const auto t0 = std::chrono::steady_clock::now();
  if (d.has_input) COLL_RETURN_IF_ERROR(exports_.get(op.input, &d.input, &d.input_offset));
  if (d.has_output) COLL_RETURN_IF_ERROR(exports_.get(op.output, &d.output, &d.output_offset));
  std::memcpy(d.bus_id, ctx.bus_id, sizeof d.bus_id);
  const double exported = usSince(t0);
  std::memcpy(mine_.data(), &d, sizeof d);
  OpRequest hello;
  hello.kind = OpKind::allgather;
  hello.input = mine_.data();
  hello.output = all_.data();
  hello.count = kDescriptorBytes;
  hello.type = DataType::u8;
  std::string ignored;
  COLL_RETURN_IF_ERROR(env_.run_host(hello, tag, &ignored));
  const double gathered = usSince(t0);
  const size_t opened_before = imports_.opened();
  peers->in.assign(n, nullptr);
  peers->out.assign(n, nullptr);
  for (int p = 0; p < env_.size; ++p) {
    if (p == env_.rank) {
      peers->in[p] = static_cast<const char*>(op.input);
      peers->out[p] = static_cast<char*>(op.output);
      continue;
    }
    Descriptor pd;
    std::memcpy(&pd, all_.data() + kDescriptorBytes * p, sizeof pd);
    if (std::memcmp(pd.bus_id, d.bus_id, sizeof d.bus_id) != 0) peers->one_gpu = false;
    char* base = nullptr;
    if (pd.has_input) {
      COLL_RETURN_IF_ERROR(imports_.memory(p, pd.input, &base));
      peers->in[p] = base + pd.input_offset;
    }
    if (pd.has_output) {
      COLL_RETURN_IF_ERROR(imports_.memory(p, pd.output, &base));
      peers->out[p] = base + pd.output_offset;
    }
  }
  COLL_TRACE("CUDA", "exported in %.1f us, descriptors gathered at %.1f, %zu allocation(s) opened by %.1f",
             exported, gathered, imports_.opened() - opened_before, usSince(t0));
  return Status::ok();
}

Status IpcCollective::copy(void* dst, const void* src, size_t bytes, DeviceContext& ctx) {
  if (dst == src || bytes == 0) return Status::ok();
  return check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, ctx.stream), "cudaMemcpyAsync (peer copy)");
}

// Step 3, every rank on one GPU: the whole op from rank 0, on its stream. All-reduce and reduce
// are one kernel over every element, broadcast and all-gather one fan-out; the rest go share
// by share.
Status IpcCollective::doWhole(const OpRequest& op, const Peers& peers, DeviceContext& ctx) {
  const int n = env_.size;
  const size_t b = op.bytes();
  if (op.kind == OpKind::allreduce || op.kind == OpKind::reduce) {
    Operands operands;
    operands.n_in = n;
    for (int p = 0; p < n; ++p) operands.in[p] = peers.in[p];
    operands.n_out = op.kind == OpKind::allreduce ? n : 1;
    for (int k = 0; k < operands.n_out; ++k) operands.out[k] = op.kind == OpKind::allreduce ? peers.out[k] : peers.out[op.root];
    const int divisor = op.op == ReduceOp::avg ? n : 1;
    return check(launchReduce(operands, op.count, op.type, op.op, divisor, ctx.stream), "reduction kernel launch");
  }
  if (op.kind == OpKind::broadcast || op.kind == OpKind::allgather) {
    FanOut fan;
    fan.n_dst = n;
    for (int d = 0; d < n; ++d) fan.dst[d] = peers.out[d];
    fan.n_src = op.kind == OpKind::broadcast ? 1 : n;
    if (op.kind == OpKind::broadcast) fan.src[0] = peers.in[op.root];
    else for (int s = 0; s < n; ++s) fan.src[s] = peers.in[s];
    fan.dst_step = op.kind == OpKind::allgather ? b : 0;
    return check(launchFanOut(fan, b, ctx.stream), "copy kernel launch");
  }
  for (int r = 0; r < n; ++r) COLL_RETURN_IF_ERROR(doShare(op, peers, r, ctx));
  return Status::ok();
}

// Step 3, ranks on several GPUs: rank r's share of the op, queued on its stream.
Status IpcCollective::doShare(const OpRequest& op, const Peers& peers, int r, DeviceContext& ctx) {
  const int n = env_.size;
  const size_t e = sizeOf(op.type), b = op.bytes();
  const int divisor = op.op == ReduceOp::avg ? n : 1;
  if (reduces(op.kind)) {
    size_t first = 0, count = op.count;  // elements of this share
    Operands operands;
    operands.n_in = n;
    if (op.kind == OpKind::allreduce) {  // slice r of the elements, into every output
      first = op.count * static_cast<size_t>(r) / static_cast<size_t>(n);
      count = op.count * static_cast<size_t>(r + 1) / static_cast<size_t>(n) - first;
      operands.n_out = n;
      for (int p = 0; p < n; ++p) operands.out[p] = peers.out[p] + first * e;
    } else if (op.kind == OpKind::reduce) {  // slice r of the elements, into the root's output
      first = op.count * static_cast<size_t>(r) / static_cast<size_t>(n);
      count = op.count * static_cast<size_t>(r + 1) / static_cast<size_t>(n) - first;
      operands.n_out = 1;
      operands.out[0] = peers.out[op.root] + first * e;
    } else {  // reduce-scatter: chunk r of every input, into rank r's output
      operands.n_out = 1;
      operands.out[0] = peers.out[r];
      first = op.count * static_cast<size_t>(r);
    }
    for (int p = 0; p < n; ++p) operands.in[p] = peers.in[p] + first * e;
    return check(launchReduce(operands, count, op.type, op.op, divisor, ctx.stream), "reduction kernel launch");
  }
  char* out = peers.out[r];
  switch (op.kind) {
    case OpKind::broadcast: return copy(out, peers.in[op.root], b, ctx);
    case OpKind::allgather: {  // rank r's input into every output: read once, written n times
      FanOut fan;
      fan.n_src = 1;
      fan.src[0] = peers.in[r];
      fan.n_dst = n;
      for (int d = 0; d < n; ++d) fan.dst[d] = peers.out[d] + static_cast<size_t>(r) * b;
      return check(launchFanOut(fan, b, ctx.stream), "copy kernel launch");
    }
    case OpKind::alltoall:
      for (int p = 0; p < n; ++p) COLL_RETURN_IF_ERROR(copy(out + p * b, peers.in[p] + r * b, b, ctx));
      return Status::ok();
    case OpKind::gather:
      if (r != op.root) return Status::ok();
      for (int p = 0; p < n; ++p) COLL_RETURN_IF_ERROR(copy(out + p * b, peers.in[p], b, ctx));
      return Status::ok();
    case OpKind::scatter: return copy(out, peers.in[op.root] + r * b, b, ctx);
    default: return internalError(format("%s has no cuda_ipc form", toString(op.kind)));
  }
}

}  // namespace coll::cuda
