// coll's TensorFlow ops: what each takes and the shape it gives. Stateful, so that TensorFlow
// neither folds nor prunes them and tf.function runs them in program order (its automatic
// control dependencies order stateful ops): every rank then issues its collectives in the same
// order, whatever order the executor finds the rest of the graph ready in.
#include "tensorflow/core/framework/common_shape_fns.h"
#include "tensorflow/core/framework/op.h"
#include "tensorflow/core/framework/shape_inference.h"

namespace coll::tensorflow_ops {

using ::tensorflow::Status;
using ::tensorflow::shape_inference::DimensionHandle;
using ::tensorflow::shape_inference::InferenceContext;
using ::tensorflow::shape_inference::ShapeHandle;

#define COLL_TF_TYPES "T: {half, bfloat16, float, double, int32, int64}"

// The first dimension of `c`'s input scaled by `factor` (all-gather) or divided (reduce-scatter);
// unknown where it is not known, or where the group size is not known when the graph is built.
Status scaledFirstDim(InferenceContext* c, bool gather) {
  ShapeHandle in = c->input(0);
  if (!c->RankKnown(in)) {
    c->set_output(0, c->UnknownShape());
    return Status();
  }
  ShapeHandle rest;
  TF_RETURN_IF_ERROR(c->Subshape(in, 1, &rest));
  ShapeHandle first = c->Vector(c->UnknownDim());
  ShapeHandle out;
  TF_RETURN_IF_ERROR(c->Concatenate(first, rest, &out));
  c->set_output(0, out);
  return Status();
}

REGISTER_OP("CollAllreduce")
    .Input("tensor: T")
    .Output("reduced: T")
    .Attr(COLL_TF_TYPES)
    .Attr("reduce_op: {'sum', 'prod', 'min', 'max', 'avg'}")
    .SetIsStateful()
    .SetShapeFn(::tensorflow::shape_inference::UnchangedShape)
    .Doc("Every rank's tensor reduced elementwise (coll's all-reduce); the same on every rank.");

REGISTER_OP("CollBroadcast")
    .Input("tensor: T")
    .Output("broadcast: T")
    .Attr(COLL_TF_TYPES)
    .Attr("root: int")
    .SetIsStateful()
    .SetShapeFn(::tensorflow::shape_inference::UnchangedShape)
    .Doc("The root rank's tensor, on every rank.");

REGISTER_OP("CollAllgather")
    .Input("tensor: T")
    .Output("gathered: T")
    .Attr(COLL_TF_TYPES)
    .SetIsStateful()
    .SetShapeFn([](InferenceContext* c) { return scaledFirstDim(c, true); })
    .Doc("Every rank's tensor concatenated along the first dimension, in rank order; ranks may "
         "differ in the first dimension (the others must agree).");

REGISTER_OP("CollReduceScatter")
    .Input("tensor: T")
    .Output("scattered: T")
    .Attr(COLL_TF_TYPES)
    .Attr("reduce_op: {'sum', 'prod', 'min', 'max', 'avg'}")
    .SetIsStateful()
    .SetShapeFn([](InferenceContext* c) { return scaledFirstDim(c, false); })
    .Doc("The tensors reduced elementwise, rank r keeping the r-th of size equal blocks along the "
         "first dimension (which the number of ranks must divide).");

REGISTER_OP("CollAlltoall")
    .Input("tensor: T")
    .Output("exchanged: T")
    .Attr(COLL_TF_TYPES)
    .SetIsStateful()
    .SetShapeFn(::tensorflow::shape_inference::UnchangedShape)
    .Doc("Block p of the first dimension goes to rank p; block p of the output came from rank p "
         "(the number of ranks must divide the first dimension).");

}  // namespace coll::tensorflow_ops
