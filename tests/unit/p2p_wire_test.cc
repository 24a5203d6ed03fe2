// The p2p envelope (src/p2p/wire.h): every field survives the trip, and whatever a peer
// could send wrong is refused with Mismatch naming it.
#include <gtest/gtest.h>

#include <cstring>
#include <limits>

#include "p2p/wire.h"

namespace coll::p2p {
namespace {

TEST(P2pWire, EveryFieldRoundTrips) {
  for (EnvelopeKind kind : {EnvelopeKind::eager, EnvelopeKind::rts, EnvelopeKind::cts, EnvelopeKind::data,
                            EnvelopeKind::credit, EnvelopeKind::withdrawn}) {
    WireEnvelope e{kind, 2147483647, 0xfedcba9876543210ull, kind == EnvelopeKind::eager ? kEagerLimit : 1ull << 40,
                   std::numeric_limits<uint64_t>::max(), 42};
    EnvelopeBuffer b = encode(e);
    WireEnvelope d;
    ASSERT_TRUE(decode(b.data(), b.size(), &d).isOk());
    EXPECT_EQ(d.kind, e.kind);
    EXPECT_EQ(d.tag, e.tag);
    EXPECT_EQ(d.seq, e.seq);
    EXPECT_EQ(d.bytes, e.bytes);
    EXPECT_EQ(d.send_id, e.send_id);
    EXPECT_EQ(d.recv_id, e.recv_id);
  }
}

TEST(P2pWire, OnlyEagerAndDataWithBytesCarryAPayload) {
  EXPECT_TRUE(hasPayload({EnvelopeKind::eager, 0, 0, 1, 0, 0}));
  EXPECT_FALSE(hasPayload({EnvelopeKind::eager, 0, 0, 0, 0, 0}));  // an empty message: nothing follows
  EXPECT_TRUE(hasPayload({EnvelopeKind::data, 0, 0, 1 << 20, 0, 0}));
  EXPECT_FALSE(hasPayload({EnvelopeKind::rts, 0, 0, 1 << 20, 0, 0}));
  EXPECT_FALSE(hasPayload({EnvelopeKind::cts, 0, 0, 1 << 20, 0, 0}));
  EXPECT_FALSE(hasPayload({EnvelopeKind::credit, 0, 0, 1 << 20, 0, 0}));
  EXPECT_FALSE(hasPayload({EnvelopeKind::withdrawn, 0, 0, 1 << 20, 0, 0}));
}

TEST(P2pWire, WhatAPeerCouldSendWrongIsRefusedByName) {
  WireEnvelope d;
  EnvelopeBuffer good = encode({EnvelopeKind::rts, 3, 1, 100, 7, 0});
  auto refused = [&](EnvelopeBuffer b, size_t length, const char* words) {
    Status st = decode(b.data(), length, &d);
    EXPECT_FALSE(st.isOk()) << words;
    EXPECT_EQ(st.code(), ErrorCode::Mismatch) << words;
    EXPECT_NE(st.message().find(words), std::string::npos) << st.message();
  };
  refused(good, 63, "63 bytes");
  EnvelopeBuffer b = good;
  b[0] ^= 1;
  refused(b, 64, "magic");
  b = good;
  b[4] = 9;
  refused(b, 64, "version 9");
  b = good;
  b[5] = 0;
  refused(b, 64, "unknown kind 0");
  b = good;
  b[5] = 7;
  refused(b, 64, "unknown kind 7");
  refused(encode({EnvelopeKind::eager, -1, 0, 8, 0, 0}), 64, "negative tag -1");
  refused(encode({EnvelopeKind::eager, 0, 0, kEagerLimit + 1, 0, 0}), 64, "over the");
}

}  // namespace
}  // namespace coll::p2p
