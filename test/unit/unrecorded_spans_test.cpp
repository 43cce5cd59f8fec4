// Which windows a Python loss flags: every window overlapping a span, whatever the order in
// which the writer builds them after the check wrote the span.
#include "preload/core/unrecorded_spans.h"

#include <catch2/catch.hpp>

using perftracker::preload::UnrecordedSpans;

TEST_CASE("a closed loss flags the windows it overlaps and no other", "[spans]") {
  UnrecordedSpans spans;
  CHECK_FALSE(spans.Overlaps(0, 100));
  spans.Begin(120);
  spans.End(180);
  CHECK_FALSE(spans.Overlaps(0, 100));    // before: built late, still not flagged
  CHECK(spans.Overlaps(100, 150));        // covers the beginning
  CHECK(spans.Overlaps(150, 200));        // covers the end
  CHECK(spans.Overlaps(130, 140));        // inside it
  CHECK_FALSE(spans.Overlaps(180, 300));  // begins as the loss ends
}

TEST_CASE("an open loss flags every window from its beginning on", "[spans]") {
  UnrecordedSpans spans;
  spans.Begin(500);
  CHECK_FALSE(spans.Overlaps(100, 500));
  CHECK(spans.Overlaps(500, 600));
  CHECK(spans.Overlaps(10'000, 20'000));
  spans.End(700);
  CHECK_FALSE(spans.Overlaps(10'000, 20'000));
  spans.End(900);  // no open span: nothing changes
  CHECK_FALSE(spans.Overlaps(800, 1000));
}

TEST_CASE("repeated losses each flag their own windows and the oldest are forgotten", "[spans]") {
  UnrecordedSpans spans;
  for (uint64_t i = 0; i < 2 * UnrecordedSpans::kKept; ++i) {
    spans.Begin(i * 100 + 10);
    spans.End(i * 100 + 20);
  }
  const uint64_t last = 2 * UnrecordedSpans::kKept - 1;
  CHECK(spans.Overlaps(last * 100, last * 100 + 100));
  CHECK_FALSE(spans.Overlaps(last * 100 + 20, last * 100 + 110));
  CHECK(spans.Overlaps((last - 1) * 100 + 15, (last - 1) * 100 + 16));
  CHECK_FALSE(spans.Overlaps(0, 100));  // overwritten: windows that old were built long ago
}
