// Reduced files: what `perftracker reduce` writes of one node's ring files, and `analyze` reads
// beside raw rings. A reduced file holds a FileSet (model.h) — every rank's identity, health,
// live state and aligned slots, and the catalog they index — so analyzing it gives what
// analyzing the rings would, at a fraction of the bytes, and a 10^4-GPU job never gathers its
// ring files onto one machine. Layout: a 40-byte header (magic, version, sizes, CRCs), then one
// zstd frame of a reduced.fbs FlatBuffer. FORMAT.md "Reduced files".
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "analyzer/ingest/model.h"

namespace perftracker::analyzer {

inline constexpr std::string_view kReducedExtension = ".ptrd";
inline constexpr uint32_t kReducedVersion = 1;
inline constexpr size_t kReducedHeaderSize = 40;

// Whether `head` (a file's first bytes, 8 are enough) starts a reduced file.
bool IsReduced(std::span<const uint8_t> head);

// The file's bytes: header and compressed payload. `hostname` is where the reduction ran.
std::vector<uint8_t> EncodeReduced(const FileSet& set, std::string_view hostname);

// The framing alone: header and zstd frame around a NodeSummary FlatBuffer's bytes (the fuzz
// target frames its inputs so that mutations reach the checks behind the CRCs).
std::vector<uint8_t> FrameReduced(std::span<const uint8_t> node_summary);

enum class ReducedStatus {
  kOk,
  kNotReduced,          // no reduced file's magic
  kCorruptHeader,       // the header fails its CRC or its sizes
  kUnsupportedVersion,  // written by a newer perftracker
  kTruncated,           // shorter than its header says
  kCorruptPayload,      // CRC, zstd or the FlatBuffers verifier failed
};

// Decodes over an empty `out`. Past the header and payload checks, a rank whose contents fail a
// check (slots out of order, sums not finite, rows beyond the catalog) is left out and counted
// as an undecodable record; the other ranks are kept. *error says what failed.
ReducedStatus DecodeReduced(std::span<const uint8_t> bytes, FileSet* out, std::string* error);

}  // namespace perftracker::analyzer
