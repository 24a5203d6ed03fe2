// All-reduce and broadcast: the output has the input's shape (kernel_base.h says how every
// kernel here runs).
#include "kernel_base.h"

namespace coll::tensorflow_ops {
namespace {

class AllreduceKernel : public ReducingKernel {
 public:
  using ReducingKernel::ReducingKernel;
  void ComputeAsync(tf::OpKernelContext* ctx, DoneCallback done) override {
    const coll::ReduceOp op = op_;
    runSameShape(ctx, std::move(done), [op](coll::Communicator& c, const void* src, void* dst, size_t n,
                                            coll::DataType type) { return c.allreduce(src, dst, n, type, op); });
  }
};

class BroadcastKernel : public CollKernel {
 public:
  explicit BroadcastKernel(tf::OpKernelConstruction* c) : CollKernel(c) { OP_REQUIRES_OK(c, c->GetAttr("root", &root_)); }
  void ComputeAsync(tf::OpKernelContext* ctx, DoneCallback done) override {
    const int root = root_;
    runSameShape(ctx, std::move(done), [root](coll::Communicator& c, const void* src, void* dst, size_t n,
                                              coll::DataType type) { return c.broadcast(src, dst, n, type, root); });
  }

 private:
  int root_ = 0;
};

REGISTER_KERNEL_BUILDER(Name("CollAllreduce").Device(tf::DEVICE_CPU), AllreduceKernel);
REGISTER_KERNEL_BUILDER(Name("CollBroadcast").Device(tf::DEVICE_CPU), BroadcastKernel);

}  // namespace
}  // namespace coll::tensorflow_ops
