#include "preload/core/runtime_visibility.h"

#include <link.h>

#include <cstring>

#include "preload/core/config.h"
#include "preload/core/log.h"
#include "preload/core/recorder.h"

namespace perftracker::preload {
namespace {

struct Loaded {
  bool driver = false;   // libcuda.so*
  bool runtime = false;  // libcudart.so*
};

int Classify(dl_phdr_info* info, size_t, void* data) {
  const char* path = info->dlpi_name;
  if (path == nullptr || *path == '\0') return 0;
  const char* slash = std::strrchr(path, '/');
  const char* base = slash ? slash + 1 : path;
  auto* loaded = static_cast<Loaded*>(data);
  loaded->driver |= std::strncmp(base, "libcuda.so", 10) == 0;
  loaded->runtime |= std::strncmp(base, "libcudart.so", 12) == 0;
  return 0;
}

// Checks in a row that saw the driver without a runtime: a program may load libcuda.so.1 itself
// a moment before the framework loads its shared runtime.
constexpr int kChecksBeforeWarning = 2;

}  // namespace

void CheckCudaRuntimeVisible() {
  static bool settled = false;
  static int suspect_checks = 0;
  if (settled) return;
  if (ProcessConfig().driver || g_cuda_runtime_nodes_ever.load(std::memory_order_relaxed) != 0 ||
      g_cuda_runtime_nodes.load(std::memory_order_relaxed) != 0) {
    settled = true;  // launches are seen at the driver, or the runtime hooks are reached
    return;
  }
  Loaded loaded;
  dl_iterate_phdr(&Classify, &loaded);
  if (loaded.runtime) {
    settled = true;
    return;
  }
  suspect_checks = loaded.driver ? suspect_checks + 1 : 0;
  if (suspect_checks < kChecksBeforeWarning) return;
  settled = true;
  Warn(
      "libcuda is loaded but no shared CUDA runtime (libcudart.so): this program's runtime is "
      "linked statically or it calls the driver API directly, and its kernels are not recorded; "
      "PERFTRACKER_DRIVER=1 records them at the driver");
}

}  // namespace perftracker::preload
