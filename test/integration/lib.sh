# Shared by the integration scripts: a scratch directory and assertions that say what broke.
set -euo pipefail
scratch=$(mktemp -d /tmp/perftracker-it.XXXXXX)
trap 'rm -rf "$scratch"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
expect_eq() { [[ "$1" == "$2" ]] || fail "$3: expected '$2', got '$1'"; }
