// Driver API functions looked up at run time (cudaGetDriverEntryPointByVersion), so that coll
// links no libcuda: a build with CUDA still loads on machines without a driver.
#pragma once

namespace coll::cuda {

// The driver's function of that name as of CUDA 12.0's signature, or nullptr.
void* driverEntry(const char* name);

}  // namespace coll::cuda
