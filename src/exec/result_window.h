// A reduce-scatter reduces in a workspace and keeps one chunk of it, the result window. Where
// the schedule allows, the executor writes that window straight into the caller's buffer
// (OpBuffers::result, exec/executor.h) instead of copying it out after the op. These say when
// a schedule allows it.
#pragma once

#include <cstddef>

#include "algorithms/schedule.h"

namespace coll {

// Whether no step of `schedule` straddles the edge of output bytes [at, +bytes), so that
// OpBuffers::result may move them elsewhere.
bool windowFits(const algo::Schedule& schedule, size_t at, size_t bytes);

// Whether the window may also lie on the input's same bytes (an in-place reduce-scatter, whose
// result is its own chunk of the input): each input byte there is read once, by the first step
// that writes the output there, at the same offset (out == operand, which every reduction
// handles), and no step sends it or reads it after. The ring, hierarchical and direct
// reduce-scatters are so; the ordered one receives rank 0's part into the chunk first.
bool windowMayOverwriteInput(const algo::Schedule& schedule, size_t at, size_t bytes);

}  // namespace coll
