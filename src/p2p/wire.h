// The envelope of the point-to-point channel (docs/design/p2p_progress.md, step 2): every
// message on a peer's p2p connection is one fixed-size envelope, sometimes followed by one
// payload message. The receiver keeps an envelope receive posted on every connection at all
// times, so what arrives is always read; the envelope says what it is and whether a payload
// follows, so the next receive posted has the right size.
//   EAGER  a small message: the payload follows at once.
//   RTS    ready to send: a large message waits until the receiver has matched a buffer.
//   CTS    clear to send, receiver to sender: the buffer for message `send_id` is `recv_id`.
//   DATA   the payload of a large message follows (after CTS).
//   CREDIT receiver to sender: `bytes` of eager messages were handed to receives here.
//   WITHDRAWN sender to receiver, the answer to a CTS for a send the sender gave up past its
//          deadline (its RTS was out, nobody had matched it): receive `recv_id` gets nothing.
// Decoding validates everything a peer controls (magic, kind, sizes), since a connection's
// peer passed the job secret but may still be a different build or broken.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

#include "base/status.h"

namespace coll::p2p {

enum class EnvelopeKind : uint8_t { eager = 1, rts = 2, cts = 3, data = 4, credit = 5, withdrawn = 6 };

struct WireEnvelope {
  EnvelopeKind kind = EnvelopeKind::eager;
  int32_t tag = 0;
  uint64_t seq = 0;      // the sender's sequence number for (receiver, tag), from 0
  uint64_t bytes = 0;    // the message's size (the payload that follows, for eager and data)
  uint64_t send_id = 0;  // the sender's handle of the message
  uint64_t recv_id = 0;  // cts, data and withdrawn: the receiver's handle of the matched receive
};

inline constexpr size_t kEnvelopeBytes = 64;
using EnvelopeBuffer = std::array<uint8_t, kEnvelopeBytes>;

// Messages of at most this many bytes go eager; larger ones wait for a matched buffer.
inline constexpr uint64_t kEagerLimit = 64 << 10;

// Whether a payload message follows this envelope on the same connection.
bool hasPayload(const WireEnvelope& envelope);

EnvelopeBuffer encode(const WireEnvelope& envelope);

// The envelope, or Mismatch naming what is wrong (another protocol, an unknown kind, an eager
// message over the eager limit, a negative tag).
Status decode(const uint8_t* bytes, size_t length, WireEnvelope* out);

}  // namespace coll::p2p
