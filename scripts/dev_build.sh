#!/usr/bin/env bash
# Incremental developer build: compiles tensorplay._C into build/dev and links it into
# python/tensorplay, so `PYTHONPATH=python python ...` runs the working tree.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${TP_DEV_BUILD_DIR:-build/dev}
# With ccache installed, compiles are cached; the base dir (the checkout's parent) makes
# paths relative, so git worktrees beside each other share hits.
launcher=()
if command -v ccache >/dev/null; then
  export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$(dirname "$PWD")}
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
fi
if [ ! -f "$build/build.ninja" ]; then
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE="${CMAKE_BUILD_TYPE:-Release}" "${launcher[@]}" \
        -DUSE_CUDA="${USE_CUDA:-OFF}" -DPython_EXECUTABLE="$(command -v python3)" >/dev/null
fi
cmake --build "$build" ${MAX_JOBS:+-j "$MAX_JOBS"}
so=$(ls "$build"/_C.*.so)
ln -sf "$(realpath "$so")" python/tensorplay/"$(basename "$so")"
for so in "$build"/_C_distributed*.so; do  # built where Gloo is found
  [ -e "$so" ] && ln -sf "$(realpath "$so")" python/tensorplay/"$(basename "$so")"
done
cp "$build/version.py" python/tensorplay/version.py
