// COLL_CHECK=1: before a collective moves any data, every rank's fingerprint of the call (op,
// dtype, count, root, reduction, algorithm) goes to every rank in a 32-byte all-gather over
// the op's own connections, tagged apart from the op itself. Ranks that disagree all see the
// same table, so every one of them refuses the op with the same Mismatch naming the ranks and
// their calls, and since no data moved the communicator stays usable.
//
// Set on every rank or on none: a rank without it sends the op where its peers expect the
// check, which the transport's tag check reports as a Mismatch that breaks the communicator.
// Point-to-point ops and groups are not checked (only the pair involved could compare).
#pragma once

#include <functional>
#include <vector>

#include "exec/executor.h"
#include "comm/ledger.h"
#include "select/selector.h"

namespace coll {

// The wire kind of the check's messages; OpKind values stay below it.
constexpr uint8_t kCallCheckWireKind = 0xC0;

using RunSchedule = std::function<Status(const algo::Schedule&, ExecContext&)>;

// Exchanges fingerprints (p carries rank, size, hosts, slice size) and compares them. Progress
// thread. A transport failure comes back as is; a disagreement as a Mismatch naming every
// rank's call, grouped, with *disagreed set (a transport's own Mismatch leaves it false).
Status checkCall(const OpFingerprint& mine, uint64_t wire_sequence, algo::BuildParams p, select::Selector& selector,
                 const RunSchedule& run, bool* disagreed);

// The comparison alone: Mismatch listing who called what when `all` holds more than one call.
Status compareCalls(const std::vector<OpFingerprint>& all, int self);

}  // namespace coll
