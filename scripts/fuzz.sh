#!/usr/bin/env bash
# Long differential fuzzing run of the op database against PyTorch (python/tensorplay/testing/fuzz.py).
#   scripts/fuzz.sh --minutes N [--seed S] [--batch B] [--start P] [--end P] [--report STEM]
# Prints mismatches grouped by op and kind; writes STEM.txt (every mismatch) and STEM_repro.py
# (a standalone snippet per mismatch). Each worker runs in a subprocess: a crash or a hang is
# recorded against its case (and the library that was running) and the run goes on.
set -euo pipefail
cd "$(dirname "$0")/.."
# PyTorch at its AVX2 level whatever the CPU, as in tests/python/conftest.py (its docstring says why)
export TP_CPU_CAPABILITY="${TP_CPU_CAPABILITY:-${ATEN_CPU_CAPABILITY:-avx512}}"
export ATEN_CPU_CAPABILITY=avx2 ONEDNN_MAX_CPU_ISA=AVX2
export PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}"
exec python -W ignore -m tensorplay.testing.fuzz "$@"
