// Tensors as coll buffers: dtype and reduction-op mapping, and the checks every op makes
// before anything is sent.
#pragma once

#include <ATen/ATen.h>
#include <torch/csrc/distributed/c10d/Types.hpp>

#include <functional>
#include <string>
#include <vector>

#include "coll/types.h"

namespace coll::torch_backend {

// Throws c10::Error (a RuntimeError in Python) naming the op, the argument and the cause:
// a sparse tensor, or a dtype coll has no counterpart for (int16, complex). The device is
// placementOf's to check (placement.h).
DataType collTypeOf(const at::Tensor& t, const char* op);
// Bool tensors reduce as bytes: sum becomes max (logical or), product min (logical and).
ReduceOp collOpOf(const c10d::ReduceOp& op, const at::Tensor& t, const char* op_name);

// Exactly one tensor per process (coll has one device per rank).
const at::Tensor& single(const std::vector<at::Tensor>& tensors, const char* op);
// `what` names the argument: "root", "destination", "source".
void checkRank(int64_t rank, int size, const char* op, const char* what);
void checkSameShape(const at::Tensor& a, const at::Tensor& b, const char* op, const char* what);

// A dense, contiguous stand-in for `t`: `t` itself when it already is one; otherwise a copy,
// and `copy_back` (run after the op succeeded) writes the result into `t`.
struct Dense {
  at::Tensor tensor;
  std::function<void()> copy_back;
};
Dense dense(const at::Tensor& t);

// The tensors of one process laid end to end (all must have t0's dtype, and with same_numel
// its element count too).
at::Tensor flatten(const std::vector<at::Tensor>& tensors, const char* op, bool same_numel = true);
// Copies chunk i of `flat` into parts[i].
void unflatten(const at::Tensor& flat, const std::vector<at::Tensor>& parts);

}  // namespace coll::torch_backend
