#!/usr/bin/env bash
# Compiles the GPT-2 training steps that bench/gpu_step.sh runs on the GPU machine
# (which has no MLIR): one single-rank bf16 step binary per model, T=1024.
#
#   bench/build_gpu_steps.sh [-o OUTDIR] [--configs "124m:64 1.5b:8"] [--precision bf16]
#       [--build DIR] [--no-bundle] [-- extra `shardc compile` flags]
#
# Per config MODEL:B (MODEL one of tiny 124m 355m 774m 1.5b):
#   shardc gen --preset gpt2-MODEL --batch B -o OUTDIR/gpt2-MODEL-bB.mlir   (T = 1024)
#   shardc compile ... --precision bf16 --fuse-linear-ce --emit-object OUTDIR/step_MODEL_bB.o -o OUTDIR/step_MODEL_bB
#   OUTDIR/step_MODEL_bB --describe > OUTDIR/step_MODEL_bB.describe.txt
# and one line of OUTDIR/steps.tsv: name, model (torch_gpt2.py's name), B, T,
# precision, parameters (padded vocabulary, as `gen --summary` counts them), FLOPs per
# token (6N + 6LhT), planned memory per rank (MiB), compile s, link s, whether the
# binary has `--device` (the CUDA backend) and which CUDA libraries it links.
# Also OUTDIR/tokens.bin (the fortunes corpus tokenized, when /usr/share/games/fortunes
# exists) and OUTDIR/runtime-libs.tar.xz: every shared library the binaries load
# except glibc/libstdc++/libgcc and CUDA's, plus Open MPI's components and help files
# (relocated with OPAL_PREFIX), for a GPU machine without Open MPI / OpenBLAS.
#
# Batch sizes (defaults): the step's planned memory (arenas: fp32 parameters,
# gradients, Adam moments, and every activation the backward reads -- no
# recomputation, logits materialized in fp32) grows linearly in B:
#   124M: 2135 + 822*B MiB  -> B=64: 54,744 MiB (53.5 GiB)
#   1.5B: 26735 + 3874*B MiB -> B=8: 57,729 MiB (56.4 GiB); B=12: 71.5 GiB; B=16: 86.6 GiB
# on an 80 GB H100 (79.6 GiB visible), leaving room for the CUDA context, cuBLASLt
# workspaces and NCCL, and for torch (whose activations differ) at the same batch.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${TMPDIR:-/tmp}/shardc-gpu-steps"
configs="124m:64 1.5b:8"
precision=bf16
build="$root/build"
bundle=1
extra=()
while [[ $# -gt 0 ]]; do
  case $1 in
    -o) out=$2; shift ;;
    --configs) configs=$2; shift ;;
    --precision) precision=$2; shift ;;
    --build) build=$2; shift ;;
    --no-bundle) bundle=0 ;;
    --) shift; extra=("$@"); break ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "build_gpu_steps.sh: unknown option '$1'" >&2; exit 2 ;;
  esac
  shift
done
shardc="$build/tools/shardc/shardc"
[[ -x $shardc ]] || { echo "error: $shardc not built" >&2; exit 2; }
mkdir -p "$out"
out=$(cd "$out" && pwd)
tsv=$out/steps.tsv
printf 'name\tmodel\tbatch\tseq\tprecision\tparams\tflops_per_token\tplanned_mib\tcompile_s\tlink_s\tdevice_flag\tcuda_libs\n' >"$tsv"

torch_name() { case $1 in tiny) echo tiny ;; 124m) echo 124M ;; 355m) echo 355M ;;
  774m) echo 774M ;; 1.5b) echo 1.5B ;; *) return 1 ;; esac; }

bins=()
for c in $configs; do
  m=${c%%:*} B=${c#*:}
  tm=$(torch_name "$m") || { echo "error: unknown model '$m' in '$c'" >&2; exit 2; }
  name="step_${m//./p}_b$B"
  model="$out/gpt2-$m-b$B.mlir"
  t0=$(date +%s.%N)
  "$shardc" gen --preset "gpt2-$m" --batch "$B" -o "$model"
  summary=$("$shardc" gen --preset "gpt2-$m" --batch "$B" --summary)
  params=$(awk '/^parameters .*padded/ {print $2; exit}' <<<"$summary")
  T=$(sed -n 's/^shape .* T=\([0-9]*\) .*/\1/p' <<<"$summary")
  L=$(sed -n 's/^shape *L=\([0-9]*\) .*/\1/p' <<<"$summary")
  H=$(sed -n 's/^shape .* h=\([0-9]*\) .*/\1/p' <<<"$summary")
  # 6N + 6LhT, exactly (`gen --summary` prints it to 4 digits)
  fpt=$(awk -v n="$params" -v l="$L" -v h="$H" -v t="$T" 'BEGIN {printf "%.0f", 6 * n + 6 * l * h * t}')
  t1=$(date +%s.%N)
  # --fuse-linear-ce: the logit GEMM and the loss in one chunked op (no B*T x V logits).
  log=$("$shardc" compile "$model" --precision "$precision" --fuse-linear-ce --emit-object "$out/$name.o" \
    -o "$out/$name" "${extra[@]}")
  t2=$(date +%s.%N)
  echo "$log"
  planned=$(sed -n 's/.*planned memory \([0-9.]*\) MiB.*/\1/p' <<<"$log")
  cs=$(sed -n 's/.*; compile \([0-9.]*\) s, link \([0-9.]*\) s.*/\1/p' <<<"$log")
  ls_=$(sed -n 's/.*; compile \([0-9.]*\) s, link \([0-9.]*\) s.*/\2/p' <<<"$log")
  "$out/$name" --describe >"$out/$name.describe.txt"
  help=$("$out/$name" --help 2>&1 || true)
  if grep -q -- '--device' <<<"$help"; then dev=yes; else dev=no; fi
  cuda=$(ldd "$out/$name" | awk '/cuda|cublas|nccl/ {printf "%s%s", sep, $1; sep=","}')
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$tm" "$B" "$T" \
    "$precision" "$params" "$fpt" "$planned" "$cs" "$ls_" "$dev" "${cuda:-none}" >>"$tsv"
  printf '%s: gen %.2f s, compile+link %.2f s (wall), planned %s MiB, N=%s, FLOPs/token %s, --device: %s, CUDA libs: %s\n' \
    "$name" "$(awk -v a="$t0" -v b="$t1" 'BEGIN {print b - a}')" \
    "$(awk -v a="$t1" -v b="$t2" 'BEGIN {print b - a}')" "$planned" "$params" "$fpt" \
    "$dev" "${cuda:-none}"
  if [[ -z $cuda ]]; then
    echo "warning: $name links no CUDA library: \`--device cuda\` will fail (the shardc at" \
      "$shardc links what its build's compiler/codegen/LinkConfig.h said when it was built;" \
      "rebuild shardc in a CUDA-configured build, then this script)" >&2
  fi
  bins+=("$out/$name")
done

fortunes=/usr/share/games/fortunes
if [[ ! -f $out/tokens.bin && -d $fortunes ]]; then
  find "$fortunes" -maxdepth 1 -type f ! -name '*.*' | sort |
    xargs "$shardc" tokenize -o "$out/tokens.bin" | tail -1
fi

if ((bundle)); then
  stage=$(mktemp -d)
  mkdir -p "$stage/lib"
  for b in "${bins[@]}"; do
    ldd "$b" | awk '/=> \// {print $3}'
  done | sort -u | while read -r lib; do
    case $(basename "$lib") in
      libc.so* | libm.so* | libdl.so* | libpthread.so* | librt.so* | ld-linux* | libgcc_s.so* | \
        libstdc++.so* | libcuda.so* | libcudart.so* | libcublas* | libnccl.so* | libnvidia*) ;;
      *) cp -L "$lib" "$stage/lib/" ;;
    esac
  done
  ompi_lib=""
  for b in "${bins[@]}"; do
    l=$(ldd "$b" | awk '/libmpi.so/ {print $3; exit}')
    [[ -n $l ]] && ompi_lib=$(dirname "$(readlink -f "$l")")
  done
  if [[ -n $ompi_lib && -d $ompi_lib/openmpi/lib/openmpi3 ]]; then
    # Debian's layout: prefix /usr, components in <libdir>/openmpi/lib/openmpi3, help
    # files in /usr/share/openmpi; OPAL_PREFIX=<bundle>/ompi re-roots both.
    rel=${ompi_lib#/usr/}
    mkdir -p "$stage/ompi/$rel/openmpi/lib" "$stage/ompi/share"
    cp -a "$ompi_lib/openmpi/lib/openmpi3" "$stage/ompi/$rel/openmpi/lib/"
    cp -a /usr/share/openmpi "$stage/ompi/share/"
    cp -L "$ompi_lib"/libmca_common_{sm,monitoring,ompio}.so.[0-9][0-9] "$stage/lib/" 2>/dev/null || true
    ompi_info --version 2>/dev/null | head -1 >"$stage/ompi/VERSION" || true
    # mpirun and its daemon (two ranks on one GPU machine without Open MPI), with the
    # PMIx library and plugins they load (Debian: <libdir>/pmix2).
    if [[ -x /usr/bin/orterun && -x /usr/bin/orted ]]; then
      mkdir -p "$stage/ompi/bin"
      cp -L /usr/bin/orterun "$stage/ompi/bin/mpirun"
      cp -L /usr/bin/orted "$stage/ompi/bin/orted"
      for b in /usr/bin/orterun /usr/bin/orted "$ompi_lib"/openmpi/lib/openmpi3/mca_pmix_ext3x.so; do
        ldd "$b" | awk '/=> \// {print $3}'
      done | sort -u | while read -r lib; do
        case $(basename "$lib") in
          libc.so* | libm.so* | libdl.so* | libpthread.so* | librt.so* | ld-linux* | libgcc_s.so*) ;;
          *) [[ -e $stage/lib/$(basename "$lib") ]] || cp -L "$lib" "$stage/lib/" ;;
        esac
      done
      [[ -d $ompi_lib/pmix2/lib/pmix ]] && cp -a "$ompi_lib/pmix2/lib/pmix" "$stage/ompi/pmix-plugins"
    fi
  elif [[ -n $ompi_lib ]]; then
    echo "warning: libmpi in $ompi_lib but no openmpi/lib/openmpi3 there: Open MPI not bundled" >&2
  fi
  tar -C "$stage" -cJf "$out/runtime-libs.tar.xz" .
  echo "runtime-libs.tar.xz: $(du -sh "$stage" | cut -f1) of libraries -> $(du -h "$out/runtime-libs.tar.xz" | cut -f1)"
  rm -rf "$stage"
fi
echo "wrote $out:"
ls -la "$out"
column -t -s $'\t' "$tsv" 2>/dev/null || cat "$tsv"
