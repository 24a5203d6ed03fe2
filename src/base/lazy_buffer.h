// A byte buffer that grows without writing to itself: a page of it takes memory only once
// something is written there (a large allocation is fresh anonymous memory, zero until touched).
// A reduce-scatter's workspace is as big as the op's input, and its schedule writes only some
// of it (a ring of up to four ranks the n − 2 chunks of partial sums it passes on, the
// hierarchical one H − 1 chunks; docs/MEMORY.md): a zero-filled vector made every byte of it
// resident, for as long as the communicator lives.
#pragma once

#include <cstddef>
#include <memory>

namespace coll {

class LazyBuffer {
 public:
  char* data() { return data_.get(); }
  size_t size() const { return size_; }

  // At least `bytes`. Growing does not keep the contents: callers write before they read.
  void grow(size_t bytes) {
    if (bytes <= size_) return;
    data_.reset();  // the old block goes before the new one is taken: no peak of both
    size_ = 0;
    data_ = std::make_unique_for_overwrite<char[]>(bytes);
    size_ = bytes;
  }

 private:
  std::unique_ptr<char[]> data_;
  size_t size_ = 0;
};

}  // namespace coll
