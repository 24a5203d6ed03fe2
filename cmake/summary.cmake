# coll_report(NAME HAVE WANTED NOTE FIX): one line per optional part; where the part is
# missing, FIX says what would enable it (a Debian package, as tools/dev.sh installs them).
function(coll_report name have wanted note fix)
  if(NOT wanted)
    set(state "off (switched off)")
  elseif(have)
    set(state "found${note}")
  else()
    set(state "skipped (${fix})")
  endif()
  message(STATUS "  ${name}: ${state}")
endfunction()

message(STATUS "coll ${PROJECT_VERSION} configuration (${CMAKE_BUILD_TYPE}):")
message(STATUS "  library: socket and shared-memory transports on Boost.Asio ${Boost_VERSION}")
coll_report("tests (GoogleTest)" "${GTest_FOUND}" "${COLL_BUILD_TESTS}" "" "apt-get install libgtest-dev libgmock-dev")
coll_report("micro-benchmarks (Google Benchmark)" "${benchmark_FOUND}" "${COLL_BUILD_BENCH}" "" "apt-get install libbenchmark-dev")
coll_report("CUDA" "${COLL_HAVE_CUDA}" "${COLL_WITH_CUDA}" " (device buffers: cuda_ipc on one host, staged through pinned memory elsewhere)"
            "no nvcc: a CUDA toolkit in /usr/local/cuda, or apt-get install nvidia-cuda-toolkit")
coll_report("hwloc" "${COLL_HAVE_HWLOC}" "${COLL_WITH_HWLOC}" " (topology detection: NUMA nodes, cores, L3)"
            "apt-get install libhwloc-dev; /proc and sysfs serve instead")
coll_report("UCX" "${COLL_HAVE_UCX}" "${COLL_WITH_UCX}" " (COLL_TRANSPORT=ucx)" "apt-get install libucx-dev")
coll_report("verbs" "${COLL_HAVE_VERBS}" "${COLL_WITH_VERBS}" " (device probe and RC data path)" "apt-get install libibverbs-dev")
coll_report("PMIx" "${COLL_HAVE_PMIX}" "${COLL_WITH_PMIX}" " (rendezvous through mpirun's or srun --mpi=pmix's PMIx server, PMIx ${PMIX_VERSION})"
            "apt-get install libpmix-dev; across hosts Open MPI then needs -x MASTER_ADDR")
coll_report("Python (pybind11)" "${COLL_HAVE_PYTHON}" "${COLL_WITH_PYTHON}" " (the coll package in build/python)"
            "apt-get install pybind11-dev python3-dev python3-numpy")
coll_report("torch.distributed backend (libtorch)" "${COLL_HAVE_TORCH}" "${COLL_WITH_TORCH}" " (coll.torch)"
            "apt-get install python3-torch libtorch-dev")
coll_report("trainer (zlib)" "${ZLIB_FOUND}" "ON" " (coll_trainer, coll-train)" "apt-get install zlib1g-dev")
coll_report("digits data for coll-train" "${COLL_HAVE_SKLEARN}" "ON" " (build/data/digits.csv)" "apt-get install python3-sklearn")
get_property(_coll_summary_lines GLOBAL PROPERTY COLL_SUMMARY_LINES)
foreach(_line IN LISTS _coll_summary_lines)
  message(STATUS "  ${_line}")
endforeach()
