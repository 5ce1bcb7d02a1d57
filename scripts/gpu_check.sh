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
log=${OUT:-/tmp}/gpu_check.log
python3 --version
python3 -c "import nanobind, scikit_build_core, torch; print('nanobind', nanobind.__version__, 'skbuild', scikit_build_core.__version__, 'torch', torch.__version__)"
grep -m1 "model name" /proc/cpuinfo
python3 -c "import torch; print('torch cpu capability', torch.backends.cpu.get_cpu_capability())"
start=$(date +%s)
MAX_JOBS=${MAX_JOBS:-16} python3 -m pip install --no-build-isolation --no-deps -q . >"$log" 2>&1
build_rc=$?
build_s=$(( $(date +%s) - start ))
tail -n 5 "$log"
python3 -m pytest tests -q -p no:cacheprovider --maxfail=50 -W ignore::UserWarning 2>&1 | grep -E "^(FAILED|ERROR)|passed|failed" | tail -n 25 | tee -a "$log"
test_rc=${PIPESTATUS[0]}
python3 benchmarks/bench_foundation.py --quick 2>&1 | tee -a "$log" | tail -n 20
python3 benchmarks/bench_autograd.py --quick 2>&1 | tee -a "$log" | tail -n 4
python3 benchmarks/bench_random.py --quick 2>&1 | tee -a "$log" | tail -n 8
echo "== gpu_check: build rc=$build_rc (${build_s}s), tests rc=$test_rc"
