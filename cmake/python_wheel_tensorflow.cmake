# coll.tensorflow in a wheel (included by cmake/python_wheel_targets.cmake): coll's TensorFlow
# ops, compiled with the flags the environment's TensorFlow reports (its headers, C++ ABI and
# -std=c++17) into coll/_tensorflow_ops.so, which tf.load_op_library loads. Where the
# environment has no TensorFlow, or one whose C++ ABI is not libcoll's (a torch built with the
# old ABI decided libcoll's), the wheel has no coll.tensorflow and the configure log says why.
coll_wheel_probe(tensorflow_build_flags.py COLL_WHEEL_TF)  # cmake/python_wheel.cmake
set(_libcoll_abi 1)
if(COLL_WHEEL_TORCH_found AND COLL_WHEEL_TORCH_cxx11_abi STREQUAL "0")
  set(_libcoll_abi 0)
endif()
if(COLL_WHEEL_TF_found AND NOT "_GLIBCXX_USE_CXX11_ABI=${_libcoll_abi}" IN_LIST COLL_WHEEL_TF_defines)
  set(COLL_WHEEL_TF_found 0)
  set(COLL_WHEEL_TF_why "TensorFlow ${COLL_WHEEL_TF_version} uses another C++ ABI than this environment's torch, which libcoll follows")
endif()

set(COLL_BUILT_TENSORFLOW "")
if(COLL_WHEEL_TF_found)
  message(STATUS "coll wheel: TensorFlow ${COLL_WHEEL_TF_version}: building coll.tensorflow against it")
  set(COLL_BUILT_TENSORFLOW "${COLL_WHEEL_TF_version}")
  add_library(coll_tensorflow MODULE
    ${PROJECT_SOURCE_DIR}/bindings/python/tensorflow/ops.cc
    ${PROJECT_SOURCE_DIR}/bindings/python/tensorflow/kernels.cc
    ${PROJECT_SOURCE_DIR}/bindings/python/tensorflow/kernels_blocks.cc
    ${PROJECT_SOURCE_DIR}/bindings/python/tensorflow/runtime.cc)
  set_target_properties(coll_tensorflow PROPERTIES OUTPUT_NAME _tensorflow_ops PREFIX "" SUFFIX ".so"
                                                   CXX_STANDARD 17 CXX_VISIBILITY_PRESET hidden INSTALL_RPATH "$ORIGIN")
  target_include_directories(coll_tensorflow SYSTEM PRIVATE ${COLL_WHEEL_TF_includes})
  target_compile_definitions(coll_tensorflow PRIVATE ${COLL_WHEEL_TF_defines})
  # TensorFlow's headers warn about their own deprecations by the hundred.
  target_compile_options(coll_tensorflow PRIVATE -w)
  target_link_directories(coll_tensorflow PRIVATE ${COLL_WHEEL_TF_library_dirs})
  # libtensorflow_framework is loaded by `import tensorflow` first; no path to it is needed.
  target_link_libraries(coll_tensorflow PRIVATE coll_shared ${COLL_WHEEL_TF_libraries})
  install(TARGETS coll_tensorflow LIBRARY DESTINATION coll)
else()
  message(STATUS "coll wheel: no coll.tensorflow (${COLL_WHEEL_TF_why})")
endif()
