#include "analyzer/ingest/function_sums.h"

#include <array>
#include <cstddef>

namespace perftracker::analyzer {
namespace {

// A row's fields in declaration order, which is SumLayout::mask's bit order.
std::array<float, FunctionSums::kFields> Values(const FunctionSum& s) {
  return std::bit_cast<std::array<float, FunctionSums::kFields>>(s);
}
static_assert(offsetof(FunctionSum, device_est_ns) == FunctionSums::kDeviceEst * sizeof(float));
static_assert(sizeof(FunctionSum) == FunctionSums::kFields * sizeof(float));

uint16_t Fields(const FunctionSum& s) {
  // Spelled out, not a loop: every row of every slot of a rank comes here.
  return static_cast<uint16_t>((s.self_ns != 0) << 0 | (s.critical_ns != 0) << 1 |
                               (s.wait_ns != 0) << 2 | (s.device_est_ns != 0) << 3 |
                               (s.count != 0) << 4 | (s.total_ns != 0) << 5 |
                               (s.device_ns != 0) << 6 | (s.device_samples != 0) << 7 |
                               (s.bytes != 0) << 8 | (s.sampling_var != 0) << 9);
}

}  // namespace

FunctionSum& FunctionSum::operator+=(const FunctionSum& o) {
  self_ns += o.self_ns;
  critical_ns += o.critical_ns;
  wait_ns += o.wait_ns;
  device_est_ns += o.device_est_ns;
  count += o.count;
  total_ns += o.total_ns;
  device_ns += o.device_ns;
  device_samples += o.device_samples;
  bytes += o.bytes;
  sampling_var += o.sampling_var;
  return *this;
}

std::shared_ptr<const SumLayout> MakeLayout(std::vector<uint16_t> masks,
                                            const std::shared_ptr<const SumLayout>& reuse) {
  if (reuse && reuse->mask == masks) return reuse;
  auto layout = std::make_shared<SumLayout>();
  layout->offset.reserve(masks.size() + 1);
  uint32_t at = 0;
  for (const uint16_t m : masks) {
    layout->offset.push_back(at);
    at += static_cast<uint32_t>(std::popcount(m));
  }
  layout->offset.push_back(at);
  layout->mask = std::move(masks);
  return layout;
}

uint16_t FunctionSums::NonZero(size_t i) const {
  const FunctionSum s = Row(i);
  const uint16_t device_est = 1u << kDeviceEst;
  // Where the rank timed device samples, Align estimates the device time from them; elsewhere
  // it reads as max(0, self - wait) (operator[]), which needs no room.
  const bool derived =
      s.device_est_ns == 0 || s.device_est_ns == std::max(0.0f, s.self_ns - s.wait_ns);
  return static_cast<uint16_t>((Fields(s) & ~device_est) |
                               (s.device_samples != 0 || !derived ? device_est : 0));
}

void FunctionSums::Pack(std::shared_ptr<const SumLayout> layout) {
  Unpack();
  const size_t n = dense_.size();
  if (!layout || layout->size() < n) return PackOwn(layout.get());
  for (size_t i = 0; i < n; ++i) {
    if (NonZero(i) & ~layout->mask[i]) return PackOwn(layout.get());  // it would lose a value
  }
  PackUnder(std::move(layout));
}

void FunctionSums::PackRank(std::span<FunctionSums* const> slots,
                            std::shared_ptr<const SumLayout>* last) {
  size_t n = 0;
  for (FunctionSums* s : slots) {
    s->Unpack();
    n = std::max(n, s->dense_.size());
  }
  std::vector<uint16_t> masks(n);
  for (const FunctionSums* s : slots) {
    for (size_t i = 0; i < s->dense_.size(); ++i) masks[i] |= s->NonZero(i);
  }
  *last = MakeLayout(std::move(masks), *last);
  for (FunctionSums* s : slots) s->PackUnder(*last);  // the union names every field in use
}

void FunctionSums::PackUnder(std::shared_ptr<const SumLayout> layout) {
  const size_t n = dense_.size();
  std::vector<float> values(layout->offset[n]);
  for (size_t i = 0; i < n; ++i) {
    const uint32_t m = layout->mask[i];
    float* v = values.data() + layout->offset[i];
    const auto row = Values(dense_[i]);
    for (int f = 0; f < kFields; ++f) {
      if ((m >> f) & 1u) *v++ = row[static_cast<size_t>(f)];
    }
  }
  values_ = std::move(values);
  layout_ = std::move(layout);
  rows_ = n;
  std::vector<FunctionSum>().swap(dense_);
}

void FunctionSums::PackOwn(const SumLayout* also) {
  Unpack();
  std::vector<uint16_t> masks(std::max(dense_.size(), also ? also->size() : 0));
  for (size_t i = 0; i < dense_.size(); ++i) masks[i] = NonZero(i);
  for (size_t i = 0; also && i < also->size(); ++i) masks[i] |= also->mask[i];
  PackUnder(MakeLayout(std::move(masks), nullptr));
}

void FunctionSums::Widen(size_t i, uint16_t bits) {
  std::vector<uint16_t> masks = layout_->mask;
  masks[i] |= bits;
  std::shared_ptr<const SumLayout> wider = MakeLayout(std::move(masks), nullptr);
  std::vector<float> values(wider->offset[rows_]);
  for (size_t r = 0; r < rows_; ++r) {
    const uint32_t had = layout_->mask[r], has = wider->mask[r];
    const float* from = values_.data() + layout_->offset[r];
    float* to = values.data() + wider->offset[r];
    for (int f = 0; f < kFields; ++f) {
      if ((has >> f) & 1u) *to++ = (had >> f) & 1u ? *from++ : 0.0f;
    }
  }
  values_ = std::move(values);
  layout_ = std::move(wider);
}

void FunctionSums::Unpack() {
  if (!layout_) return;
  dense_.resize(rows_);
  for (size_t i = 0; i < rows_; ++i) dense_[i] = Row(i);
  layout_.reset();
  std::vector<float>().swap(values_);
  rows_ = 0;
}

void FunctionSums::Grow(size_t i) {
  Unpack();
  if (dense_.size() <= i) dense_.resize(i + 1);
}

void FunctionSums::resize(size_t n) {
  Unpack();
  if (dense_.size() < n) dense_.resize(n);
}

void FunctionSums::Add(size_t i, const FunctionSum& delta) {
  if (!layout_ || i >= rows_) {
    Mutable(i) += delta;
    return;
  }
  if (const uint16_t missing = Fields(delta) & ~layout_->mask[i]) Widen(i, missing);
  const uint32_t m = layout_->mask[i];
  float* v = values_.data() + layout_->offset[i];
  const auto add = Values(delta);
  for (int f = 0; f < kFields; ++f) {
    if ((m >> f) & 1u) *v++ += add[static_cast<size_t>(f)];
  }
}

void FunctionSums::Clear(size_t i) {
  if (!layout_) {
    dense_[i] = FunctionSum{};
    return;
  }
  float* v = values_.data() + layout_->offset[i];
  std::fill(v, v + std::popcount(uint32_t{layout_->mask[i]}), 0.0f);
}

void FunctionSums::SetDeviceEst(size_t i, float ns) { SetField(i, kDeviceEst, ns); }

void FunctionSums::SetSamplingVar(size_t i, float var) { SetField(i, kSamplingVar, var); }

void FunctionSums::SetField(size_t i, int field, float v) {
  if (!layout_) {
    (field == kDeviceEst ? dense_[i].device_est_ns : dense_[i].sampling_var) = v;
    return;
  }
  const auto bit = static_cast<uint16_t>(1u << field);
  if (!(layout_->mask[i] & bit)) {
    const FunctionSum now = (*this)[i];
    if (v == (field == kDeviceEst ? now.device_est_ns : now.sampling_var)) return;  // read anyway
    Widen(i, bit);
  }
  const uint32_t m = layout_->mask[i];
  values_[layout_->offset[i] + static_cast<size_t>(std::popcount(m & (bit - 1u)))] = v;
}

void FunctionSums::Merge(const FunctionSums& other) {
  if (layout_ && other.layout_ && rows_ == other.rows_ &&
      (layout_ == other.layout_ || *layout_ == *other.layout_)) {
    for (size_t k = 0; k < values_.size(); ++k) values_[k] += other.values_[k];
    return;
  }
  const bool pack = layout_ || other.layout_;
  // Whatever either kept stays kept (an estimate of 0 is one).
  std::vector<uint16_t> kept;
  for (const SumLayout* l : {layout_.get(), other.layout_.get()}) {
    if (l == nullptr) continue;
    if (kept.size() < l->size()) kept.resize(l->size());
    for (size_t i = 0; i < l->size(); ++i) kept[i] |= l->mask[i];
  }
  Unpack();
  if (dense_.size() < other.size()) dense_.resize(other.size());
  for (size_t i = 0; i < other.size(); ++i) dense_[i] += other.Row(i);
  if (!pack) return;
  SumLayout also;
  also.mask = std::move(kept);
  PackOwn(&also);
}

size_t FunctionSums::bytes() const {
  return dense_.capacity() * sizeof(FunctionSum) + values_.capacity() * sizeof(float);
}

}  // namespace perftracker::analyzer
