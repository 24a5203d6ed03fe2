// Lists and set-if-absent over any StoreClient, built from set/get/add/check: what a caller's
// store (torch.distributed's, over external_store.cc) gets. coll's own store overrides each
// with one atomic request (store_client.cc). An item i of list K is the key "K/<i>", counted
// by "K/n".
#include <thread>

#include "base/log.h"
#include "bootstrap/store.h"

namespace coll::bootstrap {
namespace {

// How long a reader waits for an item whose number was taken but not yet set: its appender
// is between its two calls, or died there.
constexpr auto kHoleWait = std::chrono::seconds(1);

std::string itemKey(const std::string& key, int64_t i) { return key + "/" + std::to_string(i); }

}  // namespace

Status StoreClient::append(const std::string& key, const std::string& item, Deadline deadline) {
  int64_t i = 0;
  COLL_RETURN_IF_ERROR(add(key + "/n", 1, &i, deadline));
  return set(itemKey(key, i), item, deadline);
}

Status StoreClient::readList(const std::string& key, std::vector<std::string>* items, Deadline deadline) {
  items->clear();
  int64_t n = 0;
  COLL_RETURN_IF_ERROR(add(key + "/n", 0, &n, deadline));
  for (int64_t i = 1; i <= n; ++i) {
    std::string item;
    Status st = get(itemKey(key, i), &item, std::min(deadline, Clock::now() + kHoleWait));
    if (st) items->push_back(std::move(item));
    else if (st.code() != ErrorCode::Timeout) return st;
  }
  return Status::ok();
}

Status StoreClient::setIfAbsent(const std::string& key, const std::string& value, std::string* held,
                                Deadline deadline) {
  int64_t claim = 0;
  COLL_RETURN_IF_ERROR(add(key + "/claim", 1, &claim, deadline));
  if (claim == 1) {
    COLL_RETURN_IF_ERROR(set(key, value, deadline));
    *held = value;
    return Status::ok();
  }
  return get(key, held, deadline);
}

Status StoreClient::appendWhenClosed(const std::string&, const std::string&, Deadline) {
  return unsupportedError("this store cannot act when a connection ends (only coll's own store can)");
}

}  // namespace coll::bootstrap
