#include "analyzer/ingest/diagnostics.h"

namespace perftracker::analyzer {
namespace {

struct Entry {
  std::string_view name;
  std::string_view doc;
};

constexpr Entry kEntries[] = {
#define PERFTRACKER_ENTRY(e, name, doc) {name, doc},
    PERFTRACKER_DIAGNOSTICS(PERFTRACKER_ENTRY)
#undef PERFTRACKER_ENTRY
};

}  // namespace

std::string_view DiagnosticName(Diagnostic d) { return kEntries[static_cast<size_t>(d)].name; }
std::string_view DiagnosticDoc(Diagnostic d) { return kEntries[static_cast<size_t>(d)].doc; }

void Diagnostics::Add(Diagnostic d, uint64_t n, const std::string& message) {
  if (n == 0) return;
  std::lock_guard lock(mu_);
  counts_[static_cast<size_t>(d)] += n;
  if (!message.empty() && messages_.size() < kMaxMessages) {
    messages_.push_back(std::string(DiagnosticName(d)) + ": " + message);
  }
}

void Diagnostics::Merge(const Diagnostics& other) {
  std::scoped_lock lock(mu_, other.mu_);
  for (size_t i = 0; i < counts_.size(); ++i) counts_[i] += other.counts_[i];
  for (const std::string& m : other.messages_) {
    if (messages_.size() >= kMaxMessages) break;
    messages_.push_back(m);
  }
}

void Diagnostics::AddMessage(const std::string& message) {
  std::lock_guard lock(mu_);
  if (messages_.size() < kMaxMessages) messages_.push_back(message);
}

uint64_t Diagnostics::Total() const {
  uint64_t total = 0;
  for (const uint64_t c : counts_) total += c;
  return total;
}

}  // namespace perftracker::analyzer
