# Runs COMMAND (a ;-list) and checks its exit code is EXIT and its stdout+stderr match every
# regular expression of REGEX (separated by @@): PASS_REGULAR_EXPRESSION alone ignores the exit.
execute_process(COMMAND ${COMMAND} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("${out}${err}")
if(NOT rc STREQUAL "${EXIT}")
  message(FATAL_ERROR "exit ${rc}, expected ${EXIT}")
endif()
string(REPLACE "@@" ";" regexes "${REGEX}")
foreach(re IN LISTS regexes)
  if(NOT "${out}${err}" MATCHES "${re}")
    message(FATAL_ERROR "output does not match '${re}'")
  endif()
endforeach()
