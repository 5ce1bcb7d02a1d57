"""Lists the op handles that take vmap's loop fallback while some tests run.

    PYTHONPATH=python python scripts/vmap_fallback_ops.py [pytest options] [tests]

Default tests: the op-database vmap suite and the per-sample-gradient CNN tutorial. Each
line: the handle, how many times it looped, and the tests that hit it (first three).
"""
import collections
import sys

import pytest

DEFAULT = ['tests/python/test_func_vmap_ops.py',
           'tests/python/test_func.py::test_per_sample_gradients_tutorial']


class Counter:
    def __init__(self):
        self.calls = collections.Counter()
        self.tests = collections.defaultdict(list)
        self.current = None

    def pytest_configure(self, config):
        from tensorplay.func import _vmap
        _vmap._loop_log[0] = self

    def append(self, func):
        key = str(func).removeprefix('aten.')
        self.calls[key] += 1
        if self.current not in self.tests[key]:
            self.tests[key].append(self.current)

    def pytest_runtest_setup(self, item):
        self.current = item.name


def main():
    counter = Counter()
    args = sys.argv[1:]
    if not any(not a.startswith('-') for a in args):
        args += DEFAULT
    rc = pytest.main(['-q', '-p', 'no:cacheprovider'] + args, plugins=[counter])
    print(f'\n{len(counter.calls)} op handles took the loop fallback:')
    for key, n in sorted(counter.calls.items()):
        tests = counter.tests[key]
        more = f' (+{len(tests) - 3})' if len(tests) > 3 else ''
        print(f'  {key:45s} {n:5d}  {", ".join(tests[:3])}{more}')
    return rc


if __name__ == '__main__':
    sys.exit(main())
