# One library per layer of src/ (src/layers.txt names them and what each may include).
#
# coll_<layer>_headers is an INTERFACE target whose include directory is a folder of the build
# tree holding a single link, <layer> -> src/<layer>, and which links the headers targets of the
# layers it may include. A layer's sources compile against its own headers target only, so
# `#include "comm/op.h"` from transport/ finds no file: the direction is enforced by the build,
# not by review. Code above the layers (tools, bench, tests, bindings) includes from src/ itself.
file(STRINGS ${PROJECT_SOURCE_DIR}/src/layers.txt _coll_layer_lines REGEX "^[a-z0-9_]+:")
set(COLL_LAYERS "")
foreach(_line IN LISTS _coll_layer_lines)
  string(REGEX MATCH "^([a-z0-9_]+):(.*)$" _unused "${_line}")
  set(_name ${CMAKE_MATCH_1})
  separate_arguments(_below UNIX_COMMAND "${CMAKE_MATCH_2}")
  set(_root ${PROJECT_BINARY_DIR}/layers/${_name})
  file(MAKE_DIRECTORY ${_root})
  file(CREATE_LINK ${PROJECT_SOURCE_DIR}/src/${_name} ${_root}/${_name} SYMBOLIC)
  add_library(coll_${_name}_headers INTERFACE)
  target_include_directories(coll_${_name}_headers INTERFACE
    $<BUILD_INTERFACE:${_root}> $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>)
  foreach(_b IN LISTS _below)
    if(NOT TARGET coll_${_b}_headers)
      message(FATAL_ERROR "src/layers.txt: ${_name} names ${_b}, which is not a layer listed above it")
    endif()
    target_link_libraries(coll_${_name}_headers INTERFACE coll_${_b}_headers)
  endforeach()
  list(APPEND COLL_LAYERS ${_name})
endforeach()

# coll_layer(NAME sources...): the object library of one layer, compiled against its headers.
function(coll_layer name)
  add_library(coll_${name} OBJECT ${ARGN})
  target_link_libraries(coll_${name} PUBLIC coll_${name}_headers Threads::Threads PRIVATE Boost::headers)
  # libcoll.so exports only what the public headers mark COLL_API (include/coll/export.h).
  set_target_properties(coll_${name} PROPERTIES CXX_VISIBILITY_PRESET hidden VISIBILITY_INLINES_HIDDEN ON)
endfunction()
