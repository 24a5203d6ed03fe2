// Wire formats of the socket transport. Integers are little-endian.
#pragma once

#include <cstdint>

namespace coll::transport::socket {

inline constexpr uint32_t kHelloMagic = 0x31484443;  // "CDH1": acceptor's greeting + nonce, and its ack
// An on-demand acceptor's answer instead of the ack: it is dialing the dialer itself and its
// own connection wins (the higher rank's); the dialer waits for it (on_demand.h).
inline constexpr uint32_t kBusyMagic = 0x42484443;   // "CDHB"
inline constexpr uint32_t kDataMagic = 0x314d4443;   // "CDM1": every data message
inline constexpr const char* kMacContext = "coll-data-v1";

// Dialer's answer to the greeting. The MAC covers the nonce and every field below, so a
// recorded answer is useless on a new connection and identity cannot be forged.
struct HandshakeReply {
  uint64_t mac;
  int32_t rank;       // the dialer
  int32_t peer;       // the acceptor it means to reach
  int32_t stream;     // 0 .. nstreams-1
  int32_t nstreams;   // must equal the acceptor's COLL_SOCKET_NSTREAMS
};

// Precedes every message. The receiver checks magic, tag and length against what it posted.
struct MessageHeader {
  uint32_t magic;
  uint32_t reserved;
  uint64_t tag;
  uint64_t bytes;
};

}  // namespace coll::transport::socket
