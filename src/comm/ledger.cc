#include "comm/ledger.h"

#include <cstring>

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
  std::strncpy(f.algorithm, algorithm.c_str(), sizeof f.algorithm - 1);
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

void Ledger::started(const LedgerEntry& entry) {
  std::lock_guard<std::mutex> lock(mu_);
  state_.busy = true;
  state_.current = entry;
  if (entry.collective != kNotCollective) state_.collectives_started = entry.collective + 1;
}

void Ledger::completed(bool ok) {
  std::lock_guard<std::mutex> lock(mu_);
  state_.busy = false;
  state_.has_last = true;
  state_.last = state_.current;
  if (ok && state_.current.collective != kNotCollective) state_.collectives_completed = state_.current.collective + 1;
}

void Ledger::failed(const std::string& error) {
  std::lock_guard<std::mutex> lock(mu_);
  if (state_.failed) return;
  state_.failed = true;
  state_.error = error.substr(0, kMaxError - 1);
}

void Ledger::setPointToPoint(std::function<std::string()> describe) {
  std::lock_guard<std::mutex> lock(mu_);
  p2p_ = std::move(describe);
}

LedgerSnapshot Ledger::snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  LedgerSnapshot s = state_;
  if (p2p_) s.p2p = p2p_().substr(0, kMaxP2p - 1);
  s.rank = rank_;
  s.collectives_issued = issued_.load(std::memory_order_relaxed);
  return s;
}

}  // namespace coll
