/* The C API, shaped like NCCL's so that code written for NCCL changes little.
 * Every call returns a collResult_t; collGetErrorString and collGetLastError explain it. */
#ifndef COLL_COLL_H_
#define COLL_COLL_H_

#include <stddef.h>
#include <stdint.h>

#include "coll/export.h"
#include "coll/version.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  collSuccess = 0,
  collTimeout = 1,
  collPeerLost = 2,
  collMismatch = 3,
  collInvalidArgument = 4,
  collUnsupported = 5,
  collTransportError = 6,
  collInternalError = 7,
  collInProgress = 8,
} collResult_t;

typedef enum {
  collFloat32 = 0, collFloat64, collFloat16, collBfloat16, collInt8,
  collUint8, collInt32, collUint32, collInt64, collUint64,
  /* NCCL spellings */
  collFloat = collFloat32, collDouble = collFloat64, collHalf = collFloat16,
  /* Not types. They give the enum the whole int range, so whatever int a C caller passes is a
   * value C++ can hold: refused as unknown (collInvalidArgument), not undefined behaviour. */
  collDataTypeIntMin_ = -0x7fffffff - 1, collDataTypeIntMax_ = 0x7fffffff,
} collDataType_t;

typedef enum {
  collSum = 0, collProd, collMin, collMax, collAvg,
  collRedOpIntMin_ = -0x7fffffff - 1, collRedOpIntMax_ = 0x7fffffff, /* not ops: as above */
} collRedOp_t;

#define COLL_UNIQUE_ID_BYTES 128
/* Rank 0 makes one with collGetUniqueId and ships it to the others (e.g. via MPI_Bcast).
 * It holds the store's address and the job secret: treat it as a credential. */
typedef struct { char internal[COLL_UNIQUE_ID_BYTES]; } collUniqueId;

typedef struct collComm* collComm_t;
typedef struct collRequest* collRequest_t;
/* A cudaStream_t where CUDA is used; NULL: the call completes before it returns. */
typedef void* collStream_t;

COLL_API const char* collGetErrorString(collResult_t result);
/* The message of the last failed call on this thread (op, ranks, cause). */
COLL_API const char* collGetLastError(void);

/* Starts a rendezvous store in this process (the caller must be rank 0). */
COLL_API collResult_t collGetUniqueId(collUniqueId* uniqueId);
COLL_API collResult_t collCommInitRank(collComm_t* comm, int nranks, collUniqueId commId, int rank);
/* rank, size and rendezvous from the launcher: collrun, torchrun, mpirun, srun. */
COLL_API collResult_t collCommInitFromEnv(collComm_t* comm);
/* The library's COLL_VERSION_CODE (as ncclGetVersion): compare it with the header's. */
COLL_API collResult_t collGetVersion(int* version);
/* Host memory from the library, as ncclMemAlloc or MPI_Alloc_mem: zeroed, page-aligned, and
 * mappable by the ranks on the same host, so that a large message sent from it to one of them
 * is read with one plain copy instead of a kernel copy (process_vm_readv). Every call takes any
 * buffer; these are faster to send from. A forked child shares the pages with its parent.
 * collMemFree takes exactly what collMemAlloc returned (NULL: nothing), after every op using
 * it has completed. */
COLL_API collResult_t collMemAlloc(void** ptr, size_t size);
COLL_API collResult_t collMemFree(void* ptr);
/* What a program's collCommInitRank(...) and collCommInitFromEnv(...) calls become (the macros
 * below): the header's version travels with the call, and a library of another major version
 * is refused with collUnsupported and a message naming both versions and the library's file.
 * The plain functions above stay exported for dlsym and function pointers, unchecked. */
COLL_API collResult_t collCommInitRankVersioned(collComm_t* comm, int nranks, collUniqueId commId, int rank,
                                                int headerVersion);
COLL_API collResult_t collCommInitFromEnvVersioned(collComm_t* comm, int headerVersion);
#ifndef COLL_NO_INIT_VERSION_CHECK
#define collCommInitRank(comm, nranks, commId, rank) \
  collCommInitRankVersioned((comm), (nranks), (commId), (rank), COLL_VERSION_CODE)
#define collCommInitFromEnv(comm) collCommInitFromEnvVersioned((comm), COLL_VERSION_CODE)
#endif
/* Waits for queued ops, then frees. */
COLL_API collResult_t collCommDestroy(collComm_t comm);
/* Fails pending ops, disconnects and frees; returns in bounded time. */
COLL_API collResult_t collCommAbort(collComm_t comm);
/* After a failure the survivors make *newcomm without excludeRanks (like ncclCommShrink):
 * every survivor passes the same ranks; comm stays valid until destroyed or aborted. */
COLL_API collResult_t collCommShrink(collComm_t comm, const int* excludeRanks, int excludeCount, collComm_t* newcomm);
/* Fault tolerance with ULFM's guarantees (Communicator::failedRanks, agree, revoke, shrink()).
 * collCommFailedRanks: the ranks known failed, sorted; writes at most capacity of them and
 * sets *count to how many there are. collCommAgree: *value in, the AND of the survivors'
 * values out; the agreed failed ranks as collCommFailedRanks writes them (ranks may be NULL
 * when capacity is 0). collCommRevoke: every pending and future op fails, on every rank.
 * collCommShrinkSurvivors: the survivors agree on who is alive and make *newcomm of them. */
COLL_API collResult_t collCommFailedRanks(collComm_t comm, int* ranks, int capacity, int* count);
COLL_API collResult_t collCommAgree(collComm_t comm, uint64_t* value, int* failedRanks, int capacity, int* failedCount);
COLL_API collResult_t collCommRevoke(collComm_t comm);
COLL_API collResult_t collCommShrinkSurvivors(collComm_t comm, collComm_t* newcomm);
/* Growing back: the members call collCommGrow together and get *newcomm of the members and
 * every process waiting in collCommJoin (ranks after the members'); collCommJoin makes the
 * joiner's side, through the job's store ("host:port"), secret (NULL: COLL_JOB_SECRET) and
 * the name of its first communicator (NULL: "world"). */
COLL_API collResult_t collCommGrow(collComm_t comm, collComm_t* newcomm);
COLL_API collResult_t collCommJoin(collComm_t* newcomm, const char* storeAddress, const char* secret, const char* name);
/* Like ncclCommSplit / MPI_Comm_split: every rank of comm calls it; ranks with the same color
 * form *newcomm, ranked by key then by their rank in comm; COLL_SPLIT_NOCOLOR gets NULL. */
#define COLL_SPLIT_NOCOLOR (-1)
COLL_API collResult_t collCommSplit(collComm_t comm, int color, int key, collComm_t* newcomm);
COLL_API collResult_t collCommGetAsyncError(collComm_t comm, collResult_t* asyncError);
COLL_API collResult_t collCommCount(const collComm_t comm, int* count);
COLL_API collResult_t collCommUserRank(const collComm_t comm, int* rank);

/* With stream == NULL these return once the op completed (or failed). */
COLL_API collResult_t collAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                           collDataType_t datatype, collRedOp_t op, collComm_t comm,
                           collStream_t stream);
COLL_API collResult_t collBroadcast(const void* sendbuff, void* recvbuff, size_t count,
                           collDataType_t datatype, int root, collComm_t comm,
                           collStream_t stream);
/* Counts follow NCCL: collAllGather and collGather take the count each rank sends,
 * collReduceScatter and collScatter the count each rank receives, collAlltoAll the count
 * exchanged with each peer (send and receive hold nranks times that). In place as in NCCL:
 * allgather/gather (root) sendbuff == recvbuff + rank * sendcount; reducescatter/scatter (root)
 * recvbuff == sendbuff + rank * recvcount; reduce sendbuff == recvbuff. collAlltoAll in place
 * is collInvalidArgument. recvbuff of collReduce and collGather and sendbuff of collScatter
 * are used on the root only (NULL elsewhere is fine). */
COLL_API collResult_t collReduce(const void* sendbuff, void* recvbuff, size_t count, collDataType_t datatype,
                        collRedOp_t op, int root, collComm_t comm, collStream_t stream);
COLL_API collResult_t collAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                           collDataType_t datatype, collComm_t comm, collStream_t stream);
COLL_API collResult_t collReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                               collDataType_t datatype, collRedOp_t op, collComm_t comm,
                               collStream_t stream);
/* NCCL (2.28+) spells it ncclAlltoAll. */
COLL_API collResult_t collAlltoAll(const void* sendbuff, void* recvbuff, size_t count,
                          collDataType_t datatype, collComm_t comm, collStream_t stream);
COLL_API collResult_t collGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                        collDataType_t datatype, int root, collComm_t comm, collStream_t stream);
COLL_API collResult_t collScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                         collDataType_t datatype, int root, collComm_t comm, collStream_t stream);
/* Point-to-point with tag 0, matched in issue order per pair and direction; the sizes must
 * agree. Host buffers progress on their own, so two ranks may both post a receive before
 * their send (collIrecv, collIsend); a blocking collSend returns once its data left. */
COLL_API collResult_t collSend(const void* sendbuff, size_t count, collDataType_t datatype, int peer,
                      collComm_t comm, collStream_t stream);
COLL_API collResult_t collRecv(void* recvbuff, size_t count, collDataType_t datatype, int peer,
                      collComm_t comm, collStream_t stream);
/* Returns once every rank has called it. */
COLL_API collResult_t collBarrier(collComm_t comm, collStream_t stream);

/* Asynchronous forms: the op runs on the communicator's progress thread. */
COLL_API collResult_t collAllReduceAsync(const void* sendbuff, void* recvbuff, size_t count,
                                collDataType_t datatype, collRedOp_t op, collComm_t comm,
                                collRequest_t* request);
COLL_API collResult_t collBroadcastAsync(const void* sendbuff, void* recvbuff, size_t count,
                                collDataType_t datatype, int root, collComm_t comm,
                                collRequest_t* request);
/* Nonblocking point-to-point with tags, as MPI_Isend/MPI_Irecv (host buffers): a receive
 * matches sends from `peer` (or from anyone: COLL_ANY_SOURCE) with its tag (>= 0), in issue
 * order per (sender, tag). Any number may be outstanding, in any order; each completes as its
 * partner arrives, within COLL_TIMEOUT. collRequestSource gives a finished receive's sender. */
#define COLL_ANY_SOURCE (-1)
COLL_API collResult_t collIsend(const void* sendbuff, size_t count, collDataType_t datatype, int peer, int tag,
                                collComm_t comm, collRequest_t* request);
COLL_API collResult_t collIrecv(void* recvbuff, size_t count, collDataType_t datatype, int peer, int tag,
                                collComm_t comm, collRequest_t* request);
COLL_API collResult_t collRequestSource(collRequest_t request, int* source);
/* collSuccess when done, collInProgress while running, the op's error otherwise. */
COLL_API collResult_t collRequestTest(collRequest_t request);
/* timeout_ms < 0: wait up to the op's own deadline. collInProgress if timeout_ms expired. */
COLL_API collResult_t collRequestWait(collRequest_t request, long timeout_ms);
COLL_API collResult_t collRequestFree(collRequest_t request);

/* Like ncclGroupStart/ncclGroupEnd: collSend/collRecv calls in between (on any communicator of
 * this thread) return at once and run together at collGroupEnd, which waits for all of them. */
COLL_API collResult_t collGroupStart(void);
COLL_API collResult_t collGroupEnd(void);

#ifdef __cplusplus
}
#endif

#endif /* COLL_COLL_H_ */
