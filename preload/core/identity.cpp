#include "preload/core/identity.h"

#include <time.h>
#include <unistd.h>

#include <cstdlib>
#include <functional>

#include "schemas/format/version.h"

namespace perftracker::preload {
namespace {

int EnvInt(const char* name, int fallback) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  char* end = nullptr;
  const long n = std::strtol(v, &end, 10);
  return *end == '\0' ? static_cast<int>(n) : fallback;
}

uint64_t ClockNs(clockid_t clock) {
  timespec ts;
  clock_gettime(clock, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// Without a launcher's job id, every rank of one job still has to agree: derive it from the
// rendezvous endpoint they share.
std::string GeneratedJobId() {
  const char* addr = std::getenv("MASTER_ADDR");
  const char* port = std::getenv("MASTER_PORT");
  const std::string key = std::string(addr ? addr : "local") + ":" + (port ? port : "0") + "/" +
                          std::to_string(EnvInt("WORLD_SIZE", 1));
  char buf[32];
  std::snprintf(buf, sizeof buf, "job-%08zx", std::hash<std::string>()(key) & 0xFFFFFFFFu);
  return buf;
}

}  // namespace

namespace {

// What a launcher sets for each rank it starts: a child whose values differ from the marking
// rank's was started as a rank of its own (a launcher run by a process that looked like a rank),
// not as that rank's helper, which inherits them unchanged.
std::string RankVariables() {
  std::string out;
  for (const char* name : {"RANK", "LOCAL_RANK", "WORLD_SIZE"}) {
    const char* v = std::getenv(name);
    out += std::string(":") + (v != nullptr ? v : "-");
  }
  return out;
}

}  // namespace

void MarkRankProcess() {
  setenv(kRankPidVariable, (std::to_string(getpid()) + RankVariables()).c_str(), 1);
}

namespace {

bool HasRankVariables() {
  return std::getenv("RANK") != nullptr || std::getenv("LOCAL_RANK") != nullptr;
}

// The pid of the rank whose mark this process inherited unchanged (it is that rank's helper),
// else 0. A lone process (run_session.h) marks without rank variables, so its helpers have none.
int32_t MarkedBy() {
  const char* mark = std::getenv(kRankPidVariable);
  if (mark == nullptr) return 0;
  char* rest = nullptr;
  const long rank_pid = std::strtol(mark, &rest, 10);
  const bool unchanged = rank_pid > 0 && rank_pid != getpid() && rest == RankVariables();
  return unchanged ? static_cast<int32_t>(rank_pid) : 0;
}

}  // namespace

bool IsTrainingRank() { return HasRankVariables() || MarkedBy() != 0; }

format::Identity DetectIdentity(const Config& config) {
  format::Identity id;
  id.local_rank = EnvInt("LOCAL_RANK", -1);
  id.rank = EnvInt("RANK", id.local_rank);
  id.world_size = EnvInt("WORLD_SIZE", 0);
  id.pid = static_cast<int32_t>(getpid());
  id.start_real_ns = ClockNs(CLOCK_REALTIME);
  id.start_mono_ns = ClockNs(CLOCK_MONOTONIC);
  id.library_version = format::kLibraryVersion;
  // A rank marks its environment with its pid; a process that inherited it is that rank's helper.
  id.helper_of = MarkedBy();
  // Without rank variables: a lone process `perftracker run` started, or one of its helpers.
  if (!HasRankVariables()) id.rank = 0, id.local_rank = 0, id.world_size = 1;
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) != 0) std::snprintf(host, sizeof host, "unknown-host");
  id.hostname = host;
  if (config.job_id != nullptr && *config.job_id) {
    id.job_id = config.job_id;
  } else if (const char* t = std::getenv("TORCHELASTIC_RUN_ID"); t && *t) {
    id.job_id = t;
  } else if (const char* s = std::getenv("SLURM_JOB_ID"); s && *s) {
    id.job_id = s;
  } else {
    id.job_id = GeneratedJobId();
  }
  return id;
}

}  // namespace perftracker::preload
