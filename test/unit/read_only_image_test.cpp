// InReadOnlyImage (preload/python/cpython_api.h): the seeding of the Python shadow stack skips code
// objects CPython cannot write co_extra into (3.13's const `_Py_InitCleanup`).
#include <catch2/catch.hpp>
#include <memory>

#include "preload/python/cpython_api.h"

namespace {
const char kConstant[64] = "read-only";
char g_mutable[64] = "writable";
}  // namespace

TEST_CASE("const statics are read-only image memory; data, heap and stack are not", "[cpython]") {
  using perftracker::preload::cpython::InReadOnlyImage;
  CHECK(InReadOnlyImage(kConstant));
  CHECK_FALSE(InReadOnlyImage(g_mutable));
  const auto heap = std::make_unique<char[]>(64);
  CHECK_FALSE(InReadOnlyImage(heap.get()));
  char stack[16] = {};
  CHECK_FALSE(InReadOnlyImage(stack));
}
