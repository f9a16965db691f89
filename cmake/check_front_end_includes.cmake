# The front ends (src/cli, src/capi, src/server) reach the model through the
# engine's API only: none includes a model/ or ops/ header (DESIGN.md: the
# server knows nothing of tensors). Run by ctest as
# layers.front_ends_include_the_engine_only:
#   cmake -DSRC=<repo>/src -P cmake/check_front_end_includes.cmake
# and fails listing every offending include.
#
# The one exception: `qvl bench` times the model's phases and kernels
# themselves (prefill, decode, the matmul units), below what the engine API
# shows, the way bench/ does.
cmake_minimum_required(VERSION 3.16)  # IN_LIST
set(exceptions cli/cmd_bench.cpp)

if(NOT SRC)
  message(FATAL_ERROR "pass -DSRC=<the repository's src folder>")
endif()
file(GLOB_RECURSE files RELATIVE ${SRC} ${SRC}/cli/*.cpp ${SRC}/cli/*.h ${SRC}/capi/*.cpp ${SRC}/capi/*.h
     ${SRC}/server/*.cpp ${SRC}/server/*.h)
if(NOT files)
  message(FATAL_ERROR "no front-end sources under ${SRC}")
endif()
set(offending "")
foreach(f IN LISTS files)
  if(f IN_LIST exceptions)
    continue()
  endif()
  file(STRINGS ${SRC}/${f} includes REGEX "^[ \t]*#[ \t]*include[ \t]*[<\"](model|ops)/")
  foreach(line IN LISTS includes)
    string(APPEND offending "\n  src/${f}: ${line}")
  endforeach()
endforeach()
if(offending)
  message(FATAL_ERROR "front ends must include the engine's API, not model/ or ops/ "
                      "(add what they need to src/engine/):${offending}")
endif()
list(LENGTH files n)
message(STATUS "${n} front-end files checked: no model/ or ops/ include outside ${exceptions}")
