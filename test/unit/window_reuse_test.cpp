// DecodeWindow decodes over the Window it is given (reusing names, ids and buffers when a ring
// repeats its function table) and can skip what a reader does not need; RingReader reuses an
// unchanged static tail; the generator's JobPlan shares what ranks share. Each must give exactly
// what the plain path gives.
#include <catch2/catch.hpp>

#include "schemas/format/ring_file.h"
#include "schemas/format/window.h"
#include "test/unit/ring_test_util.h"
#include "tools/synthetic/synthetic.h"

using namespace perftracker;
using format::Window;

namespace {

std::vector<uint8_t> Encode(const Window& w) {
  format::WindowEncoder encoder;
  const auto bytes = encoder.Encode(w);
  return {bytes.begin(), bytes.end()};
}

synthetic::JobShape Shape(uint64_t seed, int functions) {
  synthetic::JobShape shape;
  shape.seed = seed;
  shape.functions = functions;
  shape.collectives = 10;
  shape.iterations = 4;
  return shape;
}

}  // namespace

TEST_CASE("decoding over an earlier window equals decoding afresh", "[codec]") {
  // Same table, a different table, a smaller one, a larger one, then the first again.
  const std::vector<Window> windows = {
      synthetic::MakeWindow(Shape(1, 300), 0, 4, 0), synthetic::MakeWindow(Shape(1, 300), 1, 4, 1),
      synthetic::MakeWindow(Shape(2, 300), 0, 4, 0), synthetic::MakeWindow(Shape(3, 120), 2, 4, 0),
      synthetic::MakeWindow(Shape(4, 500), 3, 4, 2), synthetic::MakeWindow(Shape(1, 300), 0, 4, 0)};
  Window reused;
  for (const Window& w : windows) {
    const std::vector<uint8_t> bytes = Encode(w);
    Window fresh;
    REQUIRE(format::DecodeWindow(bytes, &fresh));
    REQUIRE(format::DecodeWindow(bytes, &reused));
    CHECK(reused == fresh);
    CHECK(fresh == w);
  }
}

TEST_CASE("a renamed function gets its own id when decoded over the old table", "[codec]") {
  Window a = synthetic::MakeWindow(Shape(1, 100), 0, 4, 0);
  Window b = a;
  b.functions[40].name += " (renamed)";
  REQUIRE(format::FillFunctionIds(&b.functions));
  Window reused;
  REQUIRE(format::DecodeWindow(Encode(a), &reused));
  REQUIRE(format::DecodeWindow(Encode(b), &reused));
  CHECK(reused.functions[40].id == b.functions[40].id);
  CHECK(reused.functions[40].id != a.functions[40].id);
  for (size_t i = 0; i < b.functions.size(); ++i) {
    CHECK(reused.functions[i].parent_id == b.functions[i].parent_id);  // callees follow
  }
}

TEST_CASE("skipped function details read as empty; the rest is decoded", "[codec]") {
  const Window w = synthetic::MakeWindow(Shape(1, 200), 1, 4, 0);
  const std::vector<uint8_t> bytes = Encode(w);
  Window slim;
  REQUIRE(format::DecodeWindow(bytes, &slim, {.verified = false, .function_details = false}));
  Window expected = w;
  for (format::FunctionPattern& p : expected.functions) {
    p.min_ns = p.max_ns = p.captured = 0;
    p.device = p.per_iteration = p.self_duration = format::Histogram{};
  }
  CHECK(slim == expected);
}

TEST_CASE("JobPlan's windows equal MakeWindow's, planned or not", "[synthetic]") {
  synthetic::JobShape shape = Shape(7, 150);
  shape.pipeline_stages = 3;  // 10 ranks in 3 stages: an uneven split
  shape.p2p_ring = true;
  shape.net_links = true;
  shape.ranks_per_node = 2;
  shape.fault = synthetic::Fault::kSlowLink;
  shape.fault_rank = 4;
  shape.fault_peer = 5;
  const synthetic::JobPlan plan(shape, 10, 2);
  for (int rank : {0, 4, 9}) {
    for (uint64_t w : {0, 1, 3}) {  // window 3 is outside the plan
      CHECK(plan.MakeWindow(rank, w) == synthetic::MakeWindow(shape, rank, 10, w));
    }
  }
}

TEST_CASE("records read through the reader's tail cache equal what was written", "[ring]") {
  // Function tables A, A, B, A, C, C: the reader copies an unchanged tail, and must notice each
  // change (and change back) of the compressed tail.
  const std::vector<synthetic::JobShape> shapes = {Shape(1, 300), Shape(1, 300), Shape(2, 300),
                                                   Shape(1, 300), Shape(3, 80),  Shape(3, 80)};
  testing::TempDir dir;
  const std::string path = dir.File("rank-0.ptr");
  std::vector<Window> written;
  {
    std::string error;
    auto writer =
        format::RingWriter::Create(path, testing::TestIdentity(), format::RingOptions{}, &error);
    REQUIRE(writer);
    format::WindowEncoder encoder;
    for (size_t i = 0; i < shapes.size(); ++i) {
      written.push_back(synthetic::MakeWindow(shapes[i], 0, 4, i));
      const auto encoded = encoder.Encode(written.back());
      REQUIRE(writer->Append(encoded, encoder.static_tail_size(), encoder.detail_size()));
    }
  }
  const testing::ReadBack back = testing::ReadAllFile(path);
  REQUIRE(back.status == format::ReadStatus::kOk);
  REQUIRE(back.records.size() == written.size());
  for (size_t i = 0; i < written.size(); ++i) CHECK(back.records[i].second == written[i]);
}
