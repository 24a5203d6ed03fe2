// Matching of point-to-point messages to posted receives, as MPI and gloo match them: by
// (source, tag), a receive from any source matching any sender; within one (source, tag),
// messages match in the order they were sent and receives in the order they were posted (MPI's
// non-overtaking rule); between a receive from a given source and one from any source, the one
// posted first wins. Pure bookkeeping, no I/O: the p2p engine (docs/design/p2p_progress.md)
// feeds it the envelopes that arrive and the receives the application posts, and moves the data
// once it names a pair. Not thread-safe: its owner serialises the calls.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <utility>
#include <vector>

namespace coll::p2p {

inline constexpr int kAnySource = -1;

// A message announced by its sender: who sent it, its tag, its place in the sender's sequence
// for that tag, and its size. `token` is the engine's handle for the message (where its data
// is, or how to ask for it).
struct Envelope {
  int source = 0;
  int tag = 0;
  uint64_t seq = 0;
  uint64_t bytes = 0;
  uint64_t token = 0;
};

// A receive the application posted: from `source` (or kAnySource) with `tag`, into a buffer of
// `bytes`; `id` is the engine's handle for it.
struct Receive {
  uint64_t id = 0;
  int source = kAnySource;
  int tag = 0;
  uint64_t bytes = 0;
};

class Matcher {
 public:
  // A receive was posted. Returns the envelope it takes, the oldest unexpected one it matches
  // (for any source: the oldest arrival among every source), or nothing: then it waits, and
  // a later arrive() returns it.
  std::optional<Envelope> post(const Receive& receive);

  // An envelope arrived. Returns the receive it completes, the earliest posted among those that
  // match it, or nothing: then it waits as unexpected, and a later post() takes it.
  std::optional<Receive> arrive(const Envelope& envelope);

  // Removes a waiting receive (its op failed); false if it is not waiting.
  bool cancel(uint64_t id);

  // Every receive still waiting, in post order, removed (the communicator failed: each is
  // failed with its error).
  std::vector<Receive> takeAllPosted();

  size_t postedCount() const { return posted_count_; }
  size_t unexpectedCount() const { return unexpected_count_; }

 private:
  using Key = std::pair<int, int>;  // (source, tag); source kAnySource for any-source receives
  template <class T>
  struct Stamped {
    uint64_t stamp;  // post order of receives, arrival order of envelopes
    T item;
  };

  std::map<Key, std::deque<Stamped<Receive>>> posted_;
  std::map<Key, std::deque<Stamped<Envelope>>> unexpected_;
  uint64_t next_stamp_ = 0;
  size_t posted_count_ = 0;
  size_t unexpected_count_ = 0;
};

}  // namespace coll::p2p
