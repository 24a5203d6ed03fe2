#include "algorithms/board.h"

namespace coll::algo::cost {
namespace {

// Why the board cannot take an op of this size here, or nullptr.
const char* refusal(const Fabric& x, double capacity) {
  if (capacity <= 0) return "needs every rank on one host's shared memory (and COLL_SHM_BOARD_BYTES > 0)";
  if (x.S > capacity) return "larger than the board's cells (COLL_SHM_BOARD_BYTES)";
  return nullptr;
}

double boardStep(const Fabric& x) { return kBoardStepShare * x.stepIntra(1); }

}  // namespace

Prediction boardAllreduce(const Fabric& x) {
  if (const char* why = refusal(x, x.board_bytes)) return refuse(why);
  return ok(boardStep(x) + (x.n - 1) * (x.S / x.bi + x.S / x.g));
}

Prediction boardBroadcast(const Fabric& x) {
  if (const char* why = refusal(x, x.board_broadcast_bytes)) return refuse(why);
  return ok(boardStep(x) + 2 * x.S / x.bi);
}

}  // namespace coll::algo::cost
