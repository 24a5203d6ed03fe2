#include "tensors.h"

#include <c10/util/Exception.h>

namespace coll::torch_backend {

namespace {

// What a caller can do with a dtype coll has no counterpart for.
const char* insteadOf(at::ScalarType type) {
  switch (type) {
    case at::kShort: return "cast it to int32 (t.to(torch.int32)) and back";
    case at::kComplexHalf:
    case at::kComplexFloat:
    case at::kComplexDouble: return "pass torch.view_as_real(t), which reduces the real and imaginary parts apart";
    case at::kQInt8:
    case at::kQUInt8:
    case at::kQInt32: return "dequantize it first (t.dequantize())";
    default: return "cast it to a supported dtype";
  }
}

}  // namespace

DataType collTypeOf(const at::Tensor& t, const char* op) {
  TORCH_CHECK(t.layout() == at::kStrided, "coll ", op, ": ", t.layout(), " tensors are not supported here: pass ",
              "t.to_dense() (only all_reduce takes sparse tensors)");
  switch (t.scalar_type()) {
    case at::kFloat: return DataType::f32;
    case at::kDouble: return DataType::f64;
    case at::kHalf: return DataType::f16;
    case at::kBFloat16: return DataType::bf16;
    case at::kChar: return DataType::i8;
    case at::kByte: return DataType::u8;
    case at::kBool: return DataType::u8;
    case at::kInt: return DataType::i32;
    case at::kLong: return DataType::i64;
    default:
      TORCH_CHECK(false, "coll ", op, ": dtype ", t.scalar_type(), " is not supported: ", insteadOf(t.scalar_type()),
                  " (float16/32/64, bfloat16, int8/32/64, uint8, bool are)");
  }
}

ReduceOp collOpOf(const c10d::ReduceOp& op, const at::Tensor& t, const char* op_name) {
  const bool is_bool = t.scalar_type() == at::kBool;
  switch (op.op_) {
    case c10d::ReduceOp::SUM: return is_bool ? ReduceOp::max : ReduceOp::sum;
    case c10d::ReduceOp::PRODUCT: return is_bool ? ReduceOp::min : ReduceOp::prod;
    case c10d::ReduceOp::MIN: return ReduceOp::min;
    case c10d::ReduceOp::MAX: return ReduceOp::max;
    case c10d::ReduceOp::AVG: return ReduceOp::avg;
    default: {
      static const char* const kNames[] = {"SUM", "AVG", "PRODUCT", "MIN", "MAX", "BAND", "BOR", "BXOR", "PREMUL_SUM"};
      const int code = static_cast<int>(op.op_);
      TORCH_CHECK(false, "coll ", op_name, ": ReduceOp.", code < 9 ? kNames[code] : "?",
                  " is not supported (SUM, PRODUCT, MIN, MAX, AVG are)");
    }
  }
}

const at::Tensor& single(const std::vector<at::Tensor>& tensors, const char* op) {
  TORCH_CHECK(tensors.size() == 1, "coll ", op, ": expects one tensor per process, got ", tensors.size());
  return tensors[0];
}

void checkRank(int64_t rank, int size, const char* op, const char* what) {
  TORCH_CHECK(rank >= 0 && rank < size, "coll ", op, ": ", what, " ", rank, " is not a rank of this group (size ",
              size, ")");
}

void checkSameShape(const at::Tensor& a, const at::Tensor& b, const char* op, const char* what) {
  TORCH_CHECK(a.scalar_type() == b.scalar_type(), "coll ", op, ": ", what, " has dtype ", b.scalar_type(),
              ", expected ", a.scalar_type());
  TORCH_CHECK(a.numel() == b.numel(), "coll ", op, ": ", what, " has ", b.numel(), " elements, expected ", a.numel());
}

Dense dense(const at::Tensor& t) {
  if (t.is_contiguous()) return {t, nullptr};
  at::Tensor staged = t.contiguous();
  return {staged, [t, staged]() mutable { t.copy_(staged); }};
}

at::Tensor flatten(const std::vector<at::Tensor>& tensors, const char* op, bool same_numel) {
  TORCH_CHECK(!tensors.empty(), "coll ", op, ": empty tensor list");
  for (const auto& t : tensors) {
    collTypeOf(t, op);
    if (same_numel) checkSameShape(tensors[0], t, op, "a tensor of the list");
    TORCH_CHECK(t.scalar_type() == tensors[0].scalar_type(), "coll ", op, ": a tensor of the list has dtype ",
                t.scalar_type(), ", expected ", tensors[0].scalar_type(), " (cast them to one dtype)");
  }
  std::vector<at::Tensor> flat;
  flat.reserve(tensors.size());
  for (const auto& t : tensors) flat.push_back(t.reshape({-1}));
  return at::cat(flat);
}

void unflatten(const at::Tensor& flat, const std::vector<at::Tensor>& parts) {
  int64_t offset = 0;
  for (const auto& p : parts) {
    p.copy_(flat.narrow(0, offset, p.numel()).view(p.sizes()));
    offset += p.numel();
  }
}

}  // namespace coll::torch_backend
