# `pip install .` (pyproject.toml, scikit-build-core): the coll package for the Python that pip
# runs, built against the torch of the environment pip installs into. Included before the
# optional dependencies, so that the bindings use this Python and, where torch was built with
# the old C++ ABI, every object of libcoll is compiled with torch's (their std::string meet).
find_package(Python 3.9 REQUIRED COMPONENTS Interpreter Development.Module)
set(PYTHON_EXECUTABLE ${Python_EXECUTABLE} CACHE FILEPATH "Python for the bindings" FORCE)
# Debian's libtorch is not this environment's torch: the torch module is built from the probe.
set(COLL_WITH_TORCH OFF CACHE BOOL "" FORCE)

# coll_wheel_probe(SCRIPT PREFIX): runs bindings/python/SCRIPT with this Python and sets
# PREFIX_<key> for each `key=value` line it prints (lists joined with '|', CMake's ';' being
# its line separator here); PREFIX_found 0 and PREFIX_why where the script failed. `python -I`
# leaves out PYTHONPATH, through which pip's isolated build hides the environment it installs
# into: the framework found is the one `import` will load beside coll.
function(coll_wheel_probe script prefix)
  execute_process(COMMAND ${Python_EXECUTABLE} -I ${PROJECT_SOURCE_DIR}/bindings/python/${script}
                  OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
  set(${prefix}_found 0 PARENT_SCOPE)
  string(REPLACE "\n" ";" lines "${out}")
  foreach(line IN LISTS lines)
    if(line MATCHES "^([a-z0-9_]+)=(.*)$")
      string(REPLACE "|" ";" value "${CMAKE_MATCH_2}")
      set(${prefix}_${CMAKE_MATCH_1} "${value}" PARENT_SCOPE)
    endif()
  endforeach()
  if(NOT rc EQUAL 0)
    set(${prefix}_found 0 PARENT_SCOPE)
    set(${prefix}_why "${script} failed: ${err}" PARENT_SCOPE)
  endif()
endfunction()

coll_wheel_probe(torch_build_flags.py COLL_WHEEL_TORCH)
if(COLL_WHEEL_TORCH_found)
  message(STATUS "coll wheel: torch ${COLL_WHEEL_TORCH_version} of ${Python_EXECUTABLE} (C++11 ABI ${COLL_WHEEL_TORCH_cxx11_abi}): building coll.torch against it")
  if(COLL_WHEEL_TORCH_cxx11_abi STREQUAL "0")
    add_compile_definitions(_GLIBCXX_USE_CXX11_ABI=0)
  endif()
else()
  message(STATUS "coll wheel: no coll.torch (${COLL_WHEEL_TORCH_why}); the numpy API only")
endif()
