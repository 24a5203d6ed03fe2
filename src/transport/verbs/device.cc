#include "transport/verbs/device.h"

#include <infiniband/verbs.h>

#include <memory>

#include "base/log.h"

namespace coll::transport::verbs {
namespace {

struct DeviceListDeleter {
  void operator()(ibv_device** list) const { ibv_free_device_list(list); }
};
struct ContextCloser {
  void operator()(ibv_context* c) const { ibv_close_device(c); }
};

// The first active port of an open device, or 0.
int activePort(ibv_context* ctx) {
  ibv_device_attr attr{};
  if (ibv_query_device(ctx, &attr) != 0) return 0;
  for (int port = 1; port <= attr.phys_port_cnt; ++port) {
    ibv_port_attr pa{};
    if (ibv_query_port(ctx, static_cast<uint8_t>(port), &pa) == 0 && pa.state == IBV_PORT_ACTIVE) return port;
  }
  return 0;
}

}  // namespace

Status findDevice(DeviceChoice* out) {
  int n = 0;
  std::unique_ptr<ibv_device*, DeviceListDeleter> list(ibv_get_device_list(&n));
  if (!list || n == 0)
    return unsupportedError("verbs: no RDMA device (ibv_get_device_list found none: no InfiniBand/RoCE NIC and no "
                            "soft-RoCE link, see `rdma link add`)");
  std::string seen;
  for (int i = 0; i < n; ++i) {
    const char* name = ibv_get_device_name(list.get()[i]);
    std::unique_ptr<ibv_context, ContextCloser> ctx(ibv_open_device(list.get()[i]));
    int port = ctx ? activePort(ctx.get()) : 0;
    if (port > 0) {
      *out = DeviceChoice{name, port};
      return Status::ok();
    }
    seen += (seen.empty() ? "" : ", ") + std::string(name);
  }
  return unsupportedError(format("verbs: no RDMA device with an active port (found %s)", seen.c_str()));
}

}  // namespace coll::transport::verbs
