#include "soak/process_resources.h"

#include <dirent.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <set>
#include <string>

namespace coll::soak {
namespace {

// Entries of a /proc directory, "." and ".." left out; -1 if it cannot be read.
int countEntries(const char* path) {
  DIR* dir = ::opendir(path);
  if (!dir) return -1;
  int n = 0;
  while (const dirent* e = ::readdir(dir))
    if (e->d_name[0] != '.') ++n;
  ::closedir(dir);
  return n;
}

int64_t residentBytes() {
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  if (!f) return -1;
  long long size = 0, resident = 0;
  int read = std::fscanf(f, "%lld %lld", &size, &resident);
  std::fclose(f);
  return read == 2 ? resident * ::sysconf(_SC_PAGESIZE) : -1;
}

}  // namespace

std::string ProcessResources::describe() const {
  char text[128];
  std::snprintf(text, sizeof text, "rss %.2f MiB, %d fds, %d threads, %d linked segments", rss_bytes / 1048576.0,
                open_fds, threads, linked_segments);
  return text;
}

// Threads named as coll's process-wide ones (process_resources.h).
int countProcessWideThreads() {
  int n = 0;
  DIR* d = ::opendir("/proc/self/task");
  if (!d) return 0;
  while (dirent* e = ::readdir(d)) {
    if (e->d_name[0] == '.') continue;
    std::ifstream in(std::string("/proc/self/task/") + e->d_name + "/comm");
    std::string name;
    std::getline(in, name);
    n += name == "coll-lifeline" || name == "coll-hugepages";
  }
  ::closedir(d);
  return n;
}

// Distinct /dev/shm/coll-* mappings the kernel does not mark "(deleted)": still named.
int countLinkedSegments() {
  std::ifstream maps("/proc/self/maps");
  std::set<std::string> named;
  for (std::string line; std::getline(maps, line);) {
    size_t at = line.find("/dev/shm/coll-");
    if (at != std::string::npos && line.find(" (deleted)", at) == std::string::npos) named.insert(line.substr(at));
  }
  return static_cast<int>(named.size());
}

ProcessResources sampleProcessResources() {
  ProcessResources r;
  r.rss_bytes = residentBytes();
  // opendir holds one descriptor on /proc/self/fd while it lists it.
  r.open_fds = countEntries("/proc/self/fd") - 1;
  r.threads = countEntries("/proc/self/task");
  r.process_wide_threads = countProcessWideThreads();
  r.linked_segments = countLinkedSegments();
  return r;
}

}  // namespace coll::soak
