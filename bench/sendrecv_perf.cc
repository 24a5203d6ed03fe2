// sendrecv_perf: nccl-tests' sendrecv_perf for coll (flags and output as nccl-tests): every
// rank sends to rank + 1 and receives from rank - 1. As in nccl-tests, the in-place column is
// timed but not checked.
//
// As nccl-tests does, the send and the receive are posted in one group, so they progress
// together (every rank sends before it receives; outside a group each send would wait for a
// receive its peer has not posted yet).
#include "perf_common.h"

namespace {

coll::bench::CollDesc sendRecvDesc() {
  coll::bench::CollDesc desc;
  desc.name = "sendrecv";
  desc.counts = [](size_t count, int) {
    coll::bench::RowCounts c;
    c.send = c.recv = c.param = count;
    return c;
  };
  // Each byte crosses one link: nccl-tests' factor is 1.
  desc.busBwFactor = [](int) { return 1.0; };
  desc.run = [](coll::Communicator& comm, const void* send, void* recv, const coll::bench::Row& row) {
    const int n = row.nranks;
    // One rank would send to itself, which coll refuses: that message is a copy.
    if (n == 1) return comm.broadcast(send, recv, row.counts.param, row.type, 0);
    const int to = (row.rank + 1) % n, from = (row.rank + n - 1) % n;
    // A group's works complete together: the receive's Work covers the send.
    comm.groupStart();
    comm.send(send, row.counts.param, row.type, to);
    coll::Work done = comm.recv(recv, row.counts.param, row.type, from);
    comm.groupEnd();
    return done;
  };
  desc.expected = [](const coll::bench::Row& row, size_t i) {
    return row.pattern->value((row.rank + row.nranks - 1) % row.nranks, i);
  };
  desc.periodicExpected = true;
  desc.inPlace = coll::bench::CollDesc::InPlace::kUnchecked;
  return desc;
}

}  // namespace

int main(int argc, char** argv) { return coll::bench::runPerf(argc, argv, sendRecvDesc()); }
