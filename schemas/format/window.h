// The window summary as plain C++ values, and its one encoding (schemas/window.fbs).
//
// The collector fills a Window and encodes it; the analyzer decodes records back into Windows.
// Encode/Decode are the only code that maps these fields to FlatBuffers.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "schemas/format/histogram.h"

namespace flatbuffers {
class FlatBufferBuilder;
}

namespace perftracker::format {

// Values match the FunctionKind enum of window.fbs.
enum class FunctionKind : uint8_t {
  kUnknown = 0,
  kPython,
  kCudaApi,
  kKernel,
  kMemcpy,
  kMemset,
  kCollective,
  kSync,
  kGc,
  kDataLoader,
  kIteration,
  kAlloc,
  kPyNative,  // calls of one native API or kernel made from its parent Python function
};

// Values match the CollectiveOp enum of window.fbs.
enum class CollectiveOp : uint8_t {
  kUnknown = 0,
  kAllReduce,
  kAllGather,
  kReduceScatter,
  kBroadcast,
  kReduce,
  kSend,
  kRecv,
  kAllToAll,
  kGather,
  kScatter,
  kBarrier,
  kNetSend,  // one network connection's sends (NCCL profiler proxy events); device = on the wire
  kNetRecv,
};

// Lower-case names used in JSON output ("python", "cuda_api", ...).
std::string_view KindName(FunctionKind kind);
std::string_view CollectiveOpName(CollectiveOp op);

// Stable 64-bit id of a function: every rank and every run computes the same id for the same
// kind, name and caller (XXH3 of all three), so the analyzer joins patterns across ranks by id.
uint64_t FunctionId(FunctionKind kind, std::string_view name, uint64_t parent_id = 0);

struct FunctionPattern {
  FunctionKind kind = FunctionKind::kUnknown;
  std::string name;
  int32_t parent = -1;  // index of the caller in Window::functions, lower than this one's; -1: none
  // Derived, not stored: filled by DecodeWindow (and by FillFunctionIds for writers' own use).
  uint64_t id = 0;
  uint64_t parent_id = 0;
  uint64_t count = 0;
  uint64_t total_ns = 0;
  uint64_t self_ns = 0;
  uint64_t min_ns = 0;
  uint64_t max_ns = 0;
  uint64_t wait_ns = 0;
  uint64_t bytes = 0;
  uint64_t device_samples = 0;
  uint64_t device_ns = 0;
  Histogram duration;
  // `duration` summed up, in its place when decoded with DecodeOptions::duration_moments (else
  // zero; only the count where every call was timed): all the analyzer needs of it.
  HistogramMoments duration_moments;
  Histogram device;
  Histogram per_iteration;
  // Exclusive time of the timed calls; empty when it equals `duration` (leaves, native calls).
  Histogram self_duration;
  // Time on the rank's critical path; 0 where the window has no critical_path.
  uint64_t critical_ns = 0;
  // Calls made while their stream was being captured into a CUDA graph: recorded, not run (not
  // in `count`; the graph's launches run them).
  uint64_t captured = 0;
  // Time on a CPU of the threads other than the training loop's that ran this Python function,
  // by its share of their self time (window.fbs thread_cpu): a side thread that computes is told
  // from one asleep in a queue's get.
  uint64_t thread_cpu_ns = 0;
  bool operator==(const FunctionPattern&) const = default;
};

struct CollectivePattern {
  uint64_t comm_id = 0;
  uint32_t comm_size = 0;
  uint32_t comm_rank = 0;
  CollectiveOp op = CollectiveOp::kUnknown;
  int32_t peer = -1;
  std::string name;
  uint64_t bytes = 0;
  uint64_t count = 0;
  uint64_t host_ns = 0;
  uint64_t device_samples = 0;
  uint64_t device_ns = 0;
  Histogram device;
  Histogram launch_offset;
  uint64_t first_seq = 0;
  uint64_t last_seq_launched = 0;
  uint64_t last_seq_completed = 0;
  bool operator==(const CollectivePattern&) const = default;
};

struct IterationStats {
  uint64_t first = 0;
  uint64_t count = 0;
  uint64_t total_ns = 0;
  uint64_t min_ns = 0;
  uint64_t max_ns = 0;
  Histogram duration;
  bool operator==(const IterationStats&) const = default;
};

struct Health {
  uint64_t dropped_events = 0;
  uint64_t hook_ns = 0;
  uint64_t hook_calls = 0;
  uint64_t dropped_functions = 0;
  uint64_t dropped_windows = 0;
  bool operator==(const Health&) const = default;
};

// Values match the SignalKind enum of window.fbs.
enum class SignalKind : uint8_t {
  kGauge = 0,    // min / max / sum over the samples
  kCounter = 1,  // sum: the increase over the window; min / max: per sampling interval
  kFlags = 2,    // bits: every bit seen set; sum: samples with any bit set
};

std::string_view SignalKindName(SignalKind kind);  // "gauge", "counter", "flags"

// A hardware or host signal sampled during the window (FORMAT.md "Hardware and host signals").
struct Signal {
  std::string name;    // "gpu.sm_clock_mhz": a name from FORMAT.md's list
  std::string device;  // the instance: a GPU's PCI bus id, "mlx5_0/1", "eth0"; "" the host
  SignalKind kind = SignalKind::kGauge;
  uint32_t samples = 0;
  double min = 0, max = 0, sum = 0;
  uint64_t bits = 0;
  bool operator==(const Signal&) const = default;
};

// Whether a reader keeps a signal it read (a window's, or a reduced file's sums of them): a kind
// a newer writer added, or a value that is not a number, drops that signal only.
bool ReadableSignal(uint8_t kind, double min, double max, double sum);

struct Window {
  uint64_t window_seq = 0;
  uint64_t iter_begin = 0;
  uint64_t iter_end = 0;
  uint64_t start_mono_ns = 0;
  uint64_t end_mono_ns = 0;
  uint64_t start_real_ns = 0;
  std::vector<FunctionPattern> functions;
  std::vector<CollectivePattern> collectives;
  IterationStats iterations;
  Health health;
  bool detailed = false;       // Python functions in detailed mode (PERFTRACKER_MODE)
  bool critical_path = false;  // functions carry critical_ns (FORMAT.md)
  uint64_t device_idle_ns = 0;
  uint32_t cuda_runtimes = 0;      // bit 0 the default runtime entry, bits 1-3 CUDA 11, 12, 13
  bool python_unrecorded = false;  // Python functions missing from part of it (FORMAT.md)
  // The iteration thread's CPU time and run-queue delay (FORMAT.md); 0 and 0: unknown.
  uint64_t thread_cpu_ns = 0;
  uint64_t run_delay_ns = 0;
  std::vector<Signal> signals;  // hardware and host samples; empty: none taken
  bool operator==(const Window&) const = default;
};

// The window's length on the monotonic clock (0 if its end does not follow its start).
inline uint64_t WindowLengthNs(const Window& w) {
  return w.end_mono_ns - std::min(w.end_mono_ns, w.start_mono_ns);
}

// Computes id and parent_id of every function from kind, name and parent. False if a parent
// index does not point to an earlier function.
bool FillFunctionIds(std::vector<FunctionPattern>* functions);

// Whether WindowEncoder writes the functions' detail columns (min_ns, max_ns and the device,
// per-iteration and self-duration histograms). kOmit leaves them absent, as if empty: in a window
// of 2,000 functions they are 21 of 52 KB compressed, and no analysis reads them (FORMAT.md).
enum class Details : bool { kOmit = false, kKeep = true };

// What libperftracker.so writes: the detail columns in detailed windows only, the periods someone
// asked for (PERFTRACKER_MODE=detailed, the trigger file) or the slowdown trigger started.
inline Details LibraryDetails(const Window& w) {
  return w.detailed ? Details::kKeep : Details::kOmit;
}

// Serializes windows. Reuses its buffers: keep one per writer thread.
class WindowEncoder {
 public:
  WindowEncoder();
  ~WindowEncoder();
  // The FlatBuffer, valid until the next Encode. Its last static_tail_size() bytes hold only the
  // function names, kinds and parents: identical bytes whenever the function table is unchanged,
  // which RingWriter::Append uses to compress them once.
  std::span<const uint8_t> Encode(const Window& window, Details details = Details::kKeep);
  size_t static_tail_size() const { return static_tail_size_; }
  // The detail_size() bytes before the static tail hold only the columns DecodeOptions::
  // function_details names, for RingWriter::Append to compress as a frame of their own.
  size_t detail_size() const { return detail_size_; }

 private:
  bool SameFunctionTable(const std::vector<FunctionPattern>& functions) const;

  std::unique_ptr<flatbuffers::FlatBufferBuilder> builder_;
  std::vector<uint8_t> scratch_;
  size_t static_tail_size_ = 0;
  size_t detail_size_ = 0;
  // The last static tail, reused byte for byte while the function table stays the same.
  struct TableKey {
    FunctionKind kind;
    int32_t parent;
    std::string name;
    bool operator==(const TableKey&) const = default;
  };
  std::vector<TableKey> table_;
  std::vector<uint8_t> tail_;
  uint32_t tail_offsets_[3] = {};
};

// The static tail (WindowEncoder) of a record as RingReader hands it over: its last `size` bytes
// are the output of decompression number `generation`, unique in the process, so two records
// with the same generation end in the same bytes. generation 0: not known.
struct RecordTail {
  uint64_t generation = 0;
  size_t size = 0;
};

// Where the function table of the last window decoded into an `out` lay (DecodeOptions::memo).
struct FunctionTableMemo {
  uint64_t generation = 0;  // 0: nothing remembered
  size_t rows = 0;
  // Distances of the name, kind and parent vectors from the buffer's end (0: absent).
  uint64_t name = 0, kind = 0, parent = 0;
  // The rows' detail fields were left empty (DecodeOptions::function_details false) and still are.
  bool details_empty = false;
};

// What a reader needs of a window. Columns it skips are left empty (zero); what is decoded is
// checked as always.
struct DecodeOptions {
  // The buffer already passed the FlatBuffers verifier (RingReader::ForEachRecord verifies every
  // record it hands over): do not walk it twice.
  bool verified = false;
  // Functions' min_ns, max_ns, captured and their device, per-iteration and self-duration
  // histograms: the analyzer's slots do not use them, dump and diff do.
  bool function_details = true;
  // Functions' duration histograms are summed into duration_moments as they are read, and
  // `duration` is left empty. Where the histogram holds all of a function's `count` calls only
  // its count is taken (sum and sum_squares 0): every call was timed, no spread is estimated.
  bool duration_moments = false;
  // For a reader that decodes one ring's records over the same `out`, in order: the record's
  // tail (RingReader::tail) and a memo kept beside `out`. A function table that lies in a tail
  // of the same generation, where the memo says the last one lay, is the one `out` holds: it is
  // not compared name by name again (most of the decoder's time for thousands of functions).
  RecordTail tail{};
  FunctionTableMemo* memo = nullptr;
};

// Decodes `bytes` over `out`, reusing its storage: decoding a ring's windows into one Window
// allocates little once the first is decoded. Verifies `bytes` with the FlatBuffers verifier
// first unless options.verified. Columns that disagree in length,
// malformed varints or parents that do not point backwards make the record invalid: returns
// false, `out` unspecified.
bool DecodeWindow(std::span<const uint8_t> bytes, Window* out, const DecodeOptions& options = {});

}  // namespace perftracker::format
