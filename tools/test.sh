#!/usr/bin/env bash
# Sets up the machine, builds, and runs every test: the installed targets in Release as a user
# builds them, then the test suite in the same build (unit, integration, simgpu, analyzer,
# scenarios); the unit, analyzer and recorder tests again under ASan+UBSan, with the fuzz targets
# for a bounded number of runs; the concurrent parts under TSan; the aarch64 cross build under
# qemu-user; the artifacts (tarball, .deb, wheel) installed and run, and the installed files in a
# Debian 11 root (glibc 2.31); and the format benchmark. Every build treats warnings as errors.
#
# Ends with what was skipped and why, what failed, and then one line, the last, that CI reads:
#   N passed, N failed, N skipped
# A test that skips (ctest's exit 77), a group configure left out (build/left_out.txt) and a
# check the aarch64 stage could not run are skipped, never passed. In CI (CI=true, where
# tools/setup.sh installed everything) a skip for a dependency setup installs is a failure, and
# a stage that ends without its summary line is one anywhere.
set -uo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

passed=0
failed=0
skipped=0
skips=()     # "what: why"
failures=()  # "what: why"
ci=0
[[ ${CI:-} == true ]] && ci=1
# Reasons that name what tools/setup.sh installs (the browser test's chromium, Debian's torch,
# the Python headers sim_train builds with).
setup_deps='chromium|torch|Python'

summary() {
  echo
  echo "== summary (the run took $((SECONDS / 60)) min $((SECONDS % 60)) s)"
  local line
  for line in "${skips[@]}"; do echo "skipped: $line"; done
  for line in "${failures[@]}"; do echo "failed: $line"; done
  echo "$passed passed, $failed failed, $skipped skipped"
}

fail() { failed=$((failed + 1)); failures+=("$1"); }

# A stage's header, with the time the run has taken so far: CI prints only the log, and the
# stages' shares of the run are what to look at when it grows.
stage() { echo "$1 (at $((SECONDS / 60)) min $((SECONDS % 60)) s)"; }

# skip WHAT WHY: a skip; in CI, one for a dependency setup installs fails the run instead.
skip() {
  if ((ci)) && [[ $2 =~ $setup_deps ]]; then
    fail "$1: skipped in CI, where tools/setup.sh installs what it needs ($2)"
  else
    skipped=$((skipped + 1))
    skips+=("$1: $2")
  fi
}

tools/setup.sh || { fail "tools/setup.sh"; summary; exit 1; }
jobs=$(nproc)

# The last line of a test's output in ctest's log of its last run: a skipped test's reason.
skip_reason() {
  awk -v name="$2" '
    /^[0-9]+\/[0-9]+ Test: / && substr($0, index($0, "Test: ") + 6) == name { want = 1; next }
    want && /^Output:/ { getline; grab = 1; next }
    grab && /^<end of output>/ { exit }
    grab && NF { last = $0 }
    END { print (last == "" ? "exit 77" : last) }
  ' "$1/Testing/Temporary/LastTest.log" 2>/dev/null
}

# Runs ctest in a build directory and adds its totals to ours: its skipped tests (exit 77) as
# skipped, with the reason each printed.
run_ctest() {
  local dir=$1; shift
  local log total fail name
  log=$(mktemp)
  ctest --test-dir "$dir" --output-on-failure "$@" 2>&1 | tee "$log"
  total=$(sed -n 's/.*tests failed out of \([0-9]*\).*/\1/p' "$log" | tail -1)
  fail=$(sed -n 's/.* \([0-9]*\) tests failed out of.*/\1/p' "$log" | tail -1)
  if [[ -z "$total" ]]; then
    fail "ctest in $dir: ran nothing"
    rm -f "$log"
    return
  fi
  local -a skipped_names failed_names
  mapfile -t skipped_names < <(sed -n 's/^[[:space:]]*[0-9]* - \(.*\) (Skipped)$/\1/p' "$log")
  mapfile -t failed_names < <(sed -n '/tests FAILED:/,$s/^[[:space:]]*[0-9]* - \(.*\) (.*)$/\1/p' "$log")
  passed=$((passed + total - fail - ${#skipped_names[@]}))
  for name in "${skipped_names[@]}"; do skip "$name ($dir)" "$(skip_reason "$dir" "$name")"; done
  # Counted one by one so the summary names them; ctest's own count is the floor.
  for name in "${failed_names[@]}"; do fail "$name ($dir)"; done
  if ((fail > ${#failed_names[@]})); then
    failed=$((failed + fail - ${#failed_names[@]}))
  fi
  rm -f "$log"
}

# Groups configure left out of a build (cmake/LeftOut.cmake), each a skip by name.
report_left_out() {
  local line
  [[ -f $1/left_out.txt ]] || return 0
  while IFS= read -r line; do
    [[ -n $line ]] && skip "${line%%: *} (left out of $1 at configure)" "${line#*: }"
  done <"$1/left_out.txt"
}

# Configures and builds quietly (only $targets when set); on failure shows the end of the log.
build() {
  local dir=$1; shift
  mkdir -p "$dir"
  local log="$dir/build.log"
  local target_args=()
  for t in ${targets:-}; do target_args+=(--target "$t"); done
  if cmake -S "$root" -B "$dir" -DPERFTRACKER_WERROR=ON "$@" >"$log" 2>&1 &&
     cmake --build "$dir" -j"$jobs" "${target_args[@]}" >>"$log" 2>&1; then
    return 0
  fi
  tail -n 40 "$log"
  return 1
}

# What `cmake --build` and `cmake --install` give a user: Release (GCC's -O3 warns where -O2
# does not), no test suite compiled, and an install that needs nothing more. The test suite is
# then built into the same directory: the installed targets' flags do not depend on
# BUILD_TESTING, so they are compiled once and tested as users build them.
stage "== installed targets in Release, as a user builds them"
prefix=$(mktemp -d)
if build build -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF &&
   cmake --install build --prefix "$prefix" >/dev/null &&
   [[ -x $prefix/bin/perftracker && -f $prefix/lib/libperftracker.so ]] &&
   ! grep -qE '^\.\.\. (unit_tests|analyzer_tests)$' <<<"$(cmake --build build --target help)"; then
  echo "ok: Release build and install, no test suite built"
  passed=$((passed + 1))
else
  fail "Release build and install of the installed targets"
fi
rm -rf "$prefix"

# The scenarios run one at a time: each is a multi-rank job whose verdict rests on timing, and
# two at once on a 2-core machine would be a different job. The rest share the cores (tests that
# must not are RUN_SERIAL).
stage "== the test suite (Release)"
if build build -DBUILD_TESTING=ON; then
  report_left_out build
  run_ctest build -j"$jobs" -LE '^scenario$'
  run_ctest build -j1 -L '^scenario$'
else
  fail "build of the test suite"
fi

# One clang build for both: the fuzz targets need clang's libFuzzer and its coverage
# instrumentation of the sanitized libraries they read with (cmake/Warnings.cmake), and the unit,
# analyzer and recorder tests run in the same ASan+UBSan build instead of compiling the analyzer
# once more. Each fuzz target runs its seeds and regressions, then 200,000 executions (the ring
# reader's 1,000,000 took 171 s, alone at the end of the stage); longer runs are deliberate ones
# (README, PERFTRACKER_FUZZ_RUNS).
stage "== unit, analyzer and recorder tests, and the fuzz targets (bounded runs), under ASan+UBSan"
if CC=clang CXX=clang++ build build-asan -DPERFTRACKER_FUZZ=ON -DPERFTRACKER_SIMGPU=OFF \
     -DPERFTRACKER_BENCHMARKS=OFF -DPERFTRACKER_SANITIZE=address,undefined -DBUILD_TESTING=ON \
     -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPERFTRACKER_FUZZ_RUNS=200000; then
  run_ctest build-asan -j"$jobs" -L 'unit|analyzer|recorder|fuzz'
else
  fail "sanitizer build"
fi

# Its unity batches are whole targets (cmake/Unity.cmake), so two files of one target that define
# the same name fail here whichever batches the other builds put them in: every unity target is
# built, unit_tests only for that (16 s; its tests ran under ASan above).
stage "== the recorder's and the analyzer's concurrent parts under TSan"
if targets="recorder_tests analyzer_tests unit_tests" build build-tsan -DPERFTRACKER_SANITIZE=thread \
     -DPERFTRACKER_SIMGPU=OFF -DPERFTRACKER_BENCHMARKS=OFF -DCMAKE_BUILD_TYPE=Debug \
     -DBUILD_TESTING=ON -DPERFTRACKER_UNITY_BATCH=0; then
  run_ctest build-tsan -j"$jobs" -L 'recorder|analyzer' -E html_browser
else
  fail "TSan build"
fi

# A stage script that counts its own checks: one "NAME: ok|FAIL ..." line per check, a skip as
# "NAME: skip WHAT (why)", and last "NAME: N passed, N failed, N skipped" (or "NAME: skipped
# (reason)" for the whole stage). A stage that dies before its summary line (install failed,
# script killed) has none, and that is a failure, not zero failures.
counted_stage() {
  local name=$1; shift
  local log rc summary whole line listed s_passed s_failed s_skipped
  log=$(mktemp)
  "$@" 2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
  summary=$(sed -n "s/^$name: \([0-9]*\) passed, \([0-9]*\) failed, \([0-9]*\) skipped$/\1 \2 \3/p" \
    "$log" | tail -1)
  whole=$(sed -n "s/^$name: skipped (\(.*\))$/\1/p" "$log" | tail -1)
  if [[ -n $summary ]]; then
    read -r s_passed s_failed s_skipped <<<"$summary"
    passed=$((passed + s_passed))
    failed=$((failed + s_failed))
    ((s_failed == 0)) || failures+=("$name: $s_failed checks (above)")
    while IFS= read -r line; do
      [[ -n $line ]] && skip "$name: ${line%% (*}" "$(sed 's/.* (\(.*\))$/\1/' <<<"$line")"
    done < <(sed -n "s/^$name: skip \(.*\)$/\1/p" "$log")
    if ((s_failed == 0 && rc != 0)); then fail "$name: exit $rc with no failed check"; fi
    # Reconcile the skip count the stage reported with the lines it gave reasons on.
    listed=$(grep -c "^$name: skip " "$log")
    ((s_skipped == listed)) || fail "$name: $s_skipped skipped but $listed reasons given"
  elif [[ -n $whole ]]; then
    skip "$name stage" "$whole"
  else
    fail "$name stage: ended (exit $rc) without its summary line"
  fi
  rm -f "$log"
}

# What users install, from the Release build above: each artifact into a clean place, the demo
# job and selftest run from the installed copy (tools/artifacts_test.sh).
stage "== artifacts: tarball, .deb and wheel, each installed and run"
artifacts_start=$SECONDS
counted_stage artifacts tools/artifacts_test.sh build
echo "artifacts stage: $((SECONDS - artifacts_start)) s"

# The installed files inside a Debian 11 root (glibc 2.31), debootstrapped and removed again:
# the loader there agrees with check_portability.py (tools/old_glibc_test.sh).
stage "== glibc 2.31: the installed library, CLI and run's load check in a Debian 11 root"
old_glibc_start=$SECONDS
counted_stage bullseye tools/old_glibc_test.sh build
echo "glibc 2.31 stage: $((SECONDS - old_glibc_start)) s"

stage "== aarch64 cross build under qemu-user"
aarch64_start=$SECONDS
counted_stage aarch64 tools/cross_aarch64.sh build-aarch64
echo "aarch64 stage: $((SECONDS - aarch64_start)) s"

stage "== format benchmark"
if [[ -x build/test/bench/format_bench ]]; then
  build/test/bench/format_bench --benchmark_min_time=0.2 2>&1 | grep -E '^BM_|^Run on|CPU'
fi

summary
[[ $failed -eq 0 ]]
