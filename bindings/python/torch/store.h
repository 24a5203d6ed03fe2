// coll's start-up exchange through the store torch.distributed hands every backend, so a job
// launched by torchrun or init_process_group needs no second rendezvous point.
#pragma once

#include <torch/csrc/distributed/c10d/Store.hpp>

#include <memory>

#include "coll/store.h"

namespace coll::torch_backend {

std::shared_ptr<KeyValueStore> wrapTorchStore(c10::intrusive_ptr<c10d::Store> store);

// The host a TCPStore under `store` (through any PrefixStores) listens on; empty if none.
std::string storeHost(const c10::intrusive_ptr<c10d::Store>& store);

}  // namespace coll::torch_backend
