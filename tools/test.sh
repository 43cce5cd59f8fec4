#!/usr/bin/env bash
# Sets up the machine, builds, and runs every test: the regular build (unit, integration,
# simgpu, analyzer, scenarios), the unit tests again under ASan+UBSan, the fuzz targets for a
# bounded number of runs, the aarch64 cross build under qemu-user, and the format benchmark. Ends with one line "N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
tools/setup.sh || { echo "setup failed"; exit 1; }

jobs=$(nproc)
passed=0
failed=0

# Runs ctest in a build directory and adds its totals to ours.
run_ctest() {
  local dir=$1; shift
  local log
  log=$(mktemp)
  ctest --test-dir "$dir" --output-on-failure "$@" 2>&1 | tee "$log"
  local total fail
  total=$(sed -n 's/.*tests failed out of \([0-9]*\).*/\1/p' "$log" | tail -1)
  fail=$(sed -n 's/.* \([0-9]*\) tests failed out of.*/\1/p' "$log" | tail -1)
  if [[ -z "$total" ]]; then
    echo "test.sh: ctest in $dir ran nothing" >&2
    failed=$((failed + 1))
  else
    passed=$((passed + total - fail))
    failed=$((failed + fail))
  fi
  rm -f "$log"
}

# Configures and builds quietly (only $targets when set); on failure shows the end of the log.
build() {
  local dir=$1; shift
  mkdir -p "$dir"
  local log="$dir/build.log"
  local target_args=()
  for t in ${targets:-}; do target_args+=(--target "$t"); done
  if cmake -S "$root" -B "$dir" "$@" >"$log" 2>&1 &&
     cmake --build "$dir" -j"$jobs" "${target_args[@]}" >>"$log" 2>&1; then
    return 0
  fi
  tail -n 40 "$log"
  return 1
}

echo "== build (RelWithDebInfo)"
if build build -DCMAKE_BUILD_TYPE=RelWithDebInfo; then
  run_ctest build -j1
else
  echo "build failed"; failed=$((failed + 1))
fi

echo "== unit and analyzer tests under ASan+UBSan"
if build build-asan -DPERFTRACKER_SANITIZE=address,undefined -DPERFTRACKER_SIMGPU=OFF \
     -DPERFTRACKER_BENCHMARKS=OFF -DCMAKE_BUILD_TYPE=Debug; then
  run_ctest build-asan -j"$jobs" -L 'unit|analyzer|recorder'
else
  echo "sanitizer build failed"; failed=$((failed + 1))
fi

echo "== the recorder's and the analyzer's concurrent parts under TSan"
if targets="recorder_tests analyzer_tests" build build-tsan -DPERFTRACKER_SANITIZE=thread \
     -DPERFTRACKER_SIMGPU=OFF -DPERFTRACKER_BENCHMARKS=OFF -DCMAKE_BUILD_TYPE=Debug; then
  run_ctest build-tsan -j"$jobs" -L 'recorder|analyzer' -E html_browser
else
  echo "TSan build failed"; failed=$((failed + 1))
fi

echo "== fuzz targets (libFuzzer, bounded runs)"
if CC=clang CXX=clang++ targets="fuzz_seeds ring_reader_fuzz window_decode_fuzz reduced_decode_fuzz" build build-fuzz -DPERFTRACKER_FUZZ=ON -DPERFTRACKER_SIMGPU=OFF \
     -DPERFTRACKER_BENCHMARKS=OFF -DPERFTRACKER_SANITIZE=address,undefined; then
  run_ctest build-fuzz -L fuzz
else
  echo "fuzz build failed"; failed=$((failed + 1))
fi

echo "== aarch64 cross build under qemu-user"
aarch64_log=$(mktemp)
tools/cross_aarch64.sh build-aarch64 2>&1 | tee "$aarch64_log"
read -r a_passed a_failed < <(sed -n 's/^aarch64: \([0-9]*\) passed, \([0-9]*\) failed.*/\1 \2/p' "$aarch64_log")
passed=$((passed + ${a_passed:-0}))
failed=$((failed + ${a_failed:-0}))
rm -f "$aarch64_log"

echo "== format benchmark"
if [[ -x build/test/bench/format_bench ]]; then
  build/test/bench/format_bench --benchmark_min_time=0.2 2>&1 | grep -E '^BM_|^Run on|CPU'
fi

echo "tests: $passed passed, $failed failed"
[[ $failed -eq 0 ]]
