# The analyzer, the format library and their tests compile in batches of files (CMake's unity
# builds). The standard library's templates that every file instantiates are then compiled once
# per batch instead of once per file: the analyzer library took 117 s of CPU instead of 209 s
# (Release, GCC 12, 2 cores), and the test command compiles it three times. Not the injected
# library: its hot paths are compiled as written, one hook family per file.
#
# Names in a file's anonymous namespace must differ from those of the target's other files: two
# of them in one batch are a compile error. PERFTRACKER_UNITY_BATCH=0 puts a whole target in one
# batch, which finds every clash at once (tools/test.sh's TSan build uses it).
option(PERFTRACKER_UNITY "Compile the analyzer, the format library and their tests in batches" ON)
set(PERFTRACKER_UNITY_BATCH 8 CACHE STRING "Files per batch (0: a whole target in one)")

function(perftracker_unity target)
  if(PERFTRACKER_UNITY)
    set_target_properties(${target} PROPERTIES UNITY_BUILD ON
                          UNITY_BUILD_BATCH_SIZE ${PERFTRACKER_UNITY_BATCH})
  endif()
endfunction()
