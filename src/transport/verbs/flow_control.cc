#include "transport/verbs/flow_control.h"

#include <algorithm>

#include "base/log.h"

namespace coll::transport::verbs {

uint32_t ImmData::encode() const {
  return (static_cast<uint32_t>(message) << 16) | (static_cast<uint32_t>(slot & 0x7fff) << 1) | (last ? 1u : 0u);
}

ImmData ImmData::decode(uint32_t imm) {
  return ImmData{static_cast<uint16_t>(imm >> 16), static_cast<uint16_t>((imm >> 1) & 0x7fff), (imm & 1) != 0};
}

bool CreditWindow::tryConsume() {
  if (available_ == 0) return false;
  --available_;
  return true;
}

Status CreditWindow::grant(uint32_t n, int peer) {
  if (n > window_ - available_)
    return transportError(format("verbs: peer %d returned %u credits but only %u were in use", peer, n,
                                 window_ - available_), peer);
  available_ += n;
  return Status::ok();
}

void ChunkedSender::enqueue(uint64_t message, size_t bytes) { queue_.push_back(Queued{message, bytes}); }

std::optional<ChunkWrite> ChunkedSender::next() {
  if (queue_.empty() || !credits_.tryConsume()) return std::nullopt;
  Queued& q = queue_.front();
  ChunkWrite w;
  w.message = q.message;
  w.offset = q.offset;
  w.bytes = std::min(chunk_bytes_, q.bytes - q.offset);
  w.slot = next_slot_;
  next_slot_ = (next_slot_ + 1) % slots_;
  q.offset += w.bytes;
  w.last = q.offset == q.bytes;
  if (w.last) queue_.pop_front();
  return w;
}

uint32_t CreditReturner::take(bool force) {
  if (freed_ == 0 || (!force && freed_ < batch_)) return 0;
  uint32_t n = freed_;
  freed_ = 0;
  return n;
}

}  // namespace coll::transport::verbs
