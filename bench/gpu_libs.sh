# Sourced by bench/gpu_step.sh and scripts/gpu_checks.sh on the GPU machine: finds
# the shared libraries a step binary needs and this machine lacks (the bundle
# runtime-libs.tar.xz of bench/build_gpu_steps.sh, the CUDA toolkit, pip's
# nvidia-* packages) and links them into $libdir; sets up Open MPI singletons.
# Needs: $stepdir (holds runtime-libs.tar.xz), $work (scratch), $libdir, $py.
bundle=""
lib_search_path() {
  local d
  [[ -n $bundle ]] && echo "$bundle/lib"
  for d in /usr/local/cuda/lib64 /usr/local/cuda/lib /usr/local/cuda/targets/x86_64-linux/lib; do
    [[ -d $d ]] && echo "$d"
  done
  # pip's nvidia-* wheels (cudart, cublas, nccl, ...) and torch's own lib directory
  "$py" - <<'EOF' 2>/dev/null
import glob, os, site
roots = site.getsitepackages() + [site.getusersitepackages()]
for r in roots:
    for d in sorted(glob.glob(os.path.join(r, "nvidia", "*", "lib"))) + [os.path.join(r, "torch", "lib")]:
        if os.path.isdir(d):
            print(d)
EOF
}
missing_libs() {
  LD_LIBRARY_PATH=$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} ldd "$1" 2>/dev/null |
    awk '/not found/ {print $1}' | sort -u
}
resolve_libs() { # binary -> 0 when nothing is missing any more
  local bin=$1 missing lib d found before=""
  missing=$(missing_libs "$bin")
  # A library found can need others (libmpi -> libopen-pal): until nothing changes.
  while [[ -n $missing && $missing != "$before" ]]; do
    if [[ -z $bundle && -f $stepdir/runtime-libs.tar.xz ]]; then
      bundle=$work/bundle
      mkdir -p "$bundle" && tar -C "$bundle" -xJf "$stepdir/runtime-libs.tar.xz"
    fi
    for lib in $missing; do
      found=""
      while read -r d; do
        if [[ -e $d/$lib ]]; then found=$d/$lib; break; fi
      done < <(lib_search_path)
      [[ -z $found ]] && continue
      ln -sf "$found" "$libdir/$lib"
      echo "  $lib <- $found"
      # Open MPI from the bundle finds its components and help files by OPAL_PREFIX.
      [[ $lib == libmpi.so* && $found == "$bundle"/* ]] && export OPAL_PREFIX=$bundle/ompi
    done
    before=$missing
    missing=$(missing_libs "$bin")
  done
  [[ -z $missing ]] && return 0
  echo "  still missing:" $missing
  return 1
}
# One rank without mpirun: Open MPI's singleton, without its daemon (orted may not exist).
export OMPI_MCA_ess_singleton_isolated=1 OMPI_MCA_mca_base_component_show_load_errors=0 \
  OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
