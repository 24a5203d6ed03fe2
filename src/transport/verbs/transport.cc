#include "transport/verbs/transport.h"

#include "core/log.h"
#include "transport/verbs/device.h"

namespace coll::transport::verbs {

Status createTransport(const Config&, const PeerDirectory&, std::unique_ptr<Transport>*) {
  DeviceChoice device;
  COLL_RETURN_IF_ERROR(findDevice(&device));
  return unsupportedError(format("verbs: found %s port %d, but coll's verbs data path is not built yet (issue 7)",
                                 device.name.c_str(), device.port));
}

}  // namespace coll::transport::verbs
