// perftracker-gen: writes synthetic ring files for N ranks, laid out as the preload library lays
// them out ($DIR/<job>/<host>/rank-<r>.ptr). For demos, analyzer development and scale tests.
#include <flatbuffers/flatbuffers.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "schemas/format/live.h"
#include "schemas/format/ring_file.h"
#include "schemas/format/version.h"
#include "tools/synthetic/synthetic.h"

namespace {

struct Args {
  std::string dir = "perftracker-synthetic";
  std::string job = "synthetic";
  int ranks = 4;
  int ranks_per_host = 8;
  int windows = 3;
  uint64_t ring_mb = 4;
  int jobs = 0;  // writer threads; 0: one per core
  // Only the ranks of hosts [first_host, end_host): a job larger than the disk is written and
  // reduced a slice of hosts at a time (test/bench/analyze_scale.py --reduced).
  int first_host = 0;
  int end_host = 1 << 30;
  perftracker::synthetic::JobShape shape;
};

int Usage() {
  std::fprintf(
      stderr,
      "usage: perftracker-gen [--dir D] [--job ID] [--ranks N] [--ranks-per-host N]\n"
      "                       [--windows N] [--functions N] [--collectives N]\n"
      "                       [--ring-mb N] [--jobs N] [--seed S] [--slow-rank R --slow-factor X]\n"
      "                       [--iterations N] [--iteration-ms MS] [--jitter J] [--run-seed S]\n"
      "                       [--stages N] [--p2p-ring] [--net-links] [--fault NAME]\n"
      "                       [--fault-rank R] [--fault-peer R] [--fault-factor X]\n"
      "                       [--fault-from-window W] [--hosts A:B]\n"
      "faults: none slow-gpu slow-link slow-node-links slow-pcie slow-dataloader\n"
      "        host-sync gc cpu-contention hang comm-hang\n");
  return 2;
}

bool ParseArgs(int argc, char** argv, Args* a) {
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--net-links") {
      a->shape.net_links = true;
      continue;
    }
    if (flag == "--p2p-ring") {
      a->shape.p2p_ring = true;
      continue;
    }
    if (i + 1 >= argc) return false;
    const char* v = argv[++i];
    if (flag == "--dir")
      a->dir = v;
    else if (flag == "--job")
      a->job = v;
    else if (flag == "--ranks")
      a->ranks = std::atoi(v);
    else if (flag == "--ranks-per-host")
      a->ranks_per_host = std::atoi(v);
    else if (flag == "--windows")
      a->windows = std::atoi(v);
    else if (flag == "--functions")
      a->shape.functions = std::atoi(v);
    else if (flag == "--collectives")
      a->shape.collectives = std::atoi(v);
    else if (flag == "--jobs")
      a->jobs = std::atoi(v);
    else if (flag == "--hosts") {
      char* end = nullptr;
      a->first_host = static_cast<int>(std::strtol(v, &end, 10));
      if (*end != ':') return false;
      a->end_host = static_cast<int>(std::strtol(end + 1, &end, 10));
      if (*end != '\0' || a->first_host < 0 || a->end_host <= a->first_host) return false;
    } else if (flag == "--ring-mb")
      a->ring_mb = std::strtoull(v, nullptr, 10);
    else if (flag == "--seed")
      a->shape.seed = std::strtoull(v, nullptr, 10);
    else if (flag == "--slow-rank")
      a->shape.slow_rank = std::atoi(v);
    else if (flag == "--slow-factor")
      a->shape.slow_factor = std::atof(v);
    else if (flag == "--run-seed")
      a->shape.run_seed = std::strtoull(v, nullptr, 10);
    else if (flag == "--iterations")
      a->shape.iterations = std::atoi(v);
    else if (flag == "--iteration-ms")
      a->shape.iteration_ns = std::strtoull(v, nullptr, 10) * 1'000'000;
    else if (flag == "--jitter")
      a->shape.jitter = std::atof(v);
    else if (flag == "--stages")
      a->shape.pipeline_stages = std::atoi(v);
    else if (flag == "--fault-rank")
      a->shape.fault_rank = std::atoi(v);
    else if (flag == "--fault-peer")
      a->shape.fault_peer = std::atoi(v);
    else if (flag == "--fault-factor")
      a->shape.fault_factor = std::atof(v);
    else if (flag == "--fault-from-window")
      a->shape.fault_from_window = std::strtoull(v, nullptr, 10);
    else if (flag == "--fault") {
      const auto fault = perftracker::synthetic::ParseFault(v);
      if (!fault) return false;
      a->shape.fault = *fault;
    } else
      return false;
  }
  a->shape.ranks_per_node = a->ranks_per_host;
  return a->ranks > 0 && a->ranks_per_host > 0 && a->jobs >= 0 && a->windows >= 0 &&
         a->ring_mb >= 1 && a->shape.iterations > 0 && a->shape.functions >= 0 &&
         a->shape.collectives >= 0;
}

bool WriteRank(const Args& a, const perftracker::synthetic::JobPlan& plan, int rank) {
  using namespace perftracker;
  const std::string host = "node" + std::to_string(rank / a.ranks_per_host);
  const std::string path =
      a.dir + "/" + a.job + "/" + host + "/rank-" + std::to_string(rank) + ".ptr";
  format::Identity id{a.job,
                      host,
                      rank,
                      rank % a.ranks_per_host,
                      a.ranks,
                      10000 + rank,
                      1'790'000'000'000'000'000ull,
                      1'000'000'000ull,
                      format::kLibraryVersion};
  format::RingOptions options;
  options.file_size = a.ring_mb << 20;
  std::string error;
  auto writer = format::RingWriter::Create(path, id, options, &error);
  if (!writer) {
    std::fprintf(stderr, "perftracker-gen: %s\n", error.c_str());
    return false;
  }
  format::WindowEncoder encoder;
  for (int w = 0; w < a.windows; ++w) {
    const format::Window window = plan.MakeWindow(rank, static_cast<uint64_t>(w));
    const auto encoded = encoder.Encode(window);
    if (!writer->Append(encoded, encoder.static_tail_size(), encoder.detail_size())) {
      std::fprintf(stderr, "perftracker-gen: cannot append to %s\n", path.c_str());
      return false;
    }
  }
  const format::LiveState live =
      synthetic::MakeLiveState(a.shape, rank, a.ranks, static_cast<uint64_t>(a.windows));
  flatbuffers::FlatBufferBuilder builder;
  return writer->WriteLive(format::EncodeLiveState(live, builder));
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  if (!ParseArgs(argc, argv, &args)) return Usage();
  // Ranks are independent files: threads take the next unwritten rank until all are written or
  // one fails. The plan (function table, each window's physics) is built once and shared; it
  // holds the first kPlannedWindows windows, so a writer asked for a million windows (to be
  // killed midway: the dump test) starts at once; later ones are computed per rank.
  constexpr int kPlannedWindows = 4096;
  const perftracker::synthetic::JobPlan plan(
      args.shape, args.ranks, static_cast<uint64_t>(std::min(args.windows, kPlannedWindows)));
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  const int threads = std::min(args.ranks, args.jobs > 0 ? args.jobs : static_cast<int>(cores));
  const int first_rank = static_cast<int>(
      std::min<int64_t>(int64_t{args.first_host} * args.ranks_per_host, args.ranks));
  const int end_rank =
      static_cast<int>(std::min<int64_t>(int64_t{args.end_host} * args.ranks_per_host, args.ranks));
  std::atomic<int> next{first_rank};
  std::atomic<bool> failed{false};
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&] {
      for (int r; !failed.load() && (r = next.fetch_add(1)) < end_rank;) {
        if (!WriteRank(args, plan, r)) failed.store(true);
      }
    });
  }
  for (std::thread& t : workers) t.join();
  if (failed.load()) return 1;
  std::printf("wrote %d ranks x %d windows under %s/%s\n", end_rank - first_rank, args.windows,
              args.dir.c_str(), args.job.c_str());
  return 0;
}
