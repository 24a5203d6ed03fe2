#include "transport/ucx/worker.h"

#include <poll.h>
#include <time.h>


#include "base/log.h"

namespace coll::transport::ucx {
namespace {

// Without an event fd the worker is polled this often while idle: short against a 512 KiB
// slice on a 1 Gbit/s link (4 ms), long enough not to steal a 2-core machine's cores.
constexpr auto kNap = std::chrono::microseconds(50);

Status ucxError(const char* call, ucs_status_t st) {
  return transportError(format("ucx: %s failed: %s", call, ucsError(st).c_str()));
}

}  // namespace

std::string ucsError(ucs_status_t status) { return ucs_status_string(status); }

Status Worker::create(std::unique_ptr<Worker>* out) {
  std::unique_ptr<Worker> w(new Worker());
  COLL_RETURN_IF_ERROR(w->init());
  *out = std::move(w);
  return Status::ok();
}

Status Worker::init() {
  ucp_config_t* config = nullptr;
  ucs_status_t st = ucp_config_read(nullptr, nullptr, &config);  // UCX_* variables are UCX's own
  if (st != UCS_OK) return ucxError("ucp_config_read", st);
  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES;
  params.features = UCP_FEATURE_TAG | UCP_FEATURE_WAKEUP;
  st = ucp_init(&params, config, &context_);
  ucp_config_release(config);
  if (st != UCS_OK) return ucxError("ucp_init", st);
  ucp_worker_params_t wp{};
  wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  wp.thread_mode = UCS_THREAD_MODE_SERIALIZED;
  st = ucp_worker_create(context_, &wp, &worker_);
  if (st != UCS_OK) return ucxError("ucp_worker_create", st);
  ucp_address_t* addr = nullptr;
  size_t len = 0;
  st = ucp_worker_get_address(worker_, &addr, &len);
  if (st != UCS_OK) return ucxError("ucp_worker_get_address", st);
  address_.assign(reinterpret_cast<const char*>(addr), len);
  ucp_worker_release_address(worker_, addr);
  if (ucp_worker_get_efd(worker_, &event_fd_) != UCS_OK) event_fd_ = -1;
  return Status::ok();
}

Worker::~Worker() {
  if (worker_) ucp_worker_destroy(worker_);
  if (context_) ucp_cleanup(context_);
}

void Worker::drainUnexpected() {
  ucp_tag_recv_info_t info{};
  while (ucp_tag_message_h msg = ucp_tag_probe_nb(worker_, 0, 0, 1, &info)) {
    std::string sink(info.length, '\0');
    ucp_request_param_t prm{};
    ucs_status_ptr_t r = ucp_tag_msg_recv_nbx(worker_, sink.data(), sink.size(), msg, &prm);
    for (int spins = 0; UCS_PTR_IS_PTR(r) && ucp_request_check_status(r) == UCS_INPROGRESS && spins < 100000; ++spins)
      ucp_worker_progress(worker_);
    if (UCS_PTR_IS_PTR(r)) {
      ucp_request_cancel(worker_, r);
      ucp_request_free(r);
    }
  }
}

void Worker::sleep(std::chrono::microseconds limit) {
  if (limit.count() <= 0) return;
  if (event_fd_ < 0 || ucp_worker_arm(worker_) != UCS_OK) {  // BUSY: events are already waiting
    auto nap = std::min(limit, kNap);
    timespec ts{0, static_cast<long>(std::chrono::nanoseconds(nap).count())};
    if (event_fd_ < 0) ::nanosleep(&ts, nullptr);
    return;
  }
  pollfd p{event_fd_, POLLIN, 0};
  timespec ts{static_cast<time_t>(limit.count() / 1'000'000), static_cast<long>(limit.count() % 1'000'000) * 1000};
  ::ppoll(&p, 1, &ts, nullptr);
}

}  // namespace coll::transport::ucx
