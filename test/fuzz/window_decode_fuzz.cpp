// Any bytes as a decompressed record or live slot: past the CRCs, the FlatBuffers verifier and
// the column checks are all that stand between a damaged file and the analyzer.
#include <cstddef>
#include <cstdint>
#include <span>

#include "schemas/format/live.h"
#include "schemas/format/window.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace perftracker::format;
  const std::span<const uint8_t> bytes(data, size);
  Window window;
  if (DecodeWindow(bytes, &window)) {
    for (const FunctionPattern& f : window.functions) (void)f.duration.Quantile(0.5);
  }
  // As the analyzer decodes: durations summed as they are read, details left empty.
  Window slim;
  (void)DecodeWindow(bytes, &slim, {.function_details = false, .duration_moments = true});
  LiveState live;
  (void)DecodeLiveState(bytes, &live);
  return 0;
}
