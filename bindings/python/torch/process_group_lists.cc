// The collectives whose inputs or outputs are lists of tensors (one per rank), and their
// "_base" forms over one flat tensor. Lists are laid end to end in a flat buffer for coll and
// copied back once the op succeeded.
#include <c10/util/Exception.h>

#include "placement.h"
#include "process_group.h"
#include "tensors.h"

namespace coll::torch_backend {
namespace {

const std::vector<at::Tensor>& perRank(const std::vector<std::vector<at::Tensor>>& lists, int size, const char* op,
                                       const char* what) {
  TORCH_CHECK(lists.size() == 1, "coll ", op, ": expects one list of ", what, " per process, got ", lists.size());
  TORCH_CHECK(static_cast<int>(lists[0].size()) == size, "coll ", op, ": ", what, " has ", lists[0].size(),
              " tensors, expected one per rank (", size, ")");
  return lists[0];
}

void checkWhole(const at::Tensor& whole, const at::Tensor& part, int size, const char* op, const char* what) {
  TORCH_CHECK(whole.scalar_type() == part.scalar_type(), "coll ", op, ": ", what, " has dtype ", whole.scalar_type(),
              ", expected ", part.scalar_type());
  TORCH_CHECK(whole.numel() == part.numel() * size, "coll ", op, ": ", what, " has ", whole.numel(),
              " elements, expected ", part.numel() * size, " (", size, " ranks x ", part.numel(), ")");
  TORCH_CHECK(whole.is_contiguous(), "coll ", op, ": ", what, " must be contiguous");
}

// Rows [offset, offset + rows) of a contiguous tensor, viewed flat.
at::Tensor rowsOf(const at::Tensor& t, int64_t offset, int64_t rows) {
  return t.dim() == 0 ? t.reshape({-1}) : t.narrow(0, offset, rows).reshape({-1});
}

}  // namespace

c10::intrusive_ptr<c10d::Work> ProcessGroupColl::allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                                           std::vector<at::Tensor>& inputs,
                                                           const c10d::AllgatherOptions&) {
  const at::Tensor in = single(inputs, "allgather").contiguous();
  DataType type = collTypeOf(in, "allgather");
  const auto& parts = perRank(outputs, size_, "allgather", "the outputs");
  std::vector<at::Tensor> all = parts;
  all.push_back(in);
  const Placement where = placementOf(all, "allgather");
  for (const auto& p : parts) checkSameShape(in, p, "allgather", "an output tensor");
  at::Tensor flat = at::empty({in.numel() * size_}, in.options());
  return submit(
      c10d::OpType::ALLGATHER, where, parts, {in, flat}, [flat, parts] { unflatten(flat, parts); },
      [&](Communicator& c) {
        return std::vector<coll::Work>{c.allgather(in.data_ptr(), flat.data_ptr(), in.numel(), type, where.raw)};
      },
      false, {in});
}

c10::intrusive_ptr<c10d::Work> ProcessGroupColl::_allgather_base(at::Tensor& output, at::Tensor& input,
                                                                 const c10d::AllgatherOptions&) {
  const Placement where = placementOf({input, output}, "_allgather_base");
  const at::Tensor in = input.contiguous();
  DataType type = collTypeOf(in, "_allgather_base");
  checkWhole(output, in, size_, "_allgather_base", "the output");
  return submit(c10d::OpType::_ALLGATHER_BASE, where, {output}, {in}, nullptr, [&](Communicator& c) {
    return std::vector<coll::Work>{c.allgather(in.data_ptr(), output.data_ptr(), in.numel(), type, where.raw)};
  });
}

// Every rank's list of tensors (any shapes, one dtype) laid end to end, all-gathered as one op;
// output_lists[r][i] receives rank r's inputs[i].
c10::intrusive_ptr<c10d::Work> ProcessGroupColl::allgather_coalesced(std::vector<std::vector<at::Tensor>>& output_lists,
                                                                     std::vector<at::Tensor>& inputs,
                                                                     const c10d::AllgatherOptions&) {
  const Placement where = placementOf(inputs, "allgather_coalesced");
  at::Tensor in = flatten(inputs, "allgather_coalesced", false);
  DataType type = collTypeOf(in, "allgather_coalesced");
  TORCH_CHECK(static_cast<int>(output_lists.size()) == size_, "coll allgather_coalesced: ", output_lists.size(),
              " output lists, expected one per rank (", size_, ")");
  std::vector<at::Tensor> parts;
  for (const auto& list : output_lists) {
    TORCH_CHECK(list.size() == inputs.size(), "coll allgather_coalesced: an output list has ", list.size(),
                " tensors, expected ", inputs.size(), " (one per input)");
    for (size_t i = 0; i < list.size(); ++i) {
      checkSameShape(inputs[i], list[i], "allgather_coalesced", "an output tensor");
      TORCH_CHECK(list[i].device() == where.device, "coll allgather_coalesced: an output tensor is on ",
                  list[i].device().str(), ", the inputs on ", where.device.str());
      parts.push_back(list[i]);
    }
  }
  at::Tensor flat = at::empty({in.numel() * size_}, in.options());
  std::vector<at::Tensor> outputs;
  for (const auto& list : output_lists) outputs.insert(outputs.end(), list.begin(), list.end());
  return submit(
      c10d::OpType::ALLGATHER_COALESCED, where, outputs, {in, flat}, [flat, parts] { unflatten(flat, parts); },
      [&](Communicator& c) {
        return std::vector<coll::Work>{c.allgather(in.data_ptr(), flat.data_ptr(), in.numel(), type, where.raw)};
      },
      false, inputs);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupColl::gather(std::vector<std::vector<at::Tensor>>& outputs,
                                                        std::vector<at::Tensor>& inputs,
                                                        const c10d::GatherOptions& opts) {
  checkRank(opts.rootRank, size_, "gather", "root");
  const int root = static_cast<int>(opts.rootRank);
  const at::Tensor in = single(inputs, "gather").contiguous();
  DataType type = collTypeOf(in, "gather");
  std::vector<at::Tensor> parts;
  std::vector<at::Tensor> all{in};
  if (rank_ == root && !outputs.empty()) all.insert(all.end(), outputs[0].begin(), outputs[0].end());
  const Placement where = placementOf(all, "gather");
  at::Tensor flat;
  if (rank_ == root) {
    parts = perRank(outputs, size_, "gather", "the outputs");
    for (const auto& p : parts) checkSameShape(in, p, "gather", "an output tensor");
    flat = at::empty({in.numel() * size_}, in.options());
  } else {
    TORCH_CHECK(outputs.empty() || outputs[0].empty(), "coll gather: only the root (rank ", root,
                ") passes output tensors");
  }
  std::function<void()> finish;
  if (rank_ == root) finish = [flat, parts] { unflatten(flat, parts); };
  return submit(c10d::OpType::GATHER, where, parts, {in, flat}, finish, [&](Communicator& c) {
    void* recv = flat.defined() ? flat.data_ptr() : nullptr;
    return std::vector<coll::Work>{c.gather(in.data_ptr(), recv, in.numel(), type, root, where.raw)};
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupColl::scatter(std::vector<at::Tensor>& outputs,
                                                         std::vector<std::vector<at::Tensor>>& inputs,
                                                         const c10d::ScatterOptions& opts) {
  checkRank(opts.rootRank, size_, "scatter", "root");
  const int root = static_cast<int>(opts.rootRank);
  const at::Tensor& out = single(outputs, "scatter");
  DataType type = collTypeOf(out, "scatter");
  std::vector<at::Tensor> all{out};
  if (rank_ == root && !inputs.empty()) all.insert(all.end(), inputs[0].begin(), inputs[0].end());
  const Placement where = placementOf(all, "scatter");
  at::Tensor flat;
  if (rank_ == root) {
    const auto& parts = perRank(inputs, size_, "scatter", "the inputs");
    for (const auto& p : parts) checkSameShape(out, p, "scatter", "an input tensor");
    flat = flatten(parts, "scatter");
  } else {
    TORCH_CHECK(inputs.empty() || inputs[0].empty(), "coll scatter: only the root (rank ", root,
                ") passes input tensors");
  }
  Dense d = dense(out);
  return submit(c10d::OpType::SCATTER, where, {out}, {d.tensor, flat}, d.copy_back, [&](Communicator& c) {
    const void* send = flat.defined() ? flat.data_ptr() : nullptr;
    return std::vector<coll::Work>{c.scatter(send, d.tensor.data_ptr(), d.tensor.numel(), type, root, where.raw)};
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupColl::reduce_scatter(std::vector<at::Tensor>& outputs,
                                                                std::vector<std::vector<at::Tensor>>& inputs,
                                                                const c10d::ReduceScatterOptions& opts) {
  const at::Tensor& out = single(outputs, "reduce_scatter");
  DataType type = collTypeOf(out, "reduce_scatter");
  ReduceOp op = collOpOf(opts.reduceOp, out, "reduce_scatter");
  const auto& parts = perRank(inputs, size_, "reduce_scatter", "the inputs");
  for (const auto& p : parts) checkSameShape(out, p, "reduce_scatter", "an input tensor");
  std::vector<at::Tensor> all = parts;
  all.push_back(out);
  const Placement where = placementOf(all, "reduce_scatter");
  at::Tensor flat = flatten(parts, "reduce_scatter");
  Dense d = dense(out);
  return submit(c10d::OpType::REDUCE_SCATTER, where, {out}, {d.tensor, flat}, d.copy_back, [&](Communicator& c) {
    return std::vector<coll::Work>{
        c.reduceScatter(flat.data_ptr(), d.tensor.data_ptr(), d.tensor.numel(), type, op, where.raw)};
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupColl::_reduce_scatter_base(at::Tensor& output, at::Tensor& input,
                                                                      const c10d::ReduceScatterOptions& opts) {
  const Placement where = placementOf({input, output}, "_reduce_scatter_base");
  DataType type = collTypeOf(output, "_reduce_scatter_base");
  ReduceOp op = collOpOf(opts.reduceOp, output, "_reduce_scatter_base");
  checkWhole(input, output, size_, "_reduce_scatter_base", "the input");
  Dense d = dense(output);
  return submit(c10d::OpType::_REDUCE_SCATTER_BASE, where, {output}, {input, d.tensor}, d.copy_back,
                [&](Communicator& c) {
                  return std::vector<coll::Work>{
                      c.reduceScatter(input.data_ptr(), d.tensor.data_ptr(), d.tensor.numel(), type, op, where.raw)};
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupColl::alltoall_base(at::Tensor& output, at::Tensor& input,
                                                               std::vector<int64_t>& output_splits,
                                                               std::vector<int64_t>& input_splits,
                                                               const c10d::AllToAllOptions&) {
  const Placement where = placementOf({input, output}, "alltoall_base");
  DataType type = collTypeOf(input, "alltoall_base");
  TORCH_CHECK(output.scalar_type() == input.scalar_type(), "coll alltoall_base: output dtype ", output.scalar_type(),
              " differs from the input's ", input.scalar_type());
  TORCH_CHECK(input.is_contiguous() && output.is_contiguous(), "coll alltoall_base: tensors must be contiguous");
  if (output_splits.empty() && input_splits.empty()) {
    TORCH_CHECK(input.numel() % size_ == 0 && output.numel() == input.numel(), "coll alltoall_base: ",
                input.numel(), " input and ", output.numel(), " output elements do not split evenly over ", size_,
                " ranks");
    return submit(c10d::OpType::ALLTOALL_BASE, where, {output}, {input}, nullptr, [&](Communicator& c) {
      return std::vector<coll::Work>{
          c.alltoall(input.data_ptr(), output.data_ptr(), input.numel() / size_, type, where.raw)};
    });
  }
  // Uneven splits along dim 0, as torch.distributed.all_to_all_single defines them.
  auto slices = [&](const at::Tensor& t, const std::vector<int64_t>& splits, const char* what) {
    TORCH_CHECK(static_cast<int>(splits.size()) == size_, "coll alltoall_base: ", what, " splits have ",
                splits.size(), " entries, expected ", size_);
    std::vector<at::Tensor> out;
    int64_t offset = 0;
    for (int64_t rows : splits) {
      out.push_back(rowsOf(t, offset, rows));
      offset += rows;
    }
    TORCH_CHECK(offset == (t.dim() == 0 ? 1 : t.size(0)), "coll alltoall_base: ", what, " splits sum to ", offset,
                ", not the tensor's ", t.size(0), " rows");
    return out;
  };
  auto send = slices(input, input_splits, "input");
  auto recv = slices(output, output_splits, "output");
  return submit(c10d::OpType::ALLTOALL_BASE, where, {output}, {input}, nullptr,
                [&](Communicator& c) { return exchange(c, send, recv, where); });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupColl::alltoall(std::vector<at::Tensor>& outputs,
                                                          std::vector<at::Tensor>& inputs,
                                                          const c10d::AllToAllOptions&) {
  TORCH_CHECK(static_cast<int>(inputs.size()) == size_ && static_cast<int>(outputs.size()) == size_,
              "coll alltoall: expects one input and one output tensor per rank (", size_, "), got ", inputs.size(),
              " and ", outputs.size());
  std::vector<at::Tensor> all = inputs;
  all.insert(all.end(), outputs.begin(), outputs.end());
  const Placement where = placementOf(all, "alltoall");
  std::vector<at::Tensor> send, recv, keep;
  std::vector<std::function<void()>> copy_backs;
  for (int p = 0; p < size_; ++p) {
    collTypeOf(inputs[p], "alltoall");
    send.push_back(inputs[p].contiguous());
    Dense d = dense(outputs[p]);
    recv.push_back(d.tensor);
    if (d.copy_back) copy_backs.push_back(d.copy_back);
  }
  keep = send;
  keep.insert(keep.end(), recv.begin(), recv.end());
  auto finish = [copy_backs] {
    for (const auto& f : copy_backs) f();
  };
  return submit(c10d::OpType::ALLTOALL, where, outputs, keep, finish,
                [&](Communicator& c) { return exchange(c, send, recv, where); });
}

std::vector<coll::Work> ProcessGroupColl::exchange(Communicator& comm, const std::vector<at::Tensor>& send,
                                                   const std::vector<at::Tensor>& recv, const Placement& where) {
  for (int p = 0; p < size_; ++p) {
    TORCH_CHECK(send[p].scalar_type() == recv[p].scalar_type(), "coll alltoall: dtypes differ for rank ", p);
    collTypeOf(recv[p], "alltoall");
  }
  TORCH_CHECK(send[rank_].numel() == recv[rank_].numel(), "coll alltoall: rank ", rank_, " sends itself ",
              send[rank_].numel(), " elements but expects ", recv[rank_].numel());
  recv[rank_].copy_(send[rank_].view(recv[rank_].sizes()));
  std::vector<coll::Work> works;
  comm.groupStart();
  try {
    for (int p = 0; p < size_; ++p) {
      if (p == rank_) continue;
      DataType type = collTypeOf(send[p], "alltoall");
      // A pair that exchanges nothing in one direction skips it on both sides (the counts
      // agree by the op's contract).
      if (send[p].numel() > 0) works.push_back(comm.send(send[p].data_ptr(), send[p].numel(), type, p, where.raw));
      if (recv[p].numel() > 0) works.push_back(comm.recv(recv[p].data_ptr(), recv[p].numel(), type, p, where.raw));
    }
  } catch (...) {
    comm.groupEnd();
    throw;
  }
  comm.groupEnd();
  return works;
}

}  // namespace coll::torch_backend
