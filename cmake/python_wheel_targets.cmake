# What `pip install .` puts in site-packages/coll/ (beside the Python files pyproject.toml lists):
# libcoll.so.MAJOR, the numpy extension _coll, the torch backend _torch where the environment has
# torch (cmake/python_wheel.cmake probed it), the TensorFlow ops _tensorflow_ops.so where it has
# TensorFlow (cmake/python_wheel_tensorflow.cmake), and _build_info.py, which `python -m coll` prints
# and coll.torch checks against the torch it imports. The modules find libcoll beside them.
set_target_properties(coll_python PROPERTIES INSTALL_RPATH "$ORIGIN")
# One file, libcoll.so.MAJOR (a wheel stores symbolic links as copies).
set_target_properties(coll_shared PROPERTIES VERSION ${PROJECT_VERSION_MAJOR})
install(TARGETS coll_shared LIBRARY DESTINATION coll NAMELINK_SKIP)
install(TARGETS coll_python LIBRARY DESTINATION coll)

# torch's libraries, from the folder its probe named: one missing skips coll.torch, saying so.
set(_torch_libs "")
if(COLL_WHEEL_TORCH_found)
  foreach(_lib torch_python torch_cpu torch c10)
    find_library(COLL_WHEEL_LIB_${_lib} ${_lib} PATHS ${COLL_WHEEL_TORCH_library_dirs} NO_DEFAULT_PATH)
    if(NOT COLL_WHEEL_LIB_${_lib})
      message(STATUS "coll wheel: no coll.torch: lib${_lib}.so is not in ${COLL_WHEEL_TORCH_library_dirs}")
      set(COLL_WHEEL_TORCH_found 0)
      break()
    endif()
    list(APPEND _torch_libs ${COLL_WHEEL_LIB_${_lib}})
  endforeach()
endif()

set(COLL_BUILT_TORCH "")
if(COLL_WHEEL_TORCH_found)
  set(COLL_BUILT_TORCH "${COLL_WHEEL_TORCH_version}")
  # Plain compiler flags, not pybind11_add_module: the module must use the pybind11 headers
  # torch ships (torch/include/pybind11), or torch's Store and Backend types would not cross.
  add_library(coll_torch MODULE ${COLL_TORCH_SOURCES})
  set_target_properties(coll_torch PROPERTIES OUTPUT_NAME _torch PREFIX "" SUFFIX ".${Python_SOABI}.so"
                                              CXX_VISIBILITY_PRESET hidden INSTALL_RPATH "$ORIGIN")
  target_include_directories(coll_torch SYSTEM PRIVATE ${COLL_WHEEL_TORCH_includes} ${Python_INCLUDE_DIRS})
  target_compile_definitions(coll_torch PRIVATE TORCH_EXTENSION_NAME=_torch TORCH_API_INCLUDE_EXTENSION_H
                                                ${COLL_WHEEL_TORCH_pybind11_defines})
  target_compile_options(coll_torch PRIVATE -Wno-unused-parameter -Wno-sign-compare -Wno-deprecated-declarations)
  # torch's libraries are loaded by `import torch` before coll._torch (coll/torch.py imports it
  # first), so the module needs no path to them; the shared C++ runtime by name, as torch's.
  target_link_libraries(coll_torch PRIVATE coll_shared ${_torch_libs} -l:libstdc++.so.6)
  target_link_options(coll_torch PRIVATE -Wl,--as-needed)
  install(TARGETS coll_torch LIBRARY DESTINATION coll)
endif()

include(${PROJECT_SOURCE_DIR}/cmake/python_wheel_tensorflow.cmake)

configure_file(${PROJECT_SOURCE_DIR}/bindings/python/coll/_build_info.py.in ${PROJECT_BINARY_DIR}/wheel/_build_info.py @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/wheel/_build_info.py DESTINATION coll)
