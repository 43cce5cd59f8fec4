# Our code builds with warnings as errors; third-party headers come in as SYSTEM includes.
function(perftracker_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Werror -Wshadow -Wnon-virtual-dtor)
endfunction()

# Sanitizers apply to everything that is not injected into a training process
# (STYLE.md: the preload library's own tests run without them).
function(perftracker_sanitize target)
  if(PERFTRACKER_SANITIZE)
    target_compile_options(${target} PRIVATE -fsanitize=${PERFTRACKER_SANITIZE}
                           -fno-omit-frame-pointer -fno-sanitize-recover=all)
    target_link_options(${target} PRIVATE -fsanitize=${PERFTRACKER_SANITIZE})
  endif()
endfunction()
