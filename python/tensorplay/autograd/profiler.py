"""The op profiler (PyTorch's ``torch.autograd.profiler``): ``profile``, ``record_function``.

How ops are recorded (docs/architecture.md, "Profiler"): while a profiler records, a
``TorchDispatchMode`` (``_Collector``) sits on this thread's dispatch stack and sees every
op below autograd, forward and backward alike; it times the call with ``perf_counter_ns``
and, when the op's tensors are on a GPU and CUDA activity is on, with a pair of
``tp.cuda.Event``s read after the profile stops. ``record_function`` ranges and backward
nodes (timed by node pre/post hooks put on the graph when ``backward`` starts) become events
around the ops inside them. With no profiler recording nothing is installed: ops run as
before, and ``record_function`` is a check of one global.
"""
import contextlib
import threading
import time
import traceback
import warnings

from tensorplay import _C, autograd
from tensorplay.autograd.profiler_util import (DeviceType, EventList, FunctionEvent,  # noqa: F401
                                               FunctionEventAvg, Interval, _format_time)
from tensorplay.utils._python_dispatch import TorchDispatchMode

__all__ = ["profile", "record_function", "EventList", "FunctionEvent", "FunctionEventAvg"]

_collector = None        # the recording _Collector, or None (nothing recorded)


class _Rec:
    """One raw range: filled while recording, turned into a FunctionEvent at the end."""
    __slots__ = ("name", "overload", "cat", "tid", "t0", "t1", "shapes", "types", "strides",
                 "stack", "mem", "gpu", "flops", "seq")

    def __init__(self, name, cat, tid, t0):
        self.name, self.cat, self.tid, self.t0 = name, cat, tid, t0
        self.t1 = None
        self.overload = ""
        self.shapes = self.types = self.strides = self.stack = self.gpu = None
        self.mem = 0
        self.flops = 0
        self.seq = -1


def _tensors(args, kwargs):
    out = []
    for a in list(args) + list(kwargs.values()):
        if isinstance(a, _C.Tensor):
            out.append(a)
        elif isinstance(a, (list, tuple)):
            out.extend(x for x in a if isinstance(x, _C.Tensor))
    return out


# the C++ scalar type names PyTorch's traces give in "Input type"
_CPP_TYPE = {"float32": "float", "float64": "double", "float16": "c10::Half",
             "bfloat16": "c10::BFloat16", "int64": "long int", "int32": "int",
             "int16": "short int", "int8": "signed char", "uint8": "unsigned char",
             "bool": "bool", "complex64": "c10::complex<float>",
             "complex128": "c10::complex<double>"}


def _type_name(a):
    if isinstance(a, _C.Tensor):
        name = str(a.dtype).rsplit(".", 1)[-1]
        return _CPP_TYPE.get(name, name)
    if isinstance(a, (bool, int, float, complex)):
        return "Scalar"
    if isinstance(a, (list, tuple)) and all(isinstance(x, (int, float)) for x in a):
        return "ScalarList"
    if isinstance(a, (list, tuple)) and a and all(isinstance(x, _C.Tensor) for x in a):
        return "TensorList"
    return ""


def _flops(name, shapes):
    try:
        if name == "aten::mm":
            (m, k), (_, n) = shapes[0], shapes[1]
            return 2 * m * k * n
        if name == "aten::addmm":
            (m, k), (_, n) = shapes[1], shapes[2]
            return 2 * m * k * n
        if name == "aten::bmm":
            (b, m, k), (_, _, n) = shapes[0], shapes[1]
            return 2 * b * m * k * n
    except (ValueError, IndexError, TypeError):
        pass
    return 0


def _user_stack():
    """``file(line): function`` frames of the caller, innermost first, without the
    library's own frames (PyTorch's with_stack format)."""
    out = []
    for fs in reversed(traceback.extract_stack()[:-3]):
        f = fs.filename.replace("\\", "/")
        if "/tensorplay/" in f and "/tensorplay/nn/modules/" not in f:
            continue
        out.append(f"{fs.filename}({fs.lineno}): {fs.name}")
    return out


class _Collector(TorchDispatchMode):
    """The dispatch mode that records ops, and the store of every range of one profile."""

    def __init__(self, record_shapes=False, profile_memory=False, with_stack=False,
                 with_flops=False, use_cuda=False):
        super().__init__()
        self.record_shapes = record_shapes or with_flops
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.with_flops = with_flops
        self.use_cuda = use_cuda
        self.recs = []
        self.t0_ns = time.perf_counter_ns()
        self.wall0_ns = time.time_ns()
        self.gpu_ref = None
        self._pushed = False

    # ---------------------------------------------------------------- recording
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        full = func.name()
        name, _, overload = full.partition(".")
        rec = _Rec(name, "cpu_op", threading.get_native_id(), 0)
        rec.overload = "" if overload == "default" else overload
        if self.record_shapes:
            flat = list(args) + list(kwargs.values())
            rec.shapes = [list(a.shape) if isinstance(a, _C.Tensor) else [] for a in flat]
            rec.types = [_type_name(a) for a in flat]
            rec.strides = [list(a.stride()) if isinstance(a, _C.Tensor)
                           else [] for a in flat]
            if self.with_flops:
                rec.flops = _flops(name, rec.shapes)
        if self.with_stack:
            rec.stack = _user_stack()
        gpu = None
        if self.use_cuda:
            dev = next((t.device for t in _tensors(args, kwargs) if t.device.type == "cuda"), None)
            if dev is not None:
                from tensorplay.cuda import Event, current_stream
                stream = current_stream(dev)
                gpu = (Event(enable_timing=True), Event(enable_timing=True), dev.index or 0,
                       stream.cuda_stream)
                gpu[0].record(stream)
        self.recs.append(rec)
        rec.t0 = time.perf_counter_ns()
        try:
            out = func(*args, **kwargs)
        finally:
            rec.t1 = time.perf_counter_ns()
            if gpu is not None:
                gpu[1].record(current_stream(gpu[2]))
                rec.gpu = gpu
        if self.profile_memory:
            ins = {t.untyped_storage().data_ptr() for t in _tensors(args, kwargs)}
            outs = out if isinstance(out, (list, tuple)) else (out,)
            for t in outs:
                if isinstance(t, _C.Tensor) and t.untyped_storage().data_ptr() not in ins:
                    ins.add(t.untyped_storage().data_ptr())
                    rec.mem += t.untyped_storage().nbytes()
        return out

    def begin(self, name, cat="user_annotation"):
        rec = _Rec(name, cat, threading.get_native_id(), time.perf_counter_ns())
        self.recs.append(rec)
        return rec

    @staticmethod
    def end(rec):
        rec.t1 = time.perf_counter_ns()

    # -------------------------------------------------------------- on and off
    def start(self):
        global _collector
        if _collector is not None:
            raise RuntimeError("Profiler is already enabled on this thread")
        if self.use_cuda:
            import tensorplay.cuda
            if tensorplay.cuda.is_available():
                from tensorplay.cuda import Event
                tensorplay.cuda.synchronize()
                self.gpu_ref = Event(enable_timing=True)
                self.gpu_ref.record()
                self.gpu_ref_ns = time.perf_counter_ns()
            else:
                self.use_cuda = False
        self.__enter__()
        self._pushed = True
        _collector = self
        autograd._profile_backward = self._hook_backward

    def stop(self):
        global _collector
        if not self._pushed:
            return
        from tensorplay.utils._python_dispatch import _get_current_dispatch_mode
        if _get_current_dispatch_mode() is not self:
            raise RuntimeError("profiler: stopped while a dispatch mode entered inside the "
                               "profile is still active")
        self.__exit__(None, None, None)
        self._pushed = False
        _collector = None
        autograd._profile_backward = None
        end = time.perf_counter_ns()
        for rec in self.recs:           # ranges still open (a record_function not exited)
            if rec.t1 is None:
                rec.t1 = end
        if self.gpu_ref is not None:
            import tensorplay.cuda
            tensorplay.cuda.synchronize()

    # -------------------------------------------------------- backward nodes
    def hook_graph(self, roots):
        """Puts pre/post hooks on every node reachable from ``roots`` (grad_fns), so that
        each node's run in the coming backward becomes an event. Returns the handles."""
        handles, seen, todo = [], set(), [r for r in roots if r is not None]
        while todo:
            node = todo.pop()
            if node in seen:
                continue
            seen.add(node)
            todo.extend(n for n, _ in node.next_functions if n is not None)
            name = node.name()
            open_recs = []

            def pre(grads, name=name, open_recs=open_recs):
                outer = self.begin("autograd::engine::evaluate_function: " + name, "cpu_op")
                open_recs.append((outer, self.begin(name, "cpu_op")))

            def post(grad_inputs, grad_outputs, open_recs=open_recs):
                if open_recs:
                    outer, inner = open_recs.pop()
                    self.end(inner)
                    self.end(outer)
            handles.append(node.register_prehook(pre))
            handles.append(node.register_hook(post))
        return handles

    def _hook_backward(self, tensors):
        return self.hook_graph([t.grad_fn for t in tensors if isinstance(t, _C.Tensor)])

    # ------------------------------------------------------------- results
    def _us(self, ns):
        return (ns - self.t0_ns) / 1000.0

    def function_events(self):
        use_device = "cuda" if self.use_cuda else None
        events = EventList(use_device=use_device, profile_memory=self.profile_memory,
                           with_flops=self.with_flops)
        recs = sorted((r for r in self.recs if r.t1 is not None),
                      key=lambda r: (r.tid, r.t0, -r.t1))
        stacks = {}
        gpu_id = 1 << 20
        for i, r in enumerate(recs):
            evt = FunctionEvent(
                id=i + 1, name="ProfilerStep*" if r.name.startswith("ProfilerStep#") else r.name,
                trace_name=r.name, thread=r.tid, start_us=self._us(r.t0),
                end_us=self._us(r.t1), overload_name=r.overload,
                input_shapes=r.shapes, input_types=r.types, input_strides=r.strides,
                stack=r.stack, use_device=use_device, cpu_memory_usage=r.mem,
                is_user_annotation=r.cat == "user_annotation", category=r.cat,
                flops=r.flops)
            if r.gpu is not None:
                start, stop, dev, stream = r.gpu
                dur = start.elapsed_time(stop) * 1000.0
                ts = self._us(self.gpu_ref_ns) + self.gpu_ref.elapsed_time(start) * 1000.0
                gpu_id += 1
                k = FunctionEvent(id=gpu_id, name=r.name, thread=stream, start_us=ts,
                                  end_us=ts + dur, device_type=DeviceType.CUDA,
                                  device_index=dev, use_device=use_device, category="kernel")
                evt.append_kernel(r.name, dev, dur)
                evt.device_events.append(k)
            stack = stacks.setdefault(r.tid, [])
            while stack and stack[-1].time_range.end <= evt.time_range.start:
                stack.pop()
            while stack and stack[-1].time_range.end < evt.time_range.end:
                stack.pop()
            if stack:
                evt.set_cpu_parent(stack[-1])
                stack[-1].append_cpu_child(evt)
            stack.append(evt)
            events.append(evt)
        events.sort(key=lambda e: e.time_range.start)
        return events


class record_function(contextlib.ContextDecorator):
    """Marks a block (``with record_function("name"):``) or a function (as a decorator)
    as a named range in the profile; the ops inside are its children. Without a profiler
    recording it does nothing."""

    def __init__(self, name, args=None):
        self.name = name
        self.args = args
        self.run_callbacks_on_exit = True
        self._open = []

    def __enter__(self):
        c = _collector
        self._open.append(c.begin(self.name) if c is not None else None)
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        rec = self._open.pop() if self._open else None
        if rec is not None and self.run_callbacks_on_exit:
            rec.t1 = time.perf_counter_ns()
        return False

    def _call_end_callbacks_on_future(self, fut):
        if not self.run_callbacks_on_exit:
            raise RuntimeError("_call_end_callbacks_on_future can only be called once.")
        self.run_callbacks_on_exit = False
        rec = self._open.pop() if self._open else None
        if rec is None:
            return fut

        def done(f):
            rec.t1 = time.perf_counter_ns()
            return f.value() if hasattr(f, "value") else f
        if hasattr(fut, "then"):
            return fut.then(done)
        rec.t1 = time.perf_counter_ns()
        return fut


class profile:
    """The autograd profiler (PyTorch's legacy API, also what ``tp.profiler.profile``
    builds on)::

        with tp.autograd.profiler.profile(record_shapes=True) as prof:
            model(x).sum().backward()
        print(prof.key_averages().table(sort_by="self_cpu_time_total"))
    """

    def __init__(self, enabled=True, *, use_cuda=False, use_device=None, record_shapes=False,
                 with_flops=False, profile_memory=False, with_stack=False, with_modules=False,
                 use_kineto=False, use_cpu=True, experimental_config=None, acc_events=False,
                 custom_trace_id_callback=None):
        self.enabled = enabled
        if not enabled:
            return
        if use_cuda:
            warnings.warn("The attribute `use_cuda` will be deprecated soon, please use "
                          "``use_device = 'cuda'`` instead.", FutureWarning, stacklevel=2)
            use_device = "cuda"
        if use_device not in (None, "cuda", "cpu"):
            raise AssertionError(f"{use_device} is not a supported device type")
        self.use_device = use_device if use_device != "cpu" else None
        self.record_shapes = record_shapes
        self.with_flops = with_flops
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.with_modules = with_modules
        self.use_cpu = use_cpu
        self.acc_events = acc_events
        self.entered = False
        self.function_events = None
        self._collector = None
        self._all_events = []

    def _start(self):
        self._collector = _Collector(self.record_shapes, self.profile_memory, self.with_stack,
                                     self.with_flops, use_cuda=self.use_device == "cuda")
        self._collector.start()

    def _stop(self):
        c = self._collector
        c.stop()
        events = c.function_events()
        if self.acc_events and self.function_events is not None:
            events = EventList(list(self.function_events) + list(events),
                               use_device=events._use_device,
                               profile_memory=self.profile_memory, with_flops=self.with_flops)
        self.function_events = events

    @property
    def _base_time(self):
        return self._collector.wall0_ns if self._collector is not None else None

    def __enter__(self):
        if not self.enabled:
            return self
        if self.entered:
            raise RuntimeError("Profiler context manager is not reentrant")
        self.entered = True
        self._start()
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        if not self.enabled:
            return False
        self._stop()
        return False

    def __repr__(self):
        if self.function_events is None:
            return "<unfinished torch.autograd.profile>"
        return repr(self.function_events)

    def __str__(self):
        if self.function_events is None:
            return "<unfinished torch.autograd.profile>"
        return str(self.function_events)

    def _check_finish(self):
        """Makes ``function_events`` available: while still recording, the ranges closed
        so far (as PyTorch's, which also answers mid-profile)."""
        if self.function_events is None:
            if self._collector is None:
                raise RuntimeError("Profiler didn't finish running")
            return self._collector.function_events()
        return self.function_events

    def events(self):
        return self._check_finish()

    def table(self, sort_by=None, row_limit=100, max_src_column_width=75,
              max_name_column_width=55, max_shapes_column_width=80, header=None,
              top_level_events_only=False, time_unit=None):
        return self._check_finish().table(
            sort_by=sort_by, row_limit=row_limit, max_src_column_width=max_src_column_width,
            max_name_column_width=max_name_column_width,
            max_shapes_column_width=max_shapes_column_width, header=header,
            top_level_events_only=top_level_events_only, time_unit=time_unit)

    table.__doc__ = EventList.table.__doc__

    def export_chrome_trace(self, path):
        """Writes the profile as a Chrome trace (open it in Perfetto or chrome://tracing)."""
        self._check_finish().export_chrome_trace(
            path, base_time_ns=self._base_time,
            extra={"record_shapes": int(bool(self.record_shapes))})

    def export_stacks(self, path, metric="self_cpu_time_total"):
        if not self.with_stack:
            raise AssertionError("export_stacks() requires with_stack=True")
        self._check_finish().export_stacks(path, metric)

    def key_averages(self, group_by_input_shape=False, group_by_stack_n=0,
                     group_by_overload_name=False):
        return self._check_finish().key_averages(group_by_input_shape, group_by_stack_n,
                                                 group_by_overload_name)

    key_averages.__doc__ = EventList.key_averages.__doc__

    def total_average(self):
        return self._check_finish().total_average()

    @property
    def self_cpu_time_total(self):
        """Total time spent on CPU (the sum of the events' self times)."""
        return self._check_finish().self_cpu_time_total

