#include "coll/communicator.h"

#include <unistd.h>

#include "bootstrap/launch_env.h"
#include "comm/communicator_impl.h"
#include "base/log.h"

namespace coll {

Communicator::Communicator(std::unique_ptr<CommunicatorImpl> impl) : impl_(std::move(impl)) {}
// In a forked child the progress thread does not exist and the connections are the parent's:
// tearing them down would hang (join) or break the parent's, so the child leaves them alone.
Communicator::~Communicator() {
  if (impl_ && impl_->inForkedChild()) {
    COLL_WARN("INIT", "communicator of rank %d not destroyed in a forked child (pid %d): left to the parent",
              impl_->rank(), static_cast<int>(::getpid()));
    (void)impl_.release();
  }
}

std::unique_ptr<Communicator> Communicator::create(const CommOptions& options) {
  std::unique_ptr<CommunicatorImpl> impl;
  Status st = CommunicatorImpl::create(options, Config::global(), &impl);
  if (!st) throw st.toError(format("init (rank %d of %d)", options.rank, options.size));
  return std::unique_ptr<Communicator>(new Communicator(std::move(impl)));
}

std::unique_ptr<Communicator> Communicator::fromEnvironment() {
  bootstrap::LaunchInfo info;
  Status st = bootstrap::detectLaunch(&info);
  if (!st) throw st.toError("init from the launcher's environment");
  COLL_INFO("INIT", "launcher %s: rank %d of %d, store %s%s, secret from %s", info.launcher.c_str(), info.rank,
            info.size, info.store_address.c_str(), info.host_store ? " (served here)" : "", info.secret_origin.c_str());
  CommOptions options;
  options.rank = info.rank;
  options.size = info.size;
  options.local_rank = info.local_rank;
  options.store_address = info.store_address;
  options.host_store = info.host_store;
  options.store_port_tries = info.store_port_tries;
  options.secret = info.secret;
  auto comm = create(options);
  // create() returns after the init barrier: every rank has read the file by now.
  if (!info.rendezvous_file.empty()) ::unlink(info.rendezvous_file.c_str());
  return comm;
}

int Communicator::rank() const { return impl_->rank(); }
int Communicator::size() const { return impl_->size(); }
int Communicator::localRank() const { return impl_->localRank(); }

Work Communicator::allreduce(const void* send, void* recv, size_t count, DataType type, ReduceOp op, Stream stream) {
  OpRequest r;
  r.kind = OpKind::allreduce;
  r.input = send;
  r.output = recv;
  r.count = count;
  r.type = type;
  r.op = op;
  r.stream = stream;
  return impl_->enqueue(std::move(r));
}

Work Communicator::broadcast(const void* send, void* recv, size_t count, DataType type, int root, Stream stream) {
  OpRequest r;
  r.kind = OpKind::broadcast;
  r.input = send;
  r.output = recv;
  r.count = count;
  r.type = type;
  r.root = root;
  r.stream = stream;
  return impl_->enqueue(std::move(r));
}

namespace {
OpRequest request(OpKind kind, const void* send, void* recv, size_t count, DataType type, ReduceOp op, int root,
                  Stream stream = nullptr) {
  OpRequest r;
  r.kind = kind;
  r.input = send;
  r.output = recv;
  r.count = count;
  r.type = type;
  r.op = op;
  r.root = root;
  r.stream = stream;
  return r;
}
}  // namespace

Work Communicator::reduce(const void* send, void* recv, size_t count, DataType type, ReduceOp op, int root, Stream stream) {
  return impl_->enqueue(request(OpKind::reduce, send, recv, count, type, op, root, stream));
}
Work Communicator::allgather(const void* send, void* recv, size_t sendcount, DataType type, Stream stream) {
  return impl_->enqueue(request(OpKind::allgather, send, recv, sendcount, type, ReduceOp::sum, -1, stream));
}
Work Communicator::reduceScatter(const void* send, void* recv, size_t recvcount, DataType type, ReduceOp op, Stream stream) {
  return impl_->enqueue(request(OpKind::reducescatter, send, recv, recvcount, type, op, -1, stream));
}
Work Communicator::alltoall(const void* send, void* recv, size_t count, DataType type, Stream stream) {
  return impl_->enqueue(request(OpKind::alltoall, send, recv, count, type, ReduceOp::sum, -1, stream));
}
Work Communicator::gather(const void* send, void* recv, size_t sendcount, DataType type, int root, Stream stream) {
  return impl_->enqueue(request(OpKind::gather, send, recv, sendcount, type, ReduceOp::sum, root, stream));
}
Work Communicator::scatter(const void* send, void* recv, size_t recvcount, DataType type, int root, Stream stream) {
  return impl_->enqueue(request(OpKind::scatter, send, recv, recvcount, type, ReduceOp::sum, root, stream));
}
Work Communicator::send(const void* buf, size_t count, DataType type, int peer, Stream stream) {
  return impl_->enqueue(request(OpKind::send, buf, nullptr, count, type, ReduceOp::sum, peer, stream));
}
Work Communicator::recv(void* buf, size_t count, DataType type, int peer, Stream stream) {
  return impl_->enqueue(request(OpKind::recv, nullptr, buf, count, type, ReduceOp::sum, peer, stream));
}
Work Communicator::send(const void* buf, size_t count, DataType type, int peer, int tag) {
  OpRequest r = request(OpKind::send, buf, nullptr, count, type, ReduceOp::sum, peer);
  r.tag = tag;
  return impl_->enqueue(std::move(r));
}
Work Communicator::recv(void* buf, size_t count, DataType type, int peer, int tag) {
  OpRequest r = request(OpKind::recv, nullptr, buf, count, type, ReduceOp::sum, peer);
  r.tag = tag;
  return impl_->enqueue(std::move(r));
}
Work Communicator::barrier() {
  return impl_->enqueue(request(OpKind::barrier, nullptr, nullptr, 0, DataType::u8, ReduceOp::max, -1));
}

void Communicator::groupStart() { impl_->groupStart(); }
void Communicator::groupEnd() { impl_->groupEnd(); }

void Communicator::setAlgorithms(const std::string& rules) { impl_->setAlgorithms(rules); }

void Communicator::abort() { impl_->abort("aborted by the application"); }

std::vector<int> Communicator::failedRanks() { return impl_->failedRanks(); }

AgreeResult Communicator::agree(uint64_t value) {
  AgreementResult result;
  Status st = impl_->agree(value, &result);
  if (!st) throw st.toError(format("agree (rank %d of %d)", rank(), size()));
  return AgreeResult{result.value, result.failed};
}

void Communicator::revoke() {
  Status st = impl_->revoke("revoked by the application");
  if (!st) throw st.toError(format("revoke (rank %d of %d)", rank(), size()));
}

std::unique_ptr<Communicator> Communicator::shrink() {
  std::unique_ptr<CommunicatorImpl> impl;
  Status st = impl_->shrinkToSurvivors(&impl);
  if (!st) throw st.toError(format("shrink (rank %d of %d)", rank(), size()));
  return std::unique_ptr<Communicator>(new Communicator(std::move(impl)));
}

std::unique_ptr<Communicator> Communicator::grow() {
  // Every member must be here before the store is touched: one that failed, or revoked this
  // communicator to shrink it, fails this barrier at once instead of leaving the others to
  // wait out COLL_TIMEOUT in the new communicator's roll call.
  if (!impl_->asyncError()) {  // a failed one is refused below, with what to do instead
    try {
      barrier().wait();
    } catch (const Error& e) {
      throw Error(e.code(), format("grow (rank %d of %d): not every member came to it (shrink() to the survivors, then "
                                   "grow that): %s", rank(), size(), e.what()));
    }
  }
  std::unique_ptr<CommunicatorImpl> impl;
  Status st = impl_->grow(&impl);
  if (!st) throw st.toError(format("grow (rank %d of %d)", rank(), size()));
  return std::unique_ptr<Communicator>(new Communicator(std::move(impl)));
}

std::unique_ptr<Communicator> Communicator::join(const CommOptions& options) {
  std::unique_ptr<CommunicatorImpl> impl;
  Status st = CommunicatorImpl::join(options, Config::global(), &impl);
  if (!st) throw st.toError(format("join '%s'", options.name.c_str()));
  return std::unique_ptr<Communicator>(new Communicator(std::move(impl)));
}

std::unique_ptr<Communicator> Communicator::shrink(const std::vector<int>& excluded_ranks) {
  std::unique_ptr<CommunicatorImpl> impl;
  Status st = impl_->shrink(excluded_ranks, &impl);
  if (!st) throw st.toError(format("shrink (rank %d of %d)", rank(), size()));
  return std::unique_ptr<Communicator>(new Communicator(std::move(impl)));
}

std::unique_ptr<Communicator> Communicator::split(int color, int key) {
  std::unique_ptr<CommunicatorImpl> impl;
  Status st = impl_->split(color, key, &impl);
  if (!st) throw st.toError(format("split (rank %d of %d, color %d, key %d)", rank(), size(), color, key));
  if (!impl) return nullptr;
  return std::unique_ptr<Communicator>(new Communicator(std::move(impl)));
}

std::optional<Error> Communicator::asyncError() const { return impl_->asyncError(); }

std::string Communicator::describe() const { return impl_->describe(); }

}  // namespace coll
