# What we ship (libperftracker.so, perftracker, perftracker-gen) runs on glibc 2.28 and newer
# (manylinux_2_28) and needs nothing else from the host: users preload the library into jobs in
# images we never see (NVIDIA's PyTorch containers, RHEL 8, conda). tools/check_portability.py
# checks the built files; README "Install".
#
# - libstdc++ and libgcc linked statically (libgcc also unwinds: no libunwind);
# - preload/glibc_compat.cpp (and, in executables, glibc_compat_exe.cpp) binds every glibc
#   symbol newer than 2.28 to an older version or to our own definition;
# - libpthread.so.0 and libdl.so.2 named as needed: on glibc < 2.34 the old versions the compat
#   layer jumps to live there, and on newer ones they are empty stubs.
# Sanitizer builds are for our tests only and link as usual.
set(PERFTRACKER_GLIBC_FLOOR 2.28)

if(NOT PERFTRACKER_SANITIZE)
  add_library(perftracker_glibc_compat OBJECT ${PROJECT_SOURCE_DIR}/preload/glibc_compat.cpp)
  add_library(perftracker_glibc_compat_exe OBJECT
              ${PROJECT_SOURCE_DIR}/preload/glibc_compat_exe.cpp)
  foreach(compat perftracker_glibc_compat perftracker_glibc_compat_exe)
    target_include_directories(${compat} PRIVATE ${PROJECT_SOURCE_DIR})
    target_compile_options(${compat} PRIVATE -fno-exceptions -fvisibility=hidden)
    perftracker_warnings(${compat})
  endforeach()
endif()

function(perftracker_portable target)
  if(PERFTRACKER_SANITIZE)
    return()
  endif()
  target_link_libraries(${target} PRIVATE perftracker_glibc_compat)
  get_target_property(type ${target} TYPE)
  if(type STREQUAL "EXECUTABLE")
    target_link_libraries(${target} PRIVATE perftracker_glibc_compat_exe)
  endif()
  target_link_options(${target} PRIVATE -static-libstdc++ -static-libgcc
                      -Wl,--push-state,--no-as-needed -l:libpthread.so.0 -l:libdl.so.2
                      -Wl,--pop-state)
endfunction()
