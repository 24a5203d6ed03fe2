// reduce_perf: nccl-tests' reduce_perf for coll (flags and output as nccl-tests).
#include "perf_common.h"

namespace {

coll::bench::CollDesc reduceDesc() {
  coll::bench::CollDesc desc;
  desc.name = "reduce";
  desc.hasOp = true;
  desc.hasRoot = true;
  desc.counts = [](size_t count, int) {
    coll::bench::RowCounts c;
    c.send = c.recv = c.param = count;
    return c;
  };
  // Every byte reaches the root once: nccl-tests' factor is 1.
  desc.busBwFactor = [](int) { return 1.0; };
  desc.run = [](coll::Communicator& comm, const void* send, void* recv, const coll::bench::Row& row) {
    return comm.reduce(send, recv, row.counts.param, row.type, row.op, row.root);
  };
  desc.receives = [](const coll::bench::Row& row) { return row.rank == row.root; };
  desc.expected = [](const coll::bench::Row& row, size_t i) { return row.pattern->reduced(i); };
  desc.periodicExpected = true;
  return desc;
}

}  // namespace

int main(int argc, char** argv) { return coll::bench::runPerf(argc, argv, reduceDesc()); }
