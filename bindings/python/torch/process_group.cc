#include "process_group.h"

#include <c10/util/Exception.h>
#include <pybind11/pybind11.h>

#include <optional>
#include <random>

#include "coll/error.h"
#include "sparse_allreduce.h"
#include "store.h"
#include "tensors.h"

namespace coll::torch_backend {
namespace {

// A process may destroy its group and make it again over the same store under the same prefix
// (torch names the default group alike each time): each making is a generation, counted in
// the store, so that one's keys never meet another's. Every rank of a generation adds before
// any can finish making it, so all of them count alike.
std::string generationOf(KeyValueStore& store, int size) {
  const int64_t joined = store.add("coll/torch/joined", 1);
  return std::to_string((joined - 1) / size);
}

// coll authenticates its data connections with a job secret. Under torch the store is the
// trust anchor already, so rank 0 draws one and the others read it there.
std::string agreeOnSecret(KeyValueStore& store, const std::string& generation, int rank,
                          std::chrono::milliseconds timeout) {
  const std::string key = "coll/torch/" + generation + "/secret";
  std::string secret;
  if (rank == 0) {
    std::random_device rd;
    const char* hex = "0123456789abcdef";
    for (int i = 0; i < 32; ++i) secret += hex[rd() % 16];
    store.set(key, secret);
  } else {
    TORCH_CHECK(store.get(key, &secret, timeout), "coll init (rank ", rank, "): rank 0 did not publish the ",
                "job secret in torch's store within ", timeout.count(), " ms");
  }
  return secret;
}

}  // namespace

ProcessGroupColl::ProcessGroupColl(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                                   std::chrono::milliseconds timeout, std::string profiling_name)
    : BackendBase(rank, size),
      timeout_(timeout),
      profiling_name_(std::move(profiling_name)),
      monitored_bytes_(static_cast<size_t>(size) + 1, 1) {
  auto kv = wrapTorchStore(store);
  CommOptions options;
  options.rank = rank;
  options.size = size;
  const std::string generation = generationOf(*kv, size);
  options.name = generation == "0" ? "torch" : "torch/" + generation;
  options.secret = agreeOnSecret(*kv, generation, rank, timeout);
  options.store = kv;
  options.timeout = timeout;
  try {
    comm_ = Communicator::create(options);
  } catch (const coll::Error& e) {
    TORCH_CHECK(false, "coll ", toString(e.code()), ": ", e.what());
  }
  completer_ = std::make_unique<Completer>();
  init();
}

ProcessGroupColl::~ProcessGroupColl() { close(); }

void ProcessGroupColl::close() {
  std::unique_ptr<Completer> completer;
  std::unique_ptr<Communicator> comm;
  {
    std::lock_guard<std::mutex> lock(issue_mu_);
    completer.swap(completer_);
    comm.swap(comm_);
  }
  // The Completer may be dropping the last reference to a tensor Python owns, which takes the
  // GIL: joining it while this thread holds the GIL would deadlock.
  std::optional<pybind11::gil_scoped_release> unlocked;
  if (Py_IsInitialized() && PyGILState_Check()) unlocked.emplace();
  completer.reset();  // every pending Work finishes (or fails at its deadline) first
  comm.reset();
}

c10::intrusive_ptr<c10d::Work> ProcessGroupColl::submit(c10d::OpType type, const Placement& where,
                                                        std::vector<at::Tensor> outputs, std::vector<at::Tensor> keep,
                                                        std::function<void()> finish_ok, const Issue& issue,
                                                        bool point_to_point, std::vector<at::Tensor> inputs) {
  std::vector<coll::Work> ops;
  c10::intrusive_ptr<CollWork> work;
  {
    std::lock_guard<std::mutex> lock(issue_mu_);
    Communicator& comm = live(profilingTitle(profiling_name_, type));
    try {
      ops = issue(comm);
      if (!point_to_point) ++sequence_;
    } catch (const coll::Error& e) {
      TORCH_CHECK(false, "coll ", toString(e.code()), ": ", e.what());
    }
    // A collective's copy-back goes on its stream now, right behind it; a staged receive's
    // only once its bytes are here.
    std::function<void()> finish = point_to_point ? copyWhenArrived(where, std::move(finish_ok))
                                                  : queueCopyBack(where, std::move(finish_ok));
    work = c10::make_intrusive<CollWork>(rank_, type, std::move(outputs), std::move(keep), std::move(finish),
                                         profilingTitle(profiling_name_, type), std::move(inputs),
                                         where.futureDevices());
    if (coalescing_) coalesced_.push_back(work);
    completer_->add(std::move(ops), work, point_to_point);  // under the lock: shutdown() may take it next
  }
  return work;
}

#if COLL_TORCH_COALESCING
// Nothing to hold back: coll's host point-to-point (CUDA tensors staged into it) needs no
// group, and torch issues a coalesced block's collectives (allreduce_coalesced, ...) before it
// calls endCoalescing. The block's Work is all of its ops'.
void ProcessGroupColl::startCoalescing() {
  std::lock_guard<std::mutex> lock(issue_mu_);
  TORCH_CHECK(!coalescing_, "coll startCoalescing: already coalescing (endCoalescing was not called)");
  coalescing_ = true;
  coalesced_.clear();
}

c10::intrusive_ptr<c10d::Work> ProcessGroupColl::endCoalescing() {
  std::vector<c10::intrusive_ptr<CollWork>> members;
  {
    std::lock_guard<std::mutex> lock(issue_mu_);
    TORCH_CHECK(coalescing_, "coll endCoalescing: startCoalescing was not called");
    coalescing_ = false;
    members.swap(coalesced_);
  }
  return c10::make_intrusive<CoalescedWork>(rank_, std::move(members));
}
#endif

c10::intrusive_ptr<c10d::Work> ProcessGroupColl::broadcast(std::vector<at::Tensor>& tensors,
                                                           const c10d::BroadcastOptions& opts) {
  const at::Tensor& t = single(tensors, "broadcast");
  const Placement where = placementOf({t}, "broadcast");
  DataType type = collTypeOf(t, "broadcast");
  checkRank(opts.rootRank, size_, "broadcast", "root");
  Dense d = dense(t);
  const int root = static_cast<int>(opts.rootRank);
  return submit(c10d::OpType::BROADCAST, where, {t}, {d.tensor}, d.copy_back, [&](Communicator& c) {
    void* p = d.tensor.data_ptr();
    return std::vector<coll::Work>{c.broadcast(p, p, d.tensor.numel(), type, root, where.raw)};
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupColl::allreduce(std::vector<at::Tensor>& tensors,
                                                           const c10d::AllreduceOptions& opts) {
  const at::Tensor& t = single(tensors, "allreduce");
  const Placement where = placementOf({t}, "allreduce");
  if (t.layout() != at::kStrided) return sparseAllreduce(t, opts);
  DataType type = collTypeOf(t, "allreduce");
  ReduceOp op = collOpOf(opts.reduceOp, t, "allreduce");
  Dense d = dense(t);
  return submit(c10d::OpType::ALLREDUCE, where, {t}, {d.tensor}, d.copy_back, [&](Communicator& c) {
    void* p = d.tensor.data_ptr();
    return std::vector<coll::Work>{c.allreduce(p, p, d.tensor.numel(), type, op, where.raw)};
  });
}

// The sum is computed here, on the calling thread, while the issue lock keeps every other op
// of this group behind it (three all-gathers whose sizes depend on each other); the Work that
// comes back is already done and copies the sum into `t` when it completes.
c10::intrusive_ptr<c10d::Work> ProcessGroupColl::sparseAllreduce(const at::Tensor& t, const c10d::AllreduceOptions& opts) {
  TORCH_CHECK(opts.reduceOp == c10d::ReduceOp::SUM, "coll allreduce: sparse tensors reduce with SUM only (as gloo); ",
              "for another ReduceOp all-reduce t.to_dense()");
  TORCH_CHECK(t.device().is_cpu(), "coll allreduce: sparse tensors are all-reduced on the CPU only; pass ",
              "t.cpu() or t.to_dense()");
  auto sum = std::make_shared<at::Tensor>();
  at::Tensor target = t;
  return submit(c10d::OpType::ALLREDUCE, Placement{}, {t}, {}, [target, sum]() mutable { target.copy_(*sum); },
                [&](Communicator& c) {
                  *sum = sparseAllreduceSum(c, t);
                  return std::vector<coll::Work>{};
                });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupColl::allreduce_coalesced(std::vector<at::Tensor>& tensors,
                                                                     const c10d::AllreduceCoalescedOptions& opts) {
  TORCH_CHECK(!tensors.empty(), "coll allreduce_coalesced: empty tensor list");
  const Placement where = placementOf(tensors, "allreduce_coalesced");
  // One all-reduce over the tensors laid end to end: one op, one latency. Shapes may differ
  // (as gloo allows); the dtype may not.
  at::Tensor flat = flatten(tensors, "allreduce_coalesced", false);
  DataType type = collTypeOf(flat, "allreduce_coalesced");
  ReduceOp op = collOpOf(opts.reduceOp, flat, "allreduce_coalesced");
  auto parts = tensors;
  return submit(c10d::OpType::ALLREDUCE_COALESCED, where, tensors, {flat}, [flat, parts] { unflatten(flat, parts); },
                [&](Communicator& c) {
                  void* p = flat.data_ptr();
                  return std::vector<coll::Work>{c.allreduce(p, p, flat.numel(), type, op, where.raw)};
                });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupColl::reduce(std::vector<at::Tensor>& tensors,
                                                        const c10d::ReduceOptions& opts) {
  const at::Tensor& t = single(tensors, "reduce");
  const Placement where = placementOf({t}, "reduce");
  DataType type = collTypeOf(t, "reduce");
  ReduceOp op = collOpOf(opts.reduceOp, t, "reduce");
  checkRank(opts.rootRank, size_, "reduce", "root");
  Dense d = dense(t);
  const int root = static_cast<int>(opts.rootRank);
  return submit(c10d::OpType::REDUCE, where, {t}, {d.tensor}, d.copy_back, [&](Communicator& c) {
    void* p = d.tensor.data_ptr();
    return std::vector<coll::Work>{
        c.reduce(p, rank_ == root ? p : nullptr, d.tensor.numel(), type, op, root, where.raw)};
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupColl::barrier(const c10d::BarrierOptions&) {
  return submit(c10d::OpType::BARRIER, Placement{}, {}, {}, nullptr,
                [](Communicator& c) { return std::vector<coll::Work>{c.barrier()}; });
}

// Matched by (peer, tag) as gloo matches them; they progress on their own (a posted receive
// never holds back a later send) and complete as their partners arrive. CUDA tensors are
// staged through pinned host memory (the core stages device point-to-point the same way), so
// they follow the same rules: tags, receive from any source, no group needed. A send copies
// its tensor when issued, after the work queued before it on torch's current stream; a
// receive writes its tensor on that stream when it completes.
c10::intrusive_ptr<c10d::Work> ProcessGroupColl::send(std::vector<at::Tensor>& tensors, int dst, int tag) {
  const at::Tensor& t = single(tensors, "send");
  const Placement where = placementOf({t}, "send");
  DataType type = collTypeOf(t, "send");
  checkRank(dst, size_, "send", "destination");
  TORCH_CHECK(tag >= 0, "coll send: tag ", tag, " is negative; tags are from 0 up");
  at::Tensor d = where.onGpu() ? pinnedCopyOf(t) : t.contiguous();
  return submit(
      c10d::OpType::SEND, where, {t}, {d}, nullptr,
      [&](Communicator& c) { return std::vector<coll::Work>{c.send(d.data_ptr(), d.numel(), type, dst, tag)}; }, true);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupColl::recv(std::vector<at::Tensor>& tensors, int src, int tag) {
  checkRank(src, size_, "recv", "source");
  return receive(tensors, src, tag);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupColl::recvAnysource(std::vector<at::Tensor>& tensors, int tag) {
  return receive(tensors, kAnySource, tag);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupColl::receive(std::vector<at::Tensor>& tensors, int src, int tag) {
  const at::Tensor& t = single(tensors, "recv");
  const Placement where = placementOf({t}, "recv");
  DataType type = collTypeOf(t, "recv");
  TORCH_CHECK(tag >= 0, "coll recv: tag ", tag, " is negative; tags are from 0 up");
  at::Tensor buffer;
  std::function<void()> copy_back;
  if (where.onGpu()) {
    buffer = pinnedLike(t);
    copy_back = [t, buffer]() mutable { t.copy_(buffer.view(t.sizes())); };
  } else {
    Dense d = dense(t);
    buffer = d.tensor;
    copy_back = d.copy_back;
  }
  return submit(
      src == kAnySource ? c10d::OpType::RECVANYSOURCE : c10d::OpType::RECV, where, {t}, {buffer}, copy_back,
      [&](Communicator& c) {
        return std::vector<coll::Work>{c.recv(buffer.data_ptr(), buffer.numel(), type, src, tag)};
      },
      true);
}

}  // namespace coll::torch_backend
