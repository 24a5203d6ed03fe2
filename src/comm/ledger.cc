#include "comm/ledger.h"

#include <algorithm>
#include <cstring>
#include <thread>
#include <type_traits>

#include "base/log.h"

namespace coll {
namespace {

// A snapshot's bytes in the store. The magic changes with the layout, so a rank running
// another build of coll is reported as such instead of misread.
constexpr uint32_t kSnapshotMagic = 0x3247444c;  // "LDG2"
constexpr size_t kMaxError = 400;
constexpr size_t kMaxP2p = 160;

struct WireEntry {
  uint64_t sequence, collective;
  OpFingerprint fingerprint;
};
struct WireSnapshot {
  uint32_t magic;
  int32_t rank;
  uint64_t issued, started, completed;
  uint8_t busy, has_last, failed, unused[5];
  WireEntry current, last;
  char error[kMaxError];
  char p2p[kMaxP2p];
};

WireEntry toWire(const LedgerEntry& e) { return {e.sequence, e.collective, e.fingerprint}; }
LedgerEntry fromWire(const WireEntry& w) { return {w.sequence, w.collective, w.fingerprint}; }

}  // namespace

OpFingerprint OpFingerprint::of(const OpRequest& op, const std::string& algorithm) {
  OpFingerprint f;
  f.kind = static_cast<uint8_t>(op.kind);
  f.type = op.kind == OpKind::barrier || op.kind == OpKind::group ? 0 : static_cast<uint8_t>(op.type);
  f.op = reduces(op.kind) ? static_cast<uint8_t>(op.op) : 0;
  f.root = rooted(op.kind) ? op.root : -1;
  f.count = op.kind == OpKind::group ? op.members->size() : op.count;
  // Zero-filled already: the name's bytes, and at least one NUL after them.
  std::memcpy(f.algorithm, algorithm.data(), std::min(algorithm.size(), sizeof f.algorithm - 1));
  return f;
}

bool OpFingerprint::operator==(const OpFingerprint& o) const { return std::memcmp(this, &o, sizeof o) == 0; }

std::string OpFingerprint::describe() const {
  auto k = static_cast<OpKind>(kind);
  std::string s = std::string(toString(k)) + "(";
  if (k == OpKind::group) s += format("%llu ops", static_cast<unsigned long long>(count));
  else if (k != OpKind::barrier) s += format("%s x %llu", toString(static_cast<DataType>(type)), static_cast<unsigned long long>(count));
  if (reduces(k)) s += format(", %s", toString(static_cast<ReduceOp>(op)));
  if (rooted(k)) s += format(isPointToPoint(k) ? ", peer %d" : ", root %d", root);
  if (algorithm[0]) s += format(", %.*s", static_cast<int>(sizeof algorithm), algorithm);
  return s + ")";
}

std::string LedgerEntry::label() const {
  return format("%s #%llu", toString(static_cast<OpKind>(fingerprint.kind)), static_cast<unsigned long long>(sequence));
}

std::string LedgerSnapshot::encode() const {
  WireSnapshot w{};
  w.magic = kSnapshotMagic;
  w.rank = rank;
  w.issued = collectives_issued;
  w.started = collectives_started;
  w.completed = collectives_completed;
  w.busy = busy;
  w.has_last = has_last;
  w.failed = failed;
  w.current = toWire(current);
  w.last = toWire(last);
  std::strncpy(w.error, error.c_str(), kMaxError - 1);
  std::strncpy(w.p2p, p2p.c_str(), kMaxP2p - 1);
  return std::string(reinterpret_cast<const char*>(&w), sizeof w);
}

size_t LedgerSnapshot::encodedBytes() { return sizeof(WireSnapshot); }

std::optional<LedgerSnapshot> LedgerSnapshot::decode(const std::string& bytes) {
  WireSnapshot w;
  if (bytes.size() != sizeof w) return std::nullopt;
  std::memcpy(&w, bytes.data(), sizeof w);
  if (w.magic != kSnapshotMagic) return std::nullopt;
  w.error[kMaxError - 1] = '\0';
  w.p2p[kMaxP2p - 1] = '\0';
  LedgerSnapshot s;
  s.rank = w.rank;
  s.collectives_issued = w.issued;
  s.collectives_started = w.started;
  s.collectives_completed = w.completed;
  s.busy = w.busy;
  s.has_last = w.has_last;
  s.failed = w.failed;
  s.current = fromWire(w.current);
  s.last = fromWire(w.last);
  s.error = w.error;
  s.p2p = w.p2p;
  return s;
}

static_assert(std::is_trivially_copyable_v<LedgerEntry>, "published word by word");
static_assert(sizeof(LedgerEntry) % sizeof(uint64_t) == 0, "published word by word");

void Ledger::started(const LedgerEntry& entry) {
  progress_.busy = 1;
  progress_.current = entry;
  if (entry.collective != kNotCollective) progress_.started = entry.collective + 1;
  publish();
}

void Ledger::completed(bool ok) {
  progress_.busy = 0;
  progress_.has_last = 1;
  progress_.last = progress_.current;
  if (ok && progress_.current.collective != kNotCollective) progress_.completed = progress_.current.collective + 1;
  publish();
}

void Ledger::ran(const LedgerEntry& entry, bool ok) {
  progress_.busy = 0;
  progress_.has_last = 1;
  progress_.current = progress_.last = entry;
  if (entry.collective != kNotCollective) {
    progress_.started = entry.collective + 1;
    if (ok) progress_.completed = entry.collective + 1;
  }
  publish();
}

// A sequence lock's writer: odd version, the words, even version (one writer at a time).
void Ledger::publish() {
  const uint64_t version = progress_version_.load(std::memory_order_relaxed);
  progress_version_.store(version + 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  const auto* bytes = reinterpret_cast<const char*>(&progress_);
#pragma GCC unroll 16
  for (size_t i = 0; i < kProgressWords; ++i) {
    uint64_t word;
    std::memcpy(&word, bytes + i * sizeof word, sizeof word);
    published_[i].store(word, std::memory_order_relaxed);
  }
  progress_version_.store(version + 2, std::memory_order_release);
}

// Its reader: retries while a write is under way or happened during the read.
Ledger::Progress Ledger::readProgress() const {
  uint64_t words[kProgressWords];
  for (;;) {
    const uint64_t before = progress_version_.load(std::memory_order_acquire);
    for (size_t i = 0; i < kProgressWords; ++i) words[i] = published_[i].load(std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_acquire);
    if ((before & 1) == 0 && progress_version_.load(std::memory_order_relaxed) == before) break;
    std::this_thread::yield();
  }
  Progress p;
  std::memcpy(&p, words, sizeof p);
  return p;
}

void Ledger::failed(const std::string& error) {
  std::lock_guard<std::mutex> lock(mu_);
  if (failed_) return;
  failed_ = true;
  error_ = error.substr(0, kMaxError - 1);
}

void Ledger::setPointToPoint(std::function<std::string()> describe) {
  std::lock_guard<std::mutex> lock(mu_);
  p2p_ = std::move(describe);
}

LedgerSnapshot Ledger::snapshot() const {
  LedgerSnapshot s;
  const Progress p = readProgress();
  s.collectives_started = p.started;
  s.collectives_completed = p.completed;
  s.busy = p.busy != 0;
  s.has_last = p.has_last != 0;
  s.current = p.current;
  s.last = p.last;
  {
    std::lock_guard<std::mutex> lock(mu_);
    s.failed = failed_;
    s.error = error_;
    if (p2p_) s.p2p = p2p_().substr(0, kMaxP2p - 1);
  }
  s.rank = rank_;
  s.collectives_issued = issued_.load(std::memory_order_relaxed);
  return s;
}

}  // namespace coll
