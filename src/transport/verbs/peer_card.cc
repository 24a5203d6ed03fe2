#include "transport/verbs/peer_card.h"

#include <cstring>

#include "base/log.h"
#include "transport/verbs/slot_layout.h"

namespace coll::transport::verbs {
namespace {

constexpr uint32_t kMagic = 0x31564243;  // "CBV1": bump when the layout changes

// Fixed-size, host byte order: both ends of an RC connection are x86-64 or both aarch64
// here; a mixed-endian job would fail the magic check rather than misread the rest.
struct Packed {
  uint32_t magic;
  uint32_t qpn, psn;
  uint16_t lid;
  uint8_t mtu, pad;
  uint8_t gid[16];
  uint64_t slots_addr;
  uint32_t slots_rkey, credits, chunk_bytes, pad2;
};

}  // namespace

std::string PeerCard::encode() const {
  Packed p{};
  p.magic = kMagic;
  p.qpn = qp.qpn;
  p.psn = qp.psn;
  p.lid = qp.lid;
  p.mtu = qp.mtu;
  std::memcpy(p.gid, qp.gid, sizeof p.gid);
  p.slots_addr = slots_addr;
  p.slots_rkey = slots_rkey;
  p.credits = credits;
  p.chunk_bytes = chunk_bytes;
  return std::string(reinterpret_cast<const char*>(&p), sizeof p);
}

Status PeerCard::decode(const std::string& bytes, int peer, PeerCard* out) {
  Packed p{};
  if (bytes.size() != sizeof p)
    return transportError(format("verbs: peer %d published a connection card of %zu bytes, expected %zu (another "
                                 "coll version?)", peer, bytes.size(), sizeof p), peer);
  std::memcpy(&p, bytes.data(), sizeof p);
  if (p.magic != kMagic)
    return transportError(format("verbs: peer %d published a card with magic %#x, expected %#x (another coll version?)",
                                 peer, p.magic, kMagic), peer);
  if (p.credits == 0 || p.credits > kMaxCredits || p.chunk_bytes == 0 || p.chunk_bytes > kMaxChunkBytes)
    return transportError(format("verbs: peer %d offers %u slots of %u bytes (allowed: 1-%u slots, 1-%u bytes)", peer,
                                 p.credits, p.chunk_bytes, kMaxCredits, kMaxChunkBytes), peer);
  out->qp.qpn = p.qpn;
  out->qp.psn = p.psn;
  out->qp.lid = p.lid;
  out->qp.mtu = p.mtu;
  std::memcpy(out->qp.gid, p.gid, sizeof p.gid);
  out->slots_addr = p.slots_addr;
  out->slots_rkey = p.slots_rkey;
  out->credits = p.credits;
  out->chunk_bytes = p.chunk_bytes;
  return Status::ok();
}

}  // namespace coll::transport::verbs
