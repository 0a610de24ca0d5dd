#!/usr/bin/env bash
# ctest `out-of-tree-pass` (test/install/CMakeLists.txt): the installed package,
# used the way a user outside this tree uses it.
#   1. `cmake --install <build> --prefix <work>/prefix` (the build must be current:
#      ctest runs after the build);
#   2. the package is complete: config, targets, version file, headers (generated
#      ones included), tools;
#   3. examples/out-of-tree-pass configures against the prefix alone
#      (-DShardc_DIR=<prefix>/lib/cmake/shardc) and builds its pass plugin, which
#      defines no shardc symbol (it takes them from shardc-opt);
#   4. the installed shardc-opt loads the plugin: the example's lit test
#      (`check-example`: IR, remarks, error) and the command line of the README,
#      FileChecked;
#   5. a standalone tool (test/install/link-check) links shardc::ShardcPasses
#      from the prefix, runs, and its output is checked.
# <work> is kept on failure (logs: <work>/*.log) and removed on success.
#
# usage: out_of_tree.sh <build dir> <source dir> <work dir> <c++ compiler> <cmake generator>
#                       <make program> <llvm tools dir>   (the build tree's own: Ninja here)
set -euo pipefail

build=$1 src=$2 work=$3 cxx=$4 generator=$5 make_program=$6 llvm_tools=$7
prefix="$work/prefix"
example_src="$src/examples/out-of-tree-pass"
filecheck="$llvm_tools/FileCheck"
rm -rf "$work"
mkdir -p "$work"

step() { echo "== $*"; }
# Runs a command with its output in <work>/<name>.log, shown if it fails.
logged() {
  local name=$1
  shift
  if ! "$@" >"$work/$name.log" 2>&1; then
    cat "$work/$name.log"
    echo "FAILED ($name): $*"
    exit 1
  fi
}
fail() {
  echo "FAILED: $*"
  exit 1
}

step "1. cmake --install $build --prefix $prefix"
logged install cmake --install "$build" --prefix "$prefix"

step "2. the package's files"
for f in lib/cmake/shardc/ShardcConfig.cmake lib/cmake/shardc/ShardcConfigVersion.cmake \
         lib/cmake/shardc/ShardcTargets.cmake bin/shardc-opt bin/shardc \
         lib/libShardcXf.a lib/libShardcCost.a lib/libShardcPasses.a \
         include/dialects/xf/XfOps.h include/dialects/xf/XfOps.h.inc include/dialects/xf/XfOps.td \
         include/dialects/xf/XfInterfaces.h.inc include/dialects/xf/ShardingRule.h \
         include/passes/Passes.h include/passes/Passes.h.inc include/passes/Debug.h \
         include/compiler/sharding/Sharding.h share/shardc/hardware/cpu-mpi.json; do
  [[ -e "$prefix/$f" ]] || fail "not installed: $f"
done
grep -q 'add_library(shardc::ShardcXf STATIC IMPORTED)' "$prefix/lib/cmake/shardc/ShardcTargets.cmake" ||
  fail "ShardcTargets.cmake does not define shardc::ShardcXf"
# Nothing installed points back into the source or build tree.
if grep -rl -e "$src/" -e "$build/" "$prefix/lib/cmake/shardc"; then
  fail "the installed CMake files name the source or build tree"
fi

cmake_args=(-G "$generator" -DCMAKE_MAKE_PROGRAM="$make_program" -DCMAKE_CXX_COMPILER="$cxx"
            -DCMAKE_BUILD_TYPE=Release -DShardc_DIR="$prefix/lib/cmake/shardc")

step "3. examples/out-of-tree-pass against the prefix"
logged example-configure cmake -S "$example_src" -B "$work/example" "${cmake_args[@]}"
logged example-build cmake --build "$work/example" -j 2
plugin="$work/example/ExampleSplitFactor.so"
[[ -f "$plugin" ]] || fail "no plugin at $plugin"
# The plugin defines no shardc code or data of its own (one copy: shardc-opt's).
if nm -DC --defined-only "$plugin" | grep -E ' [TDBR] ' | grep 'shardc::'; then
  fail "the plugin defines shardc symbols: it links a second copy of a shardc library"
fi

step "4. the installed shardc-opt with the plugin"
logged example-check cmake --build "$work/example" --target check-example
# The README's command line.
"$prefix/bin/shardc-opt" --load-pass-plugin="$plugin" \
  --pass-pipeline='builtin.module(example-split-factor{axis=dp})' \
  "$example_src/test/split-factor.mlir" 2>"$work/readme.stderr" |
  "$filecheck" "$example_src/test/split-factor.mlir" ||
  fail "the README's command line (stderr: $work/readme.stderr)"
"$filecheck" --input-file="$work/readme.stderr" --check-prefix=REMARK \
  "$example_src/test/split-factor.mlir" || fail "the remarks of the README's command line"
# The plugin's passes are listed by --help once loaded.
"$prefix/bin/shardc-opt" --load-pass-plugin="$plugin" --help >"$work/help.txt"
grep -q -- '--example-split-factor' "$work/help.txt" ||
  fail "shardc-opt --help does not list the plugin's pass"

step "5. a standalone tool linking shardc::ShardcPasses from the prefix"
logged link-configure cmake -S "$src/test/install/link-check" -B "$work/link-check" "${cmake_args[@]}"
logged link-build cmake --build "$work/link-check" -j 2
"$work/link-check/link-check" >"$work/link-check.out" || fail "link-check exited with $?"
cat >"$work/link-check.checks" <<'EOF'
CHECK: xf.matmul: 4 factors
CHECK: xf.cross_entropy:
CHECK: func.func @loss
CHECK-NEXT: xf.linear_cross_entropy
CHECK-NOT: xf.matmul
EOF
"$filecheck" --input-file="$work/link-check.out" "$work/link-check.checks" ||
  fail "the output of link-check ($work/link-check.out)"

rm -rf "$work"
echo "out-of-tree: ok"
