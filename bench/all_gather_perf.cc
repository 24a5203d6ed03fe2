// all_gather_perf: nccl-tests' all_gather_perf for coll (flags and output as nccl-tests).
#include "perf_common.h"

namespace {

coll::bench::CollDesc allGatherDesc() {
  coll::bench::CollDesc desc;
  desc.name = "all_gather";
  desc.counts = [](size_t count, int n) {  // count: the whole gathered buffer
    coll::bench::RowCounts c;
    c.send = c.param = c.sendInplaceOffset = count / n;
    c.recv = c.send * n;
    return c;
  };
  // Each rank receives the n-1 chunks it does not have: nccl-tests' factor (n-1)/n.
  desc.busBwFactor = [](int n) { return (n - 1.0) / n; };
  desc.run = [](coll::Communicator& comm, const void* send, void* recv, const coll::bench::Row& row) {
    return comm.allgather(send, recv, row.counts.param, row.type);
  };
  desc.expected = [](const coll::bench::Row& row, size_t i) {
    size_t per = row.counts.param;
    return row.pattern->value(static_cast<int>(i / per), i % per);
  };
  return desc;
}

}  // namespace

int main(int argc, char** argv) { return coll::bench::runPerf(argc, argv, allGatherDesc()); }
