// Which parts of this process's memory are backed by 2 MiB pages, so that a peer may read them
// with process_vm_readv (CMA) at memory speed.
//
// process_vm_readv pins the sender's pages one by one. Measured on this project's 2-vCPU VM
// (kernel 6.18), two processes each reading 32 MiB of the other's memory at once, 512 KiB a
// call: 6.5-7.8 GB/s each from 4 KiB pages, 11-22 GB/s from 2 MiB pages (the machine's memory
// bandwidth varies with its neighbours; bench/micro/cma_read.cc); the reader's own pages do
// not matter. From huge pages
// one read beats the slots' two copies where both cores are busy.
//
// User buffers are rarely huge-page backed (malloc maps 4 KiB pages unless THP is "always"), so
// once a 2 MiB page of a send buffer has been sent from 8 times over (the buffer is in reuse, as
// a training job's gradients and an all-gather's inputs are, step after step) a background
// thread collapses it into a huge page with madvise(MADV_COLLAPSE, Linux 6.1). That changes how
// the memory is mapped, never what it holds. It costs 0.5-7 ms of that thread's time per page,
// once, where a use of the page read by CMA saves one 2 MiB copy, about 0.1 ms: it pays after
// 5 to 70 uses, hence the wait for 8. Meanwhile the page's sends keep the slots. On this 2-core
// VM the collapser takes its time from the ranks: collapsing after 2 uses, a 64 MiB all-gather
// timed over its 2nd to 4th ops read 0.51-0.90 x Open MPI, against 0.81-0.97 without CMA.
//
// Asking again of a page already huge costs microseconds, and the thread asks again of a huge
// page every kRecheckEvery times backs() is asked about it: the user may have freed the buffer
// and mapped other memory at the same address since (glibc maps allocations over 32 MiB afresh
// each time). Until then, 4 KiB pages there are read correctly but slowly; memory the kernel
// will not let a peer read (a device or I/O mapping) fails the op with the peer's read error.
//
// The page collapsed is the 2 MiB around the message: it may hold other objects of the heap,
// whose contents do not change either, and pages of it never touched get memory (at most 2 MiB
// more per page).
//
// Process-wide: every connection of every communicator in the process shares it.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <unordered_map>

namespace coll::transport::shm {

class HugePages {
 public:
  static constexpr uintptr_t kPageBytes = 2 << 20;
  static constexpr uint64_t kSentBeforeCollapse = 8 * kPageBytes;
  static constexpr uint32_t kRecheckEvery = 8;
  static constexpr size_t kMaxTracked = 1 << 16;  // pages: 128 GiB of send buffers
  static constexpr uint8_t kMaxFailures = 3;        // then the page keeps the slots

  static HugePages& process();

  // True if every 2 MiB page under [data, data + bytes) is huge, as far as is known; otherwise
  // counts the send, and queues the pages sent from kSentBeforeCollapse bytes over for
  // collapsing.
  bool backs(const void* data, size_t bytes);

  // Waits until every queued page is done with, at most `limit` (tests). False: time ran out.
  bool drain(std::chrono::milliseconds limit);

 private:
  enum class State : uint8_t { counting, queued, huge, refused };
  struct Page {
    uint64_t bytes_sent = 0;  // while counting
    uint32_t uses = 0;        // while huge: since the last check
    uint8_t failures = 0;     // collapses refused in a row (kMaxFailures: refused for good)
    bool recheck_queued = false;
    State state = State::counting;
  };

  bool visit(uintptr_t page, size_t overlap);  // under mutex_; true if the page is huge
  void enqueue(uintptr_t page);                // under mutex_
  void collapseLoop();
  void collapsed(uintptr_t page, int err);     // under mutex_: the verdict of one madvise

  std::mutex mutex_;
  std::condition_variable wake_;  // the collapser: work or stop; drain(): the queue emptied
  std::unordered_map<uintptr_t, Page> pages_;
  std::deque<uintptr_t> queue_;
  bool busy_ = false;  // the collapser holds a page outside the queue
  bool started_ = false;  // the collapser thread, with the first page queued
  bool logged_refusal_ = false;
};

}  // namespace coll::transport::shm
