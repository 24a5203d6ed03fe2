// A relay: a message this rank receives by socket and passes on, unchanged, by another socket
// (Connection::postRecvRelay): a chain broadcast's middle, a ring all-gather's forwarded
// chunks. Received and sent separately, each byte is copied out of the kernel into the
// buffer and back in again. A relay splices the socket into a pipe (`taken`), tees that into
// a second pipe (`passed`) and splices `passed` into the next socket: the kernel hands the
// received pages on by reference, and the one copy left is `taken` into the buffer.
//
// Measured (2026-11-28, netcluster 4 x 1, a chain of 4 plain processes, 4 GiB in 1 MiB
// pieces, 3 runs each): unshaped 0.70-0.73 GB/s against 0.54-0.62 passing by read and write,
// 2.9-3.0 CPU-seconds per GB of the whole machine against 3.3-3.7; at 10 Gbit/s 0.65-0.71
// against 0.58-0.61. In coll, 4 x 1 broadcast at 10 Gbit/s: 2.7-3.0 CPU-seconds per GB
// against 2.8-3.3 with COLL_SOCKET_RELAY=0, and 1.09-1.50 x gloo's busbw against 0.95-1.02
// before (docs/PERFORMANCE.md, "Relays from socket to socket").
//
// The two sides run on different connections (the receiving side on the one the message
// comes from, the sending side on the one it goes to) but on one thread. The send may start
// before, during or after the receive: until the receive is under way and the send is next on
// its stream, bytes are received into the buffer as usual; what arrives from then on (from
// piped_from) passes through the pipes. So [0, copied) is in the buffer; of what is still to
// send, [sent, piped_from) goes from the buffer and the rest, up to copied, from `passed`;
// while piping, [copied, arrived) waits in `taken`.
#pragma once

#include "base/fd_io.h"
#include "transport/socket/connection.h"

namespace coll::transport::socket {

struct SocketConnection::Relay {
  char* data = nullptr;
  size_t bytes = 0;
  SocketConnection* from = nullptr;  // the receiving side
  Stream* in = nullptr;
  SocketConnection* to = nullptr;    // the sending side
  Stream* out = nullptr;
  UniqueFd taken_read, taken_write, passed_read, passed_write;
  size_t pipe_bytes = 0;  // what `taken` holds

  size_t arrived = 0;  // payload bytes taken from the socket
  size_t copied = 0;   // payload bytes in the buffer
  size_t sent = 0;     // payload bytes written to the next socket
  bool receiving = false;       // the header matched; the payload is being read
  bool sending = false;         // the send's header went out
  bool piping = false;          // the bytes from piped_from on pass through the pipes
  bool pipes_refused = false;   // the system would not open them: the buffer carries it all
  size_t piped_from = 0;
  bool receiver_waits = false;  // for room in `passed` (the sender wakes it)
  bool sender_waits = false;    // for bytes (the receiver wakes it)
  bool receive_failed = false;
  bool send_failed = false;

  // Creates the two pipes; false where the system refuses.
  bool openPipes();
  // Once the receive is under way and the send is next on its stream: what arrives from now
  // on goes through the pipes, opened now and closed with the relay.
  void startPiping();
  // The send failed: the receiver reads the rest into the buffer only.
  void sendFailed();
};

}  // namespace coll::transport::socket
