// The shared-memory board as a catalogue entry: an algorithm without a schedule. Where every
// rank of a job shares one host's shared memory, each posts its operand in a cell of a board
// and reads everyone's (an all-reduce combines all n in rank order, a broadcast copies the
// root's): one step instead of the message path's log2(n) or n-1. The board path
// (src/comm/paths/board_path.cc, over transport::SmallOpBoard) runs it; the selector scores it
// with the formulas below like any algorithm, and picks it where it predicts the least time.
#pragma once

#include <cstddef>

#include "algorithms/cost/fabric.h"

namespace coll::algo::cost {

// The board's one step against a message step's α: no slots, headers or completions, only
// the wait for every rank's cell. Measured here, 2 ranks on one host, 8 B: board 0.33 us
// against 0.8 for a one-step all-reduce (rd) and 0.6 for a broadcast on the message path:
// 0.41 and 0.55 of it.
constexpr double kBoardStepShare = 0.5;

// Broadcasts above this go by the message path even where the board would hold them: the
// root's copy into the slots and the receivers' copy out overlap there, while the board makes
// everyone wait for everyone. 2 ranks, 8-byte broadcast: 0.33 us on the board, 0.6 on the
// message path; 2 KiB: 0.75 against 1.16; 4 KiB: 1.17 against 1.0-1.07. The formula cannot see
// it: its α is the message path's probed one, several times an inline op's.
constexpr size_t kBoardBroadcastBytes = 2048;

// Each rank reads the other n-1 cells and reduces them.
Prediction boardAllreduce(const Fabric& x);
// The root writes its cell, then every rank copies it out: the two copies do not overlap, as
// the message path's slices do.
Prediction boardBroadcast(const Fabric& x);

}  // namespace coll::algo::cost
