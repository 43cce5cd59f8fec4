# Test groups that configure leaves out (no torch, no Python headers, no CUDA headers) would
# otherwise vanish from ctest's totals without a word. Each is recorded here, and the list is
# written to <build>/left_out.txt ("GROUP: reason" per line), which tools/test.sh reports as
# skipped (and, in CI, where tools/setup.sh installed everything, as failed).
function(perftracker_left_out group reason)
  message(STATUS "${group}: left out (${reason})")
  set_property(GLOBAL APPEND PROPERTY PERFTRACKER_LEFT_OUT "${group}: ${reason}")
endfunction()

# Whether Debian's torch imports with its launcher, asked once per configure.
function(perftracker_check_torch out)
  get_property(known GLOBAL PROPERTY PERFTRACKER_TORCH_IMPORTS SET)
  if(NOT known)
    execute_process(COMMAND /usr/bin/python3 -c "import torch.distributed.run"
                    RESULT_VARIABLE status OUTPUT_QUIET ERROR_QUIET)
    if(status EQUAL 0)
      set_property(GLOBAL PROPERTY PERFTRACKER_TORCH_IMPORTS TRUE)
    else()
      set_property(GLOBAL PROPERTY PERFTRACKER_TORCH_IMPORTS FALSE)
    endif()
  endif()
  get_property(imports GLOBAL PROPERTY PERFTRACKER_TORCH_IMPORTS)
  set(${out} ${imports} PARENT_SCOPE)
endfunction()

function(perftracker_write_left_out)
  get_property(groups GLOBAL PROPERTY PERFTRACKER_LEFT_OUT)
  set(text "")
  foreach(g IN LISTS groups)
    string(APPEND text "${g}\n")
  endforeach()
  file(WRITE ${CMAKE_BINARY_DIR}/left_out.txt "${text}")
endfunction()
