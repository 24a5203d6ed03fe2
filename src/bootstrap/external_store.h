// A StoreClient over a caller's KeyValueStore (torch.distributed's store, for instance), so the
// rest of init runs unchanged whichever store the job rendezvouses through.
#pragma once

#include <memory>

#include "bootstrap/store.h"
#include "coll/store.h"

namespace coll::bootstrap {

std::unique_ptr<StoreClient> wrapExternalStore(std::shared_ptr<KeyValueStore> store);

}  // namespace coll::bootstrap
