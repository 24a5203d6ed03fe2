// collMemAlloc and memAlloc: the library's own host memory, which local peers map to read
// messages from it with one plain copy (transport/shm/shared_memory.h).
#include "coll/coll.h"
#include "coll/communicator.h"
#include "comm/c_api_error.h"
#include "transport/shm/shared_memory.h"

namespace {

using coll::transport::shm::SharedMemory;

collResult_t toResult(const coll::Status& st) {
  if (st.isOk()) return collSuccess;
  coll::capi::setLastError(st.message());
  return static_cast<collResult_t>(static_cast<int>(st.code()));
}

}  // namespace

collResult_t collMemAlloc(void** ptr, size_t size) { return toResult(SharedMemory::process().allocate(size, ptr)); }

collResult_t collMemFree(void* ptr) { return toResult(SharedMemory::process().release(ptr)); }

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
