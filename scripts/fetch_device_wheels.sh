#!/usr/bin/env bash
# Downloads into .whl/ the wheels the GPU machine (Python 3.12, no network) lacks for a
# build: scipy-openblas32, and nvidia-cudnn-frontend (headers for Note [cuDNN attention]);
# and for tests: apache-tvm-ffi (tests/python/test_tvm_ffi.py, its CUDA part); and pocketfft's
# header into .whl/pocketfft (CMakeLists.txt looks there; the build elsewhere downloads it).
# Pass .whl in the device call's carry list.
#   --tilelang: also tile-lang (tests/python/test_cuda_tilelang.py) with what it needs. Its
#   wheels (~120 MB) exceed the carry's 64 MiB, so they are unpacked, pruned (copies, caches, ROCm parts)
#   and packed as one .tar.xz (~39 MB) that scripts/gpu_check.sh unpacks; tile-lang pins an
#   older apache-tvm-ffi, which the pack holds instead of the wheel.
set -euo pipefail
cd "$(dirname "$0")/.."
dl() {
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 "$@"
}
dl -d .whl "scipy-openblas32>=0.3.30" "nvidia-cudnn-frontend>=1.12"
if [ "${1:-}" = --tilelang ]; then
  rm -f .whl/apache_tvm_ffi-*.whl
  tmp=$(mktemp -d)
  dl -d "$tmp/w" tilelang "z3-solver<4.15.5" "apache-tvm-ffi<0.1.13" torch-c-dlpack-ext cloudpickle \
    ml-dtypes tqdm psutil
  mkdir "$tmp/site"
  for w in "$tmp"/w/*.whl; do (cd "$tmp/site" && python3 -m zipfile -e "$w" .); done
  (cd "$tmp/site" && rm -rf z3_solver-*.data tilelang/3rdparty/composable_kernel \
    && find . -name __pycache__ -prune -exec rm -rf {} + &&
    if [ -f z3/lib/libz3.so.4.15 ]; then rm z3/lib/libz3.so.4.15 && ln -s libz3.so z3/lib/libz3.so.4.15; fi &&
    find . -name "*.so" -exec chmod +x {} +)
  tar -cJf .whl/tilelang_site.tar.xz -C "$tmp/site" .
  rm -rf "$tmp"
else
  dl -d .whl apache-tvm-ffi
fi
# pocketfft: the header from the NumPy source release that CMakeLists.txt pins
if [ ! -f .whl/pocketfft/pocketfft_hdronly.h ]; then
  python3 - <<'PY'
import hashlib, io, re, tarfile, urllib.request
cmake = open("CMakeLists.txt").read()
url = re.search(r"(https://files.pythonhosted.org/\S+numpy-[0-9.]+\.tar\.gz)", cmake).group(1)
sha = re.search(r"EXPECTED_HASH SHA256=([0-9a-f]+)", cmake).group(1)
data = urllib.request.urlopen(url, timeout=120).read()
assert hashlib.sha256(data).hexdigest() == sha, "pocketfft: checksum mismatch"
with tarfile.open(fileobj=io.BytesIO(data)) as tar:
    for m in tar.getmembers():
        if "/numpy/fft/pocketfft/" in m.name and m.isfile():
            m.name = "pocketfft/" + m.name.rsplit("/", 1)[1]
            tar.extract(m, ".whl", filter="data")
PY
fi
ls -la .whl .whl/pocketfft
