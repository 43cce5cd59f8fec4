// The bytes of a ring file (schemas/FORMAT.md is the prose version of this header).
//
//   [0, 4096)                         FileHeader, then zeros
//   [live_offset, +live_size)         live slot: two halves, each LiveFrame + LiveState FlatBuffer
//   [live_offset+live_size, data_offset)  table region (format 2): TableEntry + a static tail's
//                                     zstd frame, each twice, appended, never overwritten
//   [data_offset, +data_capacity)     records: RecordFrame + zstd(WindowSummary), 8-byte aligned
//
// All integers are little-endian. Every frame carries a CRC32C of its own header fields, so a
// reader can tell a frame from leftover bytes of an overwritten record.
#pragma once

#include <cstddef>
#include <cstdint>

namespace perftracker::format {

inline constexpr char kFileMagic[8] = {'P', 'T', 'R', 'I', 'N', 'G', '\r', '\n'};
inline constexpr uint32_t kHeaderRegionSize = 4096;
inline constexpr uint32_t kRecordMagic = 0x31435250;  // "PRC1"
inline constexpr uint32_t kLiveMagic = 0x31564C50;    // "PLV1"
inline constexpr uint16_t kCodecZstd = 1;
// RecordFrame::flags. The payload's last three zstd frames are body, detail columns and static
// tail (FORMAT.md "Records"): a reader that skips the detail columns need not decompress them.
inline constexpr uint16_t kRecordFlagDetailFrame = 1u << 0;
// The static tail's frame is not in the payload but in the table region: the payload ends with a
// zstd skippable frame holding a TableRef (FORMAT.md "Table region"). Format 2.
inline constexpr uint16_t kRecordFlagTableTail = 1u << 1;
inline constexpr uint32_t kTableEntryMagic = 0x31455450;  // "PTE1"
inline constexpr uint32_t kZstdSkippableMagic = 0x184D2A50;
inline constexpr uint32_t kRecordAlign = 8;
inline constexpr uint32_t kMaxRawRecordSize = 64u << 20;

// FileHeader::flags. A helper is a process that inherited a rank's environment (a spawned
// DataLoader worker, a compile worker, any program the rank runs): it records into a small file
// of its own beside the rank's, and the analyzer attaches it to its rank.
inline constexpr uint32_t kFileFlagHelper = 1u << 0;

struct FileHeader {
  char magic[8];
  uint32_t format_version;
  uint32_t min_reader_version;  // oldest reader format version that can read this file
  uint64_t file_size;
  uint64_t live_offset;
  uint32_t live_size;  // both halves
  uint32_t flags;
  uint64_t data_offset;
  uint64_t data_capacity;
  int32_t rank;
  int32_t local_rank;
  int32_t world_size;
  int32_t pid;
  uint64_t start_real_ns;  // CLOCK_REALTIME at start
  uint64_t start_mono_ns;  // CLOCK_MONOTONIC at start
  char job_id[64];
  char hostname[64];
  char library_version[32];
  int32_t rank_pid;     // kFileFlagHelper: the pid of the rank this helper process belongs to
  uint32_t header_crc;  // CRC32C of every byte before it
};
static_assert(sizeof(FileHeader) == 256);
static_assert(offsetof(FileHeader, job_id) == 88);
static_assert(offsetof(FileHeader, header_crc) == 252);

struct RecordFrame {
  uint32_t magic;         // written last: a frame without it was never completed
  uint32_t payload_size;  // compressed bytes that follow the frame
  uint64_t seq;           // 0, 1, 2, ... in write order
  uint32_t raw_size;      // FlatBuffer bytes after decompression
  uint32_t payload_crc;   // CRC32C of the compressed payload
  uint16_t codec;
  uint16_t flags;
  uint32_t header_crc;  // CRC32C of the 28 bytes before it, magic included
};
static_assert(sizeof(RecordFrame) == 32);

// One copy of a static tail in the table region; the writer puts a second, identical copy right
// after the first, so one damaged copy never costs the records that name it.
struct TableEntry {
  uint32_t magic;         // written last
  uint32_t payload_size;  // bytes of the zstd frame that follow
  uint32_t raw_size;      // the static tail's bytes after decompression
  uint32_t payload_crc;
  uint32_t reserved;    // 0
  uint32_t header_crc;  // CRC32C of the 20 bytes before it, magic included
};
static_assert(sizeof(TableEntry) == 24);

// The content of a record's closing skippable frame (kRecordFlagTableTail), 16 bytes
// little-endian after the frame's magic and size: where the tail's first copy starts (from the
// table region's start), its frame's compressed and raw sizes.
struct TableRef {
  uint64_t entry;
  uint32_t payload_size;
  uint32_t raw_size;
};
static_assert(sizeof(TableRef) == 16);
inline constexpr size_t kTableRefFrameSize = 8 + sizeof(TableRef);

struct LiveFrame {
  uint32_t magic;
  uint32_t payload_size;  // LiveState FlatBuffer bytes that follow, uncompressed
  uint64_t seq;           // the half with the larger seq and valid CRCs is current
  uint32_t payload_crc;
  uint32_t header_crc;  // CRC32C of the 20 bytes before it
};
static_assert(sizeof(LiveFrame) == 24);

constexpr uint64_t AlignRecord(uint64_t n) {
  return (n + kRecordAlign - 1) & ~uint64_t{kRecordAlign - 1};
}

}  // namespace perftracker::format
