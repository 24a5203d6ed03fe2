// gather_perf: nccl-tests' gather_perf for coll (flags and output as nccl-tests).
#include "perf_common.h"

namespace {

coll::bench::CollDesc gatherDesc() {
  coll::bench::CollDesc desc;
  desc.name = "gather";
  desc.hasRoot = true;
  desc.counts = [](size_t count, int n) {  // count: the root's whole buffer
    coll::bench::RowCounts c;
    c.send = c.param = c.sendInplaceOffset = count / n;
    c.recv = c.send * n;
    return c;
  };
  // The root receives n-1 of the n chunks: nccl-tests' factor (n-1)/n.
  desc.busBwFactor = [](int n) { return (n - 1.0) / n; };
  desc.run = [](coll::Communicator& comm, const void* send, void* recv, const coll::bench::Row& row) {
    return comm.gather(send, recv, row.counts.param, row.type, row.root);
  };
  desc.receives = [](const coll::bench::Row& row) { return row.rank == row.root; };
  desc.expected = [](const coll::bench::Row& row, size_t i) {
    size_t per = row.counts.param;
    return row.pattern->value(static_cast<int>(i / per), i % per);
  };
  return desc;
}

}  // namespace

int main(int argc, char** argv) { return coll::bench::runPerf(argc, argv, gatherDesc()); }
