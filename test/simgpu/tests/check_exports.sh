#!/bin/sh
# Every symbol a stand-in exports must exist, with the same version node, in the real library:
# the stand-ins add nothing a real GPU node would not have.
#   check_exports.sh SIMGPU_LIB_DIR REAL_LIB_DIR
set -eu
ours=$1
real=$2
status=0
symbols() {  # "name@version" per defined dynamic symbol
  objdump -T "$1" | awk '$2 ~ /g|w/ && $0 !~ /\*UND\*/ && NF >= 7 { print $NF "@" $(NF-1) }' |
    grep -v '^lib.*@lib' | sort -u
}
for lib in libcudart.so.13 libnccl.so.2 libcupti.so.13 libcuda.so.1 libcublas.so.13 libcublasLt.so.13; do
  if [ ! -e "$real/$lib" ]; then
    echo "skip $lib: no real library in $real"
    continue
  fi
  symbols "$ours/$lib" > /tmp/simgpu-ours.$$
  symbols "$real/$lib" > /tmp/simgpu-real.$$
  extra=$(comm -23 /tmp/simgpu-ours.$$ /tmp/simgpu-real.$$)
  count=$(wc -l < /tmp/simgpu-ours.$$)
  if [ -n "$extra" ]; then
    echo "FAIL $lib exports symbols the real library lacks:"
    echo "$extra"
    status=1
  else
    echo "ok $lib: $count symbols, all present in the real library"
  fi
  [ "$(readelf -d "$ours/$lib" | sed -n 's/.*SONAME.*\[\(.*\)\]/\1/p')" = "$lib" ] ||
    { echo "FAIL $lib: wrong SONAME"; status=1; }
done
# No real libnvidia-ml.so.1 ships with the toolkit: check its shape instead. The driver's exports
# its nvml* API unversioned (no version node), like libcuda.so.1.
nvml="$ours/libnvidia-ml.so.1"
if [ -e "$nvml" ]; then
  odd=$(symbols "$nvml" | grep -v '^nvml[A-Za-z0-9_]*@Base$' || true)
  if [ -n "$odd" ]; then
    echo "FAIL libnvidia-ml.so.1 exports versioned or non-NVML symbols:"
    echo "$odd"
    status=1
  else
    echo "ok libnvidia-ml.so.1: $(symbols "$nvml" | wc -l) unversioned nvml* symbols"
  fi
  [ "$(readelf -d "$nvml" | sed -n 's/.*SONAME.*\[\(.*\)\]/\1/p')" = "libnvidia-ml.so.1" ] ||
    { echo "FAIL libnvidia-ml.so.1: wrong SONAME"; status=1; }
fi
rm -f /tmp/simgpu-ours.$$ /tmp/simgpu-real.$$
exit $status
