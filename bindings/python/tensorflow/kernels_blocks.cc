// The ops that cut or join tensors along their first dimension: all-gather (ranks may differ in
// it), reduce-scatter and all-to-all (kernel_base.h says how every kernel here runs).
#include <algorithm>
#include <cstring>
#include <vector>

#include "kernel_base.h"

namespace coll::tensorflow_ops {
namespace {

// Elements per row of the first dimension (1 for a vector; the product of the others).
int64_t rowElements(const tf::TensorShape& shape) {
  int64_t n = 1;
  for (int d = 1; d < shape.dims(); ++d) n *= shape.dim_size(d);
  return n;
}

tf::TensorShape withRows(const tf::TensorShape& shape, int64_t rows) {
  tf::TensorShape out = shape;
  out.set_dim(0, rows);
  return out;
}

// A refusal before anything is sent (CollKernel::run names the op).
coll::Error invalid(const std::string& why) { return coll::Error(coll::ErrorCode::InvalidArgument, why); }

// All-gather along the first dimension. Each rank's row count travels first (a small
// all-gather, waited for in the issue lock, so every rank issues the pair back to back); equal
// counts gather straight into the output, unequal ones through a buffer padded to the largest.
class AllgatherKernel : public CollKernel {
 public:
  using CollKernel::CollKernel;
  void ComputeAsync(tf::OpKernelContext* ctx, DoneCallback done) override {
    coll::DataType type;
    if (!checkInput(ctx, done, &type)) return;
    const tf::Tensor& in = ctx->input(0);
    OP_REQUIRES_ASYNC(ctx, in.dims() >= 1,
                      tf::errors::InvalidArgument("coll ", name_, ": a scalar has no first dimension to gather along"),
                      done);
    const int64_t row = rowElements(in.shape());
    const size_t elem = coll::sizeOf(type);
    // Buffers coll reads or writes until the op completes: held by the completion callback.
    struct Padding {
      bool used = false;
      tf::Tensor send, gathered;
    };
    auto pad = std::make_shared<Padding>();
    auto rows = std::make_shared<std::vector<int64_t>>();
    auto out = std::make_shared<tf::Tensor*>(nullptr);  // the output, valid until done() runs
    run(
        ctx, done,
        [&](coll::Communicator& c) {
          int64_t mine = in.dim_size(0);
          rows->assign(static_cast<size_t>(c.size()), 0);
          c.allgather(&mine, rows->data(), 1, coll::DataType::i64).wait();
          int64_t total = 0, most = 0;
          for (int64_t r : *rows) total += r, most = std::max(most, r);
          *out = allocateOutput(ctx, withRows(in.shape(), total));
          if (most * c.size() == total)  // every rank alike
            return c.allgather(in.tensor_data().data(), bytesOf(*out), static_cast<size_t>(mine * row), type);
          auto st = ctx->allocate_temp(in.dtype(), withRows(in.shape(), most), &pad->send);
          if (st.ok()) st = ctx->allocate_temp(in.dtype(), withRows(in.shape(), most * c.size()), &pad->gathered);
          if (!st.ok()) throw invalid(std::string(st.message()));
          pad->used = true;
          std::memcpy(bytesOf(&pad->send), in.tensor_data().data(), in.tensor_data().size());
          return c.allgather(bytesOf(&pad->send), bytesOf(&pad->gathered), static_cast<size_t>(most * row), type);
        },
        [pad, rows, row, elem, out]() {
          if (!pad->used) return;
          const int64_t most = *std::max_element(rows->begin(), rows->end());
          char* dst = static_cast<char*>(bytesOf(*out));
          const char* src = pad->gathered.tensor_data().data();
          for (size_t r = 0; r < rows->size(); ++r) {  // rank r's rows, without the padding
            const size_t bytes = static_cast<size_t>((*rows)[r] * row) * elem;
            std::memcpy(dst, src + r * static_cast<size_t>(most * row) * elem, bytes);
            dst += bytes;
          }
        });
  }
};

// Checks the first dimension splits into one block per rank; the elements of one block.
size_t blockElements(const tf::Tensor& in, int size) {
  if (in.dims() < 1 || in.dim_size(0) % size != 0)
    throw invalid("the first dimension (" + std::string(in.dims() < 1 ? "none: a scalar" : std::to_string(in.dim_size(0))) +
                  ") must split into one block per rank (" + std::to_string(size) + " ranks)");
  return static_cast<size_t>(in.NumElements() / size);
}

class ReduceScatterKernel : public ReducingKernel {
 public:
  using ReducingKernel::ReducingKernel;
  void ComputeAsync(tf::OpKernelContext* ctx, DoneCallback done) override {
    coll::DataType type;
    if (!checkInput(ctx, done, &type)) return;
    const tf::Tensor& in = ctx->input(0);
    run(ctx, done, [&](coll::Communicator& c) {
      const size_t block = blockElements(in, c.size());
      tf::Tensor* out = allocateOutput(ctx, withRows(in.shape(), in.dim_size(0) / c.size()));
      return c.reduceScatter(in.tensor_data().data(), bytesOf(out), block, type, op_);
    });
  }
};

class AlltoallKernel : public CollKernel {
 public:
  using CollKernel::CollKernel;
  void ComputeAsync(tf::OpKernelContext* ctx, DoneCallback done) override {
    const tf::Tensor& in = ctx->input(0);
    runSameShape(ctx, std::move(done), [&in](coll::Communicator& c, const void* src, void* dst, size_t,
                                             coll::DataType type) {
      return c.alltoall(src, dst, blockElements(in, c.size()), type);
    });
  }
};

REGISTER_KERNEL_BUILDER(Name("CollAllgather").Device(tf::DEVICE_CPU), AllgatherKernel);
REGISTER_KERNEL_BUILDER(Name("CollReduceScatter").Device(tf::DEVICE_CPU), ReduceScatterKernel);
REGISTER_KERNEL_BUILDER(Name("CollAlltoall").Device(tf::DEVICE_CPU), AlltoallKernel);

}  // namespace
}  // namespace coll::tensorflow_ops
