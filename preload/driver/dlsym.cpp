// The dlsym interposition of the driver tier (see preload/driver/driver_tier.h).
//
// glibc's dlsym finds the caller's object from its return address, so a C++ wrapper that calls
// it would make every RTLD_NEXT (and RTLD_DEFAULT) lookup relative to libperftracker.so instead
// of the caller (dmtcp/dmtcp#944, llnl/GOTCHA#101). The exported entry is therefore assembly
// that never changes the return address: it tail-jumps to glibc's dlsym unless the tier is on,
// and with the tier on calls DlsymSlow only to ask whether to tail-jump or to return a value.
// Our own dlsym calls (-Bsymbolic binds them to this entry) pass through the same way.
#include <dlfcn.h>

#include <cstdlib>
#include <cstring>

#include "preload/core/entry_call.h"
#include "preload/core/log.h"
#include "preload/core/versioned_entry.h"
#include "preload/driver/driver_tier.h"

// Read by the assembly entry (plain loads; written once before the tier starts, atomically).
extern "C" {
[[gnu::visibility("hidden")]] void* perftracker_dlsym_real = nullptr;
[[gnu::visibility("hidden")]] unsigned char perftracker_dlsym_hooked = 0;
}

namespace perftracker::preload::driver {
namespace {

using DlsymFn = void* (*)(void*, const char*);

// glibc >= 2.34 exports dlsym under both versions (libdl merged into libc); older ones have the
// base version of the architecture only.
[[gnu::cold, gnu::noinline]] void* ResolveRealDlsym() {
  static const char* const kVersions[] = {"GLIBC_2.34", "GLIBC_2.2.5", "GLIBC_2.17"};
  for (const char* version : kVersions) {
    if (void* p = dlvsym(RTLD_NEXT, "dlsym", version)) {
      __atomic_store_n(&perftracker_dlsym_real, p, __ATOMIC_RELEASE);
      return p;
    }
  }
  // Nothing to forward to: every dlsym in the process would fail. Nothing sensible remains.
  Warn("cannot find glibc's dlsym (dlvsym failed); set PERFTRACKER_ENABLE=0 or unset LD_PRELOAD");
  abort();
}

DlsymFn Real() {
  void* p = __atomic_load_n(&perftracker_dlsym_real, __ATOMIC_ACQUIRE);
  return reinterpret_cast<DlsymFn>(p != nullptr ? p : ResolveRealDlsym());
}

// Before any other constructor of ours: most lookups then take the two-instruction path.
[[gnu::constructor(101)]] void ResolveEarly() { Real(); }

}  // namespace

void* RealDlsym(void* handle, const char* name) { return Real()(handle, name); }

void EnableDlsymInterposition() {
#if defined(__x86_64__) || defined(__aarch64__)
  Real();
  __atomic_store_n(&perftracker_dlsym_hooked, 1, __ATOMIC_RELEASE);
#else
  Disable("the dlsym entry is implemented for x86-64 and aarch64 only");
#endif
}

}  // namespace perftracker::preload::driver

namespace pd = perftracker::preload::driver;

// What the entry does next: tail-jump to `jump` (glibc decides, caller intact), or return
// `value` when jump is null. Two pointers: returned in RAX:RDX.
struct DlsymDecision {
  void* jump;
  void* value;
};

extern "C" [[gnu::visibility("hidden"), gnu::used]] DlsymDecision perftracker_dlsym_slow(
    void* handle, const char* name) {
  void* real_dlsym = reinterpret_cast<void*>(pd::Real());
  // RTLD_NEXT depends on the caller's object: only glibc, reached with the caller's return
  // address, can answer it. Interposers that chain to libcuda use it; they stay unwrapped.
  if (!__atomic_load_n(&perftracker_dlsym_hooked, __ATOMIC_ACQUIRE) || handle == RTLD_NEXT ||
      name == nullptr || !pd::Enabled() || !pd::IsDriverSymbol(name)) {
    return {real_dlsym, nullptr};
  }
  // An explicit handle resolves the same for every caller. RTLD_DEFAULT searches the caller's
  // scope, which for us is the global one: if that misses, let glibc answer for the caller.
  void* real = pd::RealDlsym(handle, name);
  if (real == nullptr) return {real_dlsym, nullptr};
  return {nullptr, pd::WrapDriverSymbol(name, real)};
}

// Exported as dlsym@<base> and dlsym@@GLIBC_2.34 (exports.map.in), the versions programs
// reference.
#define PT_DLSYM_VERSIONS                                                   \
  ".symver perftracker_dlsym_entry, dlsym@" PERFTRACKER_GLIBC_BASE "\n"   \
  ".symver perftracker_dlsym_entry, dlsym@@GLIBC_2.34\n"

#if defined(__x86_64__)
// dlsym(handle, name): rdi, rsi. Tail jumps keep the caller's return address on the stack.
__asm__(R"(
  .text
  .globl perftracker_dlsym_entry
  .type perftracker_dlsym_entry, @function
  .p2align 4
perftracker_dlsym_entry:
  .cfi_startproc
  endbr64
  movq perftracker_dlsym_real(%rip), %rax
  testq %rax, %rax
  jz 1f
  cmpb $0, perftracker_dlsym_hooked(%rip)
  jne 1f
  jmp *%rax
1:
)" PT_ENTRY_CALL("perftracker_dlsym_slow") R"(
  testq %rax, %rax
  jz 2f
  jmp *%rax
2:
  movq %rdx, %rax
  ret
  .cfi_endproc
  .size perftracker_dlsym_entry, .-perftracker_dlsym_entry
)" PT_DLSYM_VERSIONS);
#elif defined(__aarch64__)
// dlsym(handle, name): x0, x1; the decision comes back in x0 (jump) and x1 (value). Branches,
// not calls, keep the caller's link register for glibc.
__asm__(R"(
  .text
  .globl perftracker_dlsym_entry
  .type perftracker_dlsym_entry, %function
  .p2align 4
perftracker_dlsym_entry:
  .cfi_startproc
  hint 34
  adrp x16, perftracker_dlsym_real
  ldr x16, [x16, :lo12:perftracker_dlsym_real]
  cbz x16, 1f
  adrp x17, perftracker_dlsym_hooked
  ldrb w17, [x17, :lo12:perftracker_dlsym_hooked]
  cbnz w17, 1f
  br x16
1:
)" PT_ENTRY_CALL("perftracker_dlsym_slow") R"(
  cbz x0, 2f
  mov x16, x0
)" PT_ENTRY_RESTORE R"(
  .cfi_remember_state
  .cfi_restore 30
  .cfi_restore 29
  .cfi_def_cfa_offset 0
  br x16
2:
  .cfi_restore_state
  mov x0, x1
  ldp x29, x30, [sp], 32
  .cfi_restore 30
  .cfi_restore 29
  .cfi_def_cfa_offset 0
  ret
  .cfi_endproc
  .size perftracker_dlsym_entry, .-perftracker_dlsym_entry
)" PT_DLSYM_VERSIONS);
#endif
