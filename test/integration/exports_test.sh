#!/usr/bin/env bash
# libperftracker.so exports exactly the symbols its version script lists: nothing by accident.
# The CUDA runtime and cuBLAS hooks exist once per CUDA major's version node besides their
# default, and dlopen/dlsym/_exit carry glibc's versions (preload/exports.map.in).
source "$(dirname "$0")/lib.sh"
lib=$1 map=$2
# Version-node markers (type A) are not symbols of ours.
nm -D --defined-only "$lib" | awk '$2 != "A" {print $3}' | grep -v '^$' | sort -u >"$scratch/versioned"
sed 's/@.*//' "$scratch/versioned" | sort -u >"$scratch/exported"
sed -n '/global:/,/local:/p' "$map" | grep -Eo '^[[:space:]]*[A-Za-z_][A-Za-z0-9_]*;' |
  tr -d ' ;\t' | (cat; echo dlopen; echo dlsym; echo _exit) | sort -u >"$scratch/listed"
diff -u "$scratch/listed" "$scratch/exported" || fail "exports differ from $map"
for name in $(grep -E '^(cuda|cublas)' "$scratch/listed"); do
  case $name in
    cublasLt*) family=libcublasLt.so ;;
    cublas*) family=libcublas.so ;;
    *) family=libcudart.so ;;
  esac
  [[ $family == libcudart.so ]] && v11=11.0 || v11=11
  for node in "@@PERFTRACKER_1" "@$family.$v11" "@$family.12" "@$family.13"; do
    grep -qxF "$name$node" "$scratch/versioned" || fail "$name$node is not exported"
  done
done
for name in dlopen dlsym; do
  grep -qxF "$name@@GLIBC_2.34" "$scratch/versioned" || fail "$name@@GLIBC_2.34 is not exported"
  [[ $(grep -c "^$name@GLIBC_2" "$scratch/versioned") == 1 ]] ||
    fail "$name lacks its base glibc version"
done
grep -qE '^_exit@@GLIBC_2\.(2\.5|17)$' "$scratch/versioned" ||
  fail "_exit lacks glibc's base version"
# No libstdc++ of ours meets the host's: it is linked statically.
readelf -d "$lib" >"$scratch/dynamic"
if grep -q 'NEEDED.*libstdc++' "$scratch/dynamic"; then fail "libstdc++ is linked dynamically"; fi
echo "exports_test: ok ($(wc -l <"$scratch/exported") symbols, $(wc -l <"$scratch/versioned") with versions)"
