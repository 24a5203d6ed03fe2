// reduce_scatter_perf: nccl-tests' reduce_scatter_perf for coll (flags and output as nccl-tests).
#include "perf_common.h"

namespace {

coll::bench::CollDesc reduceScatterDesc() {
  coll::bench::CollDesc desc;
  desc.name = "reduce_scatter";
  desc.hasOp = true;
  desc.counts = [](size_t count, int n) {  // count: the whole buffer each rank sends
    coll::bench::RowCounts c;
    c.recv = c.param = c.recvInplaceOffset = count / n;
    c.send = c.recv * n;
    return c;
  };
  // Each rank sends the n-1 chunks it does not keep: nccl-tests' factor (n-1)/n.
  desc.busBwFactor = [](int n) { return (n - 1.0) / n; };
  desc.run = [](coll::Communicator& comm, const void* send, void* recv, const coll::bench::Row& row) {
    return comm.reduceScatter(send, recv, row.counts.param, row.type, row.op);
  };
  desc.expected = [](const coll::bench::Row& row, size_t i) {
    return row.pattern->reduced(static_cast<size_t>(row.rank) * row.counts.param + i);
  };
  desc.periodicExpected = true;
  return desc;
}

}  // namespace

int main(int argc, char** argv) { return coll::bench::runPerf(argc, argv, reduceScatterDesc()); }
