# Our code builds warning-free; PERFTRACKER_WERROR (tools/test.sh, CI) makes that an error.
# Third-party headers come in as SYSTEM includes.
function(perftracker_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wshadow -Wnon-virtual-dtor)
  if(PERFTRACKER_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()

# Sanitizers apply to everything that is not injected into a training process
# (STYLE.md: the preload library's own tests run without them).
function(perftracker_sanitize target)
  if(PERFTRACKER_SANITIZE)
    target_compile_options(${target} PRIVATE -fsanitize=${PERFTRACKER_SANITIZE}
                           -fno-omit-frame-pointer -fno-sanitize-recover=all)
    target_link_options(${target} PRIVATE -fsanitize=${PERFTRACKER_SANITIZE})
  endif()
  # A fuzz build instruments the sanitized code for coverage: without it libFuzzer sees only the
  # harness's few branches and mutates blind past the first CRC check. Only sanitized targets:
  # their runtime defines the coverage callbacks, which a plain binary (the selftest workload,
  # the injected library) would leave undefined.
  if(PERFTRACKER_FUZZ)
    target_compile_options(${target} PRIVATE -fsanitize=fuzzer-no-link)
  endif()
endfunction()
