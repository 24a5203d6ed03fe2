// All-reduce and broadcast: the output has the input's shape (kernel_base.h says how every
// kernel here runs).
#include "kernel_base.h"

namespace coll::tensorflow_ops {
namespace {

class AllreduceKernel : public CollKernel {
 public:
  explicit AllreduceKernel(tf::OpKernelConstruction* c) : CollKernel(c) {
    std::string op;
    OP_REQUIRES_OK(c, c->GetAttr("reduce_op", &op));
    op_ = reduceOpOf(op);
  }
  void ComputeAsync(tf::OpKernelContext* ctx, DoneCallback done) override {
    coll::DataType type;
    if (!checkInput(ctx, done, &type)) return;
    const tf::Tensor& in = ctx->input(0);
    tf::Tensor* out = nullptr;
    OP_REQUIRES_OK_ASYNC(ctx, ctx->allocate_output(0, in.shape(), &out), done);
    const void* src = in.tensor_data().data();
    void* dst = bytesOf(out);
    const size_t n = static_cast<size_t>(in.NumElements());
    run(ctx, done, [=](coll::Communicator& c) { return c.allreduce(src, dst, n, type, op_); });
  }

 private:
  coll::ReduceOp op_;
};

class BroadcastKernel : public CollKernel {
 public:
  explicit BroadcastKernel(tf::OpKernelConstruction* c) : CollKernel(c) { OP_REQUIRES_OK(c, c->GetAttr("root", &root_)); }
  void ComputeAsync(tf::OpKernelContext* ctx, DoneCallback done) override {
    coll::DataType type;
    if (!checkInput(ctx, done, &type)) return;
    const tf::Tensor& in = ctx->input(0);
    tf::Tensor* out = nullptr;
    OP_REQUIRES_OK_ASYNC(ctx, ctx->allocate_output(0, in.shape(), &out), done);
    const void* src = in.tensor_data().data();
    void* dst = bytesOf(out);
    const size_t n = static_cast<size_t>(in.NumElements());
    const int root = root_;
    run(ctx, done, [=](coll::Communicator& c) { return c.broadcast(src, dst, n, type, root); });
  }

 private:
  int root_ = 0;
};

REGISTER_KERNEL_BUILDER(Name("CollAllreduce").Device(tf::DEVICE_CPU), AllreduceKernel);
REGISTER_KERNEL_BUILDER(Name("CollBroadcast").Device(tf::DEVICE_CPU), BroadcastKernel);

}  // namespace
}  // namespace coll::tensorflow_ops
