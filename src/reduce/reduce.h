// Reduction kernels for host memory. Dispatch on DataType happens here, once per call, so
// algorithms never see per-type templates.
#pragma once

#include <cstddef>

#include "coll/types.h"

namespace coll::reduce {

// dst[i] = dst[i] (op) src[i] for i < count. ReduceOp::avg reduces as sum here: the average
// is finished once, at the end, by divideBy. f16 and bf16 are widened to f32, combined and
// rounded back (round to nearest even) per element. dst and src may be the same pointer but
// must not otherwise overlap. Integer sum/prod wrap around (two's complement), as in NCCL.
void reduceInto(void* dst, const void* src, size_t count, DataType type, ReduceOp op);

// out[i] = a[i] (op) b[i]. out may equal a or b.
void reduce(void* out, const void* a, const void* b, size_t count, DataType type, ReduceOp op);

// buf[i] = buf[i] / divisor: the final step of ReduceOp::avg. Floating types divide in their
// own precision (f16/bf16 via f32); integer types truncate toward zero.
void divideBy(void* buf, size_t count, DataType type, int divisor);

}  // namespace coll::reduce
