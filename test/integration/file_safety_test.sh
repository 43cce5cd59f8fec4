#!/usr/bin/env bash
# Where a rank's files go and what is refused (README "Files and safety"): a per-user default
# directory with private modes; a directory another user owns or can write, a symbolic link
# someone else planted (for the ring file or a directory), each costs one warning, no
# recording and leaves the target untouched; a live rank's file is never set aside by another
# process claiming the same rank, while a dead one's is kept as rank-N.prev.ptr.
source "$(dirname "$0")/lib.sh"
lib=$1
part=${2:-user}  # user: every case but the foreign-owner ones; root: those
host=$(hostname)
chmod 0755 "$scratch"

# Runs COMMAND as rank 0 of job "j" (not as anyone's helper); stderr in $scratch/err.
rank() {
  env -u PERFTRACKER_RANK_PID RANK=0 WORLD_SIZE=1 PERFTRACKER_JOB_ID=j LD_PRELOAD="$lib" \
    "$@" 2>"$scratch/err"
}
warnings() { grep -c '^perftracker:' "$scratch/err" || true; }
mode() { stat -c %a "$1"; }
expect_refused() {  # WHAT: one warning, naming why; the job's exit code is its own
  expect_eq "$(warnings)" 1 "$1: warning lines"
  expect_eq "$(wc -l <"$scratch/err")" 1 "$1: stderr lines"
  echo "refused ($1): $(cat "$scratch/err")"
}

# The foreign-owner cases (a second ctest test, file_safety_root_test) chown to another user:
# without root they cannot run, and say so with ctest's skip code rather than passing.
if [[ $part == root ]]; then
  if [[ $(id -u) -ne 0 ]]; then
    echo "file_safety_test: skipped: the foreign-owner cases need root (chown to another user)"
    exit 77
  fi
  other=65534
  # A directory on the path pre-created by another user: refused, nothing written in it.
  mkdir -p "$scratch/foreign/j"
  chown "$other" "$scratch/foreign/j"
  PERFTRACKER_DIR="$scratch/foreign" rank /bin/true
  expect_refused "foreign-owned directory"
  expect_eq "$(find "$scratch/foreign/j" -mindepth 1 | wc -l)" 0 "files under the foreign directory"
  # A directory link planted by another user: refused, its target untouched.
  mkdir -p "$scratch/theirs" "$scratch/plant2"
  ln -s "$scratch/theirs" "$scratch/plant2/j"
  chown -h "$other" "$scratch/plant2/j"
  PERFTRACKER_DIR="$scratch/plant2" rank /bin/true
  expect_refused "foreign symlinked directory"
  expect_eq "$(find "$scratch/theirs" -mindepth 1 | wc -l)" 0 "files under the link's target"
  echo "file_safety_test (foreign-owner cases): ok"
  exit 0
fi

# The default root: ${TMPDIR:-/tmp}/perftracker-$UID, directories 0750, files 0640.
mkdir -m 0755 "$scratch/tmp"
TMPDIR="$scratch/tmp" rank /bin/true
root="$scratch/tmp/perftracker-$(id -u)"
[[ -f "$root/j/$host/rank-0.ptr" ]] || fail "no ring file under the default root: $(cat "$scratch/err")"
expect_eq "$(warnings)" 0 "default root: warnings"
expect_eq "$(mode "$root") $(mode "$root/j") $(mode "$root/j/$host")" "750 750 750" "directory modes"
expect_eq "$(mode "$root/j/$host/rank-0.ptr")" 640 "ring file mode"
# A stricter umask wins.
mkdir -m 0755 "$scratch/tmp2"
(umask 077 && TMPDIR="$scratch/tmp2" rank /bin/true)
root2="$scratch/tmp2/perftracker-$(id -u)"
expect_eq "$(mode "$root2/j/$host") $(mode "$root2/j/$host/rank-0.ptr")" "700 600" "umask 077 modes"

# A world-writable directory without the sticky bit on the path: refused; with it (as /tmp): fine.
mkdir -m 0777 "$scratch/open"
chmod 0777 "$scratch/open"
PERFTRACKER_DIR="$scratch/open/pt" rank /bin/true
expect_refused "world-writable parent"
[[ ! -e "$scratch/open/pt" ]] || fail "wrote under a world-writable directory"
chmod 1777 "$scratch/open"
PERFTRACKER_DIR="$scratch/open/pt" rank /bin/true
[[ -f "$scratch/open/pt/j/$host/rank-0.ptr" ]] || fail "sticky world-writable parent refused"

# A symbolic link planted where the ring file goes: refused, its target untouched.
mkdir -p "$scratch/planted/j/$host"
echo precious >"$scratch/victim"
ln -s "$scratch/victim" "$scratch/planted/j/$host/rank-0.ptr"
PERFTRACKER_DIR="$scratch/planted" rank /bin/true
expect_refused "symlinked ring file"
expect_eq "$(cat "$scratch/victim")" precious "the link's target"
[[ -L "$scratch/planted/j/$host/rank-0.ptr" ]] || fail "the planted link was moved"

# Our own symbolic link on the path is followed (a scratch directory linked elsewhere).
mkdir "$scratch/real"
ln -s "$scratch/real" "$scratch/linked"
PERFTRACKER_DIR="$scratch/linked" rank /bin/true
[[ -f "$scratch/real/j/$host/rank-0.ptr" ]] || fail "our own link was not followed: $(cat "$scratch/err")"


# A process that looks like a rank (RANK set) and starts a child with other rank variables, as a
# launcher does, starts a rank, not a helper; a child with the same ones is a helper.
PERFTRACKER_DIR="$scratch/launch" rank /bin/sh -c 'RANK=1 /bin/true; /bin/true; exit 0'
expect_eq "$(cd "$scratch/launch/j/$host" && ls | tr '\n' ' ')" "rank-0.ptr rank-1.ptr " \
  "files after a launcher-like rank (the helper /bin/true leaves none)"
expect_eq "$(warnings)" 0 "launcher-like rank: warnings"

# A live rank's file is never set aside: a second process claiming rank 0 (our marker scrubbed
# from its environment) records as its helper; once the rank is gone, a new one is a restart.
live="$scratch/live"
PERFTRACKER_DIR="$live" env -u PERFTRACKER_RANK_PID RANK=0 PERFTRACKER_JOB_ID=j \
  LD_PRELOAD="$lib" sleep 3 &
sleeper=$!
for _ in $(seq 100); do [[ -f "$live/j/$host/rank-0.ptr" ]] && break; sleep 0.05; done
inode=$(stat -c %i "$live/j/$host/rank-0.ptr")
PERFTRACKER_DIR="$live" rank /bin/true
expect_eq "$(warnings)" 1 "second claimant: warnings"
grep -q "recording this process as its helper" "$scratch/err" || fail "not a helper: $(cat "$scratch/err")"
expect_eq "$(stat -c %i "$live/j/$host/rank-0.ptr")" "$inode" "the live rank's file"
[[ ! -e "$live/j/$host/rank-0.prev.ptr" ]] || fail "the live rank's file was set aside"
wait "$sleeper"
PERFTRACKER_DIR="$live" rank /bin/true
expect_eq "$(stat -c %i "$live/j/$host/rank-0.prev.ptr")" "$inode" "the dead rank's file, kept"
echo "file_safety_test: ok"
