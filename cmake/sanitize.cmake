# COLL_SANITIZE: build everything (library, tests, tools) under a sanitizer.
#   address    AddressSanitizer + UndefinedBehaviorSanitizer (heap/stack misuse, leaks, UB)
#   thread     ThreadSanitizer (data races between the progress thread, the issuing thread,
#              the store server and the ledger responder)
#   undefined  UndefinedBehaviorSanitizer alone (cheap: usable with the normal test timeouts)
#   fuzzer     clang only: coverage for libFuzzer plus ASan + UBSan; the fuzz targets
#              (tests/fuzz) then link libFuzzer instead of the replay driver
# CMakePresets.json (asan, tsan, ubsan) configures build-asan / build-tsan / build-ubsan with
# these; tools/sanitize.sh builds and tests through the presets.
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
  # Not on CUDA sources: nvcc would pass them to itself, not to the host compiler.
  add_compile_options("$<$<COMPILE_LANGUAGE:C,CXX>:${_coll_sanitize_flags};-fno-omit-frame-pointer>")
  add_link_options(${_coll_sanitize_flags})
  message(STATUS "coll: sanitizer ${COLL_SANITIZE} (${_coll_sanitize_flags})")
endif()

# Sanitized tests run slower, and ctest's per-test TIMEOUTs (tests/CMakeLists.txt) are
# multiplied by COLL_TEST_TIME_SCALE. Measured on the shared 2-core VM: under TSan
# schedule_test's ComputeTheSumAndAverage/tree_16 takes 29 s alone and ran past its 60 s
# TIMEOUT under ctest -j2 (4 such cases); the multi-rank suites stayed far inside theirs under
# both ASan and TSan. Only ctest's limits scale: the tests' own deadlines are what they test.
# -DCOLL_TEST_TIME_SCALE=N overrides.
if(NOT DEFINED COLL_TEST_TIME_SCALE)
  if(COLL_SANITIZE STREQUAL "thread")
    set(COLL_TEST_TIME_SCALE 3)
  elseif(COLL_SANITIZE STREQUAL "address" OR COLL_SANITIZE STREQUAL "fuzzer")
    set(COLL_TEST_TIME_SCALE 2)
  else()
    set(COLL_TEST_TIME_SCALE 1)
  endif()
endif()
if(NOT COLL_TEST_TIME_SCALE EQUAL 1)
  message(STATUS "coll: test TIMEOUTs x${COLL_TEST_TIME_SCALE} (COLL_TEST_TIME_SCALE)")
endif()
