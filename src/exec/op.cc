#include "exec/op.h"

#include <cstdint>
#include <limits>

#include "base/log.h"
#include "base/wire_tag.h"

namespace coll {

BufferSizes sizesOf(const OpRequest& op, int rank, int n) {
  const size_t b = op.bytes(), nb = b * static_cast<size_t>(n);
  const bool is_root = op.root == rank;
  const auto at = [&](int r) { return static_cast<std::ptrdiff_t>(b * static_cast<size_t>(r)); };
  switch (op.kind) {
    case OpKind::allreduce: return {b, b, 0};
    case OpKind::broadcast: return {is_root ? b : 0, b, 0};
    case OpKind::reduce: return {b, is_root ? b : 0, 0};
    case OpKind::allgather: return {b, nb, at(rank)};
    case OpKind::reducescatter: return {nb, b, -at(rank)};
    case OpKind::alltoall: return {nb, nb, 0};
    case OpKind::gather: return {b, is_root ? nb : 0, at(rank)};
    case OpKind::scatter: return {is_root ? nb : 0, b, -at(rank)};
    case OpKind::send: return {b, 0, 0};
    case OpKind::recv: return {0, b, 0};
    case OpKind::barrier: return {0, 0, 0};
    case OpKind::group: return {0, 0, 0};
  }
  return {};
}

namespace {

Status checkOverlap(const OpRequest& op, const BufferSizes& s) {
  if (!s.in || !s.out || !op.input || !op.output) return Status::ok();
  auto in = reinterpret_cast<uintptr_t>(op.input), out = reinterpret_cast<uintptr_t>(op.output);
  bool in_place = in == out + static_cast<uintptr_t>(s.in_place_input_at);
  if (in_place && op.kind == OpKind::alltoall) return invalidArgument("in-place all-to-all is not supported");
  if (!in_place && in < out + s.out && out < in + s.in)
    return invalidArgument(format("send and receive buffers overlap but are not in place (for %s, in place means "
                                  "send == recv + %td bytes)", toString(op.kind), s.in_place_input_at));
  return Status::ok();
}

}  // namespace

Status validate(const OpRequest& op, int rank, int nranks) {
  if (!isValid(op.type)) return invalidArgument(format("unknown data type %d", static_cast<int>(op.type)));
  if (reduces(op.kind) && !isValid(op.op)) return invalidArgument(format("unknown reduction op %d", static_cast<int>(op.op)));
  if (op.kind == OpKind::recv && op.root == -1) {  // from any source (kAnySource)
    if (op.device >= 0 || op.stream) return invalidArgument("a receive from any source takes host memory and no stream");
  } else if (rooted(op.kind) && (op.root < 0 || op.root >= nranks))
    return invalidArgument(format("%s %d is out of range for %d ranks", isPointToPoint(op.kind) ? "peer" : "root",
                                  op.root, nranks));
  if (isPointToPoint(op.kind) && op.root == rank) return invalidArgument("send/recv to oneself");
  if (isPointToPoint(op.kind) && op.tag < 0) return invalidArgument(format("tag %d: tags are from 0 up", op.tag));
  if (op.count > (size_t{1} << 50) / static_cast<size_t>(nranks))
    return invalidArgument(format("count %zu is too large (negative in the caller?)", op.count));
  BufferSizes s = sizesOf(op, rank, nranks);
  if (s.in && !op.input) return invalidArgument(format("null send buffer with count %zu", op.count));
  if (s.out && !op.output) return invalidArgument(format("null receive buffer with count %zu", op.count));
  return checkOverlap(op, s);
}

OpPlan planOp(const OpRequest& op, int rank, int n) {
  OpPlan plan;
  BufferSizes s = sizesOf(op, rank, n);
  const auto chunk_at = static_cast<std::ptrdiff_t>(op.bytes() * static_cast<size_t>(rank));
  auto in = reinterpret_cast<uintptr_t>(op.input), out = reinterpret_cast<uintptr_t>(op.output);
  plan.in_place = s.in && s.out && in == out + static_cast<uintptr_t>(s.in_place_input_at);
  plan.input = op.input;
  plan.output = op.output;
  plan.total_count = op.count;
  const bool chunked = op.kind == OpKind::allgather || op.kind == OpKind::reducescatter ||
                       op.kind == OpKind::alltoall || op.kind == OpKind::gather || op.kind == OpKind::scatter;
  if (chunked) plan.total_count = op.count * static_cast<size_t>(n);
  switch (op.kind) {
    case OpKind::allreduce: plan.collective = algo::Collective::allreduce; break;
    case OpKind::broadcast: plan.collective = algo::Collective::broadcast; plan.in_place = op.input == op.output; break;
    case OpKind::reduce:
      plan.collective = algo::Collective::reduce;
      plan.in_place = rank == op.root && op.input == op.output;
      if (rank != op.root) {  // non-roots reduce in a workspace
        plan.output = nullptr;
        plan.workspace_bytes = op.bytes();
      }
      break;
    case OpKind::allgather:  // input addressed at chunk r's offset
      plan.collective = algo::Collective::allgather;
      plan.input = static_cast<const char*>(op.input) - chunk_at;
      break;
    case OpKind::reducescatter:  // reduce in a workspace; chunk r lands in the user's buffer (scheduled_path.cc)
      plan.collective = algo::Collective::reducescatter;
      plan.output = nullptr;
      plan.workspace_bytes = op.bytes() * static_cast<size_t>(n);
      plan.result_offset = static_cast<size_t>(chunk_at);
      plan.result_destination = op.output;
      plan.result_bytes = op.bytes();
      plan.in_place = false;
      break;
    case OpKind::alltoall: plan.collective = algo::Collective::alltoall; break;
    case OpKind::gather:
      plan.collective = algo::Collective::gather;
      plan.input = static_cast<const char*>(op.input) - chunk_at;
      break;
    case OpKind::scatter:
      plan.collective = algo::Collective::scatter;
      plan.output = static_cast<char*>(op.output) - chunk_at;  // output addressed at chunk r's offset
      break;
    default: break;  // p2p and barrier are planned by the communicator
  }
  return plan;
}

uint64_t messageTag(const OpRequest& op, std::string_view algorithm) {
  if (isPointToPoint(op.kind)) return wireTag(op.wire_sequence, static_cast<uint8_t>(OpKind::send));
  if (op.kind == OpKind::group) return wireTag(op.wire_sequence, static_cast<uint8_t>(OpKind::group));
  WireCall call;
  call.kind = op.kind;
  if (op.kind != OpKind::barrier) call.type = static_cast<int>(op.type);
  if (reduces(op.kind)) call.op = static_cast<int>(op.op);
  call.count = op.count;
  if (rooted(op.kind)) call.root = op.root;
  call.algorithm = algorithm;
  return wireTag(op.wire_sequence, call);
}

}  // namespace coll
