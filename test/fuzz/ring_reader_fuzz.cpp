// Any bytes as a ring file: the reader must reject or read them without a crash, a leak or UB,
// whole (dump) or as the analyzer reads them: detail frames skipped, durations summed, and one
// window decoded over the last with the function-table memo. The input's length picks which, so
// each run reads once and the fuzzer reaches both.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "schemas/format/ring_file.h"
#include "schemas/format/window.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace perftracker::format;
  const bool analyzer = size % 2 == 1;
  RingReader reader;
  std::string error;
  if (reader.Open(std::span<const uint8_t>(data, size), &error) != ReadStatus::kOk) return 0;
  reader.set_skip_details(analyzer);
  Window window;
  FunctionTableMemo memo;
  reader.ForEachRecord([&](uint64_t, std::span<const uint8_t> bytes) {
    if (!analyzer) {
      Window whole;
      (void)DecodeWindow(bytes, &whole);
      return true;
    }
    const DecodeOptions options{.verified = true,
                                .function_details = false,
                                .duration_moments = true,
                                .tail = reader.tail(),
                                .memo = &memo};
    (void)DecodeWindow(bytes, &window, options);
    return true;
  });
  return 0;
}
