// A UCP context and one worker over it: what a ucx Transport (one per communicator) owns. The
// worker is serialized (UCS_THREAD_MODE_SERIALIZED): one thread at a time drives it, the progress
// thread or a thread running ops inline while it waits (exec/work_state.h).
//
// Waiting: the worker is created with UCP_FEATURE_WAKEUP when UCX grants it, so an idle
// progress thread can sleep on the worker's event fd (arm, then poll) instead of spinning;
// where the transports UCX chose cannot signal events, sleep() naps briefly instead.
//
// Fork: libucs patches mmap/munmap/brk/madvise when it is loaded (UCX's memory hooks), and each
// call through them holds a process-wide lock of UCX's for reading. A process forked while
// another of its parent's threads was inside such a call inherits that lock held by nobody,
// and its create() then blocks for ever in ucp_init (no deadline can bound it: the wait is
// inside UCX). Ranks must be started by exec (collrun, torchrun, mpirun) or forked before
// the parent starts threads: issue 7, and tests/multirank/store_process.h.
#pragma once

#include <ucp/api/ucp.h>

#include <chrono>
#include <memory>
#include <string>

#include "base/status.h"

namespace coll::transport::ucx {

// "Input/output error (UCS_ERR_IO_ERROR)"
std::string ucsError(ucs_status_t status);

class Worker {
 public:
  static Status create(std::unique_ptr<Worker>* out);
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  ucp_worker_h handle() const { return worker_; }
  // The worker's address, as bytes, for peers' ucp_ep_create.
  const std::string& address() const { return address_; }
  // Runs UCX's progress once; true if anything happened.
  bool progress() { return ucp_worker_progress(worker_) != 0; }
  // Receives and drops every message nobody asked for (the hellos, leftovers of a failed op),
  // so UCX does not warn about them at destruction.
  void drainUnexpected();
  // Returns when the worker may have events, or after at most `limit`.
  void sleep(std::chrono::microseconds limit);

 private:
  Worker() = default;
  Status init();

  ucp_context_h context_ = nullptr;
  ucp_worker_h worker_ = nullptr;
  int event_fd_ = -1;  // -1: no wakeup support, sleep() naps
  std::string address_;
};

}  // namespace coll::transport::ucx
