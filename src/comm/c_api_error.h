// The C API's per-thread "last error" (collGetLastError), for the C API's files.
#pragma once

#include <string>

namespace coll::capi {

// Keeps message as this thread's last error; collGetLastError returns it until the next failure.
void setLastError(const std::string& message);

}  // namespace coll::capi
