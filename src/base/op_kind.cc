#include "base/op_kind.h"

namespace coll {

const char* toString(OpKind kind) {
  switch (kind) {
    case OpKind::allreduce: return "allreduce";
    case OpKind::broadcast: return "broadcast";
    case OpKind::reduce: return "reduce";
    case OpKind::allgather: return "allgather";
    case OpKind::reducescatter: return "reducescatter";
    case OpKind::alltoall: return "alltoall";
    case OpKind::gather: return "gather";
    case OpKind::scatter: return "scatter";
    case OpKind::send: return "send";
    case OpKind::recv: return "recv";
    case OpKind::barrier: return "barrier";
    case OpKind::group: return "group";
  }
  return "?";
}

}  // namespace coll
