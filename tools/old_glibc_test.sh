#!/usr/bin/env bash
# The test command's old-glibc stage: what `cmake --install BUILD_DIR` gives, run inside a Debian
# 11 root (glibc 2.31, Python 3.9; debootstrapped from the configured Debian mirror, minbase, and
# removed after: nothing is cached). The static check (tools/check_portability.py) says the
# binaries need glibc <= 2.28; this proves the loader agrees:
# - libperftracker.so preloaded into bullseye's python3 records every call of a Python function;
# - `perftracker run`, `analyze` and `perftracker-gen` work there;
# - `perftracker run` refuses a library built for a newer glibc (as ours was before issue 45):
#   exit 2 with the loader's reason, and the command never starts.
#
#   tools/old_glibc_test.sh BUILD_DIR      (as root: debootstrap, chroot, mount)
# Ends with "bullseye: N passed, N failed, N skipped", or "bullseye: skipped (reason)" where
# the root cannot be made (not root, no debootstrap, the mirror unreachable).
set -uo pipefail
cd "$(dirname "$0")/.."
build=$(realpath "${1:?usage: old_glibc_test.sh BUILD_DIR}")
skip() { echo "bullseye: skipped ($*)"; exit 0; }
[[ $(id -u) -eq 0 ]] || skip "needs root for debootstrap and chroot"
command -v debootstrap >/dev/null || skip "no debootstrap (tools/setup.sh installs it)"
mirror=$(sed -n 's/^URIs: *\(http[^ ]*\/debian\)\/*$/\1/p' /etc/apt/sources.list.d/debian.sources \
  2>/dev/null | head -1)
mirror=${mirror:-http://deb.debian.org/debian}

root=$(mktemp -d /tmp/perftracker-bullseye.XXXXXX)
cleanup() {
  mountpoint -q "$root/proc" && umount "$root/proc"
  rm -rf --one-file-system "$root"
}
trap cleanup EXIT
start=$SECONDS
if ! debootstrap --variant=minbase --include=python3-minimal bullseye "$root" "$mirror" \
     >"$root.log" 2>&1; then
  reason=$(grep -m1 '^E:' "$root.log")
  rm -f "$root.log"
  skip "cannot debootstrap bullseye from $mirror: ${reason:-see debootstrap}"
fi
rm -f "$root.log"
echo "bullseye: root made in $((SECONDS - start)) s ($(chroot "$root" ldd --version | head -1))"
mount -t proc proc "$root/proc" || skip "cannot mount /proc in the root"
cmake --install "$build" --prefix "$root/opt/perftracker" --strip >/dev/null ||
  { echo "bullseye: FAIL install"; echo "bullseye: 0 passed, 1 failed, 0 skipped"; exit 1; }

passed=0 failed=0
check() {  # check NAME COMMAND...
  local out
  if out=$("${@:2}" 2>&1); then
    echo "bullseye: ok   $1"
    passed=$((passed + 1))
  else
    echo "bullseye: FAIL $1"
    echo "$out" | tail -n 20 | sed 's/^/    /'
    failed=$((failed + 1))
  fi
}
in_root() { chroot "$root" /usr/bin/env -i PATH=/usr/bin:/bin HOME=/root "$@"; }
cat >"$root/opt/job.py" <<'EOF'
def step(x):
    return x * 2 + 1
def work(n):
    s = 0
    for i in range(n):
        s += step(i)
    return s
for _ in range(50):
    work(20000)
EOF

# 50 x 20,000 calls of step, each one counted (detailed mode: no call folds into its caller).
records() {
  in_root RANK=0 WORLD_SIZE=1 PERFTRACKER_DIR=/out PERFTRACKER_JOB_ID=old PERFTRACKER_MODE=detailed \
    LD_PRELOAD=/opt/perftracker/lib/libperftracker.so python3 /opt/job.py || return 1
  "$build/analyzer/perftracker" dump "$root"/out/old/*/rank-0.ptr | python3 -c '
import json, sys
got = {}
for line in sys.stdin:
    r = json.loads(line)
    if r["type"] == "window":
        for f in r["functions"]:
            name = f["name"].rsplit(":", 1)[-1]
            got[name] = got.get(name, 0) + f["count"]
if got.get("step") != 1000000 or got.get("work") != 50:
    sys.exit("recorded step %s, work %s: want 1000000 and 50" % (got.get("step"), got.get("work")))'
}
check "the library records every Python call in python3.9 on glibc 2.31" records

run_and_analyze() {
  local err
  err=$(in_root /opt/perftracker/bin/perftracker run --dir /out-run -- python3 /opt/job.py 2>&1) ||
    { echo "$err"; return 1; }
  grep -q "1 rank file in /out-run/" <<<"$err" || { echo "$err"; return 1; }
  in_root /opt/perftracker/bin/perftracker-gen --dir /gen --ranks 4 --windows 4 >/dev/null &&
    in_root /opt/perftracker/bin/perftracker analyze /gen | grep -q "4/4 ranks"
}
check "perftracker run, analyze and perftracker-gen on glibc 2.31" run_and_analyze

# A library that needs glibc 2.36 (arc4random), as ours did: the loader there refuses it.
refused() {
  local rc=0 err
  printf '#include <stdlib.h>\nunsigned planted(void) { return arc4random(); }\n' |
    cc -x c - -shared -fPIC -o "$root/opt/libnew.so" || return 1
  err=$(in_root PERFTRACKER_LIBRARY=/opt/libnew.so /opt/perftracker/bin/perftracker run -- \
        touch /started 2>&1) || rc=$?
  echo "$err"
  ((rc == 2)) && [[ ! -e $root/started ]] &&
    grep -q "refuses /opt/libnew.so (.*version \`GLIBC_2.36' not found" <<<"$err"
}
check "perftracker run refuses a library built for glibc 2.36: exit 2, the loader's reason" refused

echo "bullseye: stage took $((SECONDS - start)) s"
echo "bullseye: $passed passed, $failed failed, 0 skipped"
((failed == 0))
