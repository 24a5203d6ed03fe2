// Sparse (COO) all-reduce, as gloo does it: every rank's coalesced indices and values are
// all-gathered (padded to the largest count of non-zeros), laid end to end and coalesced again,
// which sums the entries that share an index. SUM only; the result is coalesced.
#pragma once

#include <ATen/ATen.h>

#include <chrono>

#include "coll/communicator.h"

namespace coll::torch_backend {

// Runs on the calling thread (three all-gathers, each waited for within `timeout`) and
// returns the sum; throws c10::Error naming the cause (a timeout says "Timed out").
at::Tensor sparseAllreduceSum(Communicator& comm, const at::Tensor& t, std::chrono::milliseconds timeout);

}  // namespace coll::torch_backend
