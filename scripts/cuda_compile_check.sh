#!/usr/bin/env bash
# Compiles CUDA-build translation units on this (GPU-less) machine, without linking, to catch
# compile errors before a device call (each of which rebuilds everything). Needs nvcc (the
# CUDA toolkit's, no driver) and the CPU build's generated headers (scripts/dev_build.sh).
# Files using cuBLAS/cuDNN headers need those headers installed to compile here.
#   bash scripts/cuda_compile_check.sh csrc/cuda/graph.cpp csrc/cuda/random_dropout.cu ...
set -euo pipefail
cd "$(dirname "$0")/.."
py_inc=$(python3 -c "import sysconfig; print(sysconfig.get_paths()['include'])")
nb_inc=$(python3 -c "import nanobind, os; print(os.path.join(os.path.dirname(nanobind.__file__), 'include'))")
cuda_inc=""
for d in "${CUDA_HOME:-}" /usr/local/cuda /usr/local/cuda-*; do
  [ -f "$d/include/cuda_runtime_api.h" ] && { cuda_inc=$d/include; break; }
done
[ -n "$cuda_inc" ] || { echo "no CUDA toolkit headers found (set CUDA_HOME)"; exit 2; }
gen=build/dev/generated
[ -d "$gen" ] || { echo "no $gen: run scripts/dev_build.sh first"; exit 2; }
out=$(mktemp -d)
rc=0
for f in "$@"; do
  case "$f" in
    *.cu) cmd=(nvcc -std=c++20 -O1 -arch=sm_90 --expt-relaxed-constexpr -Xcompiler -fPIC);;
    *) cmd=(c++ -std=gnu++20 -O1 -fPIC -Wall -Wno-unused-function -Wno-psabi -fopenmp -isystem "$cuda_inc");;
  esac
  if "${cmd[@]}" -DTP_USE_CUDA=1 -DNDEBUG -Icsrc -I"$gen" -I"$py_inc" -I"$nb_inc" -c "$f" -o "$out/x.o" 2>"$out/err"; then
    echo "ok   $f"
  else
    echo "FAIL $f"; grep -E "error|Error" "$out/err" | head -n 20; rc=1
  fi
done
rm -rf "$out"
exit $rc
