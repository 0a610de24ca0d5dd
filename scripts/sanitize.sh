#!/usr/bin/env bash
# Builds the whole project with AddressSanitizer + UndefinedBehaviorSanitizer
# (no CUDA) into build-asan/ and runs the test suite there. Any report fails
# the test that triggered it (-fno-sanitize-recover, halt_on_error).
# Takes ~1 h on 2 cores: run it by hand before a release, not in CI.
#
# Usage: scripts/sanitize.sh [ctest args...]   (BUILD_DIR=... to build elsewhere)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${BUILD_DIR:-$root/build-asan}"
"$root/scripts/setup.sh" >/dev/null   # packages and the vocabulary; builds build/ too
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DSHARDC_ENABLE_CUDA=OFF -DSHARDC_SANITIZE=address,undefined \
  -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit >/dev/null
ninja -C "$build" -j"$(nproc)"
# MLIR's and LLVM's singletons live until exit: leaks are not findings here.
# allow_user_poisoning=0: our code inlines LLVM's BumpPtrAllocator from the headers with ASan
# annotations while Debian's libMLIR (not instrumented) allocates from the same slabs
# without them, so manual poisoning would report false use-after-poison in MLIR itself.
export ASAN_OPTIONS="detect_leaks=0:halt_on_error=1:abort_on_error=1:detect_stack_use_after_return=1:allow_user_poisoning=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
ctest --test-dir "$build" --output-on-failure -j"$(nproc)" "$@"
