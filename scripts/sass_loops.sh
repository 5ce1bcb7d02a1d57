#!/usr/bin/env bash
# SASS of one CUDA source without a GPU: compiles it for sm_90 here and prints, for each kernel
# whose mangled name holds every PATTERN, its instruction count and its row loop's (the
# widest backward branch around a barrier) with the loop's commonest opcodes. The static
# count is a proxy for issue cost in the instruction-bound row kernels (Note [Lean half rows]);
# branches the compiler duplicates (unswitched loops) count twice.
#   bash scripts/sass_loops.sh csrc/cuda/norm_kernels.cu layer_norm_backward_pipe_kernel bfloat16
# cuobjdump and nvdisasm come from NVIDIA's wheels, fetched once into .tools/.
set -euo pipefail
cd "$(dirname "$0")/.."
src=$1; shift
tools=.tools/cuda-bin
if [ ! -x "$tools/cuobjdump" ] || [ ! -x "$tools/nvdisasm" ]; then
  tmp=$(mktemp -d)
  python3 -m pip download -q --no-deps nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm -d "$tmp"
  mkdir -p "$tools"
  for w in "$tmp"/*.whl; do
    python3 -m zipfile -e "$w" "$tmp/x"
  done
  find "$tmp/x" -type f \( -name cuobjdump -o -name nvdisasm \) -exec cp {} "$tools/" \;
  chmod +x "$tools"/*
  rm -rf "$tmp"
fi
gen=$(mktemp -d)
python3 tools/codegen/gen.py csrc/ops "$gen" >/dev/null
obj=$gen/kernel.o
nvcc -std=c++20 --expt-relaxed-constexpr -arch=sm_90 -DTP_USE_CUDA=1 -Icsrc -I"$gen" -c "$src" -o "$obj" 2>/dev/null
PATH=$PWD/$tools:$PATH cuobjdump -sass "$obj" >"$gen/kernel.sass"
python3 tools/sass_loops.py "$gen/kernel.sass" "$@"
rm -rf "$gen"
