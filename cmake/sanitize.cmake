# COLL_SANITIZE: build everything (library, tests, tools) under a sanitizer.
#   address    AddressSanitizer + UndefinedBehaviorSanitizer (heap/stack misuse, leaks, UB)
#   thread     ThreadSanitizer (data races between the progress thread, the issuing thread,
#              the store server and the ledger responder)
#   undefined  UndefinedBehaviorSanitizer alone (cheap: usable with the normal test timeouts)
#   fuzzer     clang only: coverage for libFuzzer plus ASan + UBSan; the fuzz targets
#              (tests/fuzz) then link libFuzzer instead of the replay driver
# tools/sanitize.sh builds build-asan / build-tsan with these and runs the test labels.
set(COLL_SANITIZE "" CACHE STRING "Sanitizer: address, thread, undefined or empty")
set_property(CACHE COLL_SANITIZE PROPERTY STRINGS "" address thread undefined fuzzer)

if(COLL_SANITIZE STREQUAL "address")
  set(_coll_sanitize_flags -fsanitize=address,undefined)
elseif(COLL_SANITIZE STREQUAL "thread")
  set(_coll_sanitize_flags -fsanitize=thread)
elseif(COLL_SANITIZE STREQUAL "fuzzer")
  set(_coll_sanitize_flags -fsanitize=fuzzer-no-link,address,undefined)
elseif(COLL_SANITIZE STREQUAL "undefined")
  set(_coll_sanitize_flags -fsanitize=undefined)
elseif(COLL_SANITIZE)
  message(FATAL_ERROR "COLL_SANITIZE=${COLL_SANITIZE}: expected address, thread, undefined or fuzzer")
endif()

if(_coll_sanitize_flags)
  # Frame pointers keep the reports' stacks complete at -O1/-O2.
  add_compile_options(${_coll_sanitize_flags} -fno-omit-frame-pointer)
  add_link_options(${_coll_sanitize_flags})
  message(STATUS "coll: sanitizer ${COLL_SANITIZE} (${_coll_sanitize_flags})")
endif()
