#include "test/preload/cuda/ring_summary.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "schemas/format/ring_file.h"
#include "schemas/format/window.h"

namespace perftracker::test {
namespace fs = std::filesystem;

uint64_t RankSummary::CountPrefix(const std::string& prefix) const {
  uint64_t n = 0;
  for (const auto& [name, t] : top) n += name.rfind(prefix, 0) == 0 ? t.count : 0;
  return n;
}

uint64_t RankSummary::CollectiveCount(const std::string& name) const {
  uint64_t n = 0;
  for (const auto& [key, c] : collectives) n += key.second == name ? c.count : 0;
  return n;
}

std::vector<std::string> FilesUnder(const std::string& dir) {
  std::vector<std::string> files;
  std::error_code ec;
  if (fs::is_regular_file(dir, ec)) return {dir};
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    if (it->is_regular_file()) files.push_back(it->path().string());
  }
  return files;
}

namespace {

void Add(Totals& t, const format::FunctionPattern& f) {
  t.count += f.count;
  t.device_samples += f.device_samples;
  t.device_ns += f.device_ns;
  t.wait_ns += f.wait_ns;
  t.bytes += f.bytes;
  t.captured += f.captured;
  t.device.Merge(f.device);
}

void AddWindow(const format::Window& w, RankSummary& s) {
  ++s.windows;
  s.dropped += w.health.dropped_events;
  s.cuda_runtimes |= w.cuda_runtimes;
  for (const format::FunctionPattern& f : w.functions) {
    if (f.kind == format::FunctionKind::kKernel) Add(s.kernels[f.name], f);
    if (f.kind == format::FunctionKind::kPyNative && f.parent >= 0) {
      Add(s.py_native[w.functions[static_cast<size_t>(f.parent)].name + " > " + f.name], f);
    }
    Add(f.parent < 0 ? s.top[f.name] : s.children[f.name], f);
  }
  for (const format::CollectivePattern& c : w.collectives) {
    CollectiveTotals& t = s.collectives[{c.comm_id, c.name}];
    t.comm_id = c.comm_id;
    t.comm_size = c.comm_size;
    t.comm_rank = c.comm_rank;
    t.count += c.count;
    t.device_samples += c.device_samples;
    t.device_ns += c.device_ns;
    t.bytes = c.bytes;
    if (c.count > 0) {
      t.first_seq = std::min(t.first_seq, c.first_seq);
      t.last_seq_launched = std::max(t.last_seq_launched, c.last_seq_launched);
    }
    t.last_seq_completed = std::max(t.last_seq_completed, c.last_seq_completed);
  }
}

}  // namespace

RankSummary ReadRank(const std::string& dir, int rank) {
  RankSummary s;
  const std::string want = "rank-" + std::to_string(rank) + ".ptr";
  for (const std::string& path : FilesUnder(dir)) {
    if (fs::path(path).filename() != want) continue;
    format::RingReader reader;
    std::string error;
    if (reader.OpenFile(path, &error) != format::ReadStatus::kOk) continue;
    s.found = true;
    s.live = reader.contents().live;
    reader.ForEachRecord([&](uint64_t, std::span<const uint8_t> bytes) {
      format::Window w;
      if (format::DecodeWindow(bytes, &w)) {
        AddWindow(w, s);
      } else {
        ++s.records_skipped;
      }
      return true;
    });
    s.records_skipped += reader.contents().stats.records_corrupt;
  }
  return s;
}

int Spawn(const std::vector<std::string>& argv, const Env& env, const std::string& stdout_path) {
  // Everything the child needs is built here: a test may spawn from several threads at once,
  // and a child of a threaded process must not allocate (nor touch the parent's stdout).
  std::map<std::string, std::string> vars;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string kv = *e;
    const size_t eq = kv.find('=');
    if (eq != std::string::npos) vars[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  for (const auto& [k, v] : env) {
    if (v == "\x01") {
      vars.erase(k);
    } else {
      vars[k] = v;
    }
  }
  std::vector<std::string> strings;
  for (const auto& [k, v] : vars) strings.push_back(k + "=" + v);
  std::vector<char*> envp, args;
  for (std::string& kv : strings) envp.push_back(kv.data());
  envp.push_back(nullptr);
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t pid = fork();
  if (pid != 0) return pid;
  if (!stdout_path.empty()) {
    const int fd = open(stdout_path.c_str(), O_CREAT | O_WRONLY | O_TRUNC, 0644);
    if (fd < 0 || dup2(fd, STDOUT_FILENO) < 0) _exit(126);
    close(fd);
  }
  execve(args[0], args.data(), envp.data());
  _exit(127);
}

namespace {

// Every process below `pid`, from /proc (torchrun's ranks are its children, not its group).
std::vector<int> Descendants(int pid) {
  std::multimap<int, int> children;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(entry.path() / "stat");
    std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const size_t close = stat.rfind(')');
    if (close == std::string::npos) continue;
    int ppid = 0;
    char state = 0;
    if (std::sscanf(stat.c_str() + close + 1, " %c %d", &state, &ppid) == 2) {
      children.emplace(ppid, std::stoi(name));
    }
  }
  std::vector<int> out, todo{pid};
  while (!todo.empty()) {
    const int p = todo.back();
    todo.pop_back();
    for (auto [it, end] = children.equal_range(p); it != end; ++it) {
      out.push_back(it->second);
      todo.push_back(it->second);
    }
  }
  return out;
}

}  // namespace

int WaitOrDump(int pid, std::chrono::steady_clock::time_point deadline) {
  int status = 0;
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      DumpStacksAndKill(pid);
      waitpid(pid, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return status;
}

void DumpStacksAndKill(int pid) {
  std::vector<int> pids = Descendants(pid);
  pids.insert(pids.begin(), pid);
  for (int p : pids) {
    std::fprintf(stderr, "=== hang: stacks of pid %d\n", p);
    const std::string cmd = "gdb -batch -nx -p " + std::to_string(p) +
                            " -ex 'thread apply all bt' 2>&1 | grep -E '^(Thread |#)' >&2";
    if (std::system(cmd.c_str()) != 0) std::fprintf(stderr, "(no stacks: is gdb installed?)\n");
  }
  for (int p : pids) kill(p, SIGKILL);
}

int Run(const std::vector<std::string>& argv, const Env& env, int timeout_s, std::string* out) {
  const std::string out_path = out != nullptr ? MakeTempDir() + "/stdout" : std::string();
  const int pid = Spawn(argv, env, out_path);
  const int status =
      WaitOrDump(pid, std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s));
  if (out != nullptr) {
    std::ifstream in(out_path);
    out->assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::map<std::string, long> ReadCounters(const std::string& dir) {
  std::map<std::string, long> counts;
  for (const std::string& path : FilesUnder(dir)) {
    std::ifstream in(path);
    std::string name;
    long n = 0;
    while (in >> name >> n) counts[name] += n;
  }
  return counts;
}

std::string MakeTempDir() {
  // Removed when the test program exits (set PT_KEEP_TMP=1 to look at them).
  static std::vector<std::string>* dirs = [] {
    auto* v = new std::vector<std::string>();
    std::atexit([] {
      if (std::getenv("PT_KEEP_TMP") != nullptr) return;
      std::error_code ec;
      for (const std::string& d : *dirs) fs::remove_all(d, ec);
    });
    return v;
  }();
  std::string tmpl = (fs::temp_directory_path() / "ptcuda-XXXXXX").string();
  if (mkdtemp(tmpl.data()) == nullptr) std::abort();
  static std::mutex mutex;  // Run is called from several threads at once (RunNonBlocking)
  const std::lock_guard<std::mutex> lock(mutex);
  dirs->push_back(tmpl);
  return tmpl;
}

}  // namespace perftracker::test
