// Wire constants shared by the store server and client (see store.h for the format).
#pragma once

#include <cstdint>

namespace coll::bootstrap::store_wire {

inline constexpr uint32_t kHelloMagic = 0x31485343;    // "CSH1": server's greeting + nonce
inline constexpr uint32_t kRequestMagic = 0x31545343;  // "CST1"
inline constexpr uint32_t kMaxKey = 4096;
inline constexpr uint32_t kMaxValue = 1 << 20;
inline constexpr const char* kMacContext = "coll-store-v1";

// kAppend: appends the value's bytes to the key's (made empty when missing). kRead: the value
// now, kNotFound when missing (never parks). kSetIfAbsent: sets the key unless it exists and
// replies with what it holds then. kAppendOnClose: when this connection ends (the process
// died, or closed it), the server appends the value's bytes to the key, as kAppend would.
enum Request : uint32_t {
  kSet = 1, kGet = 2, kAdd = 3, kCheck = 4, kAppend = 5, kRead = 6, kSetIfAbsent = 7, kAppendOnClose = 8
};
enum Reply : uint32_t { kOk = 0, kNotFound = 1, kBadRequest = 2 };

struct RequestHeader {
  uint32_t magic, type, key_len, value_len;
};
struct ReplyHeader {
  uint32_t status, value_len;
};

}  // namespace coll::bootstrap::store_wire
