#include "core/op.h"

#include <cstdint>
#include <limits>

#include "core/log.h"

namespace coll {

const char* toString(OpKind kind) {
  switch (kind) {
    case OpKind::allreduce: return "allreduce";
    case OpKind::broadcast: return "broadcast";
  }
  return "?";
}

Status validate(const OpRequest& op, int rank, int nranks) {
  if (!isValid(op.type)) return invalidArgument(format("unknown data type %d", static_cast<int>(op.type)));
  if (op.kind == OpKind::allreduce && !isValid(op.op))
    return invalidArgument(format("unknown reduction op %d", static_cast<int>(op.op)));
  if (op.kind == OpKind::broadcast && (op.root < 0 || op.root >= nranks))
    return invalidArgument(format("root %d is out of range for %d ranks", op.root, nranks));
  if (op.count > std::numeric_limits<size_t>::max() / 16 || op.count > (size_t{1} << 50))
    return invalidArgument(format("count %zu is too large (negative in the caller?)", op.count));
  if (op.count == 0) return Status::ok();
  if (!op.output) return invalidArgument(format("null receive buffer with count %zu", op.count));
  bool reads_input = op.kind == OpKind::allreduce || op.root == rank;  // broadcast reads it on the root only
  if (reads_input && !op.input) return invalidArgument(format("null send buffer with count %zu", op.count));
  if (op.input && op.input != op.output) {
    auto in = reinterpret_cast<uintptr_t>(op.input), out = reinterpret_cast<uintptr_t>(op.output);
    if (in < out + op.bytes() && out < in + op.bytes())
      return invalidArgument("send and receive buffers overlap but are not the same (in-place needs send == recv)");
  }
  return Status::ok();
}

}  // namespace coll
