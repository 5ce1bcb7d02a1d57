#!/usr/bin/env bash
# Downloads into .whl/ the wheels the GPU machine (Python 3.12, no network) lacks for a
# build: scipy-openblas32, and nvidia-cudnn-frontend (headers for Note [cuDNN attention]);
# and for tests: apache-tvm-ffi (tests/python/test_tvm_ffi.py, its CUDA part).
# Pass .whl in the device call's carry list.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
  -d .whl "scipy-openblas32>=0.3.30" "nvidia-cudnn-frontend>=1.12" apache-tvm-ffi
ls .whl
