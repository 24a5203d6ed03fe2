// The verbs transport over the unit tests' fake NICs (unit/fake_verbs_device.h), as a
// transport under test for the suites of tests/transport (connection_conformance.h) and
// tests/p2p: the real protocol (chunks, credits, goodbyes, the registration cache) with every
// verbs call answered by an in-memory fabric instead of an RDMA device.
//
// The fabric lives in one process, so the ranks run as threads of one forked process
// (TransportUnderTest::threads). It is made on first use inside that process: the gtest
// process never touches it, so every case's process starts from an empty fabric.
#pragma once

#include <string>
#include <utility>

#include "transport/connection_conformance.h"
#include "transport/verbs/transport.h"
#include "unit/fake_verbs_device.h"

namespace coll::test {

inline transport::verbs::fake::FakeFabric& caseFabric() {
  static transport::verbs::fake::FakeFabric fabric;  // the case's process's alone (see above)
  return fabric;
}

inline TransportUnderTest verbsOnFakeNics(std::string name, transport::verbs::VerbsOptions options) {
  TransportUnderTest t;
  t.name = std::move(name);
  t.create = [options](const Config& c, const PeerDirectory& d, const std::vector<int>&,
                       std::unique_ptr<Transport>* out) {
    transport::verbs::fake::FakeNic* nic = nullptr;
    return transport::verbs::createTransportOver(c, d, caseFabric().addNic("rank" + std::to_string(d.rank), &nic),
                                                 options, out);
  };
  t.threads = true;
  return t;
}

// The options the suites run with: the transport's own (16 slots of 128 KiB), and a window of
// two 4 KiB slots, so every message of more than a few KiB waits for credits many times.
inline transport::verbs::VerbsOptions defaultVerbsWindow() { return {}; }
inline transport::verbs::VerbsOptions tinyVerbsWindow() {
  transport::verbs::VerbsOptions o;
  o.credits = 2;
  o.chunk_bytes = 4096;
  o.registration_cache_bytes = 64 << 20;
  return o;
}

}  // namespace coll::test
