#include "trainer/comm_hook.h"

#include <stdexcept>

#include "reduce/half.h"

namespace coll::trainer {
namespace {

ReduceOp toOp(Reduction r) { return r == Reduction::sum ? ReduceOp::sum : ReduceOp::avg; }

}  // namespace

Work AllreduceHook::launch(Communicator& comm, const Bucket&, std::span<float> grads) {
  return comm.allreduce(grads.data(), grads.data(), grads.size(), DataType::f32, toOp(reduction_));
}

CompressHook::CompressHook(DataType wire_type, Reduction reduction) : wire_type_(wire_type), reduction_(reduction) {
  if (wire_type != DataType::f16 && wire_type != DataType::bf16)
    throw std::invalid_argument("CompressHook: wire type must be f16 or bf16, not " + std::string(toString(wire_type)));
}

void CompressHook::setup(const std::vector<Bucket>& buckets) {
  wire_.clear();
  for (const Bucket& b : buckets) wire_.emplace_back(b.count);
}

Work CompressHook::launch(Communicator& comm, const Bucket& bucket, std::span<float> grads) {
  std::vector<uint16_t>& w = wire_.at(bucket.index);
  if (wire_type_ == DataType::bf16) {
    for (size_t i = 0; i < grads.size(); ++i) w[i] = reduce::floatToBf16(grads[i]);
  } else {
    for (size_t i = 0; i < grads.size(); ++i) w[i] = reduce::floatToHalf(grads[i]);
  }
  return comm.allreduce(w.data(), w.data(), w.size(), wire_type_, toOp(reduction_));
}

void CompressHook::complete(const Bucket& bucket, std::span<float> grads) {
  const std::vector<uint16_t>& w = wire_.at(bucket.index);
  if (wire_type_ == DataType::bf16) {
    for (size_t i = 0; i < grads.size(); ++i) grads[i] = reduce::bf16ToFloat(w[i]);
  } else {
    for (size_t i = 0; i < grads.size(); ++i) grads[i] = reduce::halfToFloat(w[i]);
  }
}

std::unique_ptr<CommHook> makeCommHook(const std::string& name, Reduction reduction) {
  if (name == "none" || name.empty()) return std::make_unique<AllreduceHook>(reduction);
  if (name == "fp16") return std::make_unique<CompressHook>(DataType::f16, reduction);
  if (name == "bf16") return std::make_unique<CompressHook>(DataType::bf16, reduction);
  throw std::invalid_argument("unknown gradient compression '" + name + "' (none, fp16, bf16)");
}

}  // namespace coll::trainer
