#!/usr/bin/env bash
# Installs the Debian packages perftracker builds and tests with. Idempotent, and quick when
# everything is already there (one dpkg query, no apt-get).
set -euo pipefail

packages=(
  cmake make g++ pkg-config binutils
  clang libclang-rt-14-dev                       # libFuzzer and sanitizer runtimes
  libflatbuffers-dev flatbuffers-compiler libzstd-dev libxxhash-dev
  catch2 libbenchmark-dev nlohmann-json3-dev libcli11-dev  # CLI11: the analyzer's options
  python3-dev python3-torch                      # the real PyTorch (CPU, gloo) for integration tests
  chromium                                       # the HTML report's browser test (headless)
  python3-venv debootstrap                       # the wheel installed into a venv; a Debian 11 root
)

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$p")
done

if ((${#missing[@]} == 0)); then
  exit 0
fi

sudo=""
if [[ $(id -u) -ne 0 ]]; then sudo=sudo; fi
echo "setup: installing ${missing[*]}" >&2
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
