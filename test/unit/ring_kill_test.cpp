// A writer process killed with SIGKILL at random moments: the file never holds a record the
// reader accepts but that was not written whole, and only the record being written is lost.
#include <catch2/catch.hpp>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <random>

#include "test/unit/ring_test_util.h"

using namespace perftracker;
using namespace perftracker::testing;

namespace {

// Child: appends windows forever, telling the parent after each completed Append. Never returns.
[[noreturn]] void WriteUntilKilled(const std::string& path, int report_fd) {
  format::RingOptions options;
  options.file_size = 4096 + 4096 + 96 * 1024;  // small, so most kills land after a wrap
  options.live_size = 4096;
  std::string error;
  auto writer = format::RingWriter::Create(path, TestIdentity(), options, &error);
  if (!writer) _exit(3);
  format::WindowEncoder encoder;
  for (uint64_t seq = 0;; ++seq) {
    // A varying function count changes the static tail now and then, as in real jobs.
    const int functions = 30 + static_cast<int>((seq / 7) % 5) * 10;
    const auto encoded = encoder.Encode(SmallWindow(seq, functions));
    if (!writer->Append(encoded, encoder.static_tail_size(), encoder.detail_size())) {
      _exit(4);
    }
    if (write(report_fd, &seq, sizeof seq) != sizeof seq) _exit(5);
  }
}

int FunctionsFor(uint64_t seq) { return 30 + static_cast<int>((seq / 7) % 5) * 10; }

}  // namespace

TEST_CASE("SIGKILL at random moments never leaves a bad record", "[ring][kill]") {
  TempDir dir;
  std::mt19937_64 rng(2024);
  int kills_after_wrap = 0;
  for (int round = 0; round < 120; ++round) {
    const std::string path = dir.File("rank-" + std::to_string(round) + ".ptr");
    int fds[2];
    REQUIRE(pipe(fds) == 0);
    const pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      close(fds[0]);
      WriteUntilKilled(path, fds[1]);
    }
    close(fds[1]);
    // Kill once the child has written a random number of records (most rounds past the first
    // wrap-around, whatever the machine's speed), plus a random fraction of a record.
    const int64_t target = static_cast<int64_t>(rng() % 400) - 20;
    int64_t last_reported = -1;
    uint64_t seq;
    while (last_reported < target && read(fds[0], &seq, sizeof seq) == sizeof seq) {
      last_reported = static_cast<int64_t>(seq);
    }
    const timespec delay{0, static_cast<long>(rng() % 2000) * 1000};
    nanosleep(&delay, nullptr);
    kill(pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);
    REQUIRE(WIFSIGNALED(status));
    while (read(fds[0], &seq, sizeof seq) == sizeof seq) last_reported = static_cast<int64_t>(seq);
    close(fds[0]);

    const ReadBack r = ReadAllFile(path);
    if (r.status != format::ReadStatus::kOk) {
      REQUIRE(last_reported == -1);  // killed before the header was written
      continue;
    }
    INFO("round " << round << " last reported " << last_reported);
    REQUIRE(r.undecodable == 0);
    REQUIRE(r.contents.stats.records_corrupt == 0);
    REQUIRE(r.contents.stats.seq_gaps == 0);
    for (const auto& [s, window] : r.records) REQUIRE(window == SmallWindow(s, FunctionsFor(s)));
    if (last_reported < 0) continue;
    // Every reported record is there, up to what the ring holds; at most one more completed
    // after the last report.
    REQUIRE(!r.records.empty());
    const auto newest = static_cast<int64_t>(r.records.back().first);
    REQUIRE(newest >= last_reported);
    REQUIRE(newest <= last_reported + 1);
    if (r.records.front().first > 0) ++kills_after_wrap;
  }
  CHECK(kills_after_wrap >= 20);
}
