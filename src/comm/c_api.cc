// The NCCL-shaped C API over coll::Communicator. Errors become collResult_t, and their text
// is kept per thread for collGetLastError.
#include <algorithm>
#include <cstring>
#include <mutex>
#include <set>
#include <vector>

#include "bootstrap/auth.h"
#include "bootstrap/hosted_store.h"
#include "coll/coll.h"
#include "coll/communicator.h"
#include "base/log.h"
#include "comm/c_api_error.h"
#include "cuda/runtime.h"

struct collComm {
  std::unique_ptr<coll::Communicator> comm;
};
struct collRequest {
  coll::Work work;
};

namespace {

constexpr uint32_t kUniqueIdMagic = 0x31444943;  // "CID1"
struct UniqueIdLayout {
  uint32_t magic;
  char store[62];   // "host:port"
  char secret[62];
};
static_assert(sizeof(UniqueIdLayout) <= COLL_UNIQUE_ID_BYTES);

thread_local std::string g_last_error;

// Communicators alive now: lets a call on a destroyed handle fail cleanly instead of crashing.
std::mutex g_live_mu;
std::set<collComm_t> g_live;

collResult_t toResult(coll::ErrorCode code) { return static_cast<collResult_t>(static_cast<int>(code)); }

collResult_t failWith(collResult_t r, const std::string& message) {
  coll::capi::setLastError(message);
  return r;
}

collResult_t invalid(const std::string& message) { return failWith(collInvalidArgument, message); }

template <typename Fn>
collResult_t guarded(Fn&& fn) {
  try {
    return fn();
  } catch (const coll::Error& e) {
    return failWith(toResult(e.code()), e.what());
  } catch (const std::exception& e) {
    return failWith(collInternalError, e.what());
  }
}

bool isLive(collComm_t comm) {
  std::lock_guard<std::mutex> lock(g_live_mu);
  return g_live.count(comm) != 0;
}

collResult_t checkComm(collComm_t comm, const char* op) {
  if (!comm) return invalid(std::string(op) + ": null communicator");
  if (!isLive(comm)) return invalid(std::string(op) + ": communicator was destroyed or aborted (use after destroy)");
  return collSuccess;
}

collResult_t adopt(std::unique_ptr<coll::Communicator> c, collComm_t* out) {
  auto* handle = new collComm{std::move(c)};
  std::lock_guard<std::mutex> lock(g_live_mu);
  g_live.insert(handle);
  *out = handle;
  return collSuccess;
}

bool forget(collComm_t comm) {
  std::lock_guard<std::mutex> lock(g_live_mu);
  return g_live.erase(comm) != 0;
}

collResult_t finishBlocking(coll::Work work) {
  work.wait();
  return collSuccess;
}

// Inside collGroupStart/End: the communicators joined and the ops issued, waited at the end.
thread_local int g_group_depth = 0;
thread_local std::vector<collComm_t> g_group_comms;
thread_local std::vector<coll::Work> g_group_works;

// Without a stream: issue the op and wait for it (inside a group: join the group and wait at
// collGroupEnd). With a CUDA stream, as in NCCL: the op is ordered on the stream and the call
// returns once it is queued; a later failure is reported by collCommGetAsyncError.
template <typename Issue>
collResult_t blocking(const char* name, collComm_t comm, collStream_t stream, Issue&& issue) {
  if (stream && !coll::cuda::built())
    return failWith(collUnsupported, std::string(name) + ": CUDA streams need a CUDA build of coll");
  if (collResult_t r = checkComm(comm, name); r != collSuccess) return r;
  if (stream && g_group_depth == 0) return guarded([&] {
    (void)issue(*comm->comm);
    return collSuccess;
  });
  if (g_group_depth == 0) return guarded([&] { return finishBlocking(issue(*comm->comm)); });
  return guarded([&] {
    if (std::find(g_group_comms.begin(), g_group_comms.end(), comm) == g_group_comms.end()) {
      comm->comm->groupStart();
      g_group_comms.push_back(comm);
    }
    coll::Work work = issue(*comm->comm);
    if (!stream) g_group_works.push_back(std::move(work));
    return collSuccess;
  });
}

coll::DataType dataType(collDataType_t t) { return static_cast<coll::DataType>(t); }
coll::ReduceOp reduceOp(collRedOp_t op) { return static_cast<coll::ReduceOp>(op); }

}  // namespace

void coll::capi::setLastError(const std::string& message) { g_last_error = message; }

extern "C" {

const char* collGetErrorString(collResult_t r) {
  switch (r) {
    case collSuccess: return "no error";
    case collTimeout: return "timeout: a deadline expired (COLL_TIMEOUT)";
    case collPeerLost: return "peer lost: a rank closed its connection, crashed or aborted";
    case collMismatch: return "mismatch: ranks disagree about the collective call";
    case collInvalidArgument: return "invalid argument";
    case collUnsupported: return "unsupported by this build or machine";
    case collTransportError: return "transport error";
    case collInternalError: return "internal error";
    case collInProgress: return "operation in progress";
  }
  return "unknown result code";
}

const char* collGetLastError(void) { return g_last_error.c_str(); }

collResult_t collGetUniqueId(collUniqueId* id) {
  if (!id) return invalid("collGetUniqueId: null id");
  return guarded([&] {
    UniqueIdLayout l{};
    l.magic = kUniqueIdMagic;
    std::string secret = coll::bootstrap::generateSecret(), address;
    coll::Status st = coll::bootstrap::startHostedStore(secret, false, &address);
    if (!st) return failWith(toResult(st.code()), "collGetUniqueId: " + st.message());
    std::snprintf(l.store, sizeof l.store, "%s", address.c_str());
    std::snprintf(l.secret, sizeof l.secret, "%s", secret.c_str());
    std::memset(id->internal, 0, sizeof id->internal);
    std::memcpy(id->internal, &l, sizeof l);
    return collSuccess;
  });
}

collResult_t collMemAlloc(void** ptr, size_t size) {
  if (!ptr) return invalid("collMemAlloc: null pointer for the result");
  return guarded([&] {
    *ptr = coll::memAlloc(size);
    return collSuccess;
  });
}

collResult_t collMemFree(void* ptr) {
  return guarded([&] {
    coll::memFree(ptr);
    return collSuccess;
  });
}

// Parenthesised names: coll.h's macros of the same names (the versioned calls) stay out.
collResult_t (collCommInitRank)(collComm_t* comm, int nranks, collUniqueId id, int rank) {
  if (!comm) return invalid("collCommInitRank: null comm pointer");
  if (nranks < 1 || rank < 0 || rank >= nranks)
    return invalid(coll::format("collCommInitRank: rank %d of %d is out of range", rank, nranks));
  UniqueIdLayout l;
  std::memcpy(&l, id.internal, sizeof l);
  if (l.magic != kUniqueIdMagic || !std::memchr(l.store, 0, sizeof l.store) || !std::memchr(l.secret, 0, sizeof l.secret))
    return invalid("collCommInitRank: the unique id is not one collGetUniqueId made");
  return guarded([&] {
    coll::CommOptions o;
    o.rank = rank;
    o.size = nranks;
    o.store_address = l.store;
    o.secret = l.secret;
    return adopt(coll::Communicator::create(o), comm);
  });
}

collResult_t (collCommInitFromEnv)(collComm_t* comm) {
  if (!comm) return invalid("collCommInitFromEnv: null comm pointer");
  return guarded([&] { return adopt(coll::Communicator::fromEnvironment(), comm); });
}

collResult_t collCommDestroy(collComm_t comm) {
  if (collResult_t r = checkComm(comm, "collCommDestroy"); r != collSuccess) return r;
  forget(comm);
  return guarded([&] { delete comm; return collSuccess; });
}

collResult_t collCommAbort(collComm_t comm) {
  if (collResult_t r = checkComm(comm, "collCommAbort"); r != collSuccess) return r;
  forget(comm);
  return guarded([&] {
    comm->comm->abort();
    delete comm;
    return collSuccess;
  });
}

collResult_t collCommShrink(collComm_t comm, const int* excludeRanks, int excludeCount, collComm_t* newcomm) {
  if (collResult_t r = checkComm(comm, "collCommShrink"); r != collSuccess) return r;
  if (!newcomm) return invalid("collCommShrink: null newcomm pointer");
  if (excludeCount < 0 || (excludeCount > 0 && !excludeRanks))
    return invalid(coll::format("collCommShrink: %d excluded ranks at %p", excludeCount, static_cast<const void*>(excludeRanks)));
  return guarded([&] {
    std::vector<int> excluded(excludeRanks, excludeRanks + excludeCount);
    return adopt(comm->comm->shrink(excluded), newcomm);
  });
}

namespace {

collResult_t copyRanks(const std::vector<int>& ranks, int* out, int capacity, int* count, const char* call) {
  if (!count) return invalid(coll::format("%s: null count pointer", call));
  if (capacity < 0 || (capacity > 0 && !out))
    return invalid(coll::format("%s: capacity %d at %p", call, capacity, static_cast<void*>(out)));
  for (int i = 0; i < capacity && i < static_cast<int>(ranks.size()); ++i) out[i] = ranks[static_cast<size_t>(i)];
  *count = static_cast<int>(ranks.size());
  return collSuccess;
}

}  // namespace

collResult_t collCommFailedRanks(collComm_t comm, int* ranks, int capacity, int* count) {
  if (collResult_t r = checkComm(comm, "collCommFailedRanks"); r != collSuccess) return r;
  if (!count || capacity < 0 || (capacity > 0 && !ranks)) return copyRanks({}, ranks, capacity, count, "collCommFailedRanks");
  return guarded([&] { return copyRanks(comm->comm->failedRanks(), ranks, capacity, count, "collCommFailedRanks"); });
}

collResult_t collCommAgree(collComm_t comm, uint64_t* value, int* failedRanks, int capacity, int* failedCount) {
  if (collResult_t r = checkComm(comm, "collCommAgree"); r != collSuccess) return r;
  if (!value) return invalid("collCommAgree: null value pointer");
  if (!failedCount || capacity < 0 || (capacity > 0 && !failedRanks))
    return copyRanks({}, failedRanks, capacity, failedCount, "collCommAgree");
  return guarded([&] {
    coll::AgreeResult result = comm->comm->agree(*value);
    *value = result.value;
    return copyRanks(result.failed_ranks, failedRanks, capacity, failedCount, "collCommAgree");
  });
}

collResult_t collCommRevoke(collComm_t comm) {
  if (collResult_t r = checkComm(comm, "collCommRevoke"); r != collSuccess) return r;
  return guarded([&] {
    comm->comm->revoke();
    return collSuccess;
  });
}

collResult_t collCommShrinkSurvivors(collComm_t comm, collComm_t* newcomm) {
  if (collResult_t r = checkComm(comm, "collCommShrinkSurvivors"); r != collSuccess) return r;
  if (!newcomm) return invalid("collCommShrinkSurvivors: null newcomm pointer");
  return guarded([&] { return adopt(comm->comm->shrink(), newcomm); });
}

collResult_t collCommGrow(collComm_t comm, collComm_t* newcomm) {
  if (collResult_t r = checkComm(comm, "collCommGrow"); r != collSuccess) return r;
  if (!newcomm) return invalid("collCommGrow: null newcomm pointer");
  return guarded([&] { return adopt(comm->comm->grow(), newcomm); });
}

collResult_t collCommJoin(collComm_t* newcomm, const char* storeAddress, const char* secret, const char* name) {
  if (!newcomm) return invalid("collCommJoin: null newcomm pointer");
  if (!storeAddress) return invalid("collCommJoin: null store address");
  return guarded([&] {
    coll::CommOptions o;
    o.store_address = storeAddress;
    if (secret) o.secret = secret;
    if (name) o.name = name;
    return adopt(coll::Communicator::join(o), newcomm);
  });
}

collResult_t collCommSplit(collComm_t comm, int color, int key, collComm_t* newcomm) {
  if (collResult_t r = checkComm(comm, "collCommSplit"); r != collSuccess) return r;
  if (!newcomm) return invalid("collCommSplit: null newcomm pointer");
  return guarded([&] {
    std::unique_ptr<coll::Communicator> split = comm->comm->split(color, key);
    if (!split) {
      *newcomm = nullptr;
      return collSuccess;
    }
    return adopt(std::move(split), newcomm);
  });
}

collResult_t collCommGetAsyncError(collComm_t comm, collResult_t* asyncError) {
  if (collResult_t r = checkComm(comm, "collCommGetAsyncError"); r != collSuccess) return r;
  if (!asyncError) return invalid("collCommGetAsyncError: null result pointer");
  auto e = comm->comm->asyncError();
  *asyncError = e ? toResult(e->code()) : collSuccess;
  if (e) g_last_error = e->what();
  return collSuccess;
}

collResult_t collCommCount(const collComm_t comm, int* count) {
  if (collResult_t r = checkComm(comm, "collCommCount"); r != collSuccess) return r;
  if (!count) return invalid("collCommCount: null count pointer");
  *count = comm->comm->size();
  return collSuccess;
}

collResult_t collCommUserRank(const collComm_t comm, int* rank) {
  if (collResult_t r = checkComm(comm, "collCommUserRank"); r != collSuccess) return r;
  if (!rank) return invalid("collCommUserRank: null rank pointer");
  *rank = comm->comm->rank();
  return collSuccess;
}

collResult_t collAllReduceAsync(const void* send, void* recv, size_t count, collDataType_t type, collRedOp_t op,
                                collComm_t comm, collRequest_t* request) {
  if (collResult_t r = checkComm(comm, "collAllReduce"); r != collSuccess) return r;
  if (!request) return invalid("collAllReduceAsync: null request pointer");
  return guarded([&] {
    coll::Work w = comm->comm->allreduce(send, recv, count, static_cast<coll::DataType>(type), static_cast<coll::ReduceOp>(op));
    *request = new collRequest{w};
    return collSuccess;
  });
}

collResult_t collIsend(const void* send, size_t count, collDataType_t type, int peer, int tag, collComm_t comm,
                       collRequest_t* request) {
  if (collResult_t r = checkComm(comm, "collIsend"); r != collSuccess) return r;
  if (!request) return invalid("collIsend: null request pointer");
  return guarded([&] {
    *request = new collRequest{comm->comm->send(send, count, dataType(type), peer, tag)};
    return collSuccess;
  });
}

collResult_t collIrecv(void* recv, size_t count, collDataType_t type, int peer, int tag, collComm_t comm,
                       collRequest_t* request) {
  if (collResult_t r = checkComm(comm, "collIrecv"); r != collSuccess) return r;
  if (!request) return invalid("collIrecv: null request pointer");
  return guarded([&] {
    *request = new collRequest{comm->comm->recv(recv, count, dataType(type), peer, tag)};
    return collSuccess;
  });
}

collResult_t collRequestSource(collRequest_t request, int* source) {
  if (!request) return invalid("collRequestSource: null request");
  if (!source) return invalid("collRequestSource: null source pointer");
  if (!request->work.test()) return collInProgress;  // not finished yet
  *source = request->work.source();
  return collSuccess;
}

collResult_t collBroadcastAsync(const void* send, void* recv, size_t count, collDataType_t type, int root,
                                collComm_t comm, collRequest_t* request) {
  if (collResult_t r = checkComm(comm, "collBroadcast"); r != collSuccess) return r;
  if (!request) return invalid("collBroadcastAsync: null request pointer");
  return guarded([&] {
    *request = new collRequest{comm->comm->broadcast(send, recv, count, static_cast<coll::DataType>(type), root)};
    return collSuccess;
  });
}

collResult_t collAllReduce(const void* send, void* recv, size_t count, collDataType_t type, collRedOp_t op,
                           collComm_t comm, collStream_t stream) {
  return blocking("collAllReduce", comm, stream, [&](coll::Communicator& c) {
    return c.allreduce(send, recv, count, dataType(type), reduceOp(op), stream);
  });
}

collResult_t collBroadcast(const void* send, void* recv, size_t count, collDataType_t type, int root, collComm_t comm,
                           collStream_t stream) {
  return blocking("collBroadcast", comm, stream,
                  [&](coll::Communicator& c) { return c.broadcast(send, recv, count, dataType(type), root, stream); });
}

collResult_t collReduce(const void* send, void* recv, size_t count, collDataType_t type, collRedOp_t op, int root,
                        collComm_t comm, collStream_t stream) {
  return blocking("collReduce", comm, stream, [&](coll::Communicator& c) {
    return c.reduce(send, recv, count, dataType(type), reduceOp(op), root, stream);
  });
}

collResult_t collAllGather(const void* send, void* recv, size_t sendcount, collDataType_t type, collComm_t comm,
                           collStream_t stream) {
  return blocking("collAllGather", comm, stream,
                  [&](coll::Communicator& c) { return c.allgather(send, recv, sendcount, dataType(type), stream); });
}

collResult_t collReduceScatter(const void* send, void* recv, size_t recvcount, collDataType_t type, collRedOp_t op,
                               collComm_t comm, collStream_t stream) {
  return blocking("collReduceScatter", comm, stream, [&](coll::Communicator& c) {
    return c.reduceScatter(send, recv, recvcount, dataType(type), reduceOp(op), stream);
  });
}

collResult_t collAlltoAll(const void* send, void* recv, size_t count, collDataType_t type, collComm_t comm,
                          collStream_t stream) {
  return blocking("collAlltoAll", comm, stream,
                  [&](coll::Communicator& c) { return c.alltoall(send, recv, count, dataType(type), stream); });
}

collResult_t collGather(const void* send, void* recv, size_t sendcount, collDataType_t type, int root,
                        collComm_t comm, collStream_t stream) {
  return blocking("collGather", comm, stream,
                  [&](coll::Communicator& c) { return c.gather(send, recv, sendcount, dataType(type), root, stream); });
}

collResult_t collScatter(const void* send, void* recv, size_t recvcount, collDataType_t type, int root,
                         collComm_t comm, collStream_t stream) {
  return blocking("collScatter", comm, stream,
                  [&](coll::Communicator& c) { return c.scatter(send, recv, recvcount, dataType(type), root, stream); });
}

collResult_t collSend(const void* send, size_t count, collDataType_t type, int peer, collComm_t comm,
                      collStream_t stream) {
  return blocking("collSend", comm, stream,
                  [&](coll::Communicator& c) { return c.send(send, count, dataType(type), peer, stream); });
}

collResult_t collRecv(void* recv, size_t count, collDataType_t type, int peer, collComm_t comm, collStream_t stream) {
  return blocking("collRecv", comm, stream,
                  [&](coll::Communicator& c) { return c.recv(recv, count, dataType(type), peer, stream); });
}

collResult_t collBarrier(collComm_t comm, collStream_t stream) {
  if (stream) return failWith(collUnsupported, "collBarrier: a barrier is not ordered on a CUDA stream; pass NULL");
  return blocking("collBarrier", comm, nullptr, [](coll::Communicator& c) { return c.barrier(); });
}

collResult_t collRequestTest(collRequest_t request) {
  if (!request) return invalid("collRequestTest: null request");
  return guarded([&] {
    if (!request->work.test()) return collInProgress;
    auto e = request->work.error();
    return e ? failWith(toResult(e->code()), e->what()) : collSuccess;
  });
}

collResult_t collRequestWait(collRequest_t request, long timeout_ms) {
  if (!request) return invalid("collRequestWait: null request");
  return guarded([&] {
    if (timeout_ms < 0) {
      request->work.wait();
      return collSuccess;
    }
    return request->work.wait(std::chrono::milliseconds(timeout_ms)) ? collSuccess : collInProgress;
  });
}

collResult_t collRequestFree(collRequest_t request) {
  delete request;
  return collSuccess;
}

collResult_t collGroupStart(void) {
  ++g_group_depth;
  return collSuccess;
}

collResult_t collGroupEnd(void) {
  if (g_group_depth == 0) return invalid("collGroupEnd without collGroupStart");
  if (--g_group_depth > 0) return collSuccess;
  std::vector<collComm_t> comms;
  std::vector<coll::Work> works;
  comms.swap(g_group_comms);
  works.swap(g_group_works);
  return guarded([&] {
    for (collComm_t c : comms)
      if (isLive(c)) c->comm->groupEnd();
    collResult_t first = collSuccess;
    for (const coll::Work& w : works) {
      collResult_t r = guarded([&] { return finishBlocking(w); });
      if (first == collSuccess) first = r;
    }
    return first;
  });
}

}  // extern "C"
