// The life of an RC queue pair as pure logic: which transitions are legal and which attributes
// each one must set (the verbs glue maps them onto IBV_QP_* masks). Kept apart from libibverbs
// so it is unit-tested on machines without an RDMA device.
//
//   RESET -> INIT -> RTR (ready to receive) -> RTS (ready to send)
//   any -> ERROR (a failed work request, or closing); any -> RESET (to reuse the QP)
#pragma once

#include <cstdint>

#include "base/status.h"

namespace coll::transport::verbs {

enum class QpState { reset, init, rtr, rts, error };

const char* toString(QpState s);

// Attributes a transition sets, as flags (one per ibv_qp_attr field group).
enum QpAttr : uint32_t {
  kAttrState = 1u << 0,
  kAttrPkeyIndex = 1u << 1,
  kAttrPort = 1u << 2,
  kAttrAccessFlags = 1u << 3,
  kAttrPathMtu = 1u << 4,
  kAttrDestQpn = 1u << 5,
  kAttrRqPsn = 1u << 6,
  kAttrMaxDestRdAtomic = 1u << 7,
  kAttrMinRnrTimer = 1u << 8,
  kAttrAddressVector = 1u << 9,
  kAttrTimeout = 1u << 10,
  kAttrRetryCount = 1u << 11,
  kAttrRnrRetry = 1u << 12,
  kAttrSqPsn = 1u << 13,
  kAttrMaxQpRdAtomic = 1u << 14,
};

// The attributes RESET->INIT, INIT->RTR and RTR->RTS require (the IB spec's table for RC);
// other legal transitions need only kAttrState. 0 for an illegal transition.
uint32_t requiredAttributes(QpState from, QpState to);

// Tracks one QP's state; refuses illegal steps with an error naming both states and the peer.
class QpStateMachine {
 public:
  explicit QpStateMachine(int peer) : peer_(peer) {}
  QpState state() const { return state_; }
  // Validates from -> to; on success records `to` (call after ibv_modify_qp succeeded).
  Status transition(QpState to);
  // The steps from the current state to RTS, in order (empty when already there).
  int stepsToReady(QpState out[3]) const;

 private:
  int peer_;
  QpState state_ = QpState::reset;
};

}  // namespace coll::transport::verbs
