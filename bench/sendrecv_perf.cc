// sendrecv_perf: nccl-tests' sendrecv_perf for coll (flags and output as nccl-tests): every
// rank sends to rank + 1 and receives from rank - 1. As in nccl-tests, the in-place column is
// timed but not checked.
//
// nccl-tests posts the send and the receive in one group, so they progress together. coll has
// no groups and runs a communicator's ops one at a time in issue order, and a send completes
// only once the peer took its data (shm moves slices of 128 KiB and more by CMA, sockets block
// once the kernel buffers are full): if every rank sent first, every rank would wait in its
// send for a receive nobody has posted yet. So even ranks send first and odd ranks receive
// first; no rank then waits in a cycle, but a rank's send and receive no longer overlap, so
// the times are about twice those of an overlapped exchange. Issue send then receive on every
// rank once coll can progress queued point-to-point ops together.
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
    // Ops complete in issue order: the Work of the second covers the first too.
    if (row.rank % 2 == 1) {
      comm.recv(recv, row.counts.param, row.type, from);
      return comm.send(send, row.counts.param, row.type, to);
    }
    comm.send(send, row.counts.param, row.type, to);
    return comm.recv(recv, row.counts.param, row.type, from);
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
