// Sparse (COO) all-reduce, as gloo does it: every rank's coalesced indices and values are
// all-gathered (padded to the largest count of non-zeros), laid end to end and coalesced again,
// which sums the entries that share an index. SUM only; the result is coalesced.
#pragma once

#include <ATen/ATen.h>

#include "coll/communicator.h"

namespace coll::torch_backend {

// Runs on the calling thread (three all-gathers, each waited for to its end: it fails at the
// group's timeout) and returns the sum; throws c10::Error naming the cause. A tensor that is
// not COO or whose dtype coll lacks is refused before anything is sent.
at::Tensor sparseAllreduceSum(Communicator& comm, const at::Tensor& t);

}  // namespace coll::torch_backend
