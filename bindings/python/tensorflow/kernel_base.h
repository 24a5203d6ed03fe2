// What every kernel of coll's TensorFlow ops shares (kernels.cc, kernels_blocks.cc): the dtype
// in coll's terms, refusing bad input before anything is sent, issuing, and finishing the op
// when coll has: each kernel is asynchronous, returning its thread to TensorFlow's executor
// while the collective runs; `done` runs on runtime.h's Completions thread, with coll's error
// message (op, ranks, cause) as the op's status when it failed.
#pragma once

#include <cctype>
#include <functional>
#include <string>

#include "runtime.h"
#include "tensorflow/core/framework/op_kernel.h"
#include "tensorflow/core/framework/tensor.h"

namespace coll::tensorflow_ops {
namespace tf = ::tensorflow;

inline bool collType(tf::DataType t, coll::DataType* out) {
  switch (t) {
    case tf::DT_HALF: *out = coll::DataType::f16; return true;
    case tf::DT_BFLOAT16: *out = coll::DataType::bf16; return true;
    case tf::DT_FLOAT: *out = coll::DataType::f32; return true;
    case tf::DT_DOUBLE: *out = coll::DataType::f64; return true;
    case tf::DT_INT32: *out = coll::DataType::i32; return true;
    case tf::DT_INT64: *out = coll::DataType::i64; return true;
    default: return false;
  }
}

inline coll::ReduceOp reduceOpOf(const std::string& name) {
  if (name == "prod") return coll::ReduceOp::prod;
  if (name == "min") return coll::ReduceOp::min;
  if (name == "max") return coll::ReduceOp::max;
  if (name == "avg") return coll::ReduceOp::avg;
  return coll::ReduceOp::sum;
}

// The op's name as coll.tensorflow spells it: CollReduceScatter -> reduce_scatter.
inline std::string pythonName(const std::string& op_type) {
  std::string name;
  for (size_t i = 4; i < op_type.size(); ++i) {  // past "Coll"
    const char ch = op_type[i];
    if (std::isupper(static_cast<unsigned char>(ch))) {
      if (i > 4) name += '_';
      name += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    } else {
      name += ch;
    }
  }
  return name;
}

// A refusal before anything was sent is InvalidArgument, as TensorFlow's own; the rest Internal,
// with coll's own code (Mismatch, PeerLost, Timeout, ...) named, since TensorFlow's has no room
// for it.
inline tf::Status failed(const std::string& op, const std::exception& e) {
  auto* err = dynamic_cast<const coll::Error*>(&e);
  if (err && err->code() == coll::ErrorCode::InvalidArgument) return tf::errors::InvalidArgument("coll ", op, ": ", e.what());
  if (err) return tf::errors::Internal("coll ", op, " (", coll::toString(err->code()), "): ", e.what());
  return tf::errors::Internal("coll ", op, ": ", e.what());
}

// The op's status once `work` finished: coll's error, if any, names the op, ranks and cause.
inline tf::Status statusOf(const coll::Work& work, const std::string& op) {
  if (auto err = work.error()) return failed(op, *err);
  return tf::Status();
}

// What every kernel here shares: the op's name, its dtype in coll's terms, issuing, finishing.
class CollKernel : public tf::AsyncOpKernel {
 public:
  explicit CollKernel(tf::OpKernelConstruction* c) : AsyncOpKernel(c), name_(pythonName(c->def().op())) {}

 protected:
  // Refuses an input coll cannot take, before anything is sent.
  bool checkInput(tf::OpKernelContext* ctx, const DoneCallback& done, coll::DataType* type) {
    const tf::Tensor& in = ctx->input(0);
    if (!collType(in.dtype(), type)) {
      ctx->SetStatus(tf::errors::InvalidArgument("coll ", name_, ": dtype ", tf::DataTypeString(in.dtype()),
                                                 " is not supported (float16, bfloat16, float32, float64, int32, ",
                                                 "int64 are)"));
      done();
      return false;
    }
    return true;
  }

  // Issues `fn` and finishes the op when it completes; `after` runs first on success.
  void run(tf::OpKernelContext* ctx, DoneCallback done, const std::function<coll::Work(coll::Communicator&)>& fn,
           std::function<void()> after = nullptr) {
    coll::Work work;
    try {
      work = Runtime::get().issue(fn);
    } catch (const std::exception& e) {
      ctx->SetStatus(failed(name_, e));
      done();
      return;
    }
    std::string name = name_;
    Runtime::get().completions().add(std::move(work), [ctx, done, name, after](const coll::Work& w) {
      tf::Status st = statusOf(w, name);
      if (st.ok() && after) after();
      ctx->SetStatus(st);
      done();
    });
  }

  // The output's buffer (TensorFlow hands it as const bytes; the kernel owns it).
  static void* bytesOf(tf::Tensor* t) { return const_cast<char*>(t->tensor_data().data()); }

  // Output 0 of `shape`, for use inside run()'s issue function: a failure to allocate throws,
  // and run() makes it the op's status before anything is sent.
  static tf::Tensor* allocateOutput(tf::OpKernelContext* ctx, const tf::TensorShape& shape) {
    tf::Tensor* out = nullptr;
    auto st = ctx->allocate_output(0, shape, &out);
    if (!st.ok()) throw coll::Error(coll::ErrorCode::InvalidArgument, std::string(st.message()));
    return out;
  }

  // Output 0 in the input's buffer where nothing else holds the input (a gradient the op alone
  // uses), else a new one: a gradient bucket of 68 MB allocated fresh each step costs its page
  // faults (TensorFlow's CPU allocator maps large blocks anew) and a pass over memory.
  static tf::Tensor* forwardOrAllocateOutput(tf::OpKernelContext* ctx, const tf::TensorShape& shape) {
    tf::Tensor* out = nullptr;
    auto st = ctx->forward_input_or_allocate_output({0}, 0, shape, &out);
    if (!st.ok()) throw coll::Error(coll::ErrorCode::InvalidArgument, std::string(st.message()));
    return out;
  }

  // An output shaped as the input (the input's own buffer where it can be: coll's ops run in
  // place), then issues fn(comm, input bytes, output bytes, elements, dtype) through run().
  void runSameShape(tf::OpKernelContext* ctx, DoneCallback done,
                    const std::function<coll::Work(coll::Communicator&, const void*, void*, size_t, coll::DataType)>& fn) {
    coll::DataType type;
    if (!checkInput(ctx, done, &type)) return;
    const tf::Tensor& in = ctx->input(0);
    run(ctx, done, [&](coll::Communicator& c) {
      const size_t n = static_cast<size_t>(in.NumElements());
      const void* src = in.tensor_data().data();  // before forwarding, which may move the input out
      tf::Tensor* out = forwardOrAllocateOutput(ctx, in.shape());
      return fn(c, src, bytesOf(out), n, type);
    });
  }

  std::string name_;
};

// A kernel of an op with the reduce_op attribute (all-reduce, reduce-scatter).
class ReducingKernel : public CollKernel {
 public:
  explicit ReducingKernel(tf::OpKernelConstruction* c) : CollKernel(c) {
    std::string op;
    OP_REQUIRES_OK(c, c->GetAttr("reduce_op", &op));
    op_ = reduceOpOf(op);
  }

 protected:
  coll::ReduceOp op_ = coll::ReduceOp::sum;
};

}  // namespace coll::tensorflow_ops
