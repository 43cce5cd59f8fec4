// Libraries of the dlsym-semantics probe (dlsym_probe.cpp), one source built four ways:
//   PROBE_A   libdriver_probe_a.so: defines probe_target() = 3; probe_a_next() looks up
//             probe_target with RTLD_NEXT (glibc must answer relative to *this* library: 2)
//   PROBE_B   libdriver_probe_b.so: defines probe_target() = 2 (after A in the search order)
//   PROBE_DEP libdriver_probe_dep.so: defines probe_local_only() = 4
//   PROBE_LOCAL libdriver_probe_local.so (linked to dep, dlopened RTLD_LOCAL by the probe):
//             probe_local_default() looks up probe_local_only with RTLD_DEFAULT from inside a
//             local scope (glibc 2.36 answers "missing"; whatever it answers, it must answer
//             the same with libperftracker.so preloaded)
#include <dlfcn.h>

extern "C" {

#if defined(PROBE_A)
int probe_target() { return 3; }
int probe_a_next() {
  auto fn = reinterpret_cast<int (*)()>(dlsym(RTLD_NEXT, "probe_target"));
  return fn != nullptr ? fn() : -1;
}
#elif defined(PROBE_B)
int probe_target() { return 2; }
#elif defined(PROBE_DEP)
int probe_local_only() { return 4; }
#elif defined(PROBE_LOCAL)
int probe_local_default() {
  auto fn = reinterpret_cast<int (*)()>(dlsym(RTLD_DEFAULT, "probe_local_only"));
  return fn != nullptr ? fn() : -1;
}
#endif

}  // extern "C"
