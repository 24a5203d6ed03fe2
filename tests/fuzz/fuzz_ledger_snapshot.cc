// Fuzz target: a ledger snapshot as read back from the rendezvous store after a failure
// (src/comm/ledger.cc, LedgerSnapshot::decode), where any rank, or any build of coll, may
// have written it. Decoding either refuses the bytes or yields a snapshot whose every field
// can be printed into the survivor's error message; encoding it again gives the same bytes
// back up to the error text's terminator.
#include <cstdint>
#include <string>

#include "comm/ledger.h"
#include "comm/stall_report.h"
#include "fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  std::optional<coll::LedgerSnapshot> s = coll::LedgerSnapshot::decode(bytes);
  if (!s) return 0;
  std::optional<coll::LedgerSnapshot> again = coll::LedgerSnapshot::decode(s->encode());
  FUZZ_CHECK(again && again->rank == s->rank && again->error == s->error, "re-encoding changed the snapshot");
  std::string text = s->current.label() + s->current.fingerprint.describe() + s->last.label() +
                     s->last.fingerprint.describe();
  coll::LedgerAnswers answers;
  answers.of_rank = {std::nullopt, s, std::nullopt};
  coll::LedgerEntry failed_op;
  text += coll::describeStall(failed_op, 0, answers, {"h0", "h1", "h2"});
  FUZZ_CHECK(!text.empty(), "empty report");
  return 0;
}
