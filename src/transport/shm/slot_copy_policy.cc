#include "transport/shm/slot_copy_policy.h"

namespace coll::transport::shm {

bool SlotCopyPolicy::streams(size_t bytes, bool timeable, bool* timed) {
  *timed = false;
  if (bytes < kMinBytes) return false;
  return choice_.pick(timeable, timed);
}

}  // namespace coll::transport::shm
