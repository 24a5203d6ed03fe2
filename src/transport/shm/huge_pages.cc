#include "transport/shm/huge_pages.h"

#include <pthread.h>
#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <system_error>
#include <thread>

#include "base/log.h"

#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25  // Linux 6.1; older headers lack it, older kernels answer EINVAL
#endif

namespace coll::transport::shm {

namespace {

HugePages* g_pages = nullptr;

// A child of fork() has no collapser thread, may have been forked while it held the mutex, and
// its copy-on-write huge pages split when written: it starts afresh (the old one is leaked).
void startAfreshInChild() { g_pages = new HugePages; }

}  // namespace

// Never destroyed: a communicator destroyed during exit may still send, and the collapser
// (detached) may be inside madvise when the process ends, which is harmless.
HugePages& HugePages::process() {
  static const bool registered = [] {
    g_pages = new HugePages;
    ::pthread_atfork(nullptr, nullptr, startAfreshInChild);
    return true;
  }();
  (void)registered;
  return *g_pages;
}

bool HugePages::backs(const void* data, size_t bytes) {
  if (bytes == 0) return false;
  const uintptr_t begin = reinterpret_cast<uintptr_t>(data), end = begin + bytes;
  std::lock_guard<std::mutex> lock(mutex_);
  if (pages_.size() > kMaxTracked && queue_.empty() && !busy_) pages_.clear();  // the live ones come back
  bool all_huge = true;
  for (uintptr_t page = begin & ~(kPageBytes - 1); page < end; page += kPageBytes) {
    size_t overlap = std::min(end, page + kPageBytes) - std::max(begin, page);
    all_huge = visit(page, overlap) && all_huge;  // every page counts its bytes
  }
  return all_huge;
}

bool HugePages::visit(uintptr_t page, size_t overlap) {
  Page& p = pages_[page];
  switch (p.state) {
    case State::refused:
    case State::queued:
      return false;
    case State::huge:
      if (++p.uses >= kRecheckEvery && !p.recheck_queued) {
        p.uses = 0;
        p.recheck_queued = true;
        enqueue(page);  // stays huge meanwhile: a recheck is quick unless it was not
      }
      return true;
    case State::counting:
      p.bytes_sent += overlap;
      if (p.bytes_sent >= kSentBeforeCollapse) {
        p.state = State::queued;
        enqueue(page);
      }
      return false;
  }
  return false;
}

void HugePages::enqueue(uintptr_t page) {
  queue_.push_back(page);
  if (!started_) {
    started_ = true;
    try {
      std::thread([this] { collapseLoop(); }).detach();
    } catch (const std::system_error& e) {  // no thread: the queued pages stay on the slots
      COLL_INFO("SHM", "no thread to collapse send buffers into huge pages (%s): large messages go through the slots",
                e.what());
    }
  }
  wake_.notify_all();
}

void HugePages::collapseLoop() {
  ::pthread_setname_np(::pthread_self(), "coll-hugepages");  // process-wide: soaks tell it from a leak
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    wake_.wait(lock, [this] { return !queue_.empty(); });
    uintptr_t page = queue_.front();
    queue_.pop_front();
    busy_ = true;
    lock.unlock();
    int err = ::madvise(reinterpret_cast<void*>(page), kPageBytes, MADV_COLLAPSE) == 0 ? 0 : errno;
    lock.lock();
    busy_ = false;
    collapsed(page, err);
    wake_.notify_all();  // drain()
  }
}

void HugePages::collapsed(uintptr_t page, int err) {
  auto it = pages_.find(page);
  if (it == pages_.end()) return;  // forgotten meanwhile
  Page& p = it->second;
  const uint8_t failures = err == 0 ? 0 : static_cast<uint8_t>(p.failures + 1);
  p = Page{};
  p.failures = failures;
  if (err == 0) {
    p.state = State::huge;
    return;
  }
  // EINVAL: the kernel predates MADV_COLLAPSE, or the page may not be huge (MADV_NOHUGEPAGE, a
  // device mapping, shared memory where shmem THP is off): its sends keep the slots. Otherwise
  // (the range leaves the mapping, the page is pinned or busy, no huge page was free) it may
  // pass: the page counts again from zero, kMaxFailures times.
  if (err == EINVAL || failures >= kMaxFailures) p.state = State::refused;
  if (!logged_refusal_) {
    logged_refusal_ = true;
    COLL_INFO("SHM", "madvise(MADV_COLLAPSE) refused a page of a send buffer (%s): its large messages go "
              "through the slots", std::strerror(err));
  }
}

bool HugePages::drain(std::chrono::milliseconds limit) {
  std::unique_lock<std::mutex> lock(mutex_);
  return wake_.wait_for(lock, limit, [this] { return queue_.empty() && !busy_; });
}

}  // namespace coll::transport::shm
