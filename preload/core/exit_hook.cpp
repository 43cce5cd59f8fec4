// _exit: the exit that skips every exit handler. os._exit ends each worker that
// multiprocessing starts by fork (a DataLoader's, a pool's), and some launchers and frameworks
// end ranks with it to skip a slow teardown; without a flush here, the window still open (up to
// PERFTRACKER_WINDOW_S of the process's calls) would be lost and the rank would read as vanished.
//
// glibc's own exit() reaches its _exit internally, not through this symbol: a normal exit is
// flushed by the atexit path alone. A vfork child (posix_spawn, subprocess) shares our memory
// and may call _exit when its exec fails: the flush asks nothing of a process that is not the
// writer's, and the real _exit was resolved at load, never in the child.
#include <dlfcn.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "preload/core/versioned_entry.h"
#include "preload/core/writer.h"

namespace perftracker::preload {
namespace {

using ExitFn = void (*)(int);
ExitFn g_real_exit = nullptr;

[[gnu::constructor]] void ResolveExit() {
  g_real_exit = reinterpret_cast<ExitFn>(dlsym(RTLD_NEXT, "_exit"));
}

}  // namespace
}  // namespace perftracker::preload

extern "C" [[gnu::visibility("default"), noreturn]] void perftracker_exit_entry(int status) {
  perftracker::preload::FlushBeforeImmediateExit();
  if (perftracker::preload::g_real_exit != nullptr) perftracker::preload::g_real_exit(status);
  for (;;) syscall(SYS_exit_group, status);
}

// Exported as glibc's _exit (its architecture's base version, which every program references).
asm(".symver perftracker_exit_entry, _exit@@" PERFTRACKER_GLIBC_BASE);
