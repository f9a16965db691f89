# examples/simple against `qvl run`: the same model, prompt and greedy
# decoding must give the same tokens and text.
#   cmake -DQVL=... -DSIMPLE=... -DMODEL=... -DPROMPT=... -DMAX_TOKENS=... -P compare_run.cmake
execute_process(
  COMMAND ${QVL} run --model ${MODEL} --prompt ${PROMPT} --temperature 0 --max-tokens ${MAX_TOKENS}
          --threads 2 --output-format json
  OUTPUT_VARIABLE run_json RESULT_VARIABLE run_rc ERROR_VARIABLE run_err)
if(NOT run_rc EQUAL 0)
  message(FATAL_ERROR "qvl run failed (${run_rc}): ${run_err}")
endif()
string(JSON run_text GET "${run_json}" text)
string(JSON n_ids LENGTH "${run_json}" token_ids)
set(run_ids "")
if(n_ids GREATER 0)
  math(EXPR last "${n_ids} - 1")
  foreach(i RANGE ${last})
    string(JSON id GET "${run_json}" token_ids ${i})
    string(APPEND run_ids " ${id}")
  endforeach()
endif()

execute_process(
  COMMAND ${SIMPLE} ${MODEL} -p ${PROMPT} -n ${MAX_TOKENS} -t 0 -v
  OUTPUT_VARIABLE simple_text RESULT_VARIABLE simple_rc ERROR_VARIABLE simple_err)
if(NOT simple_rc EQUAL 0)
  message(FATAL_ERROR "simple failed (${simple_rc}): ${simple_err}")
endif()
string(REGEX MATCH "token ids:[^\n]*" simple_ids_line "${simple_err}")
string(REPLACE "token ids:" "" simple_ids "${simple_ids_line}")

if(NOT simple_ids STREQUAL run_ids)
  message(FATAL_ERROR "token ids differ:\n  qvl run:${run_ids}\n  simple: ${simple_ids}")
endif()
if(NOT simple_text STREQUAL "${run_text}\n")
  message(FATAL_ERROR "text differs:\n  qvl run: [${run_text}]\n  simple:  [${simple_text}]")
endif()
message(STATUS "simple and qvl run agree on ${n_ids} tokens:${run_ids}")
