"""tp.profiler / tp.autograd.profiler: what is recorded, the schedule, the table and the
Chrome trace, against PyTorch's profiler where the two record the same things."""
import gzip
import json
import os
import re
import time
import warnings

import pytest
import torch

import tensorplay as tp
from tensorplay.utils._python_dispatch import _get_current_dispatch_mode_stack


def _train_step(lib, model, x):
    with lib.profiler.record_function("forward_pass"):
        loss = model(x).relu().sum()
    loss.backward()


def _profile(lib, **kw):
    model = lib.nn.Linear(16, 8)
    x = lib.randn(32, 16)
    P = lib.profiler
    with P.profile(activities=[P.ProfilerActivity.CPU], **kw) as prof:
        _train_step(lib, model, x)
    return prof


def test_records_ops_ranges_and_backward_nodes_like_pytorch():
    got, want = _profile(tp), _profile(torch)
    got_names = {e.name for e in got.events()}
    want_names = {e.name for e in want.events()}
    shared = {"forward_pass", "aten::addmm", "aten::relu", "aten::sum", "aten::mm",
              "AddmmBackward0", "ReluBackward0", "SumBackward0",
              "autograd::engine::evaluate_function: AddmmBackward0"}
    assert shared <= got_names and shared <= want_names
    ev = {e.name: e for e in got.events()}
    # the range holds the forward ops; self time excludes them
    rng = ev["forward_pass"]
    assert ev["aten::addmm"].cpu_parent is rng and ev["aten::relu"] in rng.cpu_children
    assert rng.self_cpu_time_total == pytest.approx(
        rng.cpu_time_total - sum(c.cpu_time_total for c in rng.cpu_children))
    assert ev["aten::mm"].cpu_parent.name == "AddmmBackward0"
    assert rng.is_user_annotation and not ev["aten::addmm"].is_user_annotation


def test_key_averages_and_table_format():
    prof = _profile(tp, record_shapes=True)
    avg = prof.key_averages()
    by_key = {a.key: a for a in avg}
    assert by_key["aten::t"].count == sum(e.name == "aten::t" for e in prof.events())
    total = sum(a.self_cpu_time_total for a in avg)
    assert total == pytest.approx(prof.events().self_cpu_time_total)
    table = avg.table(sort_by="self_cpu_time_total", row_limit=4)
    ref = _profile(torch).key_averages().table(sort_by="self_cpu_time_total", row_limit=4)
    lines, ref_lines = table.splitlines(), ref.splitlines()
    assert len(lines) == len(ref_lines) == 4 + 5
    # same columns, same widths and separators as PyTorch's
    norm = [re.sub(r"\s+", " ", ln).strip() for ln in (lines[1], ref_lines[1])]
    assert norm[0] == norm[1] == ("Name Self CPU % Self CPU CPU total % CPU total "
                                  "CPU time avg # of Calls")
    assert lines[0].split("  ")[1:] == ref_lines[0].split("  ")[1:]
    assert lines[-1].startswith("Self CPU time total: ")
    rows = lines[3:7]
    selfs = [float(re.search(r"([\d.]+)%", r).group(1)) for r in rows]
    assert selfs == sorted(selfs, reverse=True)
    # grouped by input shapes: one more column, rows split per shape
    shaped = prof.key_averages(group_by_input_shape=True)
    assert "Input Shapes" in shaped.table().splitlines()[1]
    addmm = [a for a in shaped if a.key == "aten::addmm"]
    assert addmm[0].input_shapes[:3] == [[8], [32, 16], [16, 8]]
    with pytest.raises(AttributeError):
        avg.table(sort_by="no_such_column")


def test_profile_memory_and_stack_columns():
    prof = _profile(tp, profile_memory=True, with_stack=True)
    table = prof.key_averages(group_by_stack_n=2).table(sort_by="self_cpu_memory_usage")
    header = table.splitlines()[1]
    assert "CPU Mem" in header and "Self CPU Mem" in header and "Source Location" in header
    addmm = next(e for e in prof.events() if e.name == "aten::addmm")
    assert addmm.self_cpu_memory_usage == 32 * 8 * 4
    assert any("test_profiler.py" in s for s in addmm.stack)


def _load_trace(path):
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt") as f:
        return json.load(f)


def test_chrome_trace(tmp_path):
    prof = _profile(tp, record_shapes=True)
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    doc = _load_trace(path)
    assert doc["schemaVersion"] == 1 and doc["displayTimeUnit"] == "ms"
    xs = [e for e in doc["traceEvents"] if e["ph"] == "X"]
    names = {e["name"] for e in xs}
    assert {"forward_pass", "aten::addmm", "AddmmBackward0"} <= names
    for e in xs:
        assert isinstance(e["ts"], (int, float)) and e["dur"] >= 0
        assert isinstance(e["pid"], int) and isinstance(e["tid"], int)
        assert e["cat"] in ("cpu_op", "user_annotation")
    addmm = next(e for e in xs if e["name"] == "aten::addmm")
    assert addmm["args"]["Input Dims"][:3] == [[8], [32, 16], [16, 8]]
    assert addmm["args"]["Input type"][:3] == ["float"] * 3
    rng = next(e for e in xs if e["name"] == "forward_pass")
    assert rng["cat"] == "user_annotation"
    assert rng["ts"] <= addmm["ts"] and addmm["ts"] + addmm["dur"] <= rng["ts"] + rng["dur"]
    # the same keys PyTorch's trace has on its events
    ref = tmp_path / "ref.json"
    _profile(torch, record_shapes=True).export_chrome_trace(str(ref))
    ref_addmm = next(e for e in _load_trace(ref)["traceEvents"]
                     if e.get("name") == "aten::addmm")
    assert {"ph", "cat", "name", "pid", "tid", "ts", "dur", "args"} == set(addmm) == set(ref_addmm)
    assert ref_addmm["args"]["Input Dims"][:3] == addmm["args"]["Input Dims"][:3]
    assert ref_addmm["args"]["Input type"][:3] == addmm["args"]["Input type"][:3]
    gz = tmp_path / "trace.json.gz"
    prof.export_chrome_trace(str(gz))
    assert _load_trace(gz)["traceEvents"] == doc["traceEvents"]


def _run_schedule(lib, **kw):
    ready = []

    def on_ready(p):
        ready.append((p.step_num, sorted({e.trace_name if lib is tp else e.name
                                          for e in p.events()
                                          if e.name.startswith("ProfilerStep")})))
    P = lib.profiler
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with P.profile(activities=[P.ProfilerActivity.CPU], schedule=P.schedule(**kw),
                       on_trace_ready=on_ready) as p:
            for _ in range(9):
                lib.ones(2).sin()
                p.step()
    return ready


@pytest.mark.parametrize("kw", [dict(wait=1, warmup=1, active=2, repeat=2),
                                dict(wait=0, warmup=1, active=1, skip_first=2),
                                dict(wait=2, warmup=1, active=3, skip_first=1, skip_first_wait=1)])
def test_schedule_cycles(kw):
    got = _run_schedule(tp, **kw)
    want = _run_schedule(torch, **kw)
    assert [g[0] for g in got] == [w[0] for w in want]
    assert got[0][1]       # each cycle holds its steps' ranges
    sched, ref = tp.profiler.schedule(**kw), torch.profiler.schedule(**kw)
    assert [sched(i).name for i in range(20)] == [ref(i).name for i in range(20)]


def test_schedule_errors_and_warnings():
    for lib in (tp, torch):
        with pytest.raises(AssertionError, match="Invalid profiler schedule arguments"):
            lib.profiler.schedule(wait=0, warmup=1, active=0)
        with pytest.warns(UserWarning, match="Profiler won't be using warmup"):
            lib.profiler.schedule(wait=0, warmup=0, active=1)
        with pytest.raises(AssertionError, match="No valid profiler activities found"):
            lib.profiler.profile(activities=[])


def test_tensorboard_trace_handler(tmp_path):
    P = tp.profiler
    with P.profile(schedule=P.schedule(wait=0, warmup=1, active=1, repeat=1),
                   on_trace_ready=P.tensorboard_trace_handler(str(tmp_path / "tb"), "worker0")
                   ) as p:
        for _ in range(3):
            tp.ones(2).exp()
            p.step()
    files = os.listdir(tmp_path / "tb")
    assert len(files) == 1 and re.fullmatch(r"worker0\.\d+\.pt\.trace\.json", files[0])
    names = {e.get("name") for e in _load_trace(tmp_path / "tb" / files[0])["traceEvents"]}
    assert {"ProfilerStep#1", "aten::exp"} <= names


def test_record_function_decorator_nesting_and_no_profiler():
    @tp.profiler.record_function("outer_fn")
    def f(x):
        with tp.autograd.profiler.record_function("inner"):
            return x * 2
    f(tp.ones(1))                       # no profiler: nothing recorded, nothing fails
    with tp.autograd.profiler.profile() as prof:
        f(f(tp.ones(3)))
    ev = prof.function_events
    outer = [e for e in ev if e.name == "outer_fn"]
    assert len(outer) == 2
    inner = [e for e in ev if e.name == "inner"]
    assert all(e.cpu_parent.name == "outer_fn" for e in inner)
    assert next(e for e in ev if e.name == "aten::mul").cpu_parent.name == "inner"
    assert tp.autograd.profiler.record_function is tp.profiler.record_function
    assert "aten::mul" in prof.table()


def test_legacy_profile_api():
    with pytest.warns(FutureWarning):
        tp.autograd.profiler.profile(use_cuda=True)
    with tp.autograd.profiler.profile(enabled=False) as prof:
        tp.ones(2)
    with tp.autograd.profiler.profile() as prof:
        tp.ones(2).add(1)
        mid = prof.key_averages()       # answers while recording, as PyTorch's
    assert {a.key for a in mid} <= {a.key for a in prof.key_averages()}
    assert prof.total_average().key == "Total"
    assert prof.self_cpu_time_total > 0
    with pytest.raises(RuntimeError, match="Profiler context manager is not reentrant"):
        with prof:
            pass


def test_nothing_installed_when_not_profiling():
    """Off: no dispatch mode, no backward hook; ops run as before (overhead measured in
    benchmarks/bench_profiler_off.py)."""
    base = len(_get_current_dispatch_mode_stack())
    with tp.profiler.profile():
        assert len(_get_current_dispatch_mode_stack()) == base + 1
        assert tp.autograd._profile_backward is not None
    assert len(_get_current_dispatch_mode_stack()) == base
    assert tp.autograd._profile_backward is None
    assert tp.autograd.profiler._collector is None
    x = tp.ones(64)
    t0 = time.perf_counter()
    for _ in range(200):
        x.add(1)
    assert time.perf_counter() - t0 < 1.0


@pytest.mark.skipif(not tp.cuda.is_available(), reason="needs a GPU")
def test_cuda_activity_times_ops_with_cuda_events(tmp_path):
    P = tp.profiler
    a = tp.randn(512, 512, device="cuda")
    with P.profile(activities=[P.ProfilerActivity.CPU, P.ProfilerActivity.CUDA]) as prof:
        for _ in range(3):
            (a @ a).relu_()
    mm = next(e for e in prof.events() if e.name in ("aten::mm", "aten::matmul"))
    assert mm.device_time_total > 0 and mm.self_device_time_total > 0
    table = prof.key_averages().table(sort_by="cuda_time_total")
    assert "Self CUDA" in table and "Self CUDA time total" in table
    path = tmp_path / "cuda.json"
    prof.export_chrome_trace(str(path))
    kernels = [e for e in _load_trace(path)["traceEvents"] if e.get("cat") == "kernel"]
    assert kernels and all(e["dur"] >= 0 for e in kernels)


def test_profiling_does_not_change_results():
    """Same values, gradients and random draws with and without a profile recording."""
    def step(profiled):
        tp.manual_seed(0)
        m = tp.nn.Sequential(tp.nn.Linear(5, 7), tp.nn.Dropout(0.3), tp.nn.Tanh())
        x = tp.randn(4, 5)
        ctx = tp.profiler.profile(record_shapes=True, profile_memory=True) if profiled \
            else tp.autograd.profiler.profile(enabled=False)
        with ctx:
            y = m(x)
            y.pow(2).sum().backward()
            y.add_(1)
        return y.tolist(), m[0].weight.grad.tolist()
    assert step(True) == step(False)
