#!/usr/bin/env bash
# One call on the GPU machine (Python 3.12, no network): build with what is installed
# there, run the test suite and the benchmarks, and print a short table last.
#   device run: bash scripts/gpu_check.sh   (carry .whl: the scipy-openblas32 wheel, which
#   the machine lacks; fetch it with scripts/fetch_device_wheels.sh)
set -uo pipefail
cd "$(dirname "$0")/.."
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl || exit 1
  export PYTHONPATH=/tmp/site
fi
# site-packages packed by scripts/fetch_device_wheels.sh --tilelang (tile-lang and what it
# needs, unpacked and xz-compressed: its wheels would not fit the carry)
for t in .whl/*.tar.xz; do
  [ -f "$t" ] || continue
  mkdir -p /tmp/site && tar -xJf "$t" -C /tmp/site && export PYTHONPATH=/tmp/site && echo "unpacked $t"
done
log=${OUT:-/tmp}/gpu_check.log
python3 --version
python3 -c "import nanobind, scikit_build_core, torch; print('nanobind', nanobind.__version__, 'skbuild', scikit_build_core.__version__, 'torch', torch.__version__)"
grep -m1 "model name" /proc/cpuinfo
python3 -c "import torch; print('torch cpu capability', torch.backends.cpu.get_cpu_capability())"
start=$(date +%s)
build() {
  USE_CUDA=ON CMAKE_CUDA_ARCHITECTURES=90 MAX_JOBS=${MAX_JOBS:-16} \
    python3 -m pip install --no-build-isolation --no-deps -v -Cbuild-dir=build/gpu . >>"$log" 2>&1
}
: >"$log"
build
build_rc=$?
if [ $build_rc -ne 0 ] && grep -q "cuDNN attention available" "$log"; then
  # Note [cuDNN attention]: a frontend that does not compile against this cuDNN costs the
  # attention path, not the run
  echo "build failed with the cuDNN frontend: building without it"
  grep -E "cudnn_attention|error:" "$log" | head -n 10
  TENSORPLAY_NO_CUDNN_FRONTEND=1 build
  build_rc=$?
fi
build_s=$(( $(date +%s) - start ))
# the slowest compiles (the build is a fixed cost of every call; its critical path is the
# longest single file): .ninja_log lines are start, end (ms), mtime, target, hash
if [ -f build/gpu/.ninja_log ]; then
  echo "slowest build steps (s):"
  awk -F'\t' 'NR > 1 { printf "%7.1f %s\n", ($2 - $1) / 1000, $4 }' build/gpu/.ninja_log | sort -rn | head -n 6
  # the compile work against ninja's span: work / span near MAX_JOBS means the cores were the
  # limit (fewer, lighter files help), near 1 that one file was (split it)
  awk -F'\t' 'NR > 1 { w += $2 - $1; if ($2 > e) e = $2; if (s == "" || $1 < s) s = $1 }
    END { printf "compile work %.0f s over a %.0f s span (%d steps)\n", w / 1000, (e - s) / 1000, NR - 1 }' \
    build/gpu/.ninja_log
fi
grep -E "tensorplay: |error:|FAILED" "$log" | head -n 20
tail -n 5 "$log"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>&1 | head -n 2
# The CUDA tests first, verbosely, from outside the source tree (the installed package).
cuda_log=${OUT:-/tmp}/test_cuda.log
(cd /tmp && python3 -c "import tensorplay as tp; print('tp.cuda.is_available', tp.cuda.is_available(), 'device_count', tp.cuda.device_count(), 'compiled', tp._C._cuda_compiled, 'cudnn', tp.backends.cudnn.version())")
# The CUDA test files, and the others that hold GPU tests (test_examples: only those).
# GPU_TESTS (a list of files) and GPU_BENCHES (a subset of "cuda nn train matmul graphs dist", plus
# "host": scripts/profile_cuda_host.py, "kernels": scripts/profile_cuda_kernels.py, whose
# cases GPU_KERNEL_CASES names, "ncu": scripts/ncu_kernels.sh) narrow or widen a run to what
# a change touched; GPU_TESTS=none runs no tests, GPU_TEST_SELECT narrows them (pytest -k).
cuda_tests="${GPU_TESTS:-$(ls tests/python/test_cuda*.py) tests/python/test_cudnn.py tests/python/test_attention.py tests/python/test_autocast.py tests/python/test_grad_scaler.py tests/python/test_examples.py}"
benches=" ${GPU_BENCHES:-cuda nn train matmul graphs dist} "
[ "$cuda_tests" = none ] && cuda_tests=""  # GPU_TESTS=none: build and benchmarks only
# One process per file: a kernel fault (a sticky CUDA error) then fails one file, not all.
cuda_rc=0
: >"$cuda_log"
for f in $cuda_tests; do
  select=(); [ -n "${GPU_TEST_SELECT:-}" ] && select=(-k "$GPU_TEST_SELECT")  # a pytest -k expression
  case "$f" in *test_examples.py) select=(-k cuda);; esac
  # a hung kernel (a new one that deadlocks) costs one file, not the whole call
  timeout "${GPU_TEST_TIMEOUT:-240}" python3 -m pytest "$f" "${select[@]}" -q -rfEx --tb=short -p no:cacheprovider \
    -W ignore::UserWarning --rootdir=. >"$cuda_log.one" 2>&1 || cuda_rc=1
  cat "$cuda_log.one" >>"$cuda_log"
  echo "$(basename "$f"): $(tail -n 1 "$cuda_log.one")"
  grep -E "^(FAILED|ERROR|XFAIL)" "$cuda_log.one" | cut -c1-200 | head -n 25
done
cuda_summary="$(grep -cE "^(FAILED|ERROR)" "$cuda_log") failing tests in $(echo $cuda_tests | wc -w) files"
all_log=${OUT:-/tmp}/test_all.log
test_rc=skipped
all_summary="(GPU_CHECK_QUICK: not run)"
if [ -z "${GPU_CHECK_QUICK:-}" ]; then
  ignores=$(for f in $cuda_tests; do printf -- "--ignore=%s " "$f"; done)
  python3 -m pytest tests -q -p no:cacheprovider --maxfail=50 $ignores -W ignore::UserWarning 2>&1 | tee "$all_log" | grep -E "^(FAILED|ERROR)|passed|failed" | tail -n 25 | tee -a "$log"
  test_rc=${PIPESTATUS[0]}
  all_summary=$(grep -E "passed|failed" "$all_log" | tail -n 1)
  python3 benchmarks/bench_foundation.py --quick 2>&1 | tee -a "$log" | tail -n 20
  python3 benchmarks/bench_autograd.py --quick 2>&1 | tee -a "$log" | tail -n 4
  python3 benchmarks/bench_random.py --quick 2>&1 | tee -a "$log" | tail -n 8
fi
# Note [cuDNN attention]: the cuDNN SDPA path probed in a process of its own first; a crash
# there costs the benchmarks its row (TP_BENCH_SKIP_CUDNN_SDPA) and prints where, not the run
if python3 -c "import tensorplay as tp; raise SystemExit(not tp._C._cudnn_sdpa_available())" 2>/dev/null; then
  if timeout 120 python3 scripts/probe_cudnn_sdpa.py >>"$log" 2>&1; then
    echo "cuDNN SDPA probe: ok"
  else
    echo "cuDNN SDPA probe: failed; the benchmarks skip its row"
    export TP_BENCH_SKIP_CUDNN_SDPA=1
    tail -n 3 "$log"
    timeout 200 cuda-gdb -batch -ex run -ex bt --args python3 scripts/probe_cudnn_sdpa.py 2>&1 |
      grep -E "^#|signal" | cut -c1-240 | head -n 30
  fi
fi
for b in cuda:bench_cuda:16 nn:bench_cuda_nn:30 train:bench_cuda_train:8 graphs:bench_cuda_graphs:6 dist:bench_cuda_distributed:6; do
  IFS=: read -r name script lines <<<"$b"
  # GPU_NN_EXTRA (set, even empty) replaces the nn bench's --row-pipeline (its variant rows);
  # GPU_BENCH_ARGS go to every bench, GPU_NN_ARGS (e.g. --rows-only) to the nn bench alone
  extra=""; [ "$name" = nn ] && extra="${GPU_NN_EXTRA---row-pipeline} ${GPU_NN_ARGS:-}"
  case "$benches" in *" $name "*)
    timeout "${GPU_BENCH_TIMEOUT:-300}" python3 "benchmarks/$script.py" ${GPU_BENCH_ARGS:-} $extra 2>&1 |
      tee -a "$log" | tail -n "$lines"
    echo "($script done ${SECONDS} s into gpu_check)";;
  esac
done
case "$benches" in *" host "*)  # where a tiny op's host time goes (not in the default list)
  python3 scripts/profile_cuda_host.py 2>&1 | tee -a "$log" | tail -n 40;;
esac
case "$benches" in *" ncu "*)  # Nsight Compute sections of the row and attention kernels (not default)
  bash scripts/ncu_kernels.sh 2>&1 | tee -a "$log" | tail -n 120;;
esac
case "$benches" in *" kernels "*)  # which kernels the slow cases run (not in the default list)
  python3 scripts/profile_cuda_kernels.py ${GPU_KERNEL_CASES:-} 2>&1 | tee -a "$log" | tail -n 60;;
esac
matmul_log=${OUT:-/tmp}/bench_cuda_matmul.log
: >"$matmul_log"
matmul_rc=skipped
case "$benches" in *" matmul "*)
  python3 benchmarks/bench_cuda_matmul.py 2>&1 | tee "$matmul_log" | tail -n 6
  matmul_rc=${PIPESTATUS[0]};;
esac
cat "$matmul_log" >>"$log"
echo "== gpu_check summary"
printf "%-12s | %-6s | %s\n" step rc detail
printf "%-12s | %-6s | %s\n" build "$build_rc" "${build_s}s, USE_CUDA=ON sm_90"
printf "%-12s | %-6s | %s\n" test_cuda "$cuda_rc" "$cuda_summary"
printf "%-12s | %-6s | %s\n" other_tests "$test_rc" "$all_summary"
printf "%-12s | %-6s | %s\n" cuda_matmul "$matmul_rc" \
  "$(grep -E '^matmul' "$matmul_log" | sed -E 's/ +tp .*ratio +([0-9.]+).*/: \1;/' | tr '\n' ' ')tp/torch time"
