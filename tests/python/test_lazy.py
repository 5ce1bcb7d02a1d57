"""tensorplay._lazy.lazy_submodule: a submodule executes once, on first attribute access,
and importing one of its own submodules first neither loads it twice nor recurses (the
standard library's lazy module changed between Python 3.11 and 3.12)."""
import os
import subprocess
import sys
import textwrap


def _env(path):
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(path)] + [p for p in sys.path if p])}


def test_lazy_submodule_loads_once(tmp_path):
    pkg = tmp_path / "lazypkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("from tensorplay._lazy import lazy_submodule\n"
                                     "sub = lazy_submodule(__name__, 'sub')\n")
    (pkg / "sub" / "__init__.py").write_text("import sys\nsys.sub_runs = getattr(sys, 'sub_runs', 0) + 1\n"
                                             "from . import inner\nX = 5\n")
    (pkg / "sub" / "inner.py").write_text("import sys\nsys.inner_runs = getattr(sys, 'inner_runs', 0) + 1\n"
                                          "class C:\n    pass\n")
    code = textwrap.dedent("""
        import sys
        import lazypkg
        assert not hasattr(sys, 'sub_runs')          # nothing ran yet
        assert lazypkg.sub.X == 5 and sys.sub_runs == 1
        import lazypkg.sub.inner
        assert sys.inner_runs == 1 and lazypkg.sub.inner.C is sys.modules['lazypkg.sub.inner'].C
        print('ok')
    """)
    r = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True,
                       env=_env(tmp_path))
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr[-2000:]
    code2 = "import lazypkg.sub.inner, lazypkg, sys; assert sys.inner_runs == 1 and lazypkg.sub.X == 5; print('ok')"
    r = subprocess.run([sys.executable, "-c", code2], cwd=tmp_path, capture_output=True, text=True,
                       env=_env(tmp_path))
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr[-2000:]
