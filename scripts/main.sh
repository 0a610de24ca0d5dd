#!/usr/bin/env bash
# The main job as it stands: set up and build, generate GPT-2 124M, verify it
# with shardc-opt, tokenize a real text corpus (Debian's fortunes) with GPT-2's
# BPE, and evaluate the model's loss on one 4x1024-token batch with the
# reference executor on the CPU.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${BUILD_DIR:-$root/build}"
"$root/scripts/setup.sh"

shardc="$build/tools/shardc/shardc"
out="$root/data"
mkdir -p "$out"

echo "== shardc gen --preset gpt2-124m"
"$shardc" gen --preset gpt2-124m --summary -o "$out/gpt2-124m.mlir"
echo "== shardc-opt (parse + verify)"
"$build/tools/shardc-opt/shardc-opt" "$out/gpt2-124m.mlir" -o /dev/null && echo "verified"
echo "== shardc tokenize (Debian fortunes corpus)"
find /usr/share/games/fortunes -maxdepth 1 -type f ! -name '*.*' | sort |
  xargs "$shardc" tokenize -o "$out/fortunes.bin"
echo "== shardc run (reference executor, CPU, seed 1234)"
/usr/bin/time -f "wall time %e s, peak RSS %M KiB" \
  "$shardc" run "$out/gpt2-124m.mlir" --data "$out/fortunes.bin" --seed 1234
