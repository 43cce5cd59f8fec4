// The live slot's open window (live.fbs open_window): one zstd frame of a WindowSummary.
#include <zstd.h>

#include "schemas/format/live.h"
#include "schemas/format/ring_layout.h"
#include "schemas/format/window.h"

namespace perftracker::format {

bool CompressOpenWindow(std::span<const uint8_t> window_summary, std::vector<uint8_t>* out) {
  out->resize(ZSTD_compressBound(window_summary.size()));
  const size_t n =
      ZSTD_compress(out->data(), out->size(), window_summary.data(), window_summary.size(), 1);
  if (ZSTD_isError(n)) {
    out->clear();
    return false;
  }
  out->resize(n);
  return true;
}

bool DecodeOpenWindow(const LiveState& state, Window* out) {
  const std::vector<uint8_t>& z = state.open_window;
  if (z.empty()) return false;
  const unsigned long long raw = ZSTD_getFrameContentSize(z.data(), z.size());
  if (raw == ZSTD_CONTENTSIZE_UNKNOWN || raw == ZSTD_CONTENTSIZE_ERROR || raw == 0 ||
      raw > kMaxRawRecordSize || raw > 256 * z.size() + (1u << 20)) {
    return false;
  }
  std::vector<uint8_t> bytes(raw);
  const size_t n = ZSTD_decompress(bytes.data(), bytes.size(), z.data(), z.size());
  return !ZSTD_isError(n) && n == raw && DecodeWindow(bytes, out);
}

}  // namespace perftracker::format
