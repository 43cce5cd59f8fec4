// Any bytes as a ring file: the reader must reject or read them without a crash, a leak or UB.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "schemas/format/ring_file.h"
#include "schemas/format/window.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace perftracker::format;
  RingReader reader;
  std::string error;
  if (reader.Open(std::span<const uint8_t>(data, size), &error) != ReadStatus::kOk) return 0;
  reader.ForEachRecord([](uint64_t, std::span<const uint8_t> bytes) {
    Window window;
    (void)DecodeWindow(bytes, &window);
    return true;
  });
  return 0;
}
