// Job-secret authentication for store and data connections: the acceptor sends a fresh random
// nonce; the connector answers with a keyed MAC (SipHash-2-4 keyed by the secret) over the
// nonce and its claimed identity. The secret never crosses the wire and a recorded answer is
// useless against a new nonce.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace coll::bootstrap {

using Nonce = std::array<uint8_t, 16>;

Nonce randomNonce();

// 64-bit MAC of message under a key derived from secret.
uint64_t computeMac(const std::string& secret, std::string_view message);

// A fresh random secret (hex), for collrun and collGetUniqueId.
std::string generateSecret();

}  // namespace coll::bootstrap
