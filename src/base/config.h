// Config: every COLL_* environment variable, read once (here and nowhere else) and passed down.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

namespace coll {

enum class LogLevel { none = 0, warn = 1, info = 2, trace = 3 };

struct Config {
  std::chrono::milliseconds timeout{300'000};  // COLL_TIMEOUT (seconds, fractions allowed)
  LogLevel log_level = LogLevel::warn;         // COLL_DEBUG = NONE | WARN | INFO | TRACE
  std::string log_subsystems;                  // COLL_DEBUG_SUBSYS: e.g. "INIT,NET" (empty: all)
  int socket_nstreams = 2;                     // COLL_SOCKET_NSTREAMS: TCP streams per peer
  bool socket_nstreams_auto = true;            // COLL_SOCKET_NSTREAMS unset: one in use where one carries the link
  std::string socket_ifname;                   // COLL_SOCKET_IFNAME: interface for data sockets
  int socket_buffer_bytes = 4 << 20;           // COLL_SOCKET_BUFFER: SO_SNDBUF/SO_RCVBUF
  // A socket receive with at least this much still to come sleeps until this much has arrived
  // (SO_RCVLOWAT) instead of waking for every segment; 0 wakes for every segment.
  // transport/socket/connection.cc has the measurement.
  size_t socket_wake_bytes = 2 << 20;          // COLL_SOCKET_WAKE_BYTES
  // A slice a rank receives by socket and passes on by socket (a chain broadcast's middle, a
  // ring all-gather) goes from socket to socket in the kernel (splice, tee), copied once into
  // the buffer instead of in and out again. transport/socket/connection_relay.h has the
  // measurement.
  bool socket_relay = true;                    // COLL_SOCKET_RELAY=0 turns it off
  // Sockets connect when a peer is first sent to, by either side, instead of in pairs at
  // start (transport/socket/on_demand.h). Not an environment variable: the point-to-point
  // engine's transports set it (comm/p2p_config.h).
  bool socket_on_demand = false;
  size_t slice_bytes = 512 << 10;              // COLL_SLICE_BYTES: pipelining unit of algorithms
  // COLL_SLICE_BYTES unset: ops between hosts take larger slices as they grow
  // (algorithms/slice_size.h); set, every op uses it as it is.
  bool slice_bytes_auto = true;
  int pipeline_depth = 8;                      // COLL_PIPELINE_DEPTH: slices in flight per peer
  std::string job_secret;                      // COLL_JOB_SECRET
  std::string algo;                            // COLL_ALGO: forced algorithm(s), e.g. "ring"
  std::string transport;                       // COLL_TRANSPORT: forced transport, e.g. "socket"
  std::string net;                             // COLL_NET: transport between hosts (socket, ucx, verbs)
  std::string host_id;                         // COLL_HOST_ID: overrides host grouping
  // Shared-memory transport (src/transport/shm/). Each rank's segment holds, per local peer, a
  // ring of shm_nslots slots of shm_slot_bytes: 8 x 128 KiB = 1 MiB, its pages reserved in
  // /dev/shm as that peer writes them (a ring all-reduce fills one a rank; an all-to-all, all;
  // docs/MEMORY.md). Measured on this 2-core VM
  // (2 pinned ranks, 64 MiB, streaming stores on): broadcast 10.7 GB/s and all-reduce 3.9-4.0
  // with 8 x 128 KiB, against 9.3 and 3.9 with 16 x 32 KiB: fewer, larger slots cost fewer
  // hand-overs between the two cores. 4 x 256 KiB and 2 x 1 MiB were no better.
  size_t shm_slot_bytes = 128 << 10;           // COLL_SHM_SLOT_BYTES: one slot of a ring
  // COLL_P2P_EAGER_BUDGET: how many bytes of small (eager) point-to-point messages a rank may
  // have sent to one peer that the peer has not yet handed to a receive; past it, messages wait
  // for their receive (rendezvous). What a receiver holds unasked is bounded by this per peer.
  size_t p2p_eager_budget = 4 << 20;
  int shm_nslots = 8;                          // COLL_SHM_NSLOTS: slots per ring
  // Ops whose buffer is at least this big tell transports to write received data around the
  // caches (Connection::setStreamingReceives), and copy their own input to their output the
  // same way. Measured (2 pinned ranks, 64 MiB): all-reduce 3.8 against 3.4 GB/s out of place,
  // broadcast 8.9 against 8.3; the copies: all-gather out of place 2.93-3.01 against 2.63-2.71,
  // broadcast out of place 4.85-5.08 against 4.23-4.34.
  size_t stream_bytes = 16 << 20;              // COLL_STREAM_BYTES
  // Messages of at least this many bytes are read straight from the sender's memory
  // (process_vm_readv, one copy) instead of passing through the slots; 0 turns that off.
  // Measured on this 2-core VM (bench/transport_pingpong): with both ranks sending at once, as
  // in a collective, CMA moves 128 KiB messages at 21 GB/s each way against 8.7 through the
  // slots; one isolated 128 KiB message takes 15 µs against 11 (the slots' two copies then
  // run on two idle cores). At 64 KiB the latency cost (12 vs 7 µs) is not worth it.
  size_t shm_cma_threshold = 128 << 10;        // COLL_SHM_CMA_THRESHOLD
  // With COLL_SHM_CMA_THRESHOLD unset, messages of 256 KiB and more are read with CMA only where
  // the sender's pages are 2 MiB pages (transport/shm/huge_pages.h): from 4 KiB pages the
  // kernel pins page by page, and the slots' two pipelined copies win. Measured on this 2-core
  // VM with 4 KiB pages, 64 MiB, three interleaved rounds: 4 ranks all-reduce busbw 2.16-2.35
  // GB/s through the slots against 1.58-1.88 by CMA; 2 ranks broadcast 9.9-10.0 against 4.1-4.4.
  bool shm_cma_auto = true;
  bool shm_cma_huge_only = false;              // set by the shm transport where shm_cma_auto
  size_t shm_board_bytes = 4096;               // COLL_SHM_BOARD_BYTES: all-reduces up to this go by the board (0: never)
  bool shm_spin_auto = true;                   // COLL_SHM_SPIN unset: no spinning where ranks outnumber cores
  int shm_spin_us = 2;                         // COLL_SHM_SPIN: µs to poll before yielding, then sleeping
  // How long a rank waiting on sockets (alone, or with shared memory: the executor's wait on
  // several transports) keeps polling them, yielding its core between polls, before it sleeps
  // in the kernel, in ops under 256 KiB (latency-bound; communicator_impl.cc); 0: sleep at once. Measured on netcluster 2 x 2 at 1 Gbit/s (8 B to 2 KiB,
  // three rounds): sleeping at once, rd took 67-82 us and hierarchical 113-158 us, and the
  // start-up probe's idle crossing alpha came out at 6 or 34-42 us from job to job (a sleeping
  // rank's wake-up); with 100 us of polling, rd 20-38 us and hierarchical 25-47 us, and alpha
  // 5.7-6.5 us every time.
  int socket_spin_us = 100;                    // COLL_SOCKET_SPIN
  // COLL_INLINE=0: every op runs on the progress thread, even one a thread is waiting on
  // (src/exec/work_state.h explains caller-driven progress, the default).
  bool inline_ops = true;
  // COLL_CHECK=1: every collective's call (op, dtype, count, root, algorithm) is compared
  // across ranks before data moves (src/comm/call_check.h). Off: no cost at all.
  bool check = false;
  // COLL_DETERMINISTIC=1: every reduction (all-reduce, reduce, reduce-scatter) combines its
  // operands in rank order 0..n-1, so results are bit-identical across runs, algorithms, chunk
  // sizes and transports for one world size (src/algorithms/ordered_reduce.h says the cost).
  bool deterministic = false;
  // The trainer's gradient buckets (src/trainer/bucketer.h): the cap of every bucket but the
  // first, as PyTorch DDP's bucket_cap_mb (25 MiB there too).
  size_t bucket_bytes = 25 << 20;              // COLL_BUCKET_MB (MiB, fractions allowed)
  // Topology and selection (src/topology/): the start-up link probe (off: documented default
  // link figures), a topology file to load instead of detecting, one to write at init, and
  // autotuning (measure candidates at init, store and reuse the choices per topology).
  bool probe = true;                           // COLL_PROBE=0 switches the link probe off
  std::string topo_file;                       // COLL_TOPO_FILE
  std::string topo_dump_file;                  // COLL_TOPO_DUMP_FILE
  bool tune = false;                           // COLL_TUNE=1
  // Device (CUDA) buffers (src/cuda/): between ranks of one host, collectives read and write
  // each other's GPU memory through CUDA IPC; elsewhere, or with COLL_CUDA_IPC=0, data is
  // staged through pinned host memory in chunks of COLL_CUDA_STAGING_CHUNK, so the copies of
  // one chunk overlap the transfer of the next.
  bool cuda_ipc = true;                        // COLL_CUDA_IPC=0 stages even on one host
  size_t cuda_staging_chunk = 4 << 20;         // COLL_CUDA_STAGING_CHUNK
  std::string tune_file;                       // COLL_TUNE_FILE (default ~/.cache/coll/tune-<hash>.json)
  std::string trace_file;                      // COLL_TRACE_FILE: a Chrome trace of each communicator's ops
  // COLL_LAUNCHER_FD: the read end of a pipe whose write end only the launcher (collrun) holds;
  // when the launcher dies, however it dies, the pipe hangs up and the rank ends itself
  // (src/comm/launcher_lifeline.h). -1: no launcher to watch.
  int launcher_fd = -1;

  // What was wrong with the environment: "COLL_SOCKET_NSTREAMS=0: expected an integer from 1
  // to 64", one entry per malformed variable, whose field keeps its default. Creating a
  // communicator with a non-empty list fails (InvalidArgument) naming every entry, so a typo
  // never silently changes behaviour.
  std::vector<std::string> problems;

  // Parses the environment; malformed values go into problems.
  static Config fromEnvironment();

  // The process-wide value, parsed on first use.
  static const Config& global();
};

}  // namespace coll
