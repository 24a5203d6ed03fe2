// scatter_perf: nccl-tests' scatter_perf for coll (flags and output as nccl-tests).
#include "perf_common.h"

namespace {

coll::bench::CollDesc scatterDesc() {
  coll::bench::CollDesc desc;
  desc.name = "scatter";
  desc.hasRoot = true;
  desc.counts = [](size_t count, int n) {  // count: the root's whole buffer
    coll::bench::RowCounts c;
    c.recv = c.param = c.recvInplaceOffset = count / n;
    c.send = c.recv * n;
    return c;
  };
  // The root sends n-1 of the n chunks: nccl-tests' factor (n-1)/n.
  desc.busBwFactor = [](int n) { return (n - 1.0) / n; };
  desc.run = [](coll::Communicator& comm, const void* send, void* recv, const coll::bench::Row& row) {
    return comm.scatter(send, recv, row.counts.param, row.type, row.root);
  };
  desc.sends = [](const coll::bench::Row& row) { return row.rank == row.root; };
  desc.expected = [](const coll::bench::Row& row, size_t i) {
    return row.pattern->value(row.root, static_cast<size_t>(row.rank) * row.counts.param + i);
  };
  return desc;
}

}  // namespace

int main(int argc, char** argv) { return coll::bench::runPerf(argc, argv, scatterDesc()); }
