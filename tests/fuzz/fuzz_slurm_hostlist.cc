// Fuzz target: Slurm's compressed host lists (SLURM_JOB_NODELIST, "node[01-04,07],gpu3"),
// read from the launcher's environment. Any text either expands to at least one host or is
// refused with InvalidArgument; the expansion stays bounded however long the ranges.
#include <cstdint>
#include <string>
#include <vector>

#include "bootstrap/slurm_hostlist.h"
#include "fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string list(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> hosts;
  coll::Status st = coll::bootstrap::expandHostList(list, &hosts);
  if (!st) {
    FUZZ_CHECK(st.code() == coll::ErrorCode::InvalidArgument, "code %d", static_cast<int>(st.code()));
    return 0;
  }
  FUZZ_CHECK(!hosts.empty(), "'%s' expanded to nothing", list.c_str());
  FUZZ_CHECK(hosts.size() <= coll::bootstrap::kMaxHostListHosts, "%zu hosts", hosts.size());
  std::string first;
  FUZZ_CHECK(coll::bootstrap::firstHostOfList(list, &first).isOk() && first == hosts.front(), "first host");
  return 0;
}
