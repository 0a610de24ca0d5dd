#!/usr/bin/env bash
# Sets up, builds and runs the whole test suite (ctest: gtest units, lit +
# FileCheck suites, the PyTorch reference tests).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${BUILD_DIR:-$root/build}"
"$root/scripts/setup.sh"
ctest --test-dir "$build" --output-on-failure -j"$(nproc)" "$@"
