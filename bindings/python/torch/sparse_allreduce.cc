#include "sparse_allreduce.h"

#include <c10/util/Exception.h>

#include <vector>

#include "tensors.h"

namespace coll::torch_backend {
namespace {

// `part` on every rank, laid end to end along a new first dimension. The wait is the op's own
// (it fails at the group's timeout, naming the op): a wait that gave up sooner would leave the
// all-gather writing into tensors freed by the unwinding.
at::Tensor allGather(Communicator& comm, const at::Tensor& part) {
  at::Tensor dense = part.contiguous();
  std::vector<int64_t> shape{comm.size()};
  shape.insert(shape.end(), dense.sizes().begin(), dense.sizes().end());
  at::Tensor all = at::empty(shape, dense.options());
  if (dense.numel() > 0)
    comm.allgather(dense.data_ptr(), all.data_ptr(), static_cast<size_t>(dense.numel()),
                   collTypeOf(dense, "allreduce (sparse)"))
        .wait();
  return all;
}

}  // namespace

at::Tensor sparseAllreduceSum(Communicator& comm, const at::Tensor& t) {
  TORCH_CHECK(t.layout() == at::kSparse, "coll allreduce: ", t.layout(), " tensors are not supported: pass ",
              "t.to_sparse() (COO) or t.to_dense()");
  const at::Tensor mine = t.coalesce();
  collTypeOf(mine._values(), "allreduce (sparse)");  // refused here, before anything is sent
  try {
    const at::Tensor counts = allGather(comm, at::full({1}, mine._nnz(), at::kLong));
    const int64_t most = counts.max().item<int64_t>();
    // Padded to the largest count so that one all-gather of equal parts carries them.
    at::Tensor indices = at::zeros({mine.sparse_dim(), most}, at::kLong);
    std::vector<int64_t> value_shape{most};
    for (int64_t d : mine._values().sizes().slice(1)) value_shape.push_back(d);
    at::Tensor values = at::zeros(value_shape, mine._values().options());
    indices.narrow(1, 0, mine._nnz()).copy_(mine._indices());
    values.narrow(0, 0, mine._nnz()).copy_(mine._values());
    const at::Tensor all_indices = allGather(comm, indices);
    const at::Tensor all_values = allGather(comm, values);
    std::vector<at::Tensor> index_parts, value_parts;
    for (int r = 0; r < comm.size(); ++r) {
      const int64_t n = counts[r].item<int64_t>();
      index_parts.push_back(all_indices[r].narrow(1, 0, n));
      value_parts.push_back(all_values[r].narrow(0, 0, n));
    }
    return at::sparse_coo_tensor(at::cat(index_parts, 1), at::cat(value_parts, 0), t.sizes(), t.options()).coalesce();
  } catch (const coll::Error& e) {
    TORCH_CHECK(false, "coll ", toString(e.code()), ": allreduce (sparse): ", e.what());
  }
}

}  // namespace coll::torch_backend
