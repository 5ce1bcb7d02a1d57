#!/usr/bin/env bash
# Builds tensorplay._C with sanitizers (CPU only) into build/sanitize-<kind> and runs tests
# under them, the sanitizer's runtime preloaded into the (uninstrumented) interpreter.
#   scripts/sanitize.sh [address|thread] [pytest arguments...]
#     address: ASan + UBSan (default); thread: TSan. Tests default to tests/python.
# Any report fails the run (halt_on_error); leak detection is off (CPython's own arenas).
set -euo pipefail
cd "$(dirname "$0")/.."
kind=${1:-address}
[ $# -gt 0 ] && shift
case "$kind" in
  address) san=address,undefined; lib=libasan.so ;;
  thread) san=thread; lib=libtsan.so ;;
  *) echo "usage: $0 [address|thread] [pytest args...]" >&2; exit 2 ;;
esac
# TP_SAN_LEVELS: the CPU capability levels to build kernels for ("0;2" in CI: the baseline and
# the highest; default all). TP_SAN_OPT=0: an -O0 build (CI's short job: it compiles 4-6x
# faster than the default -O2 and runs slower), in its own build folder.
build=build/sanitize-$kind${TP_SAN_OPT:+-O$TP_SAN_OPT}
launcher=(); command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
cmake -S . -B "$build" -G Ninja "${launcher[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DUSE_CUDA=OFF \
      -DTP_SANITIZE="$san" -DTP_CPU_LEVELS="${TP_SAN_LEVELS:-0;1;2}" -DTP_SANITIZE_OPT="${TP_SAN_OPT:-}" \
      -DPython_EXECUTABLE="$(command -v python3)" >/dev/null
cmake --build "$build" ${MAX_JOBS:+-j "$MAX_JOBS"}
# a package tree whose _C is the instrumented one (the sources are the working tree's)
pkg="$build/pkg"
rm -rf "$pkg" && mkdir -p "$pkg/tensorplay"
for f in python/tensorplay/*; do
  case "$(basename "$f")" in _C*.so|version.py) ;; *) ln -s "$(realpath "$f")" "$pkg/tensorplay/" ;; esac
done
for so in "$build"/_C*.so; do ln -s "$(realpath "$so")" "$pkg/tensorplay/"; done
cp "$build/version.py" "$pkg/tensorplay/version.py"
# libstdc++ preloaded with the runtime: Python does not link it, so without it the runtime's
# __cxa_throw interceptor finds no real __cxa_throw and the first C++ exception (ours or a
# library's, e.g. torch's in the reference tests) aborts with a CHECK failure
runtime="$(g++ -print-file-name="$lib"):$(g++ -print-file-name=libstdc++.so)"
export LD_PRELOAD="$runtime${LD_PRELOAD:+:$LD_PRELOAD}"
# allocator_may_return_null: an allocation larger than memory returns null (our allocator then
# raises PyTorch's error, which tests/python/test_resources.py checks) instead of aborting
export ASAN_OPTIONS="detect_leaks=0:halt_on_error=1:abort_on_error=1:detect_odr_violation=0:allocator_may_return_null=1:${ASAN_OPTIONS:-}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:${UBSAN_OPTIONS:-}"
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$PWD/scripts/tsan.supp:${TSAN_OPTIONS:-}"
# TSan: one OpenMP thread (libgomp is not instrumented: its barriers would read as races);
# the threads under test are the tests' own and the autograd engine's
omp=2; [ "$kind" = thread ] && omp=1
export PYTHONMALLOC=malloc OMP_NUM_THREADS=${OMP_NUM_THREADS:-$omp}
[ $# -eq 0 ] && set -- tests/python
PYTHONPATH="$pkg" exec python3 -m pytest -q -p no:cacheprovider "$@"
