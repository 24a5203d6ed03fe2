#include "transport/verbs/qp_state.h"

#include "base/log.h"

namespace coll::transport::verbs {

const char* toString(QpState s) {
  switch (s) {
    case QpState::reset: return "RESET";
    case QpState::init: return "INIT";
    case QpState::rtr: return "RTR";
    case QpState::rts: return "RTS";
    case QpState::error: return "ERROR";
  }
  return "?";
}

uint32_t requiredAttributes(QpState from, QpState to) {
  if (to == QpState::error || to == QpState::reset) return kAttrState;
  if (from == QpState::reset && to == QpState::init) return kAttrState | kAttrPkeyIndex | kAttrPort | kAttrAccessFlags;
  if (from == QpState::init && to == QpState::rtr)
    return kAttrState | kAttrAddressVector | kAttrPathMtu | kAttrDestQpn | kAttrRqPsn | kAttrMaxDestRdAtomic |
           kAttrMinRnrTimer;
  if (from == QpState::rtr && to == QpState::rts)
    return kAttrState | kAttrTimeout | kAttrRetryCount | kAttrRnrRetry | kAttrSqPsn | kAttrMaxQpRdAtomic;
  if (from == QpState::rts && to == QpState::rts) return kAttrState;  // e.g. changing timeouts
  return 0;
}

Status QpStateMachine::transition(QpState to) {
  if (requiredAttributes(state_, to) == 0)
    return internalError(format("verbs: queue pair to peer %d cannot go from %s to %s", peer_, toString(state_),
                                toString(to)));
  state_ = to;
  return Status::ok();
}

int QpStateMachine::stepsToReady(QpState out[3]) const {
  int n = 0;
  switch (state_) {
    case QpState::reset: out[n++] = QpState::init; [[fallthrough]];
    case QpState::init: out[n++] = QpState::rtr; [[fallthrough]];
    case QpState::rtr: out[n++] = QpState::rts; break;
    case QpState::rts: break;
    case QpState::error: break;  // must go through RESET first: the caller decides
  }
  return n;
}

}  // namespace coll::transport::verbs
