// A slot's per-function sums, stored as compactly as they are sparse. Most fields are zero for
// most functions (device time outside kernels and copies, bytes outside copies and GEMMs,
// critical time without a critical path, sampling variance when every call was timed), and a
// slot holds one row per catalog function: at 16,384 ranks x 10 slots x 2,000 functions, dense
// 40-byte rows are 13 GB. Once a rank is read its slots are packed: only the fields that are
// non-zero somewhere on the rank are kept, per function, in one float array per slot, under a
// layout the rank's slots (and usually every rank of the job) share.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace perftracker::analyzer {

// Sums over the windows of a slot.
struct FunctionSum {
  float self_ns = 0;
  float critical_ns = 0;  // on the rank's critical path (windows with critical_path)
  float wait_ns = 0;
  // Device time of every call, estimated by Align (EstimateDevice). Packed, it is stored only
  // for functions the rank has device samples of; for the others it is what Align gives them,
  // max(0, self - wait).
  float device_est_ns = 0;
  float count = 0;
  float total_ns = 0;        // including the functions it called
  float device_ns = 0;       // of the sampled launches only
  float device_samples = 0;  // how many launches were timed
  float bytes = 0;           // bytes moved; floating-point operations for GEMM patterns (FORMAT.md)
  // Variance (ns^2) of self_ns from timing only a sample of the calls and scaling the sample's
  // time to all of them; 0 when every call was timed (align.cpp: SamplingVariance). For a
  // function with device samples: of device_est_ns where it was priced from other slots' samples
  // (EstimateDevice), else 0.
  float sampling_var = 0;

  FunctionSum& operator+=(const FunctionSum& o);
};

// Which fields each function keeps, and where its first one is in a slot's values.
struct SumLayout {
  std::vector<uint16_t> mask;    // bit f: field f (FunctionSum's order) is kept
  std::vector<uint32_t> offset;  // size() + 1 entries
  size_t size() const { return mask.size(); }
  bool operator==(const SumLayout& o) const { return mask == o.mask; }
};

class FunctionSums {
 public:
  static constexpr int kFields = 10;
  static constexpr int kDeviceEst = 3;     // FunctionSum::device_est_ns's field number
  static constexpr int kSamplingVar = 9;   // FunctionSum::sampling_var's

  size_t size() const { return layout_ ? rows_ : dense_.size(); }
  bool packed() const { return layout_ != nullptr; }
  const SumLayout* layout() const { return layout_.get(); }

  // Reading: a row by value, packed or not. Always inlined, so that a caller reading one or two
  // fields (the detectors, millions of times) pays only for those.
  [[gnu::always_inline]] FunctionSum operator[](size_t i) const {
    FunctionSum s = Row(i);
    if (layout_ && !((layout_->mask[i] >> kDeviceEst) & 1u)) {
      s.device_est_ns = std::max(0.0f, s.self_ns - s.wait_ns);
    }
    return s;
  }

  // Folding: row i, unpacked, the rows grown to hold it.
  FunctionSum& Mutable(size_t i) {
    if (layout_ || dense_.size() <= i) Grow(i);
    return dense_[i];
  }
  void resize(size_t n);  // unpacks; never shrinks below what is there
  // Adds to row i, packed or not (a packed row gains the fields the sum needs).
  void Add(size_t i, const FunctionSum& delta);
  void Clear(size_t i);
  void SetDeviceEst(size_t i, float ns);
  void SetSamplingVar(size_t i, float var);
  void Merge(const FunctionSums& other);

  // The fields row i holds a non-zero value in, as SumLayout::mask bits.
  uint16_t NonZero(size_t i) const;
  // Keeps only the fields `layout` names, or a layout of its own where that would lose a value.
  // Before Align's estimate: a device_est_ns of 0 is one not made yet (it takes no room).
  void Pack(std::shared_ptr<const SumLayout> layout);
  // Packs one rank's slots under one layout, the fields non-zero in any of them: `*last` (the
  // previous rank's) when it is the same, which then becomes the one made.
  static void PackRank(std::span<FunctionSums* const> slots,
                       std::shared_ptr<const SumLayout>* last);
  void Unpack();
  // Bytes held (for the memory figures in tests and benchmarks).
  size_t bytes() const;

 private:
  // Row i as stored: a packed row's device_est_ns is 0 where it is not kept.
  [[gnu::always_inline]] FunctionSum Row(size_t i) const {
    if (!layout_) return dense_[i];
    const uint32_t m = layout_->mask[i];
    const float* v = values_.data() + layout_->offset[i];
    const auto at = [&](int f) -> float {
      return (m >> f) & 1u ? v[std::popcount(m & ((1u << f) - 1))] : 0.0f;
    };
    return {at(0), at(1), at(2), at(3), at(4), at(5), at(6), at(7), at(8), at(9)};
  }
  void Grow(size_t i);  // unpacks and holds row i
  // Packs the unpacked rows under `layout`, which names every field they use.
  void PackUnder(std::shared_ptr<const SumLayout> layout);
  // Packs with a layout of this slot's own: the fields in use, and those `also` keeps.
  void PackOwn(const SumLayout* also);
  // Gives packed row i room for `bits` too, keeping every value.
  void Widen(size_t i, uint16_t bits);
  void SetField(size_t i, int field, float v);  // kDeviceEst or kSamplingVar

  std::vector<FunctionSum> dense_;
  std::shared_ptr<const SumLayout> layout_;  // null: dense_
  std::vector<float> values_;
  size_t rows_ = 0;  // packed: how many of the layout's rows this slot has
};

// The layout of `masks` (a function's fields, as NonZero gives them); `reuse` when it is the
// same, so that ranks of one job share one.
std::shared_ptr<const SumLayout> MakeLayout(std::vector<uint16_t> masks,
                                            const std::shared_ptr<const SumLayout>& reuse);

}  // namespace perftracker::analyzer
