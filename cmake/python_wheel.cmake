# `pip install .` (pyproject.toml, scikit-build-core): the coll package for the Python that pip
# runs, built against the torch of the environment pip installs into. Included before the
# optional dependencies, so that the bindings use this Python and, where torch was built with
# the old C++ ABI, every object of libcoll is compiled with torch's (their std::string meet).
find_package(Python 3.9 REQUIRED COMPONENTS Interpreter Development.Module)
set(PYTHON_EXECUTABLE ${Python_EXECUTABLE} CACHE FILEPATH "Python for the bindings" FORCE)
# Debian's libtorch is not this environment's torch: the torch module is built from the probe.
set(COLL_WITH_TORCH OFF CACHE BOOL "" FORCE)

# `python -I` leaves out PYTHONPATH, through which pip's isolated build hides the environment
# it installs into: the torch found is the one `import torch` will load beside coll.
execute_process(COMMAND ${Python_EXECUTABLE} -I ${PROJECT_SOURCE_DIR}/bindings/python/torch_build_flags.py
                OUTPUT_VARIABLE _coll_torch_flags ERROR_VARIABLE _coll_torch_err RESULT_VARIABLE _coll_torch_rc)
set(COLL_WHEEL_TORCH_found 0)
string(REPLACE "\n" ";" _coll_torch_lines "${_coll_torch_flags}")
foreach(_line IN LISTS _coll_torch_lines)
  if(_line MATCHES "^([a-z0-9_]+)=(.*)$")
    string(REPLACE "|" ";" _value "${CMAKE_MATCH_2}")  # the script's list separator
    set(COLL_WHEEL_TORCH_${CMAKE_MATCH_1} "${_value}")
  endif()
endforeach()
if(NOT _coll_torch_rc EQUAL 0)
  set(COLL_WHEEL_TORCH_why "probing torch failed: ${_coll_torch_err}")
endif()
if(COLL_WHEEL_TORCH_found)
  message(STATUS "coll wheel: torch ${COLL_WHEEL_TORCH_version} of ${Python_EXECUTABLE} (C++11 ABI ${COLL_WHEEL_TORCH_cxx11_abi}): building coll.torch against it")
  if(COLL_WHEEL_TORCH_cxx11_abi STREQUAL "0")
    add_compile_definitions(_GLIBCXX_USE_CXX11_ABI=0)
  endif()
else()
  message(STATUS "coll wheel: no coll.torch (${COLL_WHEEL_TORCH_why}); the numpy API only")
endif()
