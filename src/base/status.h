// Status: the cheap error value used inside the library. The API boundary turns a failed
// Status into coll::Error, adding the op name, sequence number and algorithm.
#pragma once

#include <string>
#include <utility>

#include "coll/error.h"

namespace coll {

class [[nodiscard]] Status {
 public:
  Status() = default;  // success
  Status(ErrorCode code, std::string message, int peer = -1)
      : ok_(false), code_(code), message_(std::move(message)), peer_(peer) {}

  static Status ok() { return Status(); }

  bool isOk() const { return ok_; }
  explicit operator bool() const { return ok_; }
  ErrorCode code() const { return code_; }
  // Names the syscall or step, the peer and the cause; never the op (the caller adds it).
  const std::string& message() const { return message_; }
  int peer() const { return peer_; }  // -1 when no single peer is to blame

  Error toError(const std::string& context) const {
    return Error(code_, context.empty() ? message_ : context + ": " + message_);
  }

 private:
  bool ok_ = true;
  ErrorCode code_ = ErrorCode::Internal;
  std::string message_;
  int peer_ = -1;
};

inline Status timeoutError(std::string m, int peer = -1) { return {ErrorCode::Timeout, std::move(m), peer}; }
inline Status peerLostError(std::string m, int peer = -1) { return {ErrorCode::PeerLost, std::move(m), peer}; }
inline Status mismatchError(std::string m, int peer = -1) { return {ErrorCode::Mismatch, std::move(m), peer}; }
inline Status invalidArgument(std::string m) { return {ErrorCode::InvalidArgument, std::move(m)}; }
inline Status unsupportedError(std::string m) { return {ErrorCode::Unsupported, std::move(m)}; }
inline Status transportError(std::string m, int peer = -1) { return {ErrorCode::Transport, std::move(m), peer}; }
inline Status internalError(std::string m) { return {ErrorCode::Internal, std::move(m)}; }

}  // namespace coll

// Propagates a failed Status to the caller. The one macro we allow: RAII does the cleanup.
#define COLL_RETURN_IF_ERROR(expr)        \
  do {                                    \
    ::coll::Status _st = (expr);          \
    if (!_st.isOk()) return _st;          \
  } while (0)
