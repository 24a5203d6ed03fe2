#include "fault/process_counts.h"

#include <dirent.h>

#include <chrono>
#include <thread>

namespace coll::test {
namespace {

int countEntries(const char* path) {
  DIR* dir = ::opendir(path);
  if (!dir) return -1;
  int n = 0;
  while (const dirent* e = ::readdir(dir)) n += e->d_name[0] != '.';
  ::closedir(dir);
  return n;
}

}  // namespace

int countOpenFds() { return countEntries("/proc/self/fd") - 1; }
int countThreads() {
#ifdef __SANITIZE_THREAD__
  // ThreadSanitizer starts a background thread of its own once the process first creates one;
  // make sure that has happened before counting, so it is in every count.
  static const bool started = [] {
    std::thread([] {}).join();
    return true;
  }();
  (void)started;
#endif
  return countEntries("/proc/self/task");
}

int settledThreadCount(int expected) {
  auto end = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  int n = countThreads();
  while (n > expected && std::chrono::steady_clock::now() < end) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    n = countThreads();
  }
  return n;
}

}  // namespace coll::test
