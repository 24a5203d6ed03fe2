# Optional dependencies: each is looked for only when its option is on, and the summary at the
# end of configure says what was found. Later components (topology, ucx, verbs, cuda, python)
# use these results.
include(CheckLanguage)
find_package(PkgConfig QUIET)

set(COLL_HAVE_CUDA OFF)
if(COLL_WITH_CUDA)
  if(NOT CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    # Ampere and Hopper machine code, plus Hopper PTX that newer GPUs compile at load time.
    # Set before enable_language: CMake's own default is an architecture nvcc 13 refuses.
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES "80-real;90")
    endif()
    # coll links CUDA::cudart_static itself; CMake's implicit runtime would add -lcudart_static
    # and -lcudadevrt without their directory to every program linking coll.
    set(CMAKE_CUDA_RUNTIME_LIBRARY None)
    set(CMAKE_CUDA_STANDARD 17)
    set(CMAKE_CUDA_STANDARD_REQUIRED ON)
    enable_language(CUDA)
    find_package(CUDAToolkit REQUIRED)
    set(COLL_HAVE_CUDA ON)
  endif()
endif()

set(COLL_HAVE_HWLOC OFF)
if(COLL_WITH_HWLOC AND PkgConfig_FOUND)
  pkg_check_modules(HWLOC QUIET IMPORTED_TARGET hwloc)
  if(HWLOC_FOUND)
    set(COLL_HAVE_HWLOC ON)
  endif()
endif()

set(COLL_HAVE_UCX OFF)
if(COLL_WITH_UCX AND PkgConfig_FOUND)
  pkg_check_modules(UCX QUIET IMPORTED_TARGET ucx)
  if(UCX_FOUND)
    set(COLL_HAVE_UCX ON)
  endif()
endif()

set(COLL_HAVE_VERBS OFF)
if(COLL_WITH_VERBS)
  find_library(IBVERBS_LIBRARY ibverbs)
  find_path(IBVERBS_INCLUDE infiniband/verbs.h)
  if(IBVERBS_LIBRARY AND IBVERBS_INCLUDE)
    set(COLL_HAVE_VERBS ON)
  endif()
endif()

# PMIx client (src/bootstrap/pmix_exchange.h): rank 0's rendezvous through the PMIx server of
# Open MPI's mpirun or Slurm's srun --mpi=pmix. Debian's pmix.pc points at pmix2/lib, whose
# libpmix.so is also linked from /usr/lib/<arch>, where the loader looks anyway. Only its headers
# and the library are taken, not its link flags: they carry "-Wl,-rpath" for pmix2/lib, and
# the RUNPATH every coll binary got from them ended in an empty entry, which the loader reads
# as the current directory (every library of every rank was first looked for there, in 16
# subdirectories each: 330 failed opens a process, and a library planted in the working
# directory would have been loaded).
set(COLL_HAVE_PMIX OFF)
option(COLL_WITH_PMIX "Use libpmix when found (launchers with a PMIx server)" ON)
if(COLL_WITH_PMIX AND PkgConfig_FOUND)
  pkg_check_modules(PMIX QUIET pmix)
  if(PMIX_FOUND)
    # The loader's own directories first (Debian links libpmix.so there): nothing to add to RUNPATH.
    find_library(COLL_PMIX_LIBRARY NAMES pmix)
    if(NOT COLL_PMIX_LIBRARY)
      find_library(COLL_PMIX_LIBRARY NAMES pmix HINTS ${PMIX_LIBRARY_DIRS})
    endif()
  endif()
  if(PMIX_FOUND AND COLL_PMIX_LIBRARY)
    add_library(coll_pmix INTERFACE)
    target_include_directories(coll_pmix SYSTEM INTERFACE ${PMIX_INCLUDE_DIRS})
    target_link_libraries(coll_pmix INTERFACE ${COLL_PMIX_LIBRARY})
    set(COLL_HAVE_PMIX ON)
  endif()
endif()

set(COLL_HAVE_PYTHON OFF)
if(COLL_WITH_PYTHON)
  # Debian's torch and numpy belong to /usr/bin/python3, not to a pyenv python on PATH.
  if(NOT PYTHON_EXECUTABLE AND EXISTS /usr/bin/python3)
    set(PYTHON_EXECUTABLE /usr/bin/python3 CACHE FILEPATH "Python for the bindings")
  endif()
  find_package(pybind11 CONFIG QUIET)
  if(pybind11_FOUND)
    set(COLL_HAVE_PYTHON ON)
  endif()
endif()

# The torch.distributed backend needs libtorch's headers and libtorch_python (Debian:
# libtorch-dev beside python3-torch). Found by hand: TorchConfig.cmake drags in CUDA probing.
set(COLL_HAVE_TORCH OFF)
option(COLL_WITH_TORCH "Build the torch.distributed backend when libtorch is found" ON)
if(COLL_HAVE_PYTHON AND COLL_WITH_TORCH)
  find_path(TORCH_C10D_INCLUDE torch/csrc/distributed/c10d/ProcessGroup.hpp)
  find_path(TORCH_API_INCLUDE torch/torch.h PATH_SUFFIXES torch/csrc/api/include)
  find_library(TORCH_PYTHON_LIBRARY torch_python)
  find_library(TORCH_CPU_LIBRARY torch_cpu)
  find_library(TORCH_C10_LIBRARY c10)
  if(TORCH_C10D_INCLUDE AND TORCH_API_INCLUDE AND TORCH_PYTHON_LIBRARY AND TORCH_CPU_LIBRARY AND TORCH_C10_LIBRARY)
    set(COLL_HAVE_TORCH ON)
  endif()
endif()

# The trainer reads gzip'd data with zlib; its digits data set comes from scikit-learn, which
# the build exports into build/data/digits.csv (tools/CMakeLists.txt).
find_package(ZLIB QUIET)
set(COLL_HAVE_SKLEARN OFF)
if(EXISTS /usr/bin/python3)
  execute_process(COMMAND /usr/bin/python3 -c "import sklearn.datasets" RESULT_VARIABLE _sklearn_rc
                  OUTPUT_QUIET ERROR_QUIET)
  if(_sklearn_rc EQUAL 0)
    set(COLL_HAVE_SKLEARN ON)
  endif()
endif()

find_package(GTest QUIET)
find_package(benchmark QUIET)
