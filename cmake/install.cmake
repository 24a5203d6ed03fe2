# What `cmake --install build --prefix P` and `cpack -G DEB` put on a machine, as NCCL and Gloo
# do: libcoll.so.MAJOR (hidden insides, src/libcoll.map) and libcoll.a, the public headers, a
# CMake package (find_package(coll) -> coll::coll, coll::coll_static) and coll.pc for
# pkg-config, collrun and the *_perf programs. Every installed path is relative to the prefix,
# so a tree installed anywhere (or unpacked from the .deb into another root) finds itself.
include(CMakePackageConfigHelpers)

install(TARGETS coll_shared coll LIBRARY DESTINATION lib ARCHIVE DESTINATION lib)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/coll DESTINATION include FILES_MATCHING PATTERN "*.h")

set(_coll_programs)
foreach(prog collrun all_reduce_perf broadcast_perf reduce_perf all_gather_perf reduce_scatter_perf alltoall_perf
             sendrecv_perf gather_perf scatter_perf)
  if(TARGET ${prog})
    list(APPEND _coll_programs ${prog})
  endif()
endforeach()
if(_coll_programs)
  install(TARGETS ${_coll_programs} RUNTIME DESTINATION bin)
endif()

# What a static link of libcoll.a needs besides it (the shared library records its own).
set(COLL_STATIC_LINK_LIBS -pthread)
set(COLL_PC_LIBS_PRIVATE "-pthread")
if(COLL_HAVE_UCX)
  list(APPEND COLL_STATIC_LINK_LIBS ${UCX_LINK_LIBRARIES})
  string(APPEND COLL_PC_LIBS_PRIVATE " ${UCX_LDFLAGS}")
endif()
if(COLL_HAVE_HWLOC)
  list(APPEND COLL_STATIC_LINK_LIBS ${HWLOC_LINK_LIBRARIES})
  string(APPEND COLL_PC_LIBS_PRIVATE " ${HWLOC_LDFLAGS}")
endif()
if(COLL_HAVE_VERBS)
  list(APPEND COLL_STATIC_LINK_LIBS ${IBVERBS_LIBRARY})
  string(APPEND COLL_PC_LIBS_PRIVATE " -libverbs")
endif()
if(COLL_HAVE_CUDA)
  get_target_property(_cudart CUDA::cudart_static IMPORTED_LOCATION)
  list(APPEND COLL_STATIC_LINK_LIBS ${_cudart} dl rt)
  string(APPEND COLL_PC_LIBS_PRIVATE " ${_cudart} -ldl -lrt")
endif()
string(REPLACE ";" " " COLL_PC_LIBS_PRIVATE "${COLL_PC_LIBS_PRIVATE}")

configure_file(${PROJECT_SOURCE_DIR}/cmake/collConfig.cmake.in ${PROJECT_BINARY_DIR}/install/collConfig.cmake @ONLY)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/install/collConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/install/collConfig.cmake ${PROJECT_BINARY_DIR}/install/collConfigVersion.cmake
        DESTINATION lib/cmake/coll)
configure_file(${PROJECT_SOURCE_DIR}/cmake/coll.pc.in ${PROJECT_BINARY_DIR}/install/coll.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/install/coll.pc DESTINATION lib/pkgconfig)

# cpack -G DEB (in the build folder): a Debian package of the same files under /usr; its
# dependencies come from dpkg-shlibdeps where dpkg-dev is installed.
set(CPACK_PACKAGE_NAME coll)
set(CPACK_PACKAGE_VENDOR "coll")
set(CPACK_PACKAGE_CONTACT "coll developers <coll@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "Collective communication for distributed training (NCCL-shaped C API, C++ API)")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_GENERATOR DEB)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION libs)
set(CPACK_STRIP_FILES ON)  # the build keeps -g; the package need not carry it
find_program(DPKG_SHLIBDEPS dpkg-shlibdeps)
if(DPKG_SHLIBDEPS)
  set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
endif()
include(CPack)
