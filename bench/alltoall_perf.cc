// alltoall_perf: nccl-tests' alltoall_perf for coll (flags and output as nccl-tests). coll
// refuses in-place all-to-all, so the in-place column is all "N/A" (nccl-tests times it but
// does not check it).
#include "perf_common.h"

namespace {

coll::bench::CollDesc alltoallDesc() {
  coll::bench::CollDesc desc;
  desc.name = "alltoall";
  desc.counts = [](size_t count, int n) {  // count: each rank's whole buffer
    coll::bench::RowCounts c;
    c.param = count / n;
    c.send = c.recv = c.param * n;
    return c;
  };
  // n-1 of the n chunks cross a link: nccl-tests' factor (n-1)/n.
  desc.busBwFactor = [](int n) { return (n - 1.0) / n; };
  desc.run = [](coll::Communicator& comm, const void* send, void* recv, const coll::bench::Row& row) {
    return comm.alltoall(send, recv, row.counts.param, row.type);
  };
  // Chunk c comes from rank c, which sent it from its chunk `rank`.
  desc.expected = [](const coll::bench::Row& row, size_t i) {
    size_t per = row.counts.param;
    return row.pattern->value(static_cast<int>(i / per), static_cast<size_t>(row.rank) * per + i % per);
  };
  desc.inPlace = coll::bench::CollDesc::InPlace::kNone;
  return desc;
}

}  // namespace

int main(int argc, char** argv) { return coll::bench::runPerf(argc, argv, alltoallDesc()); }
