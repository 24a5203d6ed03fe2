// coll::memAlloc and memFree: the library's own host memory, which local peers map to read
// messages from it with one plain copy (transport/shm/shared_memory.h). collMemAlloc and
// collMemFree (c_api.cc) call these.
#include "coll/communicator.h"
#include "transport/shm/shared_memory.h"

namespace coll {

void* memAlloc(size_t bytes) {
  void* p = nullptr;
  Status st = transport::shm::SharedMemory::process().allocate(bytes, &p);
  if (!st) throw st.toError("");
  return p;
}

void memFree(void* ptr) {
  Status st = transport::shm::SharedMemory::process().release(ptr);
  if (!st) throw st.toError("");
}

}  // namespace coll
