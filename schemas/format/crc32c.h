// CRC-32C (Castagnoli), the checksum of every frame in a ring file.
#pragma once

#include <cstddef>
#include <cstdint>

namespace perftracker::format {

// Continues `crc` over [data, data+size). Start with 0. Uses SSE4.2 when the CPU has it.
uint32_t Crc32c(const void* data, size_t size, uint32_t crc = 0);

}  // namespace perftracker::format
