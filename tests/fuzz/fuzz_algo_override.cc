// Fuzz target: the COLL_ALGO grammar (src/select/algo_override.cc), read from the user's
// environment. Any text either parses into rules with lo < hi and a known algorithm, or is
// refused with InvalidArgument naming the rule; matching the rules never fails.
#include <cstdint>
#include <string>

#include "fuzz/fuzz_check.h"
#include "select/algo_override.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  std::vector<coll::select::AlgoRule> rules;
  coll::Status st = coll::select::parseAlgoOverride(text, &rules);
  if (!st) {
    FUZZ_CHECK(st.code() == coll::ErrorCode::InvalidArgument, "code %d", static_cast<int>(st.code()));
    FUZZ_CHECK(st.message().find("COLL_ALGO") != std::string::npos, "%s", st.message().c_str());
    return 0;
  }
  for (const auto& r : rules) FUZZ_CHECK(r.lo < r.hi && !r.algorithm.empty(), "rule '%s'", r.text.c_str());
  for (coll::algo::Collective c : coll::algo::kAllCollectives)
    for (size_t bytes : {size_t(0), size_t(4096), size_t(1) << 40, SIZE_MAX - 1}) coll::select::matchRule(rules, c, bytes);
  return 0;
}
