#!/usr/bin/env bash
# The three things users install, from one build: a tarball (bin/, lib/, share/doc/perftracker),
# a .deb (/usr/bin/perftracker, /usr/lib/libperftracker.so) and a wheel
# (perftracker-V-py3-none-manylinux_2_28_ARCH.whl: `pip install` puts `perftracker` on PATH, the
# library inside the package). The version is project(VERSION) in CMakeLists.txt; a build that
# fails tools/check_portability.py (glibc >= 2.28, nothing else) is not packaged.
#
#   tools/package.sh [BUILD_DIR] [OUT_DIR]     (default build-package, dist)
# BUILD_DIR is configured in Release when it is not a build yet; an existing one (the test
# command's) is reused and only the installed targets are built. Prints each artifact and its size.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
build=$(realpath -m "${1:-build-package}")
out=$(realpath -m "${2:-dist}")

die() { echo "package: $*" >&2; exit 1; }
if [[ ! -f $build/CMakeCache.txt ]]; then
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF >/dev/null ||
    die "configure failed"
fi
version=$(sed -n 's/^CMAKE_PROJECT_VERSION:STATIC=//p' "$build/CMakeCache.txt")
[[ -n $version ]] || die "$build/CMakeCache.txt has no CMAKE_PROJECT_VERSION"
targets=(perftracker perftracker_bin perftracker-gen)
listed=$(cmake --build "$build" --target help)  # (grep -q on a pipe fails it under pipefail)
grep -q '^\.\.\. perftracker_selftest_workload$' <<<"$listed" && targets+=(perftracker_selftest_workload)
cmake --build "$build" -j"$(nproc)" "${targets[@]/#/--target=}" >/dev/null || die "build failed"

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
prefix=$stage/perftracker-$version
# Stripped: symbol tables are a third of the files, and the hooks' names stay in .dynsym.
cmake --install "$build" --prefix "$prefix" --strip >/dev/null || die "install failed"
python3 tools/check_portability.py "$prefix" >"$stage/portability.txt" ||
  { cat "$stage/portability.txt"; die "not packaged: the build needs more than glibc 2.28"; }
case $(python3 -c 'import sys; sys.path.insert(0, "packaging/python")
import perftracker_build as b; print(b.elf_arch(sys.argv[1]))' "$prefix/lib/libperftracker.so") in
  x86_64) arch=x86_64 deb_arch=amd64 ;;
  aarch64) arch=aarch64 deb_arch=arm64 ;;
  *) die "unknown architecture" ;;
esac
mkdir -p "$out"

tarball=$out/perftracker-$version-linux-$arch.tar.gz
tar -C "$stage" --owner=0 --group=0 -czf "$tarball" "perftracker-$version"

deb_root=$stage/deb
mkdir -p "$deb_root/DEBIAN" "$deb_root/usr"
cp -a "$prefix/." "$deb_root/usr/"
cat >"$deb_root/DEBIAN/control" <<EOF
Package: perftracker
Version: $version
Architecture: $deb_arch
Maintainer: perftracker developers <perftracker@localhost>
Depends: libc6 (>= 2.28)
Section: devel
Priority: optional
Installed-Size: $(du -sk "$deb_root/usr" | cut -f1)
Description: find why a distributed PyTorch training job is slow
 libperftracker.so, set in LD_PRELOAD (or through perftracker run), summarizes every
 rank's functions into a ring file; perftracker analyze names the ranks and functions
 that deviate from their peers.
EOF
deb=$out/perftracker_${version}_$deb_arch.deb
dpkg-deb --root-owner-group -Zxz --build "$deb_root" "$deb" >/dev/null || die "dpkg-deb failed"

wheel=$out/$(python3 packaging/python/perftracker_build.py wheel "$prefix" "$out") ||
  die "wheel failed"

for f in "$tarball" "$deb" "$wheel"; do
  echo "package: $f ($(du -k "$f" | cut -f1) KiB)"
done
