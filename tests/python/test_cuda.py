"""tensorplay.cuda: the no-GPU behaviour (runs everywhere) and, on a machine with a GPU,
the runtime (devices, streams, events), the caching allocator, device copies of every
dtype and pinned memory, compared with torch where useful."""
import gc

import numpy as np
import pytest
import torch

import tensorplay as tp

HAS_GPU = tp.cuda.is_available()
gpu = pytest.mark.skipif(not HAS_GPU, reason="no CUDA GPU")
no_gpu = pytest.mark.skipif(HAS_GPU, reason="checks the behaviour without a GPU")
COMPILED = bool(tp._C._cuda_compiled)

DTYPES = ("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32",
          "float64")


def _sample(dtype, shape=(5, 7)):
    g = np.random.default_rng(0)
    t = torch.from_numpy(g.standard_normal(shape) * 50).to(getattr(torch, dtype))
    return t, tp.tensor(t.to(torch.float64).numpy() if dtype == "bfloat16" else t.numpy(),
                        dtype=getattr(tp, dtype))


# ---------------------------------------------------------------- everywhere


def test_exceptions_exist():
    assert issubclass(tp.cuda.OutOfMemoryError, RuntimeError)
    assert tp.cuda.OutOfMemoryError is tp.OutOfMemoryError
    assert issubclass(torch.cuda.OutOfMemoryError, RuntimeError)


def test_memory_module_names():
    for name in ("memory_allocated", "memory_reserved", "max_memory_allocated",
                 "max_memory_reserved", "reset_peak_memory_stats", "memory_stats",
                 "memory_summary", "mem_get_info", "set_per_process_memory_fraction",
                 "empty_cache", "memory_snapshot"):
        assert hasattr(tp.cuda.memory, name) and hasattr(torch.cuda.memory, name)
        assert getattr(tp.cuda, name) is getattr(tp.cuda.memory, name)


def test_to_positional_bools():
    """to(dtype, non_blocking, copy): bools are flags, never a device ordinal."""
    x, t = tp.ones(2), torch.ones(2)
    assert x.to(tp.float32, False, True).data_ptr() != x.data_ptr()
    assert t.to(torch.float32, False, True).data_ptr() != t.data_ptr()
    assert x.to(tp.float32, False).data_ptr() == x.data_ptr()
    assert x.to("cpu", tp.float64, False).dtype == tp.float64
    assert x.to(tp.float64, True).device == tp.device("cpu")


@no_gpu
def test_no_gpu_queries():
    assert tp.cuda.is_available() is False == torch.cuda.is_available()
    assert tp.cuda.device_count() == 0
    assert tp.cuda.memory_allocated() == 0 == torch.cuda.memory_allocated()
    assert tp.cuda.memory_reserved() == 0
    assert tp.cuda.max_memory_allocated() == 0
    assert dict(tp.cuda.memory_stats()) == {}
    tp.cuda.empty_cache()
    tp.cuda.reset_peak_memory_stats()


@no_gpu
@pytest.mark.parametrize("call", ["current_device", "synchronize", "get_device_name",
                                  "get_device_properties", "current_stream", "mem_get_info",
                                  "get_device_capability"])
def test_no_gpu_calls_raise(call):
    expected = AssertionError if not COMPILED else RuntimeError
    with pytest.raises(expected):
        getattr(tp.cuda, call)()
    if not COMPILED:
        with pytest.raises(AssertionError, match="not compiled with CUDA enabled"):
            getattr(torch.cuda, call)()


@no_gpu
def test_no_gpu_tensors():
    x = tp.ones(3)
    with pytest.raises((AssertionError, RuntimeError)):
        x.cuda()
    with pytest.raises((AssertionError, RuntimeError, NotImplementedError)):
        x.to("cuda")
    with pytest.raises((AssertionError, RuntimeError, NotImplementedError)):
        tp.zeros(2, device="cuda")
    assert x.is_pinned() is False
    with pytest.raises(RuntimeError):
        x.pin_memory()
    with pytest.raises(RuntimeError):
        tp.cuda.Stream()
    assert x.cpu() is x


@no_gpu
@pytest.mark.skipif(COMPILED, reason="a CUDA build without a GPU can create events")
def test_no_gpu_event():
    with pytest.raises(RuntimeError):
        tp.cuda.Event()


# ---------------------------------------------------------------- on a GPU


@pytest.fixture
def clean():
    gc.collect()
    tp.cuda.synchronize()
    tp.cuda.empty_cache()
    yield
    gc.collect()
    tp.cuda.synchronize()
    tp.cuda.empty_cache()


@gpu
def test_device_queries_match_torch():
    assert tp.cuda.device_count() == torch.cuda.device_count()
    assert tp.cuda.current_device() == 0
    p, tp_ = torch.cuda.get_device_properties(0), tp.cuda.get_device_properties(0)
    assert tp_.name == p.name == tp.cuda.get_device_name(0) == tp.cuda.get_device_name()
    assert (tp_.major, tp_.minor) == (p.major, p.minor) == tp.cuda.get_device_capability(0)
    assert tp_.total_memory == p.total_memory
    assert tp_.multi_processor_count == p.multi_processor_count
    free, total = tp.cuda.mem_get_info()
    assert 0 < free <= total == p.total_memory
    assert "name=" in repr(tp_)


@gpu
def test_device_guard_and_set_device():
    tp.cuda.set_device(0)
    assert tp.cuda.current_device() == 0
    with tp.cuda.device(0):
        assert tp.cuda.current_device() == 0
    with tp.cuda.device("cuda:0"):
        x = tp.ones(2, device="cuda")
    assert x.device == tp.device("cuda:0")
    assert str(x.device) == "cuda:0" and x.is_cuda and x.device.index == 0
    with pytest.raises(RuntimeError, match="invalid device ordinal"):
        tp.cuda.set_device(tp.cuda.device_count())
    assert tp.cuda.current_device() == 0
    if tp.cuda.device_count() > 1:
        with tp.cuda.device(1):
            assert tp.cuda.current_device() == 1
            y = tp.ones(2, device="cuda")
        assert tp.cuda.current_device() == 0 and y.device.index == 1
        z = y.to("cuda:0")
        assert z.device.index == 0 and z.tolist() == [1.0, 1.0]


@gpu
@pytest.mark.parametrize("dtype", DTYPES)
def test_round_trip_every_dtype(dtype):
    ref, x = _sample(dtype)
    d = x.cuda()
    assert d.device.type == "cuda" and d.dtype == x.dtype and d.shape == x.shape
    assert d.cpu().tolist() == x.tolist()
    # non-contiguous sources on either side
    assert x.t().cuda().cpu().tolist() == x.t().tolist()
    assert x[:, ::2].to("cuda:0").cpu().tolist() == x[:, ::2].tolist()
    assert d.t().cpu().tolist() == x.t().tolist()
    assert d[1:, ::3].cpu().tolist() == x[1:, ::3].tolist()
    assert d[2].cpu().tolist() == x[2].tolist()
    # torch agrees on the values
    assert ref.cuda().cpu().tolist() == ref.tolist()
    # device-to-device copy into a strided destination
    e = tp.zeros(7, 5, dtype=x.dtype, device="cuda")
    e.copy_(d.t())
    assert e.cpu().tolist() == x.t().tolist()
    assert tp.tensor(x.tolist(), dtype=x.dtype, device="cuda").cpu().tolist() == x.tolist()


LAYOUTS = {  # Note [Strided copies]: merged dimensions, 16/8/4/2-byte units, element units
    "head_split": lambda t: t.reshape(2, 6, 3, 64).transpose(1, 2),
    "transpose": lambda t: t.reshape(36, 64).t(),
    "odd_offset": lambda t: t.reshape(36, 64)[1:, 1:63],
    "narrow_rows": lambda t: t.reshape(2, 6, 3, 64)[:, :, :, :24].transpose(1, 2),
    "step": lambda t: t.reshape(36, 64)[::3, ::2],
    "broadcast": lambda t: t.reshape(36, 64)[:1].expand(5, 36, 64),
    "channels_last": lambda t: t.reshape(2, 6, 3, 64).permute(0, 2, 3, 1),
}


@gpu
@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("dtype", ["bool", "uint8", "int16", "bfloat16", "float32", "float64"])
def test_strided_copy_and_cast_layouts(dtype, layout):
    _, x = _sample(dtype, (2304,))
    view = LAYOUTS[layout]
    want = view(x)
    d = view(x.cuda())
    assert d.contiguous().cpu().tolist() == want.contiguous().tolist()
    # into a strided destination, and each dtype pair through the cast kernel
    out = tp.zeros(want.shape, dtype=x.dtype, device="cuda").transpose(0, 1).contiguous().transpose(0, 1)
    out.copy_(d)
    assert out.cpu().tolist() == want.tolist()
    for other in ["float32", "bfloat16", "int64"]:
        if other != dtype:
            assert d.to(getattr(tp, other)).cpu().tolist() == want.to(getattr(tp, other)).tolist()
    # a contiguous cast from an address off the vector alignment, with a tail
    flat = x.cuda()[3:]
    assert flat.to(tp.float64).cpu().tolist() == x[3:].to(tp.float64).tolist()
    # fill of a strided view
    z = tp.zeros(want.shape, dtype=x.dtype, device="cuda")
    z.transpose(0, 1).fill_(1)
    assert z.cpu().tolist() == tp.ones(want.shape, dtype=x.dtype).tolist()


@gpu
def test_copy_converts_and_broadcasts():
    x = tp.tensor([1.5, -2.25, 3.0])
    d = tp.empty(2, 3, dtype=tp.float64, device="cuda")
    d.copy_(x)  # host->device with conversion and broadcast
    assert d.cpu().tolist() == [[1.5, -2.25, 3.0]] * 2
    i = tp.empty(3, dtype=tp.int32, device="cuda")
    i.copy_(d[0])  # device->device between dtypes
    assert i.cpu().tolist() == [1, -2, 3]
    h = tp.empty(2, 3, dtype=tp.float16)
    h.copy_(d[1])  # device->host, broadcast and converted
    assert h.tolist() == [[1.5, -2.25, 3.0]] * 2
    assert x.to("cuda", tp.float64).dtype == tp.float64
    assert d.to(tp.float64) is d


@gpu
@pytest.mark.parametrize("dtype", DTYPES)
def test_factories(dtype):
    dt = getattr(tp, dtype)
    assert tp.zeros(3, 4, dtype=dt, device="cuda").cpu().tolist() == tp.zeros(3, 4, dtype=dt).tolist()
    assert tp.ones(5, dtype=dt, device="cuda").cpu().tolist() == tp.ones(5, dtype=dt).tolist()
    assert tp.full((2, 2), 1, dtype=dt, device="cuda").cpu().tolist() == [[tp.ones(1, dtype=dt).item()] * 2] * 2
    z = tp.zeros(4, 4, dtype=dt, device="cuda")
    z.select(1, 2).fill_(1)
    expected = tp.zeros(4, 4, dtype=dt)
    expected.select(1, 2).fill_(1)
    assert z.cpu().tolist() == expected.tolist()
    assert tp.empty(0, dtype=dt, device="cuda").cpu().tolist() == []
    like = tp.ones_like(z)
    assert like.device == z.device and like.cpu().tolist() == tp.ones(4, 4, dtype=dt).tolist()
    assert tp.zeros_like(z.t()).device.type == "cuda"
    assert z.t().contiguous().cpu().tolist() == expected.t().tolist()
    c = z.clone()
    assert c.data_ptr() != z.data_ptr() and c.cpu().tolist() == expected.tolist()


@gpu
def test_scalars_printing_numpy_and_errors():
    x = tp.tensor([[1.0, 2.0], [3.0, 4.0]], device="cuda")
    assert x[1, 0].item() == 3.0 and float(x[0, 1]) == 2.0
    assert x.tolist() == [[1.0, 2.0], [3.0, 4.0]]
    assert repr(x) == "tensor([[1., 2.],\n        [3., 4.]], device='cuda:0')"
    assert repr(x) == repr(torch.tensor([[1.0, 2.0], [3.0, 4.0]], device="cuda"))
    with pytest.raises(TypeError, match="can't convert cuda:0 device type tensor to numpy"):
        x.numpy()
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device, but found "
                                           "at least two devices"):
        tp.ones(2, 2) + x
    assert (x + x).tolist() == [[2.0, 4.0], [6.0, 8.0]]
    assert x.cpu().device == tp.device("cpu")


@gpu
def test_streams():
    default = tp.cuda.default_stream()
    assert tp.cuda.current_stream() == default and default.cuda_stream == 0
    s = tp.cuda.Stream()
    assert s != default and s.device == tp.device("cuda:0")
    with tp.cuda.stream(s):
        assert tp.cuda.current_stream() == s
        x = tp.ones(1 << 20, device="cuda")
    assert tp.cuda.current_stream() == default
    s.synchronize()
    assert s.query()
    assert x.cpu()[-1].item() == 1.0
    least, greatest = tp.cuda.priority_range()
    hi = tp.cuda.Stream(priority=-100)
    assert hi.priority == greatest
    assert tp.cuda.Stream(priority=100).priority == least
    ts = torch.cuda.Stream()
    ext = tp.cuda.ExternalStream(ts.cuda_stream)
    assert ext.cuda_stream == ts.cuda_stream and ext.device_index == 0
    tp.cuda.set_stream(ext)
    assert tp.cuda.current_stream() == ext
    tp.cuda.set_stream(default)
    s.wait_stream(default)
    ev = default.record_event()
    s.wait_event(ev)
    s.synchronize()


@gpu
def test_events():
    e0 = tp.cuda.Event()
    assert e0.query() and e0.cuda_event == 0
    start, end = tp.cuda.Event(enable_timing=True), tp.cuda.Event(enable_timing=True)
    start.record()
    big = tp.ones(1 << 24, device="cuda")
    end.record()
    end.synchronize()
    assert end.query() and start.query()
    assert start.elapsed_time(end) >= 0.0
    with pytest.raises(RuntimeError, match="enable_timing"):
        e0.record()
        e0.elapsed_time(end)
    s = tp.cuda.Stream()
    e = tp.cuda.Event()
    e.record()
    e.wait(s)
    s.synchronize()
    del big


@gpu
def test_allocator_stats(clean):
    base, r0 = tp.cuda.memory_allocated(), tp.cuda.memory_reserved()
    x = tp.empty(1000, device="cuda")  # 4000 bytes -> 4096
    assert tp.cuda.memory_allocated() == base + 4096
    small_seg = tp.cuda.memory_reserved() - r0
    assert small_seg in (0, 2 << 20)  # a new small segment (0: an existing one had room)
    st = tp.cuda.memory_stats()
    for key in ("allocated_bytes.all.current", "allocated_bytes.all.peak",
                "reserved_bytes.all.current", "reserved_bytes.all.peak", "num_alloc_retries",
                "num_ooms", "segment.all.current", "active.all.current",
                "allocation.all.current", "allocated_bytes.small_pool.current",
                "requested_bytes.all.current", "inactive_split.all.current"):
        assert key in st, key
    assert st["allocated_bytes.small_pool.current"] >= 4096
    large_before = st["segment.large_pool.current"]
    y = tp.empty(50 << 18, device="cuda")  # 50 MiB: its own large segment
    assert tp.cuda.memory_reserved() == r0 + small_seg + (50 << 20)
    assert tp.cuda.memory_stats()["segment.large_pool.current"] == large_before + 1
    peak = tp.cuda.max_memory_allocated()
    assert peak >= base + 4096 + (50 << 20)
    del x, y
    assert tp.cuda.memory_allocated() == base
    assert tp.cuda.max_memory_allocated() == peak
    assert tp.cuda.memory_reserved() == r0 + small_seg + (50 << 20)  # kept in the cache
    tp.cuda.reset_peak_memory_stats()
    assert tp.cuda.max_memory_allocated() == base
    tp.cuda.empty_cache()
    assert tp.cuda.memory_reserved() == r0
    assert tp.cuda.max_memory_reserved() == r0 + small_seg + (50 << 20)
    assert "Allocated memory" in tp.cuda.memory_summary()
    assert tp.cuda.memory_stats_as_nested_dict()["allocated_bytes"]["all"]["current"] == base
    snap = tp.cuda.memory_snapshot()
    assert all(s["device"] == 0 for s in snap)


@gpu
def test_block_reuse_split_and_merge(clean):
    x = tp.empty(1 << 18, device="cuda")  # 1 MiB, small pool
    p = x.data_ptr()
    del x
    y = tp.empty(1 << 18, device="cuda")
    assert y.data_ptr() == p
    del y
    a = tp.empty(256, device="cuda")  # 1 KiB blocks split from one segment
    b = tp.empty(256, device="cuda")
    assert b.data_ptr() == a.data_ptr() + 1024
    pa = a.data_ptr()
    del a, b
    c = tp.empty(512, device="cuda")  # the merged 2 KiB block
    assert c.data_ptr() == pa
    del c
    big = tp.empty(3 << 20, device="cuda")  # 12 MiB: large pool, 12 MiB segment
    pb = big.data_ptr()
    del big
    again = tp.empty(3 << 20, device="cuda")
    assert again.data_ptr() == pb
    assert tp.cuda.memory_stats()["segment.large_pool.current"] == 1


@gpu
def test_tiny_blocks_come_back_from_their_bin(clean):
    # Note [Small-block reuse]: 512-byte blocks skip the merge and come back in LIFO order
    x = tp.empty(16, device="cuda")
    p = x.data_ptr()
    del x
    y = tp.empty(100, device="cuda")
    assert y.data_ptr() == p
    del y
    many = [tp.empty(8, device="cuda") for _ in range(40)]  # more than the bin holds
    ptrs = {t.data_ptr() for t in many}
    assert len(ptrs) == 40
    del many
    stats = tp.cuda.memory_stats()
    assert stats["active.all.current"] == 0 and tp.cuda.memory_allocated() == 0
    again = [tp.empty(8, device="cuda") for _ in range(40)]
    assert len({t.data_ptr() for t in again} & ptrs) >= 32  # at least the bin's blocks
    del again
    tp.cuda.empty_cache()  # the bin's blocks merge back, so the whole segment is released
    stats = tp.cuda.memory_stats()
    assert tp.cuda.memory_reserved() == 0 and stats["segment.all.current"] == 0
    assert stats["inactive_split.all.current"] == 0


@gpu
def test_per_stream_reuse_and_record_stream(clean):
    s = tp.cuda.Stream()
    x = tp.empty(1 << 16, device="cuda")
    p = x.data_ptr()
    del x
    with tp.cuda.stream(s):
        y = tp.empty(1 << 16, device="cuda")  # another stream: not the cached block
        assert y.data_ptr() != p
    del y
    z = tp.empty(1 << 16, device="cuda")
    assert z.data_ptr() == p
    z.record_stream(s)
    del z
    tp.cuda.synchronize()
    w = tp.empty(1 << 16, device="cuda")  # reused once the recorded event completed
    assert w.data_ptr() == p


@gpu
def test_out_of_memory_then_continue(clean):
    before = tp.cuda.memory_stats().get("num_ooms", 0)
    with pytest.raises(tp.cuda.OutOfMemoryError, match="Tried to allocate") as info:
        tp.empty(10 * 2**40, dtype=tp.uint8, device="cuda")
    assert isinstance(info.value, RuntimeError)
    assert "reserved" in str(info.value) and "free" in str(info.value)
    st = tp.cuda.memory_stats()
    assert st["num_ooms"] == before + 1 and st["num_alloc_retries"] >= 1
    assert tp.ones(10, device="cuda").cpu().tolist() == [1.0] * 10
    total = tp.cuda.get_device_properties().total_memory
    tp.cuda.set_per_process_memory_fraction(0.01)
    try:
        with pytest.raises(tp.cuda.OutOfMemoryError):
            tp.empty(total // 10, dtype=tp.uint8, device="cuda")
    finally:
        tp.cuda.set_per_process_memory_fraction(1.0)
    assert tp.empty(1 << 20, dtype=tp.uint8, device="cuda").numel() == 1 << 20


@gpu
def test_pinned_memory_and_non_blocking():
    x = tp.tensor(np.arange(1 << 20, dtype=np.float32))
    assert not x.is_pinned()
    p = x.pin_memory()
    assert p.is_pinned() and p.tolist()[-3:] == x.tolist()[-3:]
    assert p.pin_memory() is p
    d = p.to("cuda:0", non_blocking=True)
    tp.cuda.synchronize()
    back = tp.empty(1 << 20).pin_memory()
    back.copy_(d, non_blocking=True)
    tp.cuda.current_stream().synchronize()
    assert back.tolist() == x.tolist()
    assert p.t().is_pinned() if p.dim() == 2 else p[10:].is_pinned()
    nb = x.cuda(non_blocking=True)  # pageable: still correct after the call
    assert nb.cpu().tolist() == x.tolist()


@gpu
def test_torch_interop_values():
    t = torch.arange(12, dtype=torch.float32, device="cuda").reshape(3, 4)
    x = tp.tensor(t.cpu().numpy(), device="cuda")
    assert x.cpu().tolist() == t.cpu().tolist()
    assert x.t().cpu().tolist() == t.t().cpu().tolist()


@gpu
def test_backward_runs_on_the_forward_stream():
    # Note [Autograd streams]: a node's backward runs on the stream its forward ran on
    seen = []

    class Probe(tp.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 3

        @staticmethod
        def backward(ctx, g):
            seen.append(tp.cuda.current_stream())
            return g * 3

    s = tp.cuda.Stream()
    x = tp.randn(1 << 20, device="cuda", requires_grad=True)
    with tp.cuda.stream(s):
        y = Probe.apply(x.exp())
    loss = (y * y).sum()  # on the default stream: its gradient reaches Probe from another stream
    loss.backward()
    assert seen == [s] and tp.cuda.current_stream() == tp.cuda.default_stream()
    want = 18 * (2 * x.detach()).exp()  # d/dx (3 e^x)^2
    assert tp.allclose(x.grad, want, rtol=1e-5, atol=1e-5)


# Note [Expandable segments]: the allocator reads its configuration once per process, so
# these run a script in a fresh interpreter with the variable set.
def _run_with_alloc_conf(script, **env):
    import os
    import subprocess
    import sys
    full = {k: v for k, v in os.environ.items()
            if k not in ("TENSORPLAY_CUDA_ALLOC_CONF", "PYTORCH_CUDA_ALLOC_CONF")}
    full.update(env)
    run = subprocess.run([sys.executable, "-c", script], env=full, capture_output=True, text=True,
                         timeout=600)
    assert run.returncode == 0 and run.stdout.strip().endswith("OK"), run.stdout + run.stderr


_EXPANDABLE_PRELUDE = """
import gc
import numpy as np
import tensorplay as tp
MiB = 1 << 20
def large_segments():
    return tp.cuda.memory_stats()["segment.large_pool.current"]
def large_reserved():
    return tp.cuda.memory_stats()["reserved_bytes.large_pool.current"]
def filled(mib, seed):
    host = np.random.default_rng(seed).integers(0, 1 << 30, size=mib * MiB // 4, dtype=np.int32)
    return host, tp.tensor(host).cuda()
"""

_GROW_ONE_SEGMENT = _EXPANDABLE_PRELUDE + """
host_a, a = filled(100, 0)
pa = a.data_ptr()
assert np.array_equal(a.cpu().numpy(), host_a)
assert large_segments() == 1 and large_reserved() == 100 * MiB
del a
host_b, b = filled(150, 1)  # grows the segment: the 100 MiB tail is extended in place
assert b.data_ptr() == pa, (b.data_ptr(), pa)
assert large_segments() == 1 and large_reserved() == 150 * MiB
assert np.array_equal(b.cpu().numpy(), host_b)
snap = [s for s in tp.cuda.memory_snapshot() if s["segment_type"] == "large"]
assert len(snap) == 1 and snap[0]["total_size"] == 150 * MiB and snap[0]["address"] == pa
print("OK")
"""


@gpu
def test_expandable_segment_grows_in_place():
    _run_with_alloc_conf(_GROW_ONE_SEGMENT,
                         TENSORPLAY_CUDA_ALLOC_CONF="max_split_size_mb:128, expandable_segments:True")


@gpu
def test_expandable_segment_from_pytorch_variable_and_override():
    _run_with_alloc_conf(_GROW_ONE_SEGMENT, PYTORCH_CUDA_ALLOC_CONF="expandable_segments:True")
    # TensorPlay's variable wins over PyTorch's: off here, so 150 MiB needs a second segment.
    off = _EXPANDABLE_PRELUDE + """
_, a = filled(100, 0)
del a
_, b = filled(150, 1)
assert large_segments() == 2 and large_reserved() == 250 * MiB
print("OK")
"""
    _run_with_alloc_conf(off, TENSORPLAY_CUDA_ALLOC_CONF="expandable_segments:False",
                         PYTORCH_CUDA_ALLOC_CONF="expandable_segments:True")


@gpu
def test_expandable_segment_growing_shrinking_and_empty_cache():
    script = _EXPANDABLE_PRELUDE + """
keep = []
for i, mib in enumerate([30, 200, 64, 120, 8, 300, 50, 3, 90]):
    host, t = filled(mib, i)
    if i % 2:
        keep.append((host, t))
    del t
    assert large_segments() == 1, i
mapped = large_reserved()
seg = [s for s in tp.cuda.memory_snapshot() if s["segment_type"] == "large"]
assert len(seg) == 1 and seg[0]["total_size"] == mapped
for host, t in keep:
    assert seg[0]["address"] <= t.data_ptr() < seg[0]["address"] + mapped
    assert np.array_equal(t.cpu().numpy(), host)
freed = tp.cuda.memory_stats()["num_device_free"]
del keep, host, t  # t: the last tensor the check loop bound
gc.collect()
tp.cuda.synchronize()
tp.cuda.empty_cache()
st = tp.cuda.memory_stats()
assert st["allocated_bytes.all.current"] == 0, st["allocated_bytes.all.current"]
assert st["reserved_bytes.all.current"] == 0 and st["segment.all.current"] == 0, st
assert st["num_device_free"] > freed
assert tp.cuda.memory_snapshot() == []
host, again = filled(40, 9)  # maps anew at the start of the same address range
assert large_segments() == 1 and large_reserved() == 40 * MiB
assert np.array_equal(again.cpu().numpy(), host)
print("OK")
"""
    _run_with_alloc_conf(script, TENSORPLAY_CUDA_ALLOC_CONF="expandable_segments:True")


@gpu
def test_expandable_segment_out_of_memory_then_continue():
    script = _EXPANDABLE_PRELUDE + """
host, a = filled(64, 0)
try:
    tp.empty(10 * 2**40, dtype=tp.uint8, device="cuda")  # larger than the address range
    raise AssertionError("no OutOfMemoryError")
except tp.cuda.OutOfMemoryError as e:
    assert "Tried to allocate" in str(e) and "reserved" in str(e), str(e)
# Physical memory runs out part way through mapping (cuMemCreate fails): another stream's
# segment holds most of the device, so this stream's growth must roll back cleanly.
free, total = tp.cuda.mem_get_info()
s = tp.cuda.Stream()
with tp.cuda.stream(s):
    hog = tp.empty(free - (4 << 30), dtype=tp.uint8, device="cuda")
before = large_reserved()
try:
    tp.empty(8 << 30, dtype=tp.uint8, device="cuda")
    raise AssertionError("no OutOfMemoryError")
except tp.cuda.OutOfMemoryError as e:
    assert "Tried to allocate 8.00 GiB" in str(e), str(e)
assert large_reserved() <= before
st = tp.cuda.memory_stats()
assert st["num_ooms"] == 2 and st["num_alloc_retries"] >= 2, st
assert np.array_equal(a.cpu().numpy(), host)
del hog
host2, b = filled(100, 1)
assert np.array_equal(b.cpu().numpy(), host2) and np.array_equal(a.cpu().numpy(), host)
print("OK")
"""
    _run_with_alloc_conf(script, TENSORPLAY_CUDA_ALLOC_CONF="expandable_segments:True")


@gpu
def test_save_and_load_cuda_tensors(tmp_path):
    import io
    w = tp.arange(12, dtype=tp.float32, device="cuda").reshape(3, 4)
    state = {"w": w, "row": w[1], "half": w.to(tp.bfloat16), "cpu": tp.ones(2)}
    f = tmp_path / "ckpt.pt"
    tp.save(state, f)
    back = tp.load(f)  # storages come back where they were saved
    assert back["w"].device.type == "cuda" and back["cpu"].device.type == "cpu"
    assert back["row"].data_ptr() == back["w"].data_ptr() + 4 * 4  # still one storage
    assert back["w"].cpu().tolist() == w.cpu().tolist()
    assert back["half"].dtype == tp.bfloat16 and back["half"].float().cpu().tolist() == w.cpu().tolist()
    on_cpu = tp.load(f, map_location="cpu")
    assert on_cpu["w"].device.type == "cpu" and on_cpu["row"].tolist() == [4, 5, 6, 7]
    ref = torch.load(f)  # PyTorch reads it as CUDA tensors too
    assert ref["w"].is_cuda and ref["w"].cpu().tolist() == w.cpu().tolist()
    buf = io.BytesIO()
    torch.save({"t": torch.arange(3.0, device="cuda")}, buf)
    buf.seek(0)
    t = tp.load(buf)["t"]
    assert t.device.type == "cuda" and t.cpu().tolist() == [0, 1, 2]
    with pytest.raises(RuntimeError, match="on CUDA device 7 but tensorplay.cuda.device_count"):
        tp.load(f, map_location="cuda:7")


@gpu
def test_module_cuda_moves_parameters_in_place_and_trains():
    tp.manual_seed(0)
    m = tp.nn.Linear(4, 2)
    opt = tp.optim.SGD(m.parameters(), lr=0.1)
    m(tp.randn(3, 4)).sum().backward()  # a CPU graph and .grad exist before the move
    w = m.weight
    m.cuda()
    assert m.weight is w and w.is_cuda and w.grad.is_cuda
    opt.zero_grad()
    loss = m(tp.randn(3, 4, device="cuda")).pow(2).sum()
    loss.backward()
    assert w.grad.is_cuda and w.grad.shape == w.shape
    opt.step()
