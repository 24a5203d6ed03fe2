#include "fault/process_counts.h"

#include <dirent.h>

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
int countThreads() { return countEntries("/proc/self/task"); }

}  // namespace coll::test
