// coll::Communicator: a group of ranks that run collectives together.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "coll/error.h"
#include "coll/export.h"
#include "coll/store.h"
#include "coll/types.h"
#include "coll/work.h"

namespace coll {

// recv from any rank; Work::source() then says which.
inline constexpr int kAnySource = -1;
// split's color for a rank that joins no new communicator.
inline constexpr int kSplitNoColor = -1;

// How to reach the others explicitly, instead of reading a launcher's environment.
struct CommOptions {
  int rank = -1;
  int size = -1;
  int local_rank = -1;        // -1: unknown (derived from host grouping)
  std::string store_address;  // "host:port" of the rendezvous store
  bool host_store = false;    // this process serves the store at store_address (normally rank 0)
  // > 1: store_address's port was derived, not chosen, and may be taken; the store is served
  // on the first free one of it and the next store_port_tries - 1, and looked for there.
  int store_port_tries = 1;
  std::string secret;         // the job secret; empty: taken from COLL_JOB_SECRET
  std::string name = "world"; // distinguishes several communicators on one store
  // A store the caller already runs (see store.h); when set, store_address and host_store
  // are ignored. The communicator holds it for its lifetime.
  std::shared_ptr<KeyValueStore> store;
  // Each op's deadline; zero: COLL_TIMEOUT.
  std::chrono::milliseconds timeout{0};
};

class CommunicatorImpl;

// Communicator::agree's result: the same on every rank that returns.
struct AgreeResult {
  uint64_t value = 0;             // the bitwise AND of the values of the ranks not failed
  std::vector<int> failed_ranks;  // sorted
};

// Thread-safety: collectives may be issued from any one thread at a time (like NCCL, a
// communicator is not for concurrent issuing); Work handles may be waited on from any thread.
// Each communicator owns one progress thread that executes its ops in issue order.
// A cudaStream_t, without the CUDA headers.
using Stream = void*;

class COLL_API Communicator {
 public:
  // Reads rank, size and the rendezvous address from the launcher's environment: collrun,
  // torchrun, Open MPI, MPICH/Hydra (PMI-1) or Slurm, with MASTER_ADDR/MASTER_PORT overriding.
  // Throws coll::Error (InvalidArgument when the environment is incomplete; Timeout when the
  // others do not arrive within COLL_TIMEOUT).
  static std::unique_ptr<Communicator> fromEnvironment();
  static std::unique_ptr<Communicator> create(const CommOptions& options);

  ~Communicator();  // waits for queued ops (bounded by their deadlines), then disconnects
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  int rank() const;
  int size() const;
  int localRank() const;

  // Buffers may be host memory or, in a CUDA build, device memory (cudaMalloc), the same kind
  // on every rank. With device buffers the op reads its input after the work queued on
  // `stream` (a cudaStream_t) before the call, work queued there after the call waits for the
  // op, and Work::wait() returns once the result is in place. Without a stream (nullptr) the op
  // reads its input after the work queued on the legacy default stream, but nothing queued
  // afterwards waits for it: only Work::wait() says the result is there. Host buffers take no
  // stream.
  //
  // An op that fails leaves its output undefined, and an in-place op its input too (part of it
  // may be reduced already), as with MPI and NCCL: a step redone after a failure starts again
  // from its own copy of the data.
  //
  // recv[i] = op over all ranks of send[i], for i < count. send == recv is in-place.
  // Every rank receives bit-identical results.
  Work allreduce(const void* send, void* recv, size_t count, DataType type, ReduceOp op, Stream stream = nullptr);

  // recv = root's send on every rank. send is read on the root only; send == recv is in-place.
  Work broadcast(const void* send, void* recv, size_t count, DataType type, int root, Stream stream = nullptr);

  // recv = op over all ranks of send, on the root only (recv is ignored elsewhere and may be null).
  Work reduce(const void* send, void* recv, size_t count, DataType type, ReduceOp op, int root, Stream stream = nullptr);

  // recv (size * sendcount elements) = every rank's send, in rank order. In place:
  // send == recv + rank * sendcount.
  Work allgather(const void* send, void* recv, size_t sendcount, DataType type, Stream stream = nullptr);

  // recv (recvcount elements) = chunk `rank` of the reduction of every rank's send (size *
  // recvcount elements). In place: recv == send + rank * recvcount.
  Work reduceScatter(const void* send, void* recv, size_t recvcount, DataType type, ReduceOp op, Stream stream = nullptr);

  // Chunk p of send (count elements each) goes to rank p; chunk p of recv comes from rank p.
  Work alltoall(const void* send, void* recv, size_t count, DataType type, Stream stream = nullptr);

  // The root's recv (size * sendcount) = every rank's send, in rank order.
  Work gather(const void* send, void* recv, size_t sendcount, DataType type, int root, Stream stream = nullptr);

  // recv (recvcount) = chunk `rank` of the root's send (size * recvcount).
  Work scatter(const void* send, void* recv, size_t recvcount, DataType type, int root, Stream stream = nullptr);

  // Point-to-point, as MPI and gloo have it: a receive matches the sends of its peer (or of
  // anyone: peer kAnySource) with its tag, in issue order per (sender, tag); the sizes must
  // agree. Sends and receives progress on their own, beside collectives, in any order and
  // number: a posted receive never blocks a later send, so both ranks may receive first.
  // Each completes as its partner arrives, within COLL_TIMEOUT of its issue. Host memory
  // takes this path; device buffers are matched in issue order per pair (tag 0, no any-source),
  // and a device send pairs only with a device receive.
  Work send(const void* buf, size_t count, DataType type, int peer, Stream stream = nullptr);
  Work recv(void* buf, size_t count, DataType type, int peer, Stream stream = nullptr);
  Work send(const void* buf, size_t count, DataType type, int peer, int tag);
  Work recv(void* buf, size_t count, DataType type, int peer, int tag);

  // Completes once every rank has called it.
  Work barrier();

  // Like ncclGroupStart/ncclGroupEnd: send and recv issued in between are held back and
  // started together at groupEnd. Host sends and receives need no group (they progress on their
  // own); for device buffers a group is what lets a rank's sends and receives progress together.
  // Groups nest; only send/recv may be issued inside (others throw InvalidArgument).
  void groupStart();
  void groupEnd();

  // Fails every queued and running op with PeerLost ("aborted by the application"), closes
  // every connection so peers fail fast too, and returns once those ops have finished, so their
  // buffers may be freed at once; bounded in time: a thread held in a completion callback is
  // waited for at most 5 s (or COLL_TIMEOUT, if shorter), then a warning says so. Idempotent.
  void abort();

  // After a failure, the survivors make a communicator without `excluded_ranks` (the dead or
  // stopped ones) and carry on, as with ncclCommShrink or MPI ULFM's MPI_Comm_shrink. Every
  // survivor calls it with the same ranks (the order does not matter); ranks are renumbered
  // densely in the old order, over the same rendezvous store under a new namespace. Works on a
  // failed communicator; this one is left as it is (destroy it when done; its store, if this
  // rank serves it, lives on with the new one). Throws InvalidArgument for a rank out of
  // range, repeated or the caller's own, Timeout when a survivor does not join within
  // COLL_TIMEOUT (the store's host died, or the survivors disagree about who is excluded).
  std::unique_ptr<Communicator> shrink(const std::vector<int>& excluded_ranks);

  // Fault tolerance with ULFM's guarantees (docs/FAULT_TOLERANCE.md).
  // They need a rendezvous store that outlives the failed ranks: collrun's, or one the job
  // runs apart; a rank that serves the store (rank 0 under torchrun, mpirun, srun) takes it
  // with it when it dies.
  //
  // The ranks this rank knows have failed, sorted: those whose process the store saw end (at
  // once, whatever killed it; coll's own store only), and those that did not answer a question
  // after an op failed (stopped, or dead). Any thread; one store call.
  std::vector<int> failedRanks();

  // As MPIX_Comm_agree: every rank that returns gets the bitwise AND of the values of the
  // ranks not failed, and the same set of failed ranks, even when ranks fail during the call.
  // Waits for every rank not known failed, at most COLL_TIMEOUT + max(COLL_TIMEOUT/2, 5 s).
  // A rank counted failed (it came after the others had decided) gets PeerLost saying so.
  // Works on a failed or revoked communicator. Every surviving rank calls it, in the same order.
  AgreeResult agree(uint64_t value);

  // As MPIX_Comm_revoke: every pending and future op of this communicator fails at once with
  // PeerLost ("communicator revoked by rank R"), here and on every other rank (through their
  // ledger responders, within milliseconds). Any thread. To go on, shrink().
  void revoke();

  // As MPIX_Comm_shrink: the survivors make a communicator of the ranks alive, without being
  // told who died. Revokes this communicator (so every live rank leaves what it waits in and
  // comes), agrees on who is alive (agree()), and makes the new communicator of those, ranks
  // renumbered densely in the old order. Dead and stopped ranks need not call it; one that
  // comes too late (stopped, then resumed) gets PeerLost saying the others went on without it,
  // never a communicator of its own. Every surviving rank calls it.
  std::unique_ptr<Communicator> shrink();

  // Growing back: a new process (a replacement, or one more) joins a running job. It calls
  // Communicator::join with the job's store and secret and the name the job's first
  // communicator had ("world"); the members call grow() together, which admits every process
  // waiting then and returns the communicator of the members (ranks kept) and the joiners
  // (ranks after them, in the order they asked), made as create() makes one. join returns the
  // joiner's side of it. A grow with nobody waiting returns a communicator of the members.
  // grow() begins with a barrier of the members, so a member that failed or revoked the
  // communicator meanwhile makes it throw at once (PeerLost), not after COLL_TIMEOUT.
  // grow() on a failed or revoked communicator throws InvalidArgument (shrink() first); join
  // throws Timeout when no member grows before COLL_TIMEOUT (or options.timeout), and the
  // store's refusal for a wrong secret. A join that timed out is withdrawn (no later grow
  // admits it), so calling join again is safe; a grow that admitted it in the same instant
  // throws PeerLost on every member, leaves the communicator as it was, and may be called again.
  std::unique_ptr<Communicator> grow();
  static std::unique_ptr<Communicator> join(const CommOptions& options);

  // As MPI_Comm_split and ncclCommSplit: every rank calls it; ranks with the same color form a
  // new communicator, ranked by key and then by rank here; kSplitNoColor takes part and gets
  // null. The new communicators share this one's rendezvous store (each under a namespace of
  // its own), make their own connections (shared memory inside hosts, as usual) and live on
  // their own: one failing, aborted or destroyed leaves this one and the others as they are.
  // Collective over this communicator (its colors and keys travel by an all-gather).
  std::unique_ptr<Communicator> split(int color, int key);

  // Replaces the COLL_ALGO rules for the ops issued from now on, in COLL_ALGO's grammar
  // ("allreduce:0-64K:tree;allreduce:64K-inf:ring"; "" lets the selector decide again), so
  // one job can time several algorithms side by side (all_reduce_perf -A). Like a
  // collective, every rank calls it at the same point of its op sequence, with none of its ops
  // queued (wait on them first); a running op is waited for. Throws InvalidArgument for a
  // malformed rule or queued ops, changing nothing.
  void setAlgorithms(const std::string& rules);

  // The first error that broke the communicator, if any (the NCCL "async error").
  std::optional<Error> asyncError() const;

  // Human-readable summary of the connections: "rank 1 -> peer 2 via socket (10.0.0.3:41000, 2 streams)".
  std::string describe() const;

 private:
  explicit Communicator(std::unique_ptr<CommunicatorImpl> impl);
  std::unique_ptr<CommunicatorImpl> impl_;
};

// collMemAlloc and collMemFree (coll.h) for C++: memAlloc throws coll::Error (InvalidArgument,
// Transport) naming the size and the failed system call; memFree throws InvalidArgument for a
// pointer memAlloc did not return.
COLL_API void* memAlloc(size_t bytes);
COLL_API void memFree(void* ptr);

}  // namespace coll
