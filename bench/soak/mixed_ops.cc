#include "soak/mixed_ops.h"

#include <cmath>
#include <cstdio>

namespace coll::soak {
namespace {

// Small integers: every sum over up to 1024 ranks stays exact in f32.
float valueOf(int rank, size_t i, uint64_t op) { return float((rank + 1) * int((i + op) % 13)); }
float sumOverRanks(int nranks, size_t i, uint64_t op) {
  return float(nranks * (nranks + 1) / 2 * int((i + op) % 13));
}
// A value that names its sender and its destination chunk (alltoall).
float pairValue(int from, int to, size_t i) { return float(from * 4096 + to * 8 + int(i % 7)); }

std::string mismatch(const MixedOp& op, size_t at, float expected, float found) {
  char text[160];
  std::snprintf(text, sizeof text, "%s op %llu (count %zu, root %d): element %zu is %g, expected %g",
                toString(op.kind), (unsigned long long)op.index, op.count, op.root, at, found, expected);
  return text;
}

template <typename Expected>
std::string check(const MixedOp& op, const float* got, size_t n, Expected expected) {
  for (size_t i = 0; i < n; ++i)
    if (got[i] != expected(i)) return mismatch(op, i, expected(i), got[i]);
  return {};
}

std::string runAllreduce(Communicator& comm, const MixedOp& op, SoakBuffers& b) {
  int r = comm.rank(), n = comm.size();
  for (size_t i = 0; i < op.count; ++i) b.send[i] = valueOf(r, i, op.index);
  comm.allreduce(b.send.data(), b.recv.data(), op.count, DataType::f32, ReduceOp::sum).wait();
  return check(op, b.recv.data(), op.count, [&](size_t i) { return sumOverRanks(n, i, op.index); });
}

std::string runBroadcast(Communicator& comm, const MixedOp& op, SoakBuffers& b) {
  // In place: the root's buffer holds its data, the others' garbage from the last op.
  if (comm.rank() == op.root)
    for (size_t i = 0; i < op.count; ++i) b.recv[i] = valueOf(op.root, i, op.index);
  comm.broadcast(b.recv.data(), b.recv.data(), op.count, DataType::f32, op.root).wait();
  return check(op, b.recv.data(), op.count, [&](size_t i) { return valueOf(op.root, i, op.index); });
}

std::string runAllgather(Communicator& comm, const MixedOp& op, SoakBuffers& b) {
  int r = comm.rank(), n = comm.size();
  for (size_t i = 0; i < op.count; ++i) b.send[i] = valueOf(r, i, op.index);
  comm.allgather(b.send.data(), b.recv.data(), op.count, DataType::f32).wait();
  return check(op, b.recv.data(), op.count * n,
               [&](size_t j) { return valueOf(int(j / op.count), j % op.count, op.index); });
}

std::string runReduceScatter(Communicator& comm, const MixedOp& op, SoakBuffers& b) {
  int r = comm.rank(), n = comm.size();
  for (size_t j = 0; j < op.count * n; ++j) b.send[j] = valueOf(r, j, op.index);
  comm.reduceScatter(b.send.data(), b.recv.data(), op.count, DataType::f32, ReduceOp::sum).wait();
  size_t base = size_t(r) * op.count;
  return check(op, b.recv.data(), op.count, [&](size_t i) { return sumOverRanks(n, base + i, op.index); });
}

std::string runAlltoall(Communicator& comm, const MixedOp& op, SoakBuffers& b) {
  int r = comm.rank(), n = comm.size();
  for (size_t j = 0; j < op.count * n; ++j) b.send[j] = pairValue(r, int(j / op.count), j % op.count);
  comm.alltoall(b.send.data(), b.recv.data(), op.count, DataType::f32).wait();
  return check(op, b.recv.data(), op.count * n,
               [&](size_t j) { return pairValue(int(j / op.count), r, j % op.count); });
}

std::string runRingShift(Communicator& comm, const MixedOp& op, SoakBuffers& b) {
  const int r = comm.rank(), n = comm.size();
  if (n == 1) return {};
  const int next = (r + 1) % n, prev = (r + n - 1) % n, tag = int(op.index % 1000);
  for (size_t i = 0; i < op.count; ++i) b.send[i] = pairValue(r, next, i);
  Work in = comm.recv(b.recv.data(), op.count, DataType::f32, prev, tag);
  Work out = comm.send(b.send.data(), op.count, DataType::f32, next, tag);
  in.wait();
  out.wait();
  return check(op, b.recv.data(), op.count, [&](size_t i) { return pairValue(prev, r, i); });
}

}  // namespace

const char* toString(OpKind kind) {
  switch (kind) {
    case OpKind::allreduce: return "allreduce";
    case OpKind::broadcast: return "broadcast";
    case OpKind::allgather: return "allgather";
    case OpKind::reduce_scatter: return "reducescatter";
    case OpKind::alltoall: return "alltoall";
    case OpKind::ring_shift: return "ring_shift";
  }
  return "?";
}

MixedOpStream::MixedOpStream(uint64_t seed, size_t max_count, int nranks)
    : rng_(seed), max_count_(max_count), nranks_(nranks) {}

MixedOp MixedOpStream::next() {
  MixedOp op;
  op.index = index_++;
  op.kind = static_cast<OpKind>(rng_() % kNumOpKinds);
  // log-uniform in [1, max_count], and an empty op one time in 50
  double exponent = std::uniform_real_distribution<double>(0, std::log2(double(max_count_)))(rng_);
  op.count = rng_() % 50 == 0 ? 0 : size_t(std::exp2(exponent));
  op.root = int(rng_() % uint64_t(nranks_));
  return op;
}

SoakBuffers::SoakBuffers(size_t max_count, int nranks)
    : send(max_count * nranks, -1.0f), recv(max_count * nranks, -1.0f) {}

std::string runAndCheck(Communicator& comm, const MixedOp& op, SoakBuffers& buffers) {
  switch (op.kind) {
    case OpKind::allreduce: return runAllreduce(comm, op, buffers);
    case OpKind::broadcast: return runBroadcast(comm, op, buffers);
    case OpKind::allgather: return runAllgather(comm, op, buffers);
    case OpKind::reduce_scatter: return runReduceScatter(comm, op, buffers);
    case OpKind::alltoall: return runAlltoall(comm, op, buffers);
    case OpKind::ring_shift: return runRingShift(comm, op, buffers);
  }
  return "unknown op kind";
}

}  // namespace coll::soak
