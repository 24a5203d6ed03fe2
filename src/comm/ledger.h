// The collective ledger: what this rank's communicator is doing, always on, so that a
// timeout or failure can say which ranks never arrived and where each one is.
//
// Every op gets a fingerprint (op, dtype, count, root, reduction, algorithm). The progress
// thread records the op it starts and the op it completes; the issuing thread counts the
// collectives it issued. Nothing leaves the process on the fast path: the ledger is read only
// when a peer asks for it after a failure (ledger_responder.h) or when COLL_CHECK compares
// fingerprints (call_check.h).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>

#include "exec/op.h"

namespace coll {

// 32 bytes, compared byte for byte across ranks: fields that do not apply to an op are zero
// (root -1), so two ranks making the same call produce identical bytes.
struct OpFingerprint {
  uint8_t kind = 0;   // OpKind
  uint8_t type = 0;   // DataType
  uint8_t op = 0;     // ReduceOp, reducing collectives only
  uint8_t unused = 0;
  int32_t root = -1;  // rooted collectives; the peer for send/recv
  uint64_t count = 0;
  char algorithm[16] = {};  // empty until the progress thread picked one

  static OpFingerprint of(const OpRequest& op, const std::string& algorithm);
  bool operator==(const OpFingerprint& o) const;
  // "allreduce(f32 x 1000, sum, direct)", "broadcast(f32 x 1000, root 0, chain)"
  std::string describe() const;
};
static_assert(sizeof(OpFingerprint) == 32, "exchanged between ranks as raw bytes");

constexpr uint64_t kNotCollective = UINT64_MAX;  // LedgerEntry::collective of send/recv/group

struct LedgerEntry {
  uint64_t sequence = 0;                  // the op's number on this rank ("allreduce #42")
  uint64_t collective = kNotCollective;   // its collective number, equal on every rank
  OpFingerprint fingerprint;
  std::string label() const;  // "allreduce #42"
};

// One rank's ledger at one moment, as it travels through the store (fixed-size bytes).
struct LedgerSnapshot {
  int32_t rank = -1;
  uint64_t collectives_issued = 0;     // by the application
  uint64_t collectives_started = 0;    // by the progress thread
  uint64_t collectives_completed = 0;  // successfully
  bool busy = false;                   // in `current` now
  bool has_last = false;
  bool failed = false;                 // the communicator has failed (error below)
  LedgerEntry current;
  LedgerEntry last;                    // the last op completed (successfully or not)
  std::string error;                   // the communicator's first error, truncated
  std::string p2p;                     // the oldest outstanding send/recv ("recv #1 of 16 bytes from peer 3 (tag 0)")

  std::string encode() const;  // always encodedBytes() long
  static std::optional<LedgerSnapshot> decode(const std::string& bytes);
  static size_t encodedBytes();
};

class Ledger {
 public:
  explicit Ledger(int rank) : rank_(rank) {}

  // Issuing thread: one more collective issued (one relaxed store).
  void issued(uint64_t collectives) { issued_.store(collectives, std::memory_order_relaxed); }
  // Whoever runs the op (the progress thread, or a thread running it inline: one at a time,
  // under the communicator's engine lock) brackets every op it executes.
  void started(const LedgerEntry& entry);
  void completed(bool ok);
  // started(entry) and completed(ok) at once: an op that ran start to end in one call.
  void ran(const LedgerEntry& entry, bool ok);
  // The communicator's first error; read by peers that ask.
  void failed(const std::string& error);
  // Where snapshots read the outstanding point-to-point ops (they run beside the progress thread).
  void setPointToPoint(std::function<std::string()> describe);

  LedgerSnapshot snapshot() const;  // any thread

 private:
  // What started() and completed() keep. Every op writes it and a responder reads it only
  // after a failure, so it is published under a sequence lock (plain stores, no atomic
  // read-modify-write, no mutex: two fewer lock pairs on a 0.2 us board op).
  struct Progress {
    uint64_t started = 0, completed = 0, busy = 0, has_last = 0;
    LedgerEntry current, last;
  };
  static constexpr size_t kProgressWords = sizeof(Progress) / sizeof(uint64_t);
  void publish();
  Progress readProgress() const;

  const int rank_;
  std::atomic<uint64_t> issued_{0};
  Progress progress_;                                   // the writer's copy (engine lock holder)
  std::atomic<uint64_t> progress_version_{0};           // odd while publish() writes
  std::atomic<uint64_t> published_[kProgressWords] = {};  // progress_, word by word
  mutable std::mutex mu_;  // error and p2p_: written once or rarely
  bool failed_ = false;
  std::string error_;
  std::function<std::string()> p2p_;  // set once, before peers can ask
};

}  // namespace coll
