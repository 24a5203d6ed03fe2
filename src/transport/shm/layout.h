// The memory layout of a shm segment, shared by every process that maps it.
//
// Each rank owns one segment holding its *inbound* channels, one per local peer: the peer
// writes, the owner reads (single producer, single consumer). A channel is a control block
// plus a ring of `nslots` slots of `slot_bytes`. Every slot starts with a SlotHeader; a
// message takes one or more whole slots (tag and length in each, payload after the header),
// or, when large and cross-memory attach works, one slot holding a descriptor the receiver
// uses to read the payload straight out of the sender's memory.
//
//   [SegmentHeader, padded to kHeaderBytes][board: 2 BoardCells][control 0][control 1]...
//   [padding to a page][ring 0][ring 1]...          ring = [slot 0]...[slot nslots-1], page-aligned
//
// Only the header (and the board, where the communicator uses it) is reserved when the segment
// is made; everything else is a hole until a pair first talks: the first request on a channel
// reserves its control's page (either side, segment.h commitRange) and the sender reserves a
// ring's pages as it writes them (and, after a one-off burst its peer has read, such as the
// start-up link probe's, gives back all but each slot's first: ring_pages.cc). Zeroes are
// every field's starting value, so nothing is written before use. A rank no peer talks to
// costs its host a header page, and a host's shared memory grows with the channels in use, not
// with the square of its ranks. What every peer reads at set-up (which channel is whose,
// whether the owner may read the sender's memory) is in the header; channel i of a segment
// is the owner's i-th local peer in rank order.
//
// A segment may hold a second plane after the first, page-aligned: a whole layout of its own
// (header, controls, rings; no board), with its own geometry, doorbell and wake socket, for a
// second transport (the point-to-point engine's) that runs on its own thread. Its header's offset
// in the file is in the first header (second_plane). Both planes' peers are then mapped once,
// watched through one pidfd and probed once, at the first transport's set-up; the second
// transport's set-up maps nothing (transport.h, createSecondPlane).
//
// Counters only grow (head, tail, cma_done), so "full" is head - tail == nslots and no slot is
// ever ambiguous. Each counter has one writer; the other side reads it with acquire. Fields
// written by different processes live on different cache lines.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "base/fnv1a.h"

namespace coll::transport::shm {

inline constexpr uint64_t kSegmentMagic = 0x314745534c4c4f43ull;  // "COLLSEG1"
inline constexpr uint32_t kLayoutVersion = 9;
inline constexpr uint32_t kSlotMagic = 0x544f4c53;                // "SLOT"
inline constexpr size_t kHeaderBytes = 4096;
inline constexpr size_t kControlBytes = 128;
inline constexpr uint32_t kMaxChannels = 4096;  // local peers of a rank (the header's bitmaps)
inline constexpr size_t kReasonBytes = 512;

static_assert(std::atomic<uint64_t>::is_always_lock_free, "shm counters must be lock-free across processes");
static_assert(std::atomic<uint32_t>::is_always_lock_free, "shm flags must be lock-free across processes");

// The futex word a sleeping owner waits on, and the count of sleepers (so that ringers skip
// the FUTEX_WAKE system call while the owner is busy); likewise for an owner waiting in poll()
// on its wake socket (wake_socket.h). See doorbell.h.
struct Doorbell {
  std::atomic<uint32_t> bell{0};
  std::atomic<uint32_t> sleepers{0};
  std::atomic<uint32_t> fd_sleepers{0};
};

// One bit per channel, in the header: set by whoever the channel's bit is about, read by anyone.
struct ChannelBits {
  alignas(64) std::atomic<uint64_t> words[kMaxChannels / 64] = {};

  void set(uint32_t channel) { words[channel / 64].fetch_or(uint64_t{1} << (channel % 64), std::memory_order_release); }
  void clear(uint32_t channel) {
    words[channel / 64].fetch_and(~(uint64_t{1} << (channel % 64)), std::memory_order_release);
  }
  bool test(uint32_t channel) const {
    return (words[channel / 64].load(std::memory_order_acquire) >> (channel % 64)) & 1;
  }
  // The bits of word w, cleared (one load where none is set).
  uint64_t take(size_t w) {
    return words[w].load(std::memory_order_relaxed) == 0 ? 0 : words[w].exchange(0, std::memory_order_acq_rel);
  }
};

struct SegmentHeader {
  // Written once by the owner before the segment's name is published; read-only after.
  uint64_t magic = 0;
  uint32_t version = 0;
  uint32_t nchannels = 0;
  int32_t owner_rank = -1;
  int32_t owner_pid = 0;
  // magic, version and owner_pid keep their offsets in every version (stale_segments.cc
  // reads them from segments of older layouts). Version 5: the owner holds a lock on it.
  // Version 6: controls together, rings after them (the layout above).
  uint64_t slot_bytes = 0;
  uint32_t nslots = 0;
  uint32_t reserved = 0;
  uint64_t channel_stride = 0;  // bytes from one ring to the next (a page multiple)
  uint64_t probe_address = 0;   // a word in the owner's memory holding probe_value: peers try
  uint64_t probe_value = 0;     // to read it with process_vm_readv to decide on CMA
  char wake_name[64] = {};      // the owner's wake socket (wake_socket.h), "" if none
  uint64_t cpus[16] = {};       // the CPUs the owner may run on (sched_getaffinity; 1024 at most)
  // Rung by whoever made progress the owner may be waiting for.
  alignas(64) Doorbell doorbell;
  // Set once by the owner's abort(), reason first: its peers fail at once.
  alignas(64) std::atomic<uint32_t> aborted{0};
  char abort_reason[kReasonBytes] = {};
  // Set at set-up by a peer whose hello datagram could not reach wake_name.
  std::atomic<uint32_t> wake_unreachable{0};
  // Version 7. The owner's host ranks (itself and its local peers, hostRanksFingerprint): a
  // peer that counts another set finds its channel elsewhere, so it fails set-up instead.
  uint64_t host_ranks = 0;
  // The owner's verdict, before the set-up barrier, on reading channel i's sender's memory.
  ChannelBits cma_readable;
  // Set by channel i's sender when it first uses the pair (either way), both controls reserved:
  // until then the owner reads nothing of the channel (a receive posted on it waits).
  ChannelBits in_use;
  // Set by the owner when its side of the pair with channel i's sender failed or closed: that
  // peer's requests to or from it fail. Here rather than in the controls, which may not exist.
  ChannelBits gone;
  // Version 8. The owner's network namespace (device and inode of /proc/self/ns/net; 0 where
  // unknown): a wake socket is an abstract address, reachable from that namespace only, so a
  // peer in the same one needs no hello to know it can wake the owner.
  uint64_t net_namespace_dev = 0;
  uint64_t net_namespace_ino = 0;
  // Version 9. In the first plane's header: the offset of the second plane's header in the
  // file (0: the segment has none). 0 in a second plane's own header.
  uint64_t second_plane = 0;
  // Where the owner parks receives (the second plane: the point-to-point engine keeps one posted
  // on every channel): set by the owner while it has stopped polling channel i, whose only
  // requests are receives with nothing to read; channel i's sender, after publishing a message,
  // giving the pair up or aborting, sees it and sets news bit i, and the owner polls the channel
  // again (ShmConnection::park, ShmTransport::takeNews).
  ChannelBits parked;
  ChannelBits news;
};
static_assert(sizeof(SegmentHeader) <= kHeaderBytes);

// The small-op board (board.h): the owner posts a small operand in one of its two cells, every
// local peer reads it. Successive board ops alternate cells, so a rank may post the next op
// while a slower peer still reads the last one. The first 48 payload bytes share the cache
// line of the sequence, so an 8-byte all-reduce moves one line per peer (a waiting peer
// prefetches the lines of a longer operand: Board::allPosted).
inline constexpr size_t kBoardPayloadBytes = 4096;
struct BoardCell {
  alignas(64) std::atomic<uint64_t> sequence{0};  // the board op whose operand this holds (0: none)
  uint64_t fingerprint = 0;                        // that op's collective, type, op and count
  uint8_t data[kBoardPayloadBytes];
};
inline constexpr size_t kBoardBytes = (2 * sizeof(BoardCell) + 4095) / 4096 * 4096;
inline constexpr size_t kChannelsOffset = kHeaderBytes + kBoardBytes;

inline BoardCell* boardAt(void* segment) {
  return reinterpret_cast<BoardCell*>(static_cast<uint8_t*>(segment) + kHeaderBytes);
}

// Two cache lines, one per writer: the sender's, the receiver's.
struct ChannelControl {
  alignas(64) std::atomic<uint64_t> head{0};  // sender: slots published
  alignas(64) std::atomic<uint64_t> tail{0};  // receiver: slots released
  std::atomic<uint64_t> cma_done{0};          // receiver: sequence of the last descriptor read
};
static_assert(sizeof(ChannelControl) == kControlBytes && kControlBytes % 64 == 0);

enum class SlotKind : uint32_t { inline_data = 1, cma_descriptor = 2, mapped_descriptor = 3 };

// At the start of every slot. For inline data: `length` payload bytes follow the header and
// land at `offset` of the message; a message's first slot has offset 0. For a descriptor: the
// whole message (`bytes`) is at `cma_address` in process `cma_pid`. A mapped descriptor is one
// whose message lies in the sender's collMemAlloc memory (shared_memory.h): it also names the
// region, `region_id` open as `region_fd` in the sender, and the message's `region_offset` in
// it; the receiver maps the region and copies (peer_regions.h), or reads by CMA where it
// cannot. Both descriptors are acknowledged through cma_done.
struct SlotHeader {
  uint32_t magic;
  SlotKind kind;
  uint64_t tag;
  uint64_t bytes;  // of the whole message
  uint64_t offset;  // mapped descriptor: region_offset
  uint64_t length;  // mapped descriptor: region_id
  uint64_t cma_address;
  uint64_t cma_sequence;  // 1, 2, ... per channel: the receiver stores it in cma_done when read
  int32_t cma_pid;
  int32_t region_fd;  // mapped descriptor only
};
inline constexpr size_t kSlotHeaderBytes = 64;
static_assert(sizeof(SlotHeader) <= kSlotHeaderBytes);

inline constexpr uint64_t kPageBytes = 4096;
inline constexpr uint64_t roundUpToPage(uint64_t n) { return (n + kPageBytes - 1) / kPageBytes * kPageBytes; }

// Where the rings of a segment with `nchannels` channels begin: after the controls.
inline constexpr uint64_t ringsOffset(uint32_t nchannels) {
  return roundUpToPage(kChannelsOffset + uint64_t{kControlBytes} * nchannels);
}

// The set of a host's ranks, for a segment's header: ranks in increasing order, then their count.
inline uint64_t hostRanksFingerprint(const int* ranks, size_t n) {
  Fnv1a h;
  for (size_t i = 0; i < n; ++i) h.add(uint64_t{static_cast<uint32_t>(ranks[i])});
  return h.add(uint64_t{n}).value();
}

// Geometry a segment is created with.
struct Geometry {
  uint64_t slot_bytes = 0;
  uint32_t nslots = 0;
  uint32_t nchannels = 0;
  bool board = false;  // the communicator uses the small-op board (every rank on this host)

  uint64_t ringStride() const { return roundUpToPage(slot_bytes * nslots); }
  // What is reserved when the segment is made: the header, and the board where it is used.
  uint64_t reservedBytes() const { return kHeaderBytes + (board ? kBoardBytes : 0); }
  uint64_t segmentBytes() const { return ringsOffset(nchannels) + ringStride() * nchannels; }
  // Where a second plane's header goes in a file whose first plane has this geometry.
  uint64_t secondPlaneOffset() const { return roundUpToPage(segmentBytes()); }
};

inline ChannelControl* channelAt(void* segment, uint32_t index) {
  return reinterpret_cast<ChannelControl*>(static_cast<uint8_t*>(segment) + kChannelsOffset +
                                           uint64_t{kControlBytes} * index);
}

inline uint8_t* ringAt(void* segment, uint32_t nchannels, uint64_t ring_stride, uint32_t index) {
  return static_cast<uint8_t*>(segment) + ringsOffset(nchannels) + ring_stride * index;
}

// One direction of a channel as seen by either end.
struct Ring {
  ChannelControl* control = nullptr;
  uint8_t* slots = nullptr;  // slot 0
  uint64_t slot_bytes = 0;
  uint32_t nslots = 0;

  uint8_t* slot(uint64_t counter) const { return slots + (counter % nslots) * slot_bytes; }
  uint64_t payloadBytes() const { return slot_bytes - kSlotHeaderBytes; }
};

}  // namespace coll::transport::shm
