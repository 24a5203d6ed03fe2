// all_reduce_perf: nccl-tests' all_reduce_perf for coll (flags and output as nccl-tests).
#include "perf_common.h"

namespace {

coll::bench::CollDesc allReduceDesc() {
  coll::bench::CollDesc desc;
  desc.name = "all_reduce";
  desc.hasOp = true;
  desc.counts = [](size_t count, int) {
    coll::bench::RowCounts c;
    c.send = c.recv = c.param = count;
    return c;
  };
  // A ring moves 2(n-1)/n of the data over each link: nccl-tests' bus bandwidth.
  desc.busBwFactor = [](int n) { return 2.0 * (n - 1) / n; };
  desc.run = [](coll::Communicator& comm, const void* send, void* recv,
                const coll::bench::Row& row) {
    return comm.allreduce(send, recv, row.counts.param, row.type, row.op);
  };
  desc.expected = [](const coll::bench::Row& row, size_t i) { return row.pattern->reduced(i); };
  desc.periodicExpected = true;
  return desc;
}

}  // namespace

int main(int argc, char** argv) { return coll::bench::runPerf(argc, argv, allReduceDesc()); }
