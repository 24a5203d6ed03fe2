#include "p2p/wire.h"

#include <cstring>

#include "base/log.h"

namespace coll::p2p {
namespace {

// Layout, little-endian as the hosts are: magic 4, version 1, kind 1, reserved 2, tag 4,
// reserved 4, seq 8, bytes 8, send_id 8, recv_id 8, zeros to 64.
constexpr uint32_t kMagic = 0x50325043;  // "CP2P"
constexpr uint8_t kVersion = 1;

template <class T>
void put(uint8_t* at, T value) {
  std::memcpy(at, &value, sizeof value);
}

template <class T>
T get(const uint8_t* at) {
  T value;
  std::memcpy(&value, at, sizeof value);
  return value;
}

Status bad(const std::string& what) {
  return Status(ErrorCode::Mismatch, "point-to-point envelope: " + what);
}

}  // namespace

bool hasPayload(const WireEnvelope& envelope) {
  return (envelope.kind == EnvelopeKind::eager || envelope.kind == EnvelopeKind::data) && envelope.bytes > 0;
}

EnvelopeBuffer encode(const WireEnvelope& e) {
  EnvelopeBuffer b{};
  put(b.data() + 0, kMagic);
  put(b.data() + 4, kVersion);
  put(b.data() + 5, static_cast<uint8_t>(e.kind));
  put(b.data() + 8, e.tag);
  put(b.data() + 16, e.seq);
  put(b.data() + 24, e.bytes);
  put(b.data() + 32, e.send_id);
  put(b.data() + 40, e.recv_id);
  return b;
}

Status decode(const uint8_t* b, size_t length, WireEnvelope* out) {
  if (length != kEnvelopeBytes) return bad(format("%zu bytes, expected %zu", length, kEnvelopeBytes));
  if (get<uint32_t>(b) != kMagic) return bad(format("magic 0x%08x, expected 0x%08x (another protocol?)", get<uint32_t>(b), kMagic));
  if (b[4] != kVersion) return bad(format("version %u, this build speaks %u", b[4], kVersion));
  uint8_t kind = b[5];
  if (kind < static_cast<uint8_t>(EnvelopeKind::eager) || kind > static_cast<uint8_t>(EnvelopeKind::withdrawn))
    return bad(format("unknown kind %u", kind));
  WireEnvelope e;
  e.kind = static_cast<EnvelopeKind>(kind);
  e.tag = get<int32_t>(b + 8);
  e.seq = get<uint64_t>(b + 16);
  e.bytes = get<uint64_t>(b + 24);
  e.send_id = get<uint64_t>(b + 32);
  e.recv_id = get<uint64_t>(b + 40);
  if (e.tag < 0) return bad(format("negative tag %d", e.tag));
  if (e.kind == EnvelopeKind::eager && e.bytes > kEagerLimit)
    return bad(format("eager message of %llu bytes, over the %llu-byte limit", static_cast<unsigned long long>(e.bytes),
                      static_cast<unsigned long long>(kEagerLimit)));
  *out = e;
  return Status::ok();
}

}  // namespace coll::p2p
