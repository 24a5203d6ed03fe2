// One collective call as the progress thread sees it.
#pragma once

#include <memory>
#include <string>

#include "coll/types.h"
#include "core/status.h"
#include "core/work_state.h"

namespace coll {

enum class OpKind : uint8_t { allreduce = 1, broadcast = 2 };

const char* toString(OpKind kind);

struct OpRequest {
  OpKind kind = OpKind::allreduce;
  const void* input = nullptr;
  void* output = nullptr;
  size_t count = 0;
  DataType type = DataType::f32;
  ReduceOp op = ReduceOp::sum;
  int root = -1;
  std::shared_ptr<detail::WorkState> work;

  size_t bytes() const { return count * sizeOf(type); }
};

// Refuses bad input before anything is sent: null buffers with count > 0, unknown type or
// op, a root out of range, a byte size that overflows, partially overlapping buffers.
Status validate(const OpRequest& op, int rank, int nranks);

}  // namespace coll
