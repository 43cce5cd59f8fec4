#!/usr/bin/env bash
# libperftracker.so exports exactly the symbols its version script lists: nothing by accident.
source "$(dirname "$0")/lib.sh"
lib=$1 map=$2
nm -D --defined-only "$lib" | awk '{print $3}' | sed 's/@.*//' | grep -v '^$' | sort -u >"$scratch/exported"
sed -n '/global:/,/local:/p' "$map" | grep -Eo '^[[:space:]]*[A-Za-z_][A-Za-z0-9_]*;' |
  tr -d ' ;\t' | sort -u >"$scratch/listed"
diff -u "$scratch/listed" "$scratch/exported" || fail "exports differ from $map"
# No libstdc++ of ours meets the host's: it is linked statically.
if ldd "$lib" | grep -q 'libstdc++'; then fail "libstdc++ is linked dynamically"; fi
echo "exports_test: ok ($(wc -l <"$scratch/exported") symbols)"
