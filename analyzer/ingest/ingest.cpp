#include "analyzer/ingest/ingest.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>
#include <thread>

#include "analyzer/ingest/align.h"
#include "analyzer/base/progress.h"
#include "analyzer/ingest/reduced.h"

namespace perftracker::analyzer {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> Discover(const std::string& root, std::string* error) {
  std::error_code ec;
  std::vector<std::string> files;
  if (fs::is_regular_file(root, ec)) return {root};
  if (!fs::is_directory(root, ec)) {
    *error = root + ": no such file or directory";
    return {};
  }
  const auto options = fs::directory_options::skip_permission_denied |
                       fs::directory_options::follow_directory_symlink;
  fs::recursive_directory_iterator it(root, options, ec), end;
  for (; !ec && it != end; it.increment(ec)) {
    std::error_code file_ec;
    const auto extension = it->path().extension();
    if ((extension == ".ptr" || extension == kReducedExtension) && it->is_regular_file(file_ec)) {
      files.push_back(it->path().string());
    }
  }
  if (ec && files.empty()) *error = root + ": " + ec.message();
  std::sort(files.begin(), files.end());
  return files;
}

bool OpenOk(format::ReadStatus status, const std::string& message, Diagnostics* diags) {
  switch (status) {
    case format::ReadStatus::kOk:
      return true;
    case format::ReadStatus::kIoError:
      diags->Add(Diagnostic::kUnreadable, 1, message);
      break;
    case format::ReadStatus::kNotRingFile:
      diags->Add(Diagnostic::kNotRingFile, 1, message);
      break;
    case format::ReadStatus::kCorruptHeader:
      diags->Add(Diagnostic::kCorruptHeader, 1, message);
      break;
    case format::ReadStatus::kUnsupportedVersion:
      diags->Add(Diagnostic::kUnsupportedVersion, 1, message);
      break;
  }
  return false;
}

// `deselected`: windows left out by the selection (a file whose windows all were is not empty).
void CountDamage(const RankData& r, uint64_t undecodable, uint64_t deselected, Diagnostics* diags) {
  const format::RingStats& s = r.stats;
  if (s.truncated) diags->Add(Diagnostic::kTruncatedTail, 1, r.path);
  diags->Add(Diagnostic::kCrcMismatch, s.records_corrupt, r.path);
  diags->Add(Diagnostic::kUndecodableRecord, undecodable, r.path);
  diags->Add(Diagnostic::kSeqGap, s.seq_gaps, r.path);
  diags->Add(Diagnostic::kDuplicateRecord, s.duplicates, r.path);
  if (!r.live) diags->Add(Diagnostic::kLiveMissing, 1, r.path);
  if (r.windows == 0 && deselected == 0) diags->Add(Diagnostic::kNoWindows, 1, r.path);
}

// What the slots need of a window the reader verified: sums and duration moments, no details.
constexpr format::DecodeOptions kSlotDecode{
    .verified = true, .function_details = false, .duration_moments = true};

// The earliest end a window of this file may have under --since (0: no bound): the newest
// record that passes its checks, less the duration.
uint64_t SinceFrom(format::RingReader& reader, const WindowSelection& selection) {
  if (selection.since_ns == 0) return 0;
  format::Window newest;
  for (size_t i = reader.frame_count(); i-- > 0;) {
    bool decoded = false;
    reader.PeekRecord(i, [&](uint64_t, std::span<const uint8_t> bytes) {
      decoded = format::DecodeWindow(bytes, &newest, kSlotDecode);
      return false;
    });
    if (decoded) {
      const uint64_t end = WindowEndRealNs(newest);
      return end > selection.since_ns ? end - selection.since_ns : 0;
    }
  }
  return 0;
}

void ReadRankFile(const std::string& path, const WindowSelection& selection,
                  format::RingReader& reader, FileSet* out) {
  std::string message;
  if (!OpenOk(reader.OpenFile(path, &message), message, &out->diagnostics)) return;
  RankData r;
  r.path = path;
  r.identity = reader.contents().identity;
  r.format_version = reader.contents().format_version;
  r.live = reader.contents().live;
  format::Window window;
  format::FunctionTableMemo memo;  // of `window`'s function table
  FoldScratch scratch;
  uint64_t undecodable = 0, deselected = 0;
  uint64_t folded_end = 0;  // iterations the folded windows reach
  // The reader verified every record it hands over; the slots need none of the details.
  format::DecodeOptions decode = kSlotDecode;
  decode.memo = &memo;
  const uint64_t since_from = SinceFrom(reader, selection);
  const size_t frames = reader.frame_count();
  const size_t first = selection.last > 0 && frames > selection.last ? frames - selection.last : 0;
  reader.ForEachRecord(
      [&](uint64_t, std::span<const uint8_t> bytes) {
        decode.tail = reader.tail();
        if (!format::DecodeWindow(bytes, &window, decode)) {
          ++undecodable;
          return true;
        }
        if (!Selected(selection, window, since_from)) {
          ++deselected;
          return true;
        }
        FoldWindow(window, &out->catalog, &r, &scratch);
        folded_end = std::max(folded_end, window.iter_end);
        r.health.dropped_events += window.health.dropped_events;
        r.health.dropped_functions += window.health.dropped_functions;
        r.health.dropped_windows =
            std::max(r.health.dropped_windows, window.health.dropped_windows);
        r.python_unrecorded_windows += window.python_unrecorded;
        return true;
      },
      first);
  // The open window begins where the last written one ended; one the live slot still holds
  // from before that (an update older than the last window) is not folded twice.
  if (selection.open && r.live && format::DecodeOpenWindow(*r.live, &window) &&
      window.iter_begin >= folded_end && window.iter_end > window.iter_begin &&
      Selected(selection, window, since_from)) {
    FoldWindow(window, &out->catalog, &r, &scratch);
  }
  SettleTimeline(scratch, &r);
  // Up to half the live slot per rank, of no further use: thousands of ranks must not keep it.
  if (r.live) std::vector<uint8_t>().swap(r.live->open_window);
  r.stats = reader.contents().stats;
  CountDamage(r, undecodable, deselected + first, &out->diagnostics);
  r.PackSums();
  out->ranks.push_back(std::move(r));
}

bool ReadWhole(const std::string& path, std::vector<uint8_t>* bytes, std::string* error) {
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  FILE* f = ec ? nullptr : std::fopen(path.c_str(), "rb");
  if (f == nullptr) {
    *error = path + ": " + (ec ? ec.message() : std::strerror(errno));
    return false;
  }
  bytes->resize(size);
  const bool ok = std::fread(bytes->data(), 1, size, f) == size;
  std::fclose(f);
  if (!ok) *error = path + ": short read";
  return ok;
}

// A node's reduced file: its ranks, catalog and diagnostics as `reduce` left them. Its windows
// were selected when it was made; a selection now cannot apply and says so.
void ReadReducedFile(const std::string& path, const WindowSelection& selection, FileSet* out) {
  std::vector<uint8_t> bytes;
  std::string error;
  if (!ReadWhole(path, &bytes, &error)) {
    out->diagnostics.Add(Diagnostic::kUnreadable, 1, error);
    return;
  }
  Diagnostic failure = Diagnostic::kNotRingFile;
  switch (DecodeReduced(bytes, out, &error)) {
    case ReducedStatus::kOk:
      if (!selection.everything()) out->diagnostics.Add(Diagnostic::kSelectionIgnored, 1, path);
      return;
    case ReducedStatus::kNotReduced:
      break;
    case ReducedStatus::kCorruptHeader:
      failure = Diagnostic::kCorruptHeader;
      break;
    case ReducedStatus::kUnsupportedVersion:
      failure = Diagnostic::kUnsupportedVersion;
      break;
    case ReducedStatus::kTruncated:
      failure = Diagnostic::kTruncatedTail;
      break;
    case ReducedStatus::kCorruptPayload:
      failure = Diagnostic::kCrcMismatch;
      break;
  }
  out->diagnostics.Add(failure, 1, path + ": " + error);
  out->ranks.clear();  // counted as the one file it is
}

bool LooksReduced(const std::string& path) {
  if (path.ends_with(kReducedExtension)) return true;
  uint8_t head[8] = {};
  FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return false;
  const size_t n = std::fread(head, 1, sizeof head, f);
  std::fclose(f);
  return IsReduced({head, n});
}

// Merges one file's result into the dataset: its diagnostics, its catalog (renumbering its
// ranks' slots) and its ranks.
void MergeResult(FileSet* result, Dataset* ds, std::vector<RankData>* out) {
  ds->diagnostics.Merge(result->diagnostics);
  ds->files += result->ring_files;
  if (result->ranks.empty()) return;
  std::vector<uint32_t> fn_map, coll_map;
  ds->catalog.Merge(result->catalog, &fn_map, &coll_map);
  for (RankData& r : result->ranks) {
    r.Remap(fn_map, coll_map);
    out->push_back(std::move(r));
  }
}

// Reads `files` on `threads` workers. Each file is folded against a catalog of its own; the
// calling thread merges the results in file order as they become ready (so a file's catalog and
// strings are freed early) and reports progress: the result is the same for any number of
// threads.
std::vector<RankData> ReadAll(const std::vector<std::string>& files, const IngestOptions& options,
                              const WindowSelection& selection, Dataset* ds) {
  std::vector<std::unique_ptr<FileSet>> results(files.size());  // guarded by mu
  std::atomic<size_t> next{0};
  std::mutex mu;
  std::condition_variable cv;
  auto work = [&] {
    format::RingReader reader;      // one per thread: its file buffer is reused
    reader.set_skip_details(true);  // decoded without function_details
    for (size_t i; (i = next.fetch_add(1)) < files.size();) {
      auto result = std::make_unique<FileSet>();
      result->ring_files = 1;
      // A file named on the command line is sniffed; under a directory, the extension tells.
      if (files.size() == 1 ? LooksReduced(files[i]) : files[i].ends_with(kReducedExtension)) {
        ReadReducedFile(files[i], selection, result.get());
      } else {
        ReadRankFile(files[i], selection, reader, result.get());
      }
      std::lock_guard lock(mu);
      results[i] = std::move(result);
      cv.notify_one();
    }
  };
  // A reader holds its whole file (up to the ring size) while it decodes: cap the readers so
  // memory stays bounded on machines with many cores.
  constexpr unsigned kMaxReaders = 16;
  const unsigned cores = std::clamp(std::thread::hardware_concurrency(), 1u, kMaxReaders);
  ds->threads = options.threads > 0 ? options.threads : static_cast<int>(cores);
  const size_t n = std::min<size_t>(files.size(), static_cast<size_t>(ds->threads));
  std::vector<std::thread> workers;
  for (size_t i = 0; i < n; ++i) workers.emplace_back(work);
  ProgressBar progress(options.progress, files.size());
  std::vector<RankData> out;
  for (size_t merged = 0; merged < files.size();) {
    std::unique_ptr<FileSet> ready;
    {
      std::unique_lock lock(mu);
      cv.wait_for(lock, std::chrono::milliseconds(250), [&] { return results[merged] != nullptr; });
      ready = std::move(results[merged]);
    }
    if (ready) MergeResult(ready.get(), ds, &out), ++merged;
    progress.Update(merged);
  }
  for (std::thread& t : workers) t.join();
  progress.Finish();
  return out;
}

// The job most files belong to; files of other jobs are reported and set aside.
std::string MainJob(const std::vector<RankData>& all) {
  std::map<std::string, int> files;
  for (const RankData& r : all) ++files[r.identity.job_id];
  std::string best;
  int most = -1;
  for (const auto& [job, n] : files) {
    if (n > most) best = job, most = n;
  }
  return best;
}

// One file per rank: the newest start wins (a restarted rank leaves rank-N.prev.ptr behind).
void PickPerRank(std::vector<RankData> all, Dataset* ds) {
  ds->job_id = MainJob(all);
  std::sort(all.begin(), all.end(), [](const RankData& a, const RankData& b) {
    if (a.rank() != b.rank()) return a.rank() < b.rank();
    if (a.identity.start_real_ns != b.identity.start_real_ns) {
      return a.identity.start_real_ns > b.identity.start_real_ns;
    }
    return a.windows > b.windows;
  });
  for (RankData& r : all) {
    if (r.identity.job_id != ds->job_id) {
      ds->diagnostics.Add(Diagnostic::kOtherJob, 1, r.path + " (job " + r.identity.job_id + ")");
    } else if (r.identity.helper_of != 0) {
      ds->diagnostics.Add(Diagnostic::kHelperFile, 1,
                          r.path + " (helper of rank " + std::to_string(r.rank()) + ", pid " +
                              std::to_string(r.identity.helper_of) + ")");
      ds->helpers.push_back(std::move(r));
    } else if (r.rank() < 0) {
      ds->diagnostics.Add(Diagnostic::kCorruptHeader, 1, r.path + " (negative rank)");
    } else if (!ds->ranks.empty() && ds->ranks.back().rank() == r.rank()) {
      const RankData& kept = ds->ranks.back();
      const bool restart = kept.identity.pid != r.identity.pid ||
                           kept.identity.start_real_ns != r.identity.start_real_ns;
      ds->diagnostics.Add(restart ? Diagnostic::kRestartedRank : Diagnostic::kDuplicateRank, 1,
                          r.path + " (kept " + kept.path + ")");
    } else {
      ds->ranks.push_back(std::move(r));
    }
  }
}

void CountRanks(Dataset* ds) {
  std::set<int> sizes;
  std::set<int> present;
  for (const RankData& r : ds->ranks) {
    sizes.insert(r.identity.world_size);
    present.insert(r.rank());
    ds->diagnostics.Add(Diagnostic::kDroppedEvents, r.health.dropped_events);
    ds->diagnostics.Add(Diagnostic::kDroppedFunctions, r.health.dropped_functions);
    ds->diagnostics.Add(Diagnostic::kDroppedWindows, r.health.dropped_windows);
    ds->diagnostics.Add(Diagnostic::kPythonUnrecorded, r.python_unrecorded_windows,
                        "rank " + std::to_string(r.rank()) + ": Python functions missing from " +
                            std::to_string(r.python_unrecorded_windows) + " of " +
                            std::to_string(r.windows) + " windows");
  }
  if (sizes.size() > 1) ds->diagnostics.Add(Diagnostic::kWorldSizeMismatch, sizes.size() - 1);
  ds->expected = sizes.empty() ? 0 : std::max(*sizes.rbegin(), *present.rbegin() + 1);
  for (int r = 0; r < ds->expected; ++r) {
    if (!present.count(r)) ds->missing.push_back(r);
  }
  ds->diagnostics.Add(Diagnostic::kRankMissing, ds->missing.size());
}

}  // namespace

std::vector<RankData> ReadFiles(const std::string& root, const IngestOptions& options, Dataset* ds,
                                std::string* error, const WindowSelection& selection) {
  const std::vector<std::string> files = Discover(root, error);
  if (files.empty()) {
    if (error->empty()) *error = root + ": no ring files (*.ptr) or reduced files (*.ptrd) found";
    return {};
  }
  std::vector<RankData> all = ReadAll(files, options, selection, ds);
  if (all.empty()) {
    *error = root + ": none of " + std::to_string(files.size()) + " ring files is readable";
    if (!ds->diagnostics.messages().empty()) *error += " (" + ds->diagnostics.messages()[0] + ")";
  }
  return all;
}

std::unique_ptr<Dataset> Ingest(const std::string& root, const IngestOptions& options,
                                std::string* error, const WindowSelection& selection) {
  auto ds = std::make_unique<Dataset>();
  std::vector<RankData> all = ReadFiles(root, options, ds.get(), error, selection);
  if (all.empty()) return nullptr;
  PickPerRank(std::move(all), ds.get());
  CountRanks(ds.get());
  Align(ds.get());
  return ds;
}

}  // namespace perftracker::analyzer
