// What keeps the shipped binaries (libperftracker.so, perftracker, perftracker-gen) loadable on
// glibc 2.28 (manylinux_2_28) though they are built on a newer one: the loader refuses a whole
// object for one symbol version it lacks ("cannot be preloaded: ignored"), and both our code and
// the statically linked libstdc++ and libgcc reference the newest versions of the build host.
//
// Each symbol whose default version is newer than 2.28 gets a hidden definition here. The static
// link binds every reference in the object (ours, libstdc++'s, libgcc's) to it, so the binary
// never asks for the newer version:
// - functions glibc 2.34 moved into libc.so.6 from libpthread and libdl (new version nodes there,
//   the old ones kept): a tail jump to the old version, which is the same code on a new glibc
//   and libpthread's or libdl's on an old one (both are DT_NEEDED: see cmake/Portable.cmake);
// - functions an old glibc does not have under that name (stat and friends were inline wrappers
//   of __xstat before 2.33, gettid came in 2.30, arc4random in 2.36, pthread_cond_clockwait in
//   2.30): implemented on the system calls glibc itself uses;
// - libstdc++'s hint __libc_single_threaded (2.32): always "no", so reference counts stay atomic;
// - libgcc's _dl_find_object (2.35): the same answer from dl_iterate_phdr.
// Executables also need glibc_compat_exe.cpp (dlopen, dlsym, their start-up code).
// tools/check_portability.py proves the result, from the binaries' version needs.
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "preload/glibc_forward.h"

PT_FORWARD(dladdr, PT_V("GLIBC_2.2.5", "GLIBC_2.17"))
PT_FORWARD(dladdr1, PT_V("GLIBC_2.3.3", "GLIBC_2.17"))
PT_FORWARD(dlclose, PT_V("GLIBC_2.2.5", "GLIBC_2.17"))
PT_FORWARD(dlerror, PT_V("GLIBC_2.2.5", "GLIBC_2.17"))
PT_FORWARD(dlvsym, PT_V("GLIBC_2.2.5", "GLIBC_2.17"))
PT_FORWARD(dlinfo, PT_V("GLIBC_2.3.3", "GLIBC_2.17"))
PT_FORWARD(dlmopen, PT_V("GLIBC_2.3.4", "GLIBC_2.17"))
PT_FORWARD(pthread_attr_setstacksize, PT_V("GLIBC_2.2.5", "GLIBC_2.17"))
PT_FORWARD(pthread_create, PT_V("GLIBC_2.2.5", "GLIBC_2.17"))
PT_FORWARD(pthread_detach, PT_V("GLIBC_2.2.5", "GLIBC_2.17"))
PT_FORWARD(pthread_join, PT_V("GLIBC_2.2.5", "GLIBC_2.17"))
PT_FORWARD(pthread_timedjoin_np, PT_V("GLIBC_2.3.3", "GLIBC_2.17"))
PT_FORWARD(pthread_mutex_trylock, PT_V("GLIBC_2.2.5", "GLIBC_2.17"))
PT_FORWARD(pthread_setname_np, PT_V("GLIBC_2.12", "GLIBC_2.17"))
PT_FORWARD(pthread_sigmask, PT_V("GLIBC_2.2.5", "GLIBC_2.17"))
PT_FORWARD(pthread_key_create, PT_V("GLIBC_2.2.5", "GLIBC_2.17"))
PT_FORWARD(pthread_key_delete, PT_V("GLIBC_2.2.5", "GLIBC_2.17"))
PT_FORWARD(pthread_getspecific, PT_V("GLIBC_2.2.5", "GLIBC_2.17"))
PT_FORWARD(pthread_setspecific, PT_V("GLIBC_2.2.5", "GLIBC_2.17"))
PT_FORWARD(pthread_once, PT_V("GLIBC_2.2.5", "GLIBC_2.17"))
PT_FORWARD(pthread_kill, PT_V("GLIBC_2.2.5", "GLIBC_2.17"))
// libgcc's "are threads linked in" probe (a weak reference).
PT_FORWARD(__pthread_key_create, PT_V("GLIBC_2.2.5", "GLIBC_2.17"))
// libm 2.29 dropped the SVID error wrappers from these under new versions; the old ones remain.
PT_FORWARD(exp, PT_V("GLIBC_2.2.5", "GLIBC_2.17"))
PT_FORWARD(exp2, PT_V("GLIBC_2.2.5", "GLIBC_2.17"))
PT_FORWARD(log, PT_V("GLIBC_2.2.5", "GLIBC_2.17"))
PT_FORWARD(log2, PT_V("GLIBC_2.2.5", "GLIBC_2.17"))
PT_FORWARD(pow, PT_V("GLIBC_2.2.5", "GLIBC_2.17"))

extern "C" {

// libstdc++'s "no other thread exists" hint; 0 is always a correct answer.
[[gnu::visibility("hidden")]] char __libc_single_threaded = 0;

[[gnu::visibility("hidden")]] pid_t gettid() noexcept {
  return static_cast<pid_t>(syscall(SYS_gettid));
}

// glibc >= 2.33 makes the same call: its struct stat is the kernel's on both architectures.
[[gnu::visibility("hidden")]] int fstatat(int dirfd, const char* path, struct stat* buf,
                                          int flags) noexcept {
  return static_cast<int>(syscall(SYS_newfstatat, dirfd, path, buf, flags));
}
[[gnu::visibility("hidden")]] int stat(const char* path, struct stat* buf) noexcept {
  return fstatat(AT_FDCWD, path, buf, 0);
}
[[gnu::visibility("hidden")]] int lstat(const char* path, struct stat* buf) noexcept {
  return fstatat(AT_FDCWD, path, buf, AT_SYMLINK_NOFOLLOW);
}
[[gnu::visibility("hidden")]] int fstat(int fd, struct stat* buf) noexcept {
  return fstatat(fd, "", buf, AT_EMPTY_PATH);
}
// The 64-bit names: the same structure and calls on 64-bit targets.
[[gnu::visibility("hidden")]] int fstatat64(int dirfd, const char* path, struct stat64* buf,
                                            int flags) noexcept {
  return fstatat(dirfd, path, reinterpret_cast<struct stat*>(buf), flags);
}
[[gnu::visibility("hidden")]] int stat64(const char* path, struct stat64* buf) noexcept {
  return fstatat64(AT_FDCWD, path, buf, 0);
}
[[gnu::visibility("hidden")]] int lstat64(const char* path, struct stat64* buf) noexcept {
  return fstatat64(AT_FDCWD, path, buf, AT_SYMLINK_NOFOLLOW);
}
[[gnu::visibility("hidden")]] int fstat64(int fd, struct stat64* buf) noexcept {
  return fstatat64(fd, "", buf, AT_EMPTY_PATH);
}

// libgcc's unwinder (GCC 12) finds a PC's .eh_frame_hdr through _dl_find_object (2.35) and has
// no other way: the same answer from dl_iterate_phdr, which every glibc has.
namespace {
struct FindObject {
  uintptr_t pc;
  dl_find_object* out;
};
int FindObjectIn(dl_phdr_info* info, size_t, void* arg) {
  auto* find = static_cast<FindObject*>(arg);
  uintptr_t start = UINTPTR_MAX, end = 0;
  bool holds = false;
  const void* eh_frame = nullptr;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    const uintptr_t from = info->dlpi_addr + ph.p_vaddr;
    if (ph.p_type == PT_GNU_EH_FRAME) eh_frame = reinterpret_cast<const void*>(from);
    if (ph.p_type != PT_LOAD) continue;
    if (from < start) start = from;
    if (from + ph.p_memsz > end) end = from + ph.p_memsz;
    if (find->pc >= from && find->pc < from + ph.p_memsz) holds = true;
  }
  if (!holds) return 0;
  *find->out = dl_find_object{};
  find->out->dlfo_map_start = reinterpret_cast<void*>(start);
  find->out->dlfo_map_end = reinterpret_cast<void*>(end);
  find->out->dlfo_eh_frame = const_cast<void*>(eh_frame);
  return 1;
}
}  // namespace

[[gnu::visibility("hidden")]] int _dl_find_object(void* pc, dl_find_object* result) noexcept {
  FindObject find{reinterpret_cast<uintptr_t>(pc), result};
  return dl_iterate_phdr(FindObjectIn, &find) == 1 ? 0 : -1;
}

// std::random_device's source. getrandom(2) blocks only until the pool is first seeded.
[[gnu::visibility("hidden")]] uint32_t arc4random() noexcept {
  uint32_t value = 0;
  for (int tries = 0; tries < 100; ++tries) {
    const long got = syscall(SYS_getrandom, &value, sizeof value, 0);
    if (got == static_cast<long>(sizeof value)) return value;
    if (got < 0 && errno != EINTR) break;
  }
  // No getrandom (a kernel before 3.17): still a value, never a failure inside the job.
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  uint64_t x = static_cast<uint64_t>(now.tv_nsec) ^ (static_cast<uint64_t>(now.tv_sec) << 32) ^
               static_cast<uint64_t>(getpid());
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  return static_cast<uint32_t>(x);
}

// A wait on another clock than the condition's: the deadline moved onto CLOCK_REALTIME, as
// glibc before 2.30 had libstdc++ do it.
[[gnu::visibility("hidden")]] int pthread_cond_clockwait(pthread_cond_t* cond,
                                                         pthread_mutex_t* mutex, clockid_t clock,
                                                         const timespec* deadline) {
  if (clock == CLOCK_REALTIME) return pthread_cond_timedwait(cond, mutex, deadline);
  timespec now{}, real{};
  clock_gettime(clock, &now);
  clock_gettime(CLOCK_REALTIME, &real);
  int64_t left = (static_cast<int64_t>(deadline->tv_sec) - now.tv_sec) * 1000000000 +
                 (deadline->tv_nsec - now.tv_nsec);
  if (left < 0) left = 0;
  const int64_t at = static_cast<int64_t>(real.tv_sec) * 1000000000 + real.tv_nsec + left;
  const timespec until{static_cast<time_t>(at / 1000000000), static_cast<long>(at % 1000000000)};
  return pthread_cond_timedwait(cond, mutex, &until);
}

}  // extern "C"
