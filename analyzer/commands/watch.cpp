// perftracker watch DIR [--interval S] [--exit-on hang] [--json-lines] [--prometheus FILE]
// [--windows K] [--top N] [--min-score X] [--rounds N]: analyzes the newest windows of a running
// job every interval and prints a line when a candidate appears, changes or clears, or a hang
// shows. Exit codes: 0 on SIGINT/SIGTERM (or after --rounds), 2 usage, 3 (kExitHang) once a hang
// is reported under --exit-on hang.
//
// Each round re-analyzes each rank's newest K windows (the --last machinery) rather than folding
// only the records new since the last round into kept state: slots are sums that cannot give a
// window back once it slides out, a ring that wraps or a rank that restarts (a new file) would
// need its state thrown away anyway, and the detectors want a fixed recent span, not the whole
// run, to say what is wrong now. Each rank's open window (its live slot's, FORMAT.md) is folded
// after its newest records: windows last PERFTRACKER_WINDOW_S (20 s) or more, and a fault must
// not wait for the window that holds it to end. The cost is bounded by K: older records are
// never decoded. What watch keeps between rounds is each file's size and modification time: a
// round where no file changed has nothing new to say and reads nothing.
#include <chrono>
#include <csignal>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <map>
#include <thread>

#include "analyzer/base/atomic_file.h"
#include "analyzer/commands/analyze.h"
#include "analyzer/commands/cli.h"
#include "analyzer/commands/command_line.h"
#include "analyzer/ingest/ingest.h"
#include "analyzer/report/prometheus.h"
#include "analyzer/report/watch_events.h"

namespace perftracker::analyzer {
namespace {

namespace fs = std::filesystem;

struct WatchOptions {
  std::string dir;
  double interval_s = 10;
  bool exit_on_hang = false;
  bool json_lines = false;
  std::string prometheus;
  // 8 windows: enough for the detectors' per-window statistics, few enough that a fault that
  // began a window ago already weighs in the persistence of the score.
  size_t windows = 8;
  size_t top = 5;
  double min_score = Thresholds{}.min_score;
  size_t rounds = 0;  // 0: until a signal
};

// Set by the handlers, read between rounds and while sleeping.
volatile std::sig_atomic_t g_stop = 0;

void OnSignal(int) { g_stop = 1; }

// Installs the SIGINT/SIGTERM handlers for the command's lifetime and puts back the ones before
// (the CLI also runs in-process, in tests).
class StopSignals {
 public:
  StopSignals() {
    g_stop = 0;
    struct sigaction sa = {};
    sa.sa_handler = OnSignal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int_);
    sigaction(SIGTERM, &sa, &old_term_);
  }
  ~StopSignals() {
    sigaction(SIGINT, &old_int_, nullptr);
    sigaction(SIGTERM, &old_term_, nullptr);
  }
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

 private:
  struct sigaction old_int_ = {}, old_term_ = {};
};

// Sleeps `seconds` in short steps, so a signal ends the wait at once; false when stopped.
bool SleepUnlessStopped(double seconds) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (!g_stop && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return !g_stop;
}

// Every ring file's size and modification time: the round reads the files again only when this
// changed (a file appeared, grew, was rewritten, truncated or removed).
using Fingerprint = std::map<std::string, std::pair<uintmax_t, int64_t>>;

Fingerprint FilesNow(const std::string& root) {
  Fingerprint f;
  std::error_code ec;
  if (fs::is_regular_file(root, ec)) {
    f[root] = {fs::file_size(root, ec), 0};
    f[root].second = fs::last_write_time(root, ec).time_since_epoch().count();
    return f;
  }
  fs::recursive_directory_iterator it(root, fs::directory_options::skip_permission_denied, ec), end;
  for (; !ec && it != end; it.increment(ec)) {
    std::error_code file_ec;
    const auto ext = it->path().extension();
    if ((ext == ".ptr" || ext == ".ptrd") && it->is_regular_file(file_ec)) {
      const uintmax_t size = it->file_size(file_ec);
      const int64_t mtime = it->last_write_time(file_ec).time_since_epoch().count();
      f[it->path().string()] = {size, mtime};
    }
  }
  return f;
}

std::string Timestamp() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm tm = {};
  gmtime_r(&t, &tm);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(ms));
  return buf;
}

struct RoundResult {
  WatchState state;
  std::string job;
  std::vector<WatchRankStep> steps;
};

// Whether every rank has read a window's worth of iterations after its start-up window. The
// windows just after start-up still warm up (the allocator, the caches, the collectives'
// first connections, a rank's first log line): the benchmark's live GIL-thread job was claimed
// on rank 0 three seconds in, two iterations after its start-up window, and cleared six
// seconds later. Candidates wait for it; a hang does not.
bool WarmedUp(const Dataset& ds) {
  for (const RankData& r : ds.ranks) {
    const uint64_t startup = r.StartupBegin();
    if (startup == UINT64_MAX) return false;
    double first = 0, after = 0;
    for (const Slot& s : r.slots) (s.iter_begin == startup ? first : after) += s.iterations;
    if (after < first) return false;
  }
  return !ds.ranks.empty();
}

// One analysis of the newest windows; false (and *error) when there is nothing readable yet.
bool AnalyzeRound(const WatchOptions& o, RoundResult* out, std::string* error) {
  WindowSelection selection;
  selection.last = o.windows;
  selection.open = true;
  // One reader thread: the watched job owns the machine's cores.
  auto ds = Ingest(o.dir, {1, nullptr}, error, selection);
  if (!ds) return false;
  Thresholds thresholds;
  thresholds.min_score = o.min_score;
  thresholds.persist_windows = 2;  // the newest windows: a fault is named in the one after its onset
  const Report rep = Analyze(std::move(ds), thresholds);
  out->state = Summarize(rep, o.top);
  if (!WarmedUp(*rep.dataset)) out->state.candidates.clear();
  out->job = rep.dataset->job_id;
  out->steps.clear();
  for (size_t i = 0; i < rep.iterations.size() && i < rep.dataset->ranks.size(); ++i) {
    out->steps.push_back({rep.iterations[i].rank, rep.dataset->ranks[i].identity.hostname,
                          rep.iterations[i].mean_s});
  }
  return true;
}

class Watcher {
 public:
  Watcher(const WatchOptions& o, std::ostream& out, std::ostream& err)
      : o_(o), out_(out), err_(err) {}

  // One round; true when a hang was reported in it.
  bool Round() {
    Fingerprint files = FilesNow(o_.dir);
    if (analyzed_once_ && files == files_) return false;
    RoundResult r;
    std::string error;
    bool ok = false;
    try {
      ok = AnalyzeRound(o_, &r, &error);
    } catch (const std::exception& e) {  // damaged input is data; a bug must not end the watch
      error = std::string("analysis failed: ") + e.what();
    }
    if (!ok) {
      if (error != last_error_) err_ << "perftracker watch: " << error << "\n";
      last_error_ = error;
      return false;  // fingerprint not kept: try again next round
    }
    last_error_.clear();
    files_ = std::move(files);
    analyzed_once_ = true;
    WatchState next;
    const std::vector<WatchEvent> events = DiffWatchStates(reported_, r.state, &next);
    reported_ = std::move(next);
    bool hang = false;
    const std::string now = Timestamp();
    for (const WatchEvent& e : events) {
      if (o_.json_lines) {
        out_ << EventJson(e, now).dump(-1, ' ', false, Json::error_handler_t::replace) << "\n";
      } else {
        out_ << EventText(e, now) << "\n";
      }
      hang = hang || e.type == WatchEventType::kHang;
    }
    out_.flush();
    WriteMetrics(r);
    return hang;
  }

 private:
  void WriteMetrics(const RoundResult& r) {
    if (o_.prometheus.empty()) return;
    const double unix_s =
        std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    std::string error;
    if (!WriteFileAtomically(o_.prometheus, WatchMetrics(r.job, r.steps, r.state, unix_s),
                             &error)) {
      err_ << "perftracker watch: " << error << "\n";
    }
  }

  const WatchOptions& o_;
  std::ostream& out_;
  std::ostream& err_;
  WatchState reported_;
  Fingerprint files_;
  bool analyzed_once_ = false;
  std::string last_error_;
};

}  // namespace

int WatchCommand(std::span<const std::string> args, std::ostream& out, std::ostream& err) {
  WatchOptions o;
  CommandLine cl("watch",
                 "Re-analyze a running job's newest windows every interval: a line per candidate "
                 "that appears, changes or clears, and per hang.");
  cl.Argument("DIR", &o.dir, "the job's directory");
  cl.Option("--interval", &o.interval_s, "seconds between rounds");
  cl.Positive("--interval");
  cl.Option(
      "--exit-on", "hang",
      [&o](const std::string& v) {
        o.exit_on_hang = v == "hang";
        return o.exit_on_hang ? "" : "--exit-on knows only 'hang'";
      },
      "exit 3 once a hang is reported");
  cl.Flag("--json-lines", &o.json_lines, "one JSON object per event instead of text");
  cl.Option("--prometheus", &o.prometheus,
            "after each round, the metrics in the Prometheus text format to FILE");
  cl.Option("--windows", &o.windows, "each rank's newest K windows analyzed per round");
  cl.Positive("--windows");
  cl.Option("--top", &o.top, "candidates in the Prometheus metrics");
  cl.Option("--min-score", &o.min_score, "the score a finding needs to become a candidate");
  cl.Option("--rounds", &o.rounds, "stop after N rounds (0: until SIGINT or SIGTERM)");
  if (const auto code = cl.Parse(args, out, err)) return *code;
  StopSignals signals;
  Watcher watcher(o, out, err);
  for (uint64_t round = 1; !g_stop; ++round) {
    if (watcher.Round() && o.exit_on_hang) return kExitHang;
    if (o.rounds > 0 && round >= o.rounds) break;
    if (!SleepUnlessStopped(o.interval_s)) break;
  }
  return kExitOk;
}

}  // namespace perftracker::analyzer
