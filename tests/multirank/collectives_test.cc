// reduce, allgather, reduceScatter, alltoall, gather, scatter, send/recv and barrier on forked
// ranks (default transports; tests/CMakeLists.txt registers a sockets-only run too), with
// NCCL's count and in-place conventions (include/coll/communicator.h):
// every root, counts {0, 1, prime, many slices}, in-place and out-of-place. Reductions use the
// exact inputs of reduction_values.h (every op, avg included); data movement uses bytes that
// depend on the case, the sending rank, the receiving rank and the index (NaN payloads
// included: moving data must not touch values), so a misplaced chunk, a stale result or a
// slice from another op fails. Out of place, send buffers must be left alone, and nothing may
// be written past a receive buffer or into a non-root's receive buffer.
//
// COLL_SLICE_BYTES is 4096 here (rank_main.cc), its smallest value; the sockets-only run also
// has one scratch slot per peer and three TCP streams per peer.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <thread>

#include "multirank/rank_runner.h"
#include "multirank/reduction_values.h"
#include "multirank/typed_data.h"

namespace coll::test {
namespace {

// 1009 and 40009 are prime: chunks never line up with slices. 40009 elements span several
// 4 KiB slices per chunk for every type at every world size here.
constexpr size_t kCounts[] = {0, 1, 1009, 40009};
constexpr DataType kMoveTypes[] = {DataType::u8, DataType::bf16, DataType::i32, DataType::f64};
constexpr DataType kReduceTypes[] = {DataType::f16, DataType::i8, DataType::f32, DataType::i64};

enum Kind : uint64_t { kAllgather = 1, kAlltoall, kGather, kScatter, kPipeline, kRing };

// Byte j of what rank `from` sends rank `to` in the case `id` (to: -1 where all get the same).
unsigned char dataByte(uint64_t id, int from, int to, size_t j) {
  return static_cast<unsigned char>(mix(id, static_cast<uint64_t>(from), static_cast<uint64_t>(to + 1), j) >> 23);
}
uint64_t caseId(Kind kind, DataType t, size_t count, int root, bool in_place) {
  return mix(kind, static_cast<uint64_t>(t), count, static_cast<uint64_t>(root) * 2 + (in_place ? 1 : 0));
}

std::string where(const char* op, DataType t, size_t count, int root, bool in_place, int n) {
  return strprintf("%s %s count %zu%s %s on %d ranks", op, toString(t), count,
                   root >= 0 ? strprintf(" root %d", root).c_str() : "", in_place ? "in-place" : "out-of-place", n);
}

// Checks that buf[j] == want(j) for j < bytes.
template <class Want>
void expectBytes(const std::string& what, const char* buffer_name, const char* buf, size_t bytes, Want want) {
  for (size_t j = 0; j < bytes; ++j)
    RANK_CHECK(static_cast<unsigned char>(buf[j]) == want(j), "%s: %s byte %zu is %#x, expected %#x", what.c_str(),
               buffer_name, j, static_cast<unsigned char>(buf[j]), want(j));
}

std::vector<char> bytes(size_t n, unsigned char fill) { return std::vector<char>(n + 1, static_cast<char>(fill)); }

// Typed elements: buf[i] must hold expected(i) rounded to the type, bit for bit.
template <class Expected>
void expectElements(const std::string& what, DataType t, const char* buf, size_t count, Expected expected) {
  const size_t es = sizeOf(t);
  char want[8];
  for (size_t i = 0; i < count; ++i) {
    store(t, want, 0, expected(i));
    RANK_CHECK(std::memcmp(buf + i * es, want, es) == 0, "%s: element %zu is %.17g, expected %.17g", what.c_str(), i,
               load(t, buf, i), load(t, want, 0));
  }
}

// ---------------------------------------------------------------------------------------
// Reductions

// In place, every rank passes send == recv (NCCL's convention); only the root's buffer may
// change. Out of place, some non-roots pass a null receive buffer.
void reduceCases(Communicator& comm, Rank& self) {
  const int n = comm.size(), rank = comm.rank();
  struct Case {
    ReduceOp op;
    size_t count;
    int root;
    bool in_place, null_recv;
    std::vector<char> send, recv;
    Work work;
  };
  for (DataType t : kReduceTypes) {
    const size_t es = sizeOf(t);
    std::vector<Case> cases;
    for (ReduceOp op : kAllOps)
      for (size_t count : kCounts)
        for (int root = 0; root < n; ++root)
          for (bool in_place : {false, true}) {
            Case c{op, count, root, in_place, !in_place && rank != root && (count + root) % 2 == 0, {}, {}, {}};
            c.send = buffer(t, count, 0);
            c.recv = buffer(t, count, 0xCD);
            for (size_t i = 0; i < count; ++i) store(t, c.send.data(), i, inputValue(t, op, rank, i));
            if (in_place) {
              c.recv = c.send;
              c.recv[count * sizeOf(t)] = static_cast<char>(0xCD);
            }
            cases.push_back(std::move(c));
          }
    for (Case& c : cases) {
      void* recv = c.null_recv ? nullptr : c.recv.data();
      const void* send = c.in_place ? c.recv.data() : c.send.data();
      c.work = comm.reduce(send, recv, c.count, t, c.op, c.root);
    }
    for (Case& c : cases) {
      c.work.wait();
      std::string what = where("reduce", t, c.count, c.root, c.in_place, n) + " " + toString(c.op);
      if (rank == c.root)
        expectElements(what, t, c.recv.data(), c.count, [&](size_t i) { return expectedValue(t, c.op, n, i); });
      else if (c.in_place)
        expectElements(what + " (non-root's buffer)", t, c.recv.data(), c.count,
                       [&](size_t i) { return inputValue(t, c.op, rank, i); });
      else if (!c.null_recv)
        expectBytes(what, "non-root's recv", c.recv.data(), c.count * es, [](size_t) { return 0xCD; });
      if (!c.in_place)
        expectElements(what + " (send buffer)", t, c.send.data(), c.count,
                       [&](size_t i) { return inputValue(t, c.op, rank, i); });
      RANK_CHECK(static_cast<unsigned char>(c.recv[c.count * es]) == 0xCD, "%s wrote past the buffer", what.c_str());
      self.slot->progress++;
    }
  }
}

// recvcount elements per rank; in place: recv == send + rank * recvcount.
void reduceScatterCases(Communicator& comm, Rank& self) {
  const int n = comm.size(), rank = comm.rank();
  struct Case {
    ReduceOp op;
    size_t count;
    bool in_place;
    std::vector<char> send, original, recv;
    Work work;
  };
  for (DataType t : kReduceTypes) {
    const size_t es = sizeOf(t);
    std::vector<Case> cases;
    for (ReduceOp op : kAllOps)
      for (size_t count : kCounts)
        for (bool in_place : {false, true}) {
          Case c{op, count, in_place, buffer(t, count * n, 0xAB), {}, buffer(t, count, 0xCD), {}};
          for (size_t i = 0; i < count * n; ++i) store(t, c.send.data(), i, inputValue(t, op, rank, i));
          c.original = c.send;
          cases.push_back(std::move(c));
        }
    for (Case& c : cases) {
      void* recv = c.in_place ? c.send.data() + rank * c.count * es : c.recv.data();
      c.work = comm.reduceScatter(c.send.data(), recv, c.count, t, c.op);
    }
    for (Case& c : cases) {
      c.work.wait();
      std::string what = where("reduceScatter", t, c.count, -1, c.in_place, n) + " " + toString(c.op);
      const char* result = c.in_place ? c.send.data() + rank * c.count * es : c.recv.data();
      expectElements(what, t, result, c.count,
                     [&](size_t j) { return expectedValue(t, c.op, n, rank * c.count + j); });
      if (!c.in_place) {
        RANK_CHECK(c.send == c.original, "%s modified the send buffer", what.c_str());
        RANK_CHECK(static_cast<unsigned char>(c.recv[c.count * es]) == 0xCD, "%s wrote past recv", what.c_str());
      } else {
        RANK_CHECK(c.send[n * c.count * es] == c.original[n * c.count * es], "%s wrote past send", what.c_str());
      }
      self.slot->progress++;
    }
  }
}

// ---------------------------------------------------------------------------------------
// Data movement

// sendcount elements per rank; in place: send == recv + rank * sendcount.
void allgatherCases(Communicator& comm, Rank& self) {
  const int n = comm.size(), rank = comm.rank();
  struct Case {
    DataType t;
    size_t count;
    bool in_place;
    std::vector<char> send, recv;
    Work work;
  };
  std::vector<Case> cases;
  for (DataType t : kMoveTypes)
    for (size_t count : kCounts)
      for (bool in_place : {false, true}) {
        const size_t cb = count * sizeOf(t);
        const uint64_t id = caseId(kAllgather, t, count, -1, in_place);
        Case c{t, count, in_place, bytes(cb, 0x5A), bytes(n * cb, 0xCD), {}};
        for (size_t j = 0; j < cb; ++j) c.send[j] = static_cast<char>(dataByte(id, rank, -1, j));
        if (in_place) std::memcpy(c.recv.data() + rank * cb, c.send.data(), cb);
        cases.push_back(std::move(c));
      }
  for (Case& c : cases) {
    const size_t cb = c.count * sizeOf(c.t);
    bool null_buffers = c.count == 0 && c.in_place;  // count 0 needs no buffers at all
    const void* send = null_buffers ? nullptr : c.in_place ? c.recv.data() + rank * cb : c.send.data();
    c.work = comm.allgather(send, null_buffers ? nullptr : c.recv.data(), c.count, c.t);
  }
  for (Case& c : cases) {
    c.work.wait();
    const size_t cb = c.count * sizeOf(c.t);
    const uint64_t id = caseId(kAllgather, c.t, c.count, -1, c.in_place);
    std::string what = where("allgather", c.t, c.count, -1, c.in_place, n);
    expectBytes(what, "recv", c.recv.data(), n * cb, [&](size_t j) { return dataByte(id, int(j / cb), -1, j % cb); });
    expectBytes(what, "recv guard", c.recv.data() + n * cb, 1, [](size_t) { return 0xCD; });
    expectBytes(what, "send", c.send.data(), cb, [&](size_t j) { return dataByte(id, rank, -1, j); });
    self.slot->progress++;
  }
}

// Chunk p of send goes to rank p. (In place is refused: see BadInput.)
void alltoallCases(Communicator& comm, Rank& self) {
  const int n = comm.size(), rank = comm.rank();
  struct Case {
    DataType t;
    size_t count;
    std::vector<char> send, recv;
    Work work;
  };
  std::vector<Case> cases;
  for (DataType t : kMoveTypes)
    for (size_t count : kCounts) {
      const size_t cb = count * sizeOf(t);
      const uint64_t id = caseId(kAlltoall, t, count, -1, false);
      Case c{t, count, bytes(n * cb, 0x5A), bytes(n * cb, 0xCD), {}};
      for (size_t j = 0; j < n * cb; ++j) c.send[j] = static_cast<char>(dataByte(id, rank, int(j / cb), j % cb));
      cases.push_back(std::move(c));
    }
  for (Case& c : cases) c.work = comm.alltoall(c.send.data(), c.recv.data(), c.count, c.t);
  for (Case& c : cases) {
    c.work.wait();
    const size_t cb = c.count * sizeOf(c.t);
    const uint64_t id = caseId(kAlltoall, c.t, c.count, -1, false);
    std::string what = where("alltoall", c.t, c.count, -1, false, n);
    expectBytes(what, "recv", c.recv.data(), n * cb, [&](size_t j) { return dataByte(id, int(j / cb), rank, j % cb); });
    expectBytes(what, "recv guard", c.recv.data() + n * cb, 1, [](size_t) { return 0xCD; });
    expectBytes(what, "send", c.send.data(), n * cb, [&](size_t j) { return dataByte(id, rank, int(j / cb), j % cb); });
    self.slot->progress++;
  }
}

// The root's recv gets every rank's sendcount elements; in place on the root: send == recv +
// root * sendcount. Non-roots pass a null recv or one that must stay untouched.
void gatherCases(Communicator& comm, Rank& self) {
  const int n = comm.size(), rank = comm.rank();
  struct Case {
    DataType t;
    size_t count;
    int root;
    bool in_place, null_recv;
    std::vector<char> send, recv;
    Work work;
  };
  std::vector<Case> cases;
  for (DataType t : kMoveTypes)
    for (size_t count : kCounts)
      for (int root = 0; root < n; ++root)
        for (bool in_place : {false, true}) {
          const size_t cb = count * sizeOf(t);
          const uint64_t id = caseId(kGather, t, count, root, in_place);
          Case c{t, count, root, in_place, rank != root && root % 2 == 0, bytes(cb, 0x5A), bytes(n * cb, 0xCD), {}};
          for (size_t j = 0; j < cb; ++j) c.send[j] = static_cast<char>(dataByte(id, rank, root, j));
          if (in_place && rank == root) std::memcpy(c.recv.data() + root * cb, c.send.data(), cb);
          cases.push_back(std::move(c));
        }
  for (Case& c : cases) {
    const size_t cb = c.count * sizeOf(c.t);
    const void* send = c.in_place && rank == c.root ? c.recv.data() + rank * cb : c.send.data();
    c.work = comm.gather(send, c.null_recv ? nullptr : c.recv.data(), c.count, c.t, c.root);
  }
  for (Case& c : cases) {
    c.work.wait();
    const size_t cb = c.count * sizeOf(c.t);
    const uint64_t id = caseId(kGather, c.t, c.count, c.root, c.in_place);
    std::string what = where("gather", c.t, c.count, c.root, c.in_place, n);
    if (rank == c.root)
      expectBytes(what, "root's recv", c.recv.data(), n * cb,
                  [&](size_t j) { return dataByte(id, int(j / cb), c.root, j % cb); });
    else
      expectBytes(what, "non-root's recv", c.recv.data(), n * cb, [](size_t) { return 0xCD; });
    expectBytes(what, "recv guard", c.recv.data() + n * cb, 1, [](size_t) { return 0xCD; });
    expectBytes(what, "send", c.send.data(), cb, [&](size_t j) { return dataByte(id, rank, c.root, j); });
    self.slot->progress++;
  }
}

// Rank r's recv gets chunk r of the root's send; in place on the root: recv == send + root *
// recvcount. Non-roots pass a null send or one that must stay untouched.
void scatterCases(Communicator& comm, Rank& self) {
  const int n = comm.size(), rank = comm.rank();
  struct Case {
    DataType t;
    size_t count;
    int root;
    bool in_place, null_send;
    std::vector<char> send, recv;
    Work work;
  };
  std::vector<Case> cases;
  for (DataType t : kMoveTypes)
    for (size_t count : kCounts)
      for (int root = 0; root < n; ++root)
        for (bool in_place : {false, true}) {
          const size_t cb = count * sizeOf(t);
          const uint64_t id = caseId(kScatter, t, count, root, in_place);
          Case c{t, count, root, in_place, rank != root && root % 2 == 1, bytes(n * cb, 0x5A), bytes(cb, 0xCD), {}};
          if (rank == root)
            for (size_t j = 0; j < n * cb; ++j) c.send[j] = static_cast<char>(dataByte(id, root, int(j / cb), j % cb));
          cases.push_back(std::move(c));
        }
  for (Case& c : cases) {
    const size_t cb = c.count * sizeOf(c.t);
    void* recv = c.in_place && rank == c.root ? c.send.data() + rank * cb : c.recv.data();
    c.work = comm.scatter(c.null_send ? nullptr : c.send.data(), recv, c.count, c.t, c.root);
  }
  for (Case& c : cases) {
    c.work.wait();
    const size_t cb = c.count * sizeOf(c.t);
    const uint64_t id = caseId(kScatter, c.t, c.count, c.root, c.in_place);
    std::string what = where("scatter", c.t, c.count, c.root, c.in_place, n);
    const bool root_in_place = c.in_place && rank == c.root;
    expectBytes(what, "recv", root_in_place ? c.send.data() + rank * cb : c.recv.data(), cb,
                [&](size_t j) { return dataByte(id, c.root, rank, j); });
    if (!root_in_place) expectBytes(what, "recv guard", c.recv.data() + cb, 1, [](size_t) { return 0xCD; });
    if (rank == c.root)
      expectBytes(what, "root's send", c.send.data(), n * cb,
                  [&](size_t j) { return dataByte(id, c.root, int(j / cb), j % cb); });
    else
      expectBytes(what, "non-root's send", c.send.data(), n * cb, [](size_t) { return 0x5A; });
    self.slot->progress++;
  }
}

// ---------------------------------------------------------------------------------------
// Point-to-point and barrier

int32_t p2pValue(Kind kind, int from, int m, size_t i) {
  return static_cast<int32_t>(mix(kind, static_cast<uint64_t>(from), static_cast<uint64_t>(m), i));
}

// Message m from rank r to r + 1: a different count per pair and message, one empty, one
// spanning hundreds of slices.
size_t pipelineCount(int from, int m) {
  if (m == 1) return 0;
  if (m == 2) return 300'007;
  return 1 + (static_cast<size_t>(from) * 7919 + static_cast<size_t>(m) * 104'729) % 20'000;
}

// Stages 0 -> 1 -> ... -> n-1 pass kMessages messages down the line. Every even stage r > 0
// acknowledges each message to r - 1, so ranks issue different numbers of point-to-point ops
// (and every pair in both directions), and after each message every rank joins an allreduce:
// point-to-point is numbered per pair and must not disturb the collectives' numbering.
void pipeline(Communicator& comm, Rank& self) {
  const int n = comm.size(), rank = comm.rank();
  constexpr int kMessages = 5;
  for (int m = 0; m < kMessages; ++m) {
    if (rank > 0) {
      std::vector<int32_t> in(pipelineCount(rank - 1, m) + 1, -7);
      Work w = comm.recv(in.data(), in.size() - 1, DataType::i32, rank - 1);
      if (rank % 2 == 0) {
        int32_t ack = rank * 1000 + m;
        comm.send(&ack, 1, DataType::i32, rank - 1).wait();
      }
      w.wait();
      for (size_t i = 0; i + 1 < in.size(); ++i)
        RANK_CHECK(in[i] == p2pValue(kPipeline, rank - 1, m, i), "message %d from %d: element %zu of %zu is %d", m,
                   rank - 1, i, in.size() - 1, in[i]);
      RANK_CHECK(in.back() == -7, "message %d from %d: wrote past the buffer", m, rank - 1);
    }
    if (rank < n - 1) {
      std::vector<int32_t> out(pipelineCount(rank, m));
      for (size_t i = 0; i < out.size(); ++i) out[i] = p2pValue(kPipeline, rank, m, i);
      comm.send(out.data(), out.size(), DataType::i32, rank + 1).wait();
      if ((rank + 1) % 2 == 0) {
        int32_t ack = -1;
        comm.recv(&ack, 1, DataType::i32, rank + 1).wait();
        RANK_CHECK(ack == (rank + 1) * 1000 + m, "ack %d from %d is %d", m, rank + 1, ack);
      }
    }
    int64_t x = rank + m, sum = 0;
    comm.allreduce(&x, &sum, 1, DataType::i64, ReduceOp::sum).wait();
    RANK_CHECK(sum == int64_t{n} * (n - 1) / 2 + int64_t{n} * m, "allreduce after message %d is %lld", m,
               static_cast<long long>(sum));
    self.slot->progress++;
  }
}

// Every rank sends to rank + d and receives from rank - d (d = 1: nccl-tests' sendrecv),
// several rounds issued without waiting, counts differing per round and sender. With two
// ranks both directions of one pair are in use at once; d = 2 reaches ranks that are not ring
// neighbours, whose connections are made on demand. Messages are small: ops run one at a time
// in issue order, so every rank's send must complete before its receive is even posted, which
// works only while the transport completes a send without the peer (shm: what fits its ring of
// slots, 1 MiB; sockets: about 16 MiB). Larger: see SendRecvRingOfLargeMessagesInAGroup.
void ring(Communicator& comm, Rank& self, int d) {
  const int n = comm.size(), rank = comm.rank();
  const int right = (rank + d) % n, left = (rank + n - d % n) % n;
  if (right == rank) return;
  constexpr int kRounds = 6;
  auto countOf = [d](int from, int k) {
    return k == 3 ? size_t{0} : 1 + (static_cast<size_t>(from) * 31 + k * 977 + d) % 3001;
  };
  std::vector<std::vector<int32_t>> out(kRounds), in(kRounds);
  std::vector<Work> works;
  for (int k = 0; k < kRounds; ++k) {
    out[k].resize(countOf(rank, k));
    for (size_t i = 0; i < out[k].size(); ++i) out[k][i] = p2pValue(kRing, rank, k * 4 + d, i);
    in[k].assign(countOf(left, k), -7);
    // Ranks whose right wraps around receive first, the others send first (its left always
    // sends first, so nobody waits in a cycle): the order of one's own pair does not matter.
    const bool receive_first = right < rank;
    if (receive_first) works.push_back(comm.recv(in[k].data(), in[k].size(), DataType::i32, left));
    works.push_back(comm.send(out[k].data(), out[k].size(), DataType::i32, right));
    if (!receive_first) works.push_back(comm.recv(in[k].data(), in[k].size(), DataType::i32, left));
  }
  for (Work& w : works) w.wait();
  for (int k = 0; k < kRounds; ++k)
    for (size_t i = 0; i < in[k].size(); ++i)
      RANK_CHECK(in[k][i] == p2pValue(kRing, left, k * 4 + d, i), "distance %d round %d from %d: element %zu is %d", d,
                 k, left, i, in[k][i]);
  self.slot->progress++;
}

// One rank arrives 200 ms late; nobody may leave before it arrived. It writes its arrival
// time (steady clock, comparable across processes) into its slot's `progress` just before
// entering; the others check that this round's value is there once they left, and not later
// than they left.
void barrierCases(Communicator& comm, Rank& self) {
  const int n = comm.size(), rank = comm.rank();
  for (int k = 0; k < std::min(n, 3); ++k) {
    const int sleeper = (n - 1 + k) % n;
    const int64_t previous = self.slots[sleeper].progress.load();  // it cannot write before we enter
    comm.barrier().wait();
    if (rank == sleeper) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      self.slot->progress.store(nowNs());
      comm.barrier().wait();
      continue;
    }
    const int64_t entered = nowNs();
    comm.barrier().wait();
    const int64_t left = nowNs(), arrived = self.slots[sleeper].progress.load();
    RANK_CHECK(arrived != previous && arrived <= left,
               "round %d: left the barrier %.1f ms after entering it, before rank %d arrived", k,
               (left - entered) / 1e6, sleeper);
  }
}

// Bad input is refused before anything is sent, on the calling rank only, and leaves the
// communicator usable.
template <class Fn>
void expectInvalid(const char* what, Fn fn) {
  try {
    fn();
  } catch (const Error& e) {
    RANK_CHECK(e.code() == ErrorCode::InvalidArgument, "%s: %s instead of InvalidArgument: %s", what,
               codeName(e.code()), e.what());
    return;
  }
  RANK_CHECK(false, "%s was accepted", what);
}

void badInput(Communicator& comm, Rank&) {
  const int n = comm.size(), rank = comm.rank();
  std::vector<int32_t> a(4 * n + 4, 1), b(4 * n + 4, 0);
  expectInvalid("in-place alltoall", [&] { comm.alltoall(a.data(), a.data(), 2, DataType::i32); });
  expectInvalid("send to oneself", [&] { comm.send(a.data(), 1, DataType::i32, rank); });
  expectInvalid("recv from oneself", [&] { comm.recv(a.data(), 1, DataType::i32, rank); });
  expectInvalid("recv from a peer out of range", [&] { comm.recv(a.data(), 1, DataType::i32, -2); });
  expectInvalid("send with a negative tag", [&] { comm.send(a.data(), 1, DataType::i32, (rank + 1) % n, -3); });
  for (int peer : {-1, n, n + 5}) {  // (a receive from -1 is one from any source)
    expectInvalid("send to a peer out of range", [&] { comm.send(a.data(), 1, DataType::i32, peer); });
    if (peer != -1)
      expectInvalid("recv from a peer out of range", [&] { comm.recv(a.data(), 1, DataType::i32, peer); });
    expectInvalid("reduce to a root out of range",
                  [&] { comm.reduce(a.data(), b.data(), 1, DataType::i32, ReduceOp::sum, peer); });
    expectInvalid("gather to a root out of range", [&] { comm.gather(a.data(), b.data(), 1, DataType::i32, peer); });
    expectInvalid("scatter from a root out of range",
                  [&] { comm.scatter(a.data(), b.data(), 1, DataType::i32, peer); });
  }
  const int root = n - 1;
  if (rank == root) {
    expectInvalid("gather with a null recv on the root",
                  [&] { comm.gather(a.data(), nullptr, 3, DataType::i32, root); });
    expectInvalid("reduce with a null recv on the root",
                  [&] { comm.reduce(a.data(), nullptr, 3, DataType::i32, ReduceOp::sum, root); });
    expectInvalid("scatter with a null send on the root",
                  [&] { comm.scatter(nullptr, b.data(), 3, DataType::i32, root); });
  }
  expectInvalid("allgather with a null recv", [&] { comm.allgather(a.data(), nullptr, 3, DataType::i32); });
  if (n > 1) {  // send overlapping recv, but not at the in-place offset
    expectInvalid("allgather partially overlapping",
                  [&] { comm.allgather(b.data() + rank * 2 + 1, b.data(), 2, DataType::i32); });
    expectInvalid("reduceScatter partially overlapping",
                  [&] { comm.reduceScatter(a.data(), a.data() + rank * 2 + 1, 2, DataType::i32, ReduceOp::sum); });
  }

  // Now a valid gather where non-roots pass no receive buffer at all.
  std::vector<int32_t> mine(3, rank * 10), all(3 * n, -1);
  comm.gather(mine.data(), rank == root ? all.data() : nullptr, 3, DataType::i32, root).wait();
  if (rank == root)
    for (int i = 0; i < 3 * n; ++i) RANK_CHECK(all[i] == (i / 3) * 10, "gather element %d is %d", i, all[i]);
  int32_t x = 1, sum = 0;
  comm.allreduce(&x, &sum, 1, DataType::i32, ReduceOp::sum).wait();
  RANK_CHECK(sum == n, "allreduce after bad input: %d", sum);
  RANK_CHECK(!comm.asyncError(), "bad input broke the communicator: %s", comm.asyncError()->what());
}

class Collectives : public ::testing::TestWithParam<int> {};

TEST_P(Collectives, ReduceEveryRootOpCountAndPlacement) { expectAllSucceeded(runRanks(GetParam(), reduceCases)); }
TEST_P(Collectives, ReduceScatterEveryOpCountAndPlacement) {
  expectAllSucceeded(runRanks(GetParam(), reduceScatterCases));
}
TEST_P(Collectives, AllgatherEveryCountAndPlacement) { expectAllSucceeded(runRanks(GetParam(), allgatherCases)); }
TEST_P(Collectives, AlltoallEveryCount) { expectAllSucceeded(runRanks(GetParam(), alltoallCases)); }
TEST_P(Collectives, GatherEveryRootCountAndPlacement) { expectAllSucceeded(runRanks(GetParam(), gatherCases)); }
TEST_P(Collectives, ScatterEveryRootCountAndPlacement) { expectAllSucceeded(runRanks(GetParam(), scatterCases)); }
TEST_P(Collectives, BarrierWaitsForTheLastRank) { expectAllSucceeded(runRanks(GetParam(), barrierCases)); }
TEST_P(Collectives, BadInputIsRefusedLocally) { expectAllSucceeded(runRanks(GetParam(), badInput)); }

TEST_P(Collectives, SendRecvPipelineInterleavedWithCollectives) {
  if (GetParam() == 1) GTEST_SKIP() << "one rank has no peer";
  expectAllSucceeded(runRanks(GetParam(), pipeline));
}

TEST_P(Collectives, SendRecvRing) {
  if (GetParam() == 1) GTEST_SKIP() << "one rank has no peer";
  expectAllSucceeded(runRanks(GetParam(), [](Communicator& comm, Rank& self) {
    ring(comm, self, 1);
    ring(comm, self, 2);
  }));
}

// nccl-tests' sendrecv with 1 MiB messages. Every rank sends a large message before it receives: only a group makes that progress (as in
// NCCL), since each send waits for a receive its peer has not posted yet.
TEST_P(Collectives, SendRecvRingOfLargeMessagesInAGroup) {
  if (GetParam() == 1) GTEST_SKIP() << "one rank has no peer";
  expectAllSucceeded(runRanks(GetParam(), [](Communicator& comm, Rank&) {
    const int n = comm.size(), rank = comm.rank();
    const size_t count = 256 << 10;
    std::vector<int32_t> out(count), in(count, -7);
    for (size_t i = 0; i < count; ++i) out[i] = p2pValue(kRing, rank, 99, i);
    comm.groupStart();
    Work s = comm.send(out.data(), count, DataType::i32, (rank + 1) % n);
    Work w = comm.recv(in.data(), count, DataType::i32, (rank + n - 1) % n);
    comm.groupEnd();
    RANK_CHECK(s.wait(std::chrono::seconds(10)), "the grouped send did not finish within 10 s");
    RANK_CHECK(w.wait(std::chrono::seconds(10)), "send then receive of 1 MiB did not finish within 10 s");
    RANK_CHECK(s.test(), "a group's works complete together");
    for (size_t i = 0; i < count; ++i)
      RANK_CHECK(in[i] == p2pValue(kRing, (rank + n - 1) % n, 99, i), "element %zu is %d", i, in[i]);
  }));
}

INSTANTIATE_TEST_SUITE_P(WorldSize, Collectives, ::testing::Values(1, 2, 3, 4, 5, 7),
                         [](const ::testing::TestParamInfo<int>& info) { return std::to_string(info.param); });

}  // namespace
}  // namespace coll::test
