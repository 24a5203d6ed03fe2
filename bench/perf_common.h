// The shared driver of coll's nccl-tests-compatible perf programs (all_reduce_perf,
// broadcast_perf, ...). A program's main describes one collective in a CollDesc; runPerf
// does the rest: flags, size sweep, warmup, timing, data check, and nccl-tests' output.
//
// Per (type, op, root) it warms up at the largest and smallest size, then for each size
// times -n ops out-of-place and then in-place, each followed by -c checked runs that are
// not timed. Buffers are host memory, allocated once for -e bytes.
#pragma once

#include <cstddef>
#include <functional>
#include <string>

#include "coll/communicator.h"
#include "perf_data.h"

namespace coll::bench {

// Element counts of one table row, defined as nccl-tests' getCollByteCount defines them.
struct RowCounts {
  size_t send = 0;   // elements of each rank's send buffer
  size_t recv = 0;   // elements of each rank's receive buffer
  size_t param = 0;  // the count passed to the collective: the "count" column
  // In-place, the op reads recvbuf + rank * sendInplaceOffset and writes recvbuf + rank *
  // recvInplaceOffset (in elements): e.g. all_gather's input sits in its slot of the output.
  size_t sendInplaceOffset = 0;
  size_t recvInplaceOffset = 0;
};

// What a description's callbacks know about one measurement on this rank.
struct Row {
  DataType type = DataType::f32;
  ReduceOp op = ReduceOp::sum;  // meaningful only if the description hasOp
  int root = -1;                // -1 unless the description hasRoot
  int rank = 0;
  int nranks = 1;
  RowCounts counts;
  const InputPattern* pattern = nullptr;  // what send buffers hold in checked runs
};

struct CollDesc {
  std::string name;      // "all_reduce"; the program calls itself name + "_perf"
  bool hasOp = false;    // -o applies; otherwise the "redop" column says "none"
  bool hasRoot = false;  // -r applies; otherwise the "root" column says -1

  // The counts of a row of `count` elements (its size in bytes / the element size).
  std::function<RowCounts(size_t count, int nranks)> counts;

  // busbw = algbw * busBwFactor(nranks), where algbw = the row's size / the time per op.
  std::function<double(int nranks)> busBwFactor;

  // Issues one op; the driver waits on the Work.
  std::function<Work(Communicator& comm, const void* send, void* recv, const Row& row)> run;

  // Whether this rank's send buffer is read at all (broadcast: on the root only); unset
  // means always. Unread send buffers are poisoned, so an in-place op that leaves them alone
  // fails the check instead of passing by luck.
  std::function<bool(const Row& row)> sends;

  // Whether this rank's receive buffer is written at all (reduce, gather: on the root only);
  // unset means always. nccl-tests expects an unwritten buffer to be left as it was; here it
  // is simply not checked.
  std::function<bool(const Row& row)> receives;

  // The in-place column. nccl-tests times in-place alltoall and sendrecv but does not check
  // them (reportErrors = 0): kUnchecked does the same, printing "N/A" errors. kNone: coll has
  // no in-place form (all-to-all refuses send == recv), so every in-place value is "N/A".
  enum class InPlace { kChecked, kUnchecked, kNone };
  InPlace inPlace = InPlace::kChecked;

  // What element `index` of this rank's receive buffer must hold after a checked op.
  // row.pattern->value(r, i) gives rank r's input, row.pattern->reduced(i) their reduction.
  std::function<double(const Row& row, size_t index)> expected;

  // expected(row, i) == expected(row, i + row.pattern->period()) for all i, so the check
  // computes one period only: true for element-wise ops (all_reduce, broadcast, reduce,
  // reduce_scatter), false where the index picks the source rank (all_gather, alltoall).
  bool periodicExpected = false;
};

// Parses argv, joins the communicator the launcher describes (collrun, torchrun, mpirun,
// srun), runs the sweep and returns the exit code: 0; 1 if an element was wrong, an op
// failed or -T expired; 2 for a bad command line. Only rank 0 prints the table; every rank
// prints its own errors to stderr.
int runPerf(int argc, char** argv, const CollDesc& desc);

}  // namespace coll::bench
