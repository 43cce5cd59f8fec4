// Damaged, missing, duplicated, truncated, restarted, foreign and old-version inputs: partial
// results plus diagnostics, never a crash. Plus the command line's exit codes and the HTML
// report's escaping.
#include <catch2/catch.hpp>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "schemas/format/crc32c.h"
#include "schemas/format/ring_layout.h"
#include "test/analyzer/fixture.h"

namespace perftracker::testing {
namespace {

namespace fs = std::filesystem;

// Rewrites the header's version fields and its CRC, as a writer of that version would.
void SetVersion(const std::string& path, uint32_t version, uint32_t min_reader) {
  std::vector<uint8_t> bytes = ReadBytes(path);
  format::FileHeader h;
  std::memcpy(&h, bytes.data(), sizeof h);
  h.format_version = version;
  h.min_reader_version = min_reader;
  h.header_crc = format::Crc32c(&h, offsetof(format::FileHeader, header_crc));
  std::memcpy(bytes.data(), &h, sizeof h);
  WriteBytes(path, bytes);
}

// Patches the header's pid and start time: the same rank, another process (a restart).
void SetStart(const std::string& path, int32_t pid, uint64_t start_real_ns) {
  std::vector<uint8_t> bytes = ReadBytes(path);
  format::FileHeader h;
  std::memcpy(&h, bytes.data(), sizeof h);
  h.pid = pid;
  h.start_real_ns = start_real_ns;
  h.header_crc = format::Crc32c(&h, offsetof(format::FileHeader, header_crc));
  std::memcpy(bytes.data(), &h, sizeof h);
  WriteBytes(path, bytes);
}

uint64_t Diag(const Json& j, const char* name) { return j["inputs"]["diagnostics"][name]; }

JobSpec SlowGpuJob() {
  JobSpec spec;
  spec.shape = SmallShape();
  spec.shape.fault = synthetic::Fault::kSlowGpu;
  spec.shape.fault_rank = 5;
  spec.shape.fault_factor = 1.3;
  return spec;
}

// The job written to a fresh directory and its `analyze --html` report.
std::string HtmlReport(const JobSpec& spec) {
  const std::string dir = MakeTempDir();
  WriteJob(dir, spec);
  const std::string html_path = dir + "/report.html";
  REQUIRE(Cli({"analyze", dir, "--html", html_path}).code == 0);
  std::ifstream is(html_path);
  std::string html{std::istreambuf_iterator<char>(is), {}};
  RemoveTree(dir);
  return html;
}

}  // namespace

TEST_CASE("damaged inputs give partial results and diagnostics", "[analyzer][ingest]") {
  const std::string dir = MakeTempDir();
  JobSpec spec = SlowGpuJob();
  spec.skip_ranks = {6};
  const auto paths = WriteJob(dir, spec);
  // rank 1: truncated in the middle of its records.
  std::vector<uint8_t> r1 = ReadBytes(paths[1]);
  r1.resize(r1.size() / 3);
  WriteBytes(paths[1], r1);
  // rank 2: flipped bytes inside its first record.
  std::vector<uint8_t> r2 = ReadBytes(paths[2]);
  format::FileHeader h2;
  std::memcpy(&h2, r2.data(), sizeof h2);
  for (size_t i = 0; i < 16; ++i) r2[h2.data_offset + 200 + i * 7] ^= 0x5a;
  WriteBytes(paths[2], r2);
  // rank 3 copied twice (a careless rsync), under an odd name elsewhere in the tree.
  WriteBytes(dir + "/copies/deeper/RANK three (copy).ptr", ReadBytes(paths[3]));
  // rank 4 restarted: its earlier run's file sits beside it with an older start.
  const std::string prev = dir + "/job/node1/rank-4.prev.ptr";
  WriteBytes(prev, ReadBytes(paths[4]));
  SetStart(prev, 777, 1'700'000'000'000'000'000ull);
  // a file of a newer format this build cannot read, an older one, garbage, an empty file, and
  // another job's file.
  WriteBytes(dir + "/newer/rank-7.ptr", ReadBytes(paths[7]));
  SetVersion(dir + "/newer/rank-7.ptr", 99, 99);
  WriteBytes(dir + "/old/rank-0.ptr", ReadBytes(paths[0]));
  SetVersion(dir + "/old/rank-0.ptr", 0, 0);
  WriteBytes(dir + "/junk/garbage.ptr", std::vector<uint8_t>(5000, 'x'));
  WriteBytes(dir + "/junk/empty.ptr", {});
  JobSpec other = SlowGpuJob();
  other.job = "other";
  other.ranks = 1;
  WriteJob(dir + "/elsewhere", other);

  const CliResult r = Cli({"analyze", dir, "--json", "-"});
  RemoveTree(dir);
  REQUIRE(r.code == 0);
  const Json& j = r.json;
  INFO(j["inputs"].dump(2));
  CHECK(j["ranks"]["expected"] == 8);
  CHECK(j["ranks"]["found"] == 7);
  CHECK(j["ranks"]["missing"] == Json::array({6}));
  CHECK(Diag(j, "rank_missing") == 1);
  CHECK(Diag(j, "truncated_tail") == 1);
  CHECK(Diag(j, "crc_mismatch") >= 1);
  CHECK(Diag(j, "duplicate_rank") == 1);
  CHECK(Diag(j, "restarted_rank") == 1);
  CHECK(Diag(j, "unsupported_version") == 2);
  CHECK(Diag(j, "not_ring_file") + Diag(j, "unreadable") == 2);
  CHECK(Diag(j, "other_job") == 1);
  // The analysis goes on with what is left, and still finds the throttled GPU.
  REQUIRE_FALSE(j["candidates"].empty());
  CHECK(j["candidates"][0]["rank_set"] == Json::array({5}));
  CHECK(j["candidates"][0]["category"] == "gpu_compute");
}

TEST_CASE("windows missing Python functions are a warning for their rank", "[analyzer][ingest]") {
  const std::string dir = MakeTempDir();
  JobSpec spec = SlowGpuJob();
  // Rank 3 lost the frame-evaluation slot during windows 1 and 2 (of 4).
  spec.edit = [](int rank, format::Window* w) {
    w->python_unrecorded = rank == 3 && (w->window_seq == 1 || w->window_seq == 2);
  };
  WriteJob(dir, spec);
  const CliResult json = Cli({"analyze", dir, "--json", "-"});
  const CliResult text = Cli({"analyze", dir});
  const std::string file = dir + "/job/node0/rank-3.ptr";
  const CliResult dump = Cli({"dump", file});
  RemoveTree(dir);
  REQUIRE(json.code == 0);
  CHECK(Diag(json.json, "python_unrecorded") == 2);
  CHECK(json.json["inputs"]["messages"] ==
        Json::array({"python_unrecorded: rank 3: Python functions missing from 2 of 4 windows"}));
  REQUIRE(text.code == 0);
  CHECK(text.out.find("warning: rank 3: Python functions missing from 2 of 4 windows") !=
        std::string::npos);
  CHECK(text.out.find("warning: rank 2") == std::string::npos);
  // dump shows the flag on the windows that carry it, and only there.
  REQUIRE(dump.code == 0);
  size_t flagged = 0, pos = 0;
  while ((pos = dump.out.find("\"python_unrecorded\":true", pos)) != std::string::npos) {
    ++flagged;
    ++pos;
  }
  CHECK(flagged == 2);
}

TEST_CASE("exit codes and error lines", "[analyzer][cli]") {
  CHECK(Cli({"analyze"}).code == 2);
  CHECK(Cli({"analyze", "/nonexistent/dir"}).code == 2);
  const CliResult missing = Cli({"analyze", "/nonexistent/dir"});
  CHECK(std::count(missing.err.begin(), missing.err.end(), '\n') == 1);
  CHECK(Cli({"analyze", "/tmp", "--bogus"}).code == 2);
  const std::string dir = MakeTempDir();
  WriteBytes(dir + "/a.ptr", std::vector<uint8_t>(100, 'z'));
  const CliResult junk = Cli({"analyze", dir});
  CHECK(junk.code == 2);
  CHECK(junk.err.find("none of 1 ring files is readable") != std::string::npos);
  CHECK(Cli({"diff", dir}).code == 2);
  RemoveTree(dir);
}

TEST_CASE("the HTML report is self-contained and escapes input strings", "[analyzer][html]") {
  const std::string dir = MakeTempDir();
  JobSpec spec = SlowGpuJob();
  spec.shape.fault = synthetic::Fault::kGc;
  spec.shape.fault_rank = 4;
  spec.shape.fault_factor = 60;
  spec.job = "job<b>&";
  // The GC function (the top candidate) gets a hostile name.
  spec.edit = [](int, format::Window* w) {
    // Not UTF-8 either: a stray byte, an overlong '/' and a UTF-16 surrogate (RFC 3629).
    w->functions[1].name = "<script>alert('x')</script>\xff\xfe\xc0\xaf\xed\xa0\x80";
    format::FillFunctionIds(&w->functions);
  };
  WriteJob(dir, spec);
  const std::string html_path = dir + "/report.html";
  const CliResult r = Cli({"analyze", dir, "--html", html_path, "--json", dir + "/r.json"});
  REQUIRE(r.code == 0);
  std::ifstream is(html_path);
  const std::string html{std::istreambuf_iterator<char>(is), {}};
  std::ifstream js(dir + "/r.json");
  const Json j = Json::parse(std::string{std::istreambuf_iterator<char>(js), {}}, nullptr, false);
  RemoveTree(dir);
  CHECK(html.find("<script") == std::string::npos);
  CHECK(html.find("<b>&") == std::string::npos);
  CHECK(html.find("job&lt;b&gt;&amp;") != std::string::npos);
  CHECK(html.find("http") == std::string::npos);  // nothing fetched from elsewhere
  CHECK(html.find("class=heat") != std::string::npos);
  CHECK(html.find("\xff") == std::string::npos);
  CHECK(html.find("\xc0\xaf") == std::string::npos);
  CHECK(html.find("\xed\xa0\x80") == std::string::npos);
  CHECK(html.find("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;\xEF\xBF\xBD") !=
        std::string::npos);
  REQUIRE(j["candidates"].size() >= 1);
  CHECK(j["candidates"][0]["category"] == "gc");
  CHECK_FALSE(j.is_discarded());
  CHECK(r.out.find("TOP CANDIDATES") != std::string::npos);
  // The verdict first, in words, naming the hostile function as text.
  const size_t verdict =
      html.find("<div class=verdict id=verdict><b>Most likely cause: gc on rank 4");
  CHECK(verdict != std::string::npos);
  CHECK(verdict < html.find("id=steptime-svg"));
  CHECK(html.find("&lt;script&gt;alert", verdict) < html.find("</div>", verdict));
  // The step-time chart highlights the GC rank; the heat map outlines its cell.
  CHECK(html.find("<title>rank 4</title><polyline") != std::string::npos);
  CHECK(html.find("id=owntime-svg") != std::string::npos);  // where the straggler stands out
  CHECK(html.find("<td class=cand") != std::string::npos);
  CHECK(html.find("class=\"scale\"") != std::string::npos);
  // Evidence in sentences; the raw JSON folded away, escaped too.
  CHECK(html.find("<section class=cand id=cand-1>") != std::string::npos);
  CHECK(html.find(" per iteration against ") != std::string::npos);
  CHECK(html.find("<details><summary>Raw evidence (JSON)</summary><pre>") != std::string::npos);
  CHECK(html.find("&quot;source&quot;: &quot;") != std::string::npos);
  // No link data in this job: no link matrix.
  CHECK(html.find("id=links") == std::string::npos);
}

TEST_CASE("the HTML report's verdict is the hang, with who never arrived", "[analyzer][html]") {
  JobSpec spec;
  spec.shape = SmallShape();
  spec.shape.fault = synthetic::Fault::kHang;
  spec.shape.fault_rank = 3;
  const std::string html = HtmlReport(spec);
  const size_t verdict = html.find("<div class=\"verdict hang\" id=verdict><b>The job hung</b>");
  REQUIRE(verdict != std::string::npos);
  CHECK(html.find("rank 3 never arrived", verdict) < html.find("</div>", verdict));
  CHECK(html.find("never arrived 3") != std::string::npos);
  CHECK(html.find("<h2 id=hangs>") < html.find("id=steptime-svg"));
}

TEST_CASE("the HTML report draws the link matrix, hostile host names escaped", "[analyzer][html]") {
  JobSpec spec;
  spec.ranks = 16;
  spec.shape = SmallShape();
  spec.shape.net_links = true;
  spec.shape.fault = synthetic::Fault::kSlowNodeLinks;
  spec.shape.fault_rank = 9;
  spec.shape.fault_factor = 1 / 0.3;
  spec.host_prefix = "n<svg onload=x>\"&";
  const std::string html = HtmlReport(spec);
  CHECK(html.find("<svg onload") == std::string::npos);
  CHECK(html.find("n&lt;svg onload=x&gt;&quot;&amp;2") != std::string::npos);
  const size_t links = html.find("<h2 id=links>Links: sender &rarr; receiver");
  REQUIRE(links != std::string::npos);
  // Every directed network cell of the 16-rank ring and the slow node's cells outlined.
  CHECK(html.find("<table class=\"heat links\">", links) != std::string::npos);
  CHECK(html.find("<td class=cand", links) < html.find("</table>", links));
}

TEST_CASE("diff: 1 on an injected regression, 0 on a clean rerun", "[analyzer][diff]") {
  const std::string dir = MakeTempDir();
  JobSpec base;
  base.shape = SmallShape();
  base.shape.run_seed = 1;
  WriteJob(dir + "/base", base);
  JobSpec rerun = base;
  rerun.shape.run_seed = 2;
  WriteJob(dir + "/rerun", rerun);
  JobSpec slow = base;
  slow.shape.run_seed = 3;
  slow.shape.fault = synthetic::Fault::kSlowDataLoader;
  slow.shape.fault_factor = 20;
  WriteJob(dir + "/slow", slow);

  const CliResult clean = Cli({"diff", dir + "/base", dir + "/rerun"});
  CHECK(clean.code == 0);
  const CliResult reg = Cli({"diff", dir + "/base", dir + "/slow", "--json", "-"});
  CHECK(reg.code == 1);
  REQUIRE_FALSE(reg.json.is_discarded());
  CHECK(reg.json["regression"] == true);
  bool loader = false;
  for (const Json& x : reg.json["regressions"]) {
    loader |= x["kind"] == "dataloader";
  }
  CHECK(loader);
  // A generous threshold lets it pass.
  CHECK(Cli({"diff", dir + "/base", dir + "/slow", "--threshold", "100000"}).code == 0);
  CHECK(Cli({"diff", dir + "/base", dir + "/nothing"}).code == 2);
  CHECK(Cli({"diff", dir + "/base", dir + "/rerun", "--threshold", "x"}).code == 2);
  RemoveTree(dir);
}

TEST_CASE("text report matches the golden file", "[analyzer][golden]") {
  const std::string dir = MakeTempDir();
  JobSpec spec = SlowGpuJob();
  spec.skip_ranks = {2};
  WriteJob(dir, spec);
  CliResult r = Cli({"analyze", dir, "--threads", "1", "--top", "5"});
  RemoveTree(dir);
  REQUIRE(r.code == 0);
  const std::string golden =
      std::string(PERFTRACKER_SOURCE_DIR) + "/test/analyzer/golden/slow_gpu.txt";
  if (std::getenv("PERFTRACKER_UPDATE_GOLDEN")) {
    std::ofstream(golden) << r.out;
  }
  std::ifstream is(golden);
  const std::string expected{std::istreambuf_iterator<char>(is), {}};
  CHECK(r.out == expected);
}

}  // namespace perftracker::testing

namespace perftracker::testing {

TEST_CASE("export --perfetto writes a loadable trace", "[analyzer][export]") {
  const std::string dir = MakeTempDir();
  WriteJob(dir, SlowGpuJob());
  const std::string path = dir + "/trace.json";
  CHECK(Cli({"export", dir, "--perfetto", path}).code == 0);
  std::ifstream is(path);
  const Json j = Json::parse(std::string{std::istreambuf_iterator<char>(is), {}}, nullptr, false);
  CHECK(Cli({"export", dir}).code == 2);
  RemoveTree(dir);
  REQUIRE_FALSE(j.is_discarded());
  REQUIRE(j["traceEvents"].size() > 8);
  bool candidate = false;
  for (const Json& e : j["traceEvents"]) {
    candidate |= e["ph"] == "i" && e["pid"] == 5;
  }
  CHECK(candidate);
}

}  // namespace perftracker::testing
