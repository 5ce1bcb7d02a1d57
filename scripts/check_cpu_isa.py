"""Checks that only the per-level CPU kernels use AVX2 / AVX-512 instructions (Note [CPU
capability]): relinks the module of a build folder without stripping its symbols and lists
every function outside the level namespaces (cap_avx2, cap_avx512) that uses a VEX or EVEX
encoded instruction or a ymm / zmm / mask register. Exits 1 if there is any.

    python scripts/check_cpu_isa.py [BUILD_DIR]   # default: build/dev

Such a function would crash with SIGILL on a CPU without the instructions; the usual cause
is an inline function or template of a shared header instantiated out of line in a level's
object and kept by the linker (the baseline objects must come first on the link line).
"""
import collections
import os
import re
import shlex
import subprocess
import sys
import tempfile

# The random module's AVX2 entry points are called only after its own capability check
# (csrc/random/vec_avx2.h).
ALLOWED = ('tp::random::box_muller16_avx2', 'tp::random::uniform_float_fma_avx2')


def relink_unstripped(build, out):
    """Re-runs the module's link command with `-s` removed, writing `out`."""
    cmds = subprocess.run(['ninja', '-C', build, '-t', 'commands'], capture_output=True, text=True,
                          check=True).stdout.splitlines()
    link = next(c for c in reversed(cmds) if re.search(r' -o _C\.[^ ]*\.so ', c))
    argv = shlex.split(next(part for part in link.split('&&') if ' -o ' in part))
    argv = [a for a in argv if a not in ('-Wl,-s', '-s')]
    argv[argv.index('-o') + 1] = out
    subprocess.run(argv, cwd=build, check=True)


def vector_users(path):
    """{function: set of reasons} for every function using VEX/EVEX code."""
    text = subprocess.run(['objdump', '-d', '--no-show-raw-insn', '-C', path], capture_output=True,
                          text=True, check=True).stdout
    users, func = collections.defaultdict(set), None
    for line in text.splitlines():
        m = re.match(r'^[0-9a-f]+ <(.*)>:$', line)
        if m:
            func = m.group(1)
            continue
        m = re.match(r'^\s+[0-9a-f]+:\s+(\S+)\s*(.*)$', line)
        if not m or func is None:
            continue
        mnemonic, operands = m.groups()
        if 'zmm' in operands or re.search(r'%k[0-7]\b', operands):
            users[func].add('avx512')
        elif 'ymm' in operands:
            users[func].add('ymm')
        elif mnemonic.startswith('v') and mnemonic not in ('verr', 'verw'):
            users[func].add(mnemonic)
    return users


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else 'build/dev'
    with tempfile.TemporaryDirectory() as tmp:
        so = os.path.join(tmp, '_C_unstripped.so')
        relink_unstripped(os.path.abspath(build), so)
        users = vector_users(so)
    leaks = {f: r for f, r in users.items()
             if 'cap_avx2' not in f and 'cap_avx512' not in f and '@plt' not in f
             and not f.startswith(ALLOWED)}
    levels = sum(1 for f in users if 'cap_avx2' in f or 'cap_avx512' in f)
    for f, r in sorted(leaks.items()):
        print(f'{sorted(r)[:4]}  {f[:240]}')
    print(f'{levels} functions of the AVX2 / AVX-512 levels; {len(leaks)} others use AVX code')
    sys.exit(1 if leaks else 0)


if __name__ == '__main__':
    main()
