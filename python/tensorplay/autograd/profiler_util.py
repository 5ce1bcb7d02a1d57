"""The profiler's results: ``FunctionEvent`` (one recorded range), ``FunctionEventAvg`` (the
events of one key added up) and ``EventList`` (a list of either, with ``table``,
``key_averages`` and ``export_chrome_trace``), as PyTorch's
``torch.autograd.profiler_util`` has them. Times are in microseconds."""
import gzip
import json
import math
import os
from collections import defaultdict

__all__ = ["EventList", "FunctionEvent", "FunctionEventAvg", "Interval", "DeviceType"]


class DeviceType:
    """The kinds of device an event ran on (the names of PyTorch's ``DeviceType``)."""
    CPU = "CPU"
    CUDA = "CUDA"


class Interval:
    def __init__(self, start, end):
        self.start = start
        self.end = end

    def elapsed_us(self):
        return self.end - self.start


def _format_time(time_us):
    if time_us >= 1e6:
        return f"{time_us / 1e6:.3f}s"
    if time_us >= 1e3:
        return f"{time_us / 1e3:.3f}ms"
    return f"{time_us:.3f}us"


def _format_time_share(time_us, total_us):
    if total_us == 0:
        return "NaN"
    return f"{time_us * 100.0 / total_us:.2f}%"


def _format_memory(nbytes):
    for unit, size in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if abs(nbytes) >= size:
            return f"{nbytes / size:.2f} {unit}"
    return f"{nbytes} B"


class _Formatted:
    """The ``*_str`` forms and per-call averages both event classes share."""

    @property
    def cpu_time(self):
        return 0.0 if self.count == 0 else self.cpu_time_total / self.count

    @property
    def device_time(self):
        return 0.0 if self.count == 0 else self.device_time_total / self.count

    cuda_time = device_time

    @property
    def cpu_time_str(self):
        return _format_time(self.cpu_time)

    @property
    def cpu_time_total_str(self):
        return _format_time(self.cpu_time_total)

    @property
    def self_cpu_time_total_str(self):
        return _format_time(self.self_cpu_time_total)

    @property
    def device_time_str(self):
        return _format_time(self.device_time)

    @property
    def device_time_total_str(self):
        return _format_time(self.device_time_total)

    @property
    def self_device_time_total_str(self):
        return _format_time(self.self_device_time_total)

    @property
    def cuda_time_total(self):
        return self.device_time_total

    @property
    def self_cuda_time_total(self):
        return self.self_device_time_total

    @property
    def cuda_memory_usage(self):
        return self.device_memory_usage

    @property
    def self_cuda_memory_usage(self):
        return self.self_device_memory_usage


class FunctionEvent(_Formatted):
    """One recorded range: an op, a ``record_function`` block, a backward node, or an op's
    span on the GPU (``device_type == DeviceType.CUDA``)."""

    def __init__(self, id, name, thread, start_us, end_us, overload_name="", input_shapes=None,
                 input_types=None, input_strides=None, stack=None, scope=0, use_device=None,
                 cpu_memory_usage=0, device_memory_usage=0, is_async=False, is_remote=False,
                 sequence_nr=-1, node_id=-1, device_type=DeviceType.CPU, device_index=0,
                 is_legacy=False, flops=None, trace_name=None, is_user_annotation=False,
                 category="cpu_op"):
        self.id = id
        self.node_id = node_id
        self.name = name
        self.overload_name = overload_name
        self.trace_name = trace_name if trace_name is not None else name
        self.time_range = Interval(start_us, end_us)
        self.thread = thread
        self.fwd_thread = None
        self.kernels = []            # (name, device, duration_us) of this op's GPU spans
        self.count = 1
        self.cpu_children = []
        self.cpu_parent = None
        self.input_shapes = input_shapes if input_shapes is not None else []
        self.input_types = input_types if input_types is not None else []
        self.input_strides = input_strides if input_strides is not None else []
        self.stack = stack if stack is not None else []
        self.scope = scope
        self.use_device = use_device
        self._own_cpu_memory = cpu_memory_usage
        self._own_device_memory = device_memory_usage
        self.is_async = is_async
        self.is_remote = is_remote
        self.sequence_nr = sequence_nr
        self.device_type = device_type
        self.device_index = device_index
        self.is_legacy = is_legacy
        self.flops = flops or 0
        self.is_user_annotation = is_user_annotation
        self.category = category
        self.device_events = []      # FunctionEvents of this op's GPU spans (for the trace)

    def append_kernel(self, name, device, duration):
        self.kernels.append((name, device, duration))

    def append_cpu_child(self, child):
        self.cpu_children.append(child)

    def set_cpu_parent(self, parent):
        self.cpu_parent = parent

    @property
    def key(self):
        return self.name

    @property
    def cpu_time_total(self):
        return 0 if self.device_type != DeviceType.CPU else self.time_range.elapsed_us()

    @property
    def self_cpu_time_total(self):
        if self.is_async or self.device_type != DeviceType.CPU:
            return 0
        return self.cpu_time_total - sum(c.cpu_time_total for c in self.cpu_children)

    @property
    def device_time_total(self):
        if self.device_type != DeviceType.CPU:
            return self.time_range.elapsed_us()
        return (sum(k[2] for k in self.kernels)
                + sum(c.device_time_total for c in self.cpu_children))

    @property
    def self_device_time_total(self):
        if self.device_type != DeviceType.CPU:
            return self.device_time_total
        return sum(k[2] for k in self.kernels)

    @property
    def cpu_memory_usage(self):
        return self._own_cpu_memory + sum(c.cpu_memory_usage for c in self.cpu_children)

    @property
    def self_cpu_memory_usage(self):
        return self._own_cpu_memory

    @property
    def device_memory_usage(self):
        return self._own_device_memory + sum(c.device_memory_usage for c in self.cpu_children)

    @property
    def self_device_memory_usage(self):
        return self._own_device_memory

    def __repr__(self):
        return (f"<FunctionEvent id={self.id} name={self.name} device_type={self.device_type} "
                f"cpu_time={self.cpu_time_str} start_us={self.time_range.start:.3f} "
                f"end_us={self.time_range.end:.3f} cpu_children={[c.id for c in self.cpu_children]} "
                f"device_time={self.device_time_str} thread={self.thread} "
                f"input_shapes={self.input_shapes} cpu_memory_usage={self.cpu_memory_usage} "
                f"is_async={self.is_async} is_user_annotation={self.is_user_annotation}>")


class FunctionEventAvg(_Formatted):
    """The events of one key (name, and input shapes / stack when grouped by them) added up."""

    def __init__(self):
        self.key = None
        self.count = 0
        self.node_id = 0
        self.is_async = False
        self.is_remote = False
        self.use_device = None
        self.cpu_time_total = 0
        self.device_time_total = 0
        self.self_cpu_time_total = 0
        self.self_device_time_total = 0
        self.input_shapes = None
        self.overload_name = None
        self.stack = None
        self.scope = None
        self.cpu_memory_usage = 0
        self.device_memory_usage = 0
        self.self_cpu_memory_usage = 0
        self.self_device_memory_usage = 0
        self.cpu_children = None
        self.cpu_parent = None
        self.device_type = DeviceType.CPU
        self.is_legacy = False
        self.is_user_annotation = False
        self.flops = 0

    def add(self, other):
        if self.key is None:
            self.key = other.key
            self.node_id = other.node_id
            self.is_async = other.is_async
            self.is_remote = other.is_remote
            self.cpu_parent = other.cpu_parent
            self.cpu_children = other.cpu_children
            self.overload_name = other.overload_name
            self.input_shapes = other.input_shapes
            self.stack = other.stack
            self.scope = other.scope
            self.device_type = other.device_type
            self.is_legacy = other.is_legacy
            self.use_device = other.use_device
            self.is_user_annotation = other.is_user_annotation
        if not isinstance(other, (FunctionEvent, FunctionEventAvg)):
            raise AssertionError("Expected other to be a FunctionEvent or FunctionEventAvg")
        if other.key != self.key:
            raise AssertionError(f"Expected keys to match, but got {other.key} vs {self.key}")
        self.cpu_time_total += other.cpu_time_total
        self.device_time_total += other.device_time_total
        self.self_cpu_time_total += other.self_cpu_time_total
        self.self_device_time_total += other.self_device_time_total
        self.cpu_memory_usage += other.cpu_memory_usage
        self.device_memory_usage += other.device_memory_usage
        self.self_cpu_memory_usage += other.self_cpu_memory_usage
        self.self_device_memory_usage += other.self_device_memory_usage
        self.count += other.count
        self.flops += other.flops or 0
        return self

    def __iadd__(self, other):
        return self.add(other)

    def __repr__(self):
        return (f"<FunctionEventAvg key={self.key} self_cpu_time={self.self_cpu_time_total_str} "
                f"cpu_time={self.cpu_time_str}  self_device_time={self.self_device_time_total_str} "
                f"device_time={self.device_time_str} input_shapes={self.input_shapes} "
                f"cpu_memory_usage={self.cpu_memory_usage} "
                f"device_memory_usage={self.device_memory_usage}>")


class EventList(list):
    """A list of events, with the summaries PyTorch's has."""

    def __init__(self, *args, use_device=None, profile_memory=False, with_flops=False):
        super().__init__(*args)
        self._use_device = use_device
        self._profile_memory = profile_memory
        self._with_flops = with_flops

    @property
    def self_cpu_time_total(self):
        return sum(e.self_cpu_time_total for e in self)

    def table(self, sort_by=None, row_limit=100, max_src_column_width=75,
              max_name_column_width=55, max_shapes_column_width=80, header=None,
              top_level_events_only=False, time_unit=None):
        """The events as a text table, formatted as PyTorch's (one row per event, or per key
        for ``key_averages()``), sorted by the attribute ``sort_by`` (largest first)."""
        return _build_table(self, sort_by=sort_by, header=header, row_limit=row_limit,
                            max_src_column_width=max_src_column_width,
                            max_name_column_width=max_name_column_width,
                            max_shapes_column_width=max_shapes_column_width,
                            with_flops=self._with_flops, profile_memory=self._profile_memory,
                            top_level_events_only=top_level_events_only, time_unit=time_unit)

    def key_averages(self, group_by_input_shapes=False, group_by_stack_n=0,
                     group_by_overload_name=False):
        """One ``FunctionEventAvg`` per name (and input shapes, first ``group_by_stack_n``
        stack frames, overload name when asked), in order of first appearance."""
        stats = defaultdict(FunctionEventAvg)
        for evt in self:
            if evt.device_type != DeviceType.CPU:
                continue
            key = [evt.key, str(evt.node_id)]
            if group_by_input_shapes:
                key.append(str(evt.input_shapes))
            if group_by_stack_n > 0:
                key += evt.stack[:group_by_stack_n]
            if group_by_overload_name:
                key.append(evt.overload_name)
            stats[tuple(key)].add(evt)
        out = EventList(stats.values(), use_device=self._use_device,
                        profile_memory=self._profile_memory, with_flops=self._with_flops)
        for avg in out:
            avg.stack = avg.stack[:group_by_stack_n] if group_by_stack_n else []
            if not group_by_input_shapes:
                avg.input_shapes = ""
            if not group_by_overload_name:
                avg.overload_name = ""
        return out

    def total_average(self):
        """All events added up into one ``FunctionEventAvg`` (key "Total")."""
        total = FunctionEventAvg()
        for evt in self:
            total += evt
            total.key = None
        total.key = "Total"
        return total

    def export_chrome_trace(self, path, *, base_time_ns=None, extra=None):
        """Writes the events as a Chrome trace (JSON with ``traceEvents``; gzipped when
        ``path`` ends in .gz), which chrome://tracing and Perfetto open."""
        _write_chrome_trace(self, path, base_time_ns=base_time_ns, extra=extra)

    def export_stacks(self, path, metric="self_cpu_time_total"):
        """Writes ``frame;frame;... value`` lines (flame graph input) for events with stacks."""
        metric = metric.replace("cuda", "device")
        with open(path, "w") as f:
            for evt in self:
                if evt.stack:
                    value = int(getattr(evt, metric))
                    if value > 0:
                        f.write(";".join(reversed([s.replace(";", "_") for s in evt.stack]))
                                + f" {value}\n")


def _build_table(events, sort_by=None, header=None, row_limit=100, max_src_column_width=75,
                 max_name_column_width=55, max_shapes_column_width=80, with_flops=False,
                 profile_memory=False, top_level_events_only=False, time_unit=None):
    if len(events) == 0:
        return ""
    use_device = events[0].use_device if isinstance(events, EventList) else None
    use_device = getattr(events, "_use_device", None) or use_device
    has_device_time = any(e.self_device_time_total > 0 for e in events)
    has_device_mem = any(e.self_device_memory_usage > 0 for e in events)
    has_shapes = any(e.input_shapes is not None and len(e.input_shapes) > 0 for e in events)
    has_overloads = any(e.overload_name for e in events)
    if sort_by is not None:
        attr = sort_by.replace("cuda", "device").replace("xpu", "device")
        events = EventList(sorted(events, key=lambda e: getattr(e, attr), reverse=True),
                           use_device=use_device, profile_memory=profile_memory,
                           with_flops=with_flops)
    name_width = max(len(e.key) for e in events) + 4
    if max_name_column_width is not None:
        name_width = min(name_width, max_name_column_width)
    shapes_width = max(len(str(e.input_shapes)) for e in events) + 4
    if max_shapes_column_width is not None:
        shapes_width = min(shapes_width, max_shapes_column_width)
    stacks = [e.stack for e in events if e.stack]
    src_width = None
    if stacks:
        src_width = max(len(s) for st in stacks for s in st) + 4
        if max_src_column_width is not None:
            src_width = min(src_width, max_src_column_width)

    dev = use_device.upper() if use_device else "None"
    headers = ["Name"] + (["Overload Name"] if has_overloads else []) + [
        "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg"]
    if has_device_time:
        headers += [f"Self {dev}", f"Self {dev} %", f"{dev} total", f"{dev} time avg"]
    if profile_memory:
        headers += ["CPU Mem", "Self CPU Mem"]
        if use_device and has_device_mem:
            headers += [f"{dev} Mem", f"Self {dev} Mem"]
    headers.append("# of Calls")
    widths = [name_width] * (2 if has_overloads else 1)
    widths += [12] * (len(headers) - len(widths))
    aligns = [">"] * len(widths)
    if has_shapes:
        headers.append("Input Shapes")
        widths.append(shapes_width)
        aligns.append(">")
    if stacks:
        headers.append("Source Location")
        widths.append(src_width)
        aligns.append("<")
    flops_scale = None
    if with_flops:
        raw = [e.flops for e in events if e.flops > 0]
        if raw:
            names = ["FLOPs", "KFLOPs", "MFLOPs", "GFLOPs", "TFLOPs", "PFLOPs"]
            level = int(max(0, min(math.log10(min(raw)) / 3, len(names) - 1)))
            flops_scale = 10.0 ** (-3 * level)
            headers.append(f"Total {names[level]}")
            widths.append(12)
            aligns.append(">")
    row_format = "".join("{: " + a + str(w) + "}  " for a, w in zip(aligns, widths))
    sep = "".join("-" * w + "  " for w in widths)
    line_length = sum(w + 2 for w in widths) - 2

    def fmt_time(us, default):
        if time_unit == "s":
            return f"{us / 1e6:.3f}s"
        if time_unit == "ms":
            return f"{us / 1e3:.3f}ms"
        if time_unit == "us":
            return f"{us:.3f}us"
        return default

    def trim(path):
        if len(path) > src_width:
            path = path[len(path) - src_width:]
            if len(path) > 3:
                path = "..." + path[3:]
        return path

    total_cpu = sum(e.self_cpu_time_total for e in events)
    total_dev = sum(e.self_device_time_total for e in events
                    if not e.is_user_annotation)
    lines = []
    if header is not None:
        lines += ["=" * line_length, header]
    if top_level_events_only:
        lines += ["=" * line_length, "This report only display top-level ops statistics"]
    lines += [sep, row_format.format(*headers), sep]
    shown = 0
    for e in events:
        if shown == row_limit:
            break
        if top_level_events_only and e.cpu_parent is not None:
            continue
        shown += 1
        name = e.key
        if max_name_column_width is not None and len(name) >= max_name_column_width - 3:
            name = name[:max_name_column_width - 3] + "..."
        row = [name]
        if has_overloads:
            ov = e.overload_name or ""
            if max_name_column_width is not None and len(ov) >= max_name_column_width - 3:
                ov = ov[:max_name_column_width - 3] + "..."
            row.append(ov)
        row += [_format_time_share(e.self_cpu_time_total, total_cpu),
                fmt_time(e.self_cpu_time_total, e.self_cpu_time_total_str),
                _format_time_share(e.cpu_time_total, total_cpu) if not e.is_async else 0,
                fmt_time(e.cpu_time_total, e.cpu_time_total_str),
                fmt_time(e.cpu_time, e.cpu_time_str)]
        if has_device_time:
            row += [fmt_time(e.self_device_time_total, e.self_device_time_total_str),
                    _format_time_share(e.self_device_time_total, total_dev),
                    fmt_time(e.device_time_total, e.device_time_total_str),
                    fmt_time(e.device_time, e.device_time_str)]
        if profile_memory:
            row += [_format_memory(e.cpu_memory_usage), _format_memory(e.self_cpu_memory_usage)]
            if use_device and has_device_mem:
                row += [_format_memory(e.device_memory_usage),
                        _format_memory(e.self_device_memory_usage)]
        row.append(e.count)
        if has_shapes:
            row.append(str(e.input_shapes)[:shapes_width])
        if stacks:
            row.append(trim(e.stack[0]) if e.stack else "")
        if flops_scale is not None:
            row.append("--" if e.flops <= 0 else f"{e.flops * flops_scale:8.3f}")
        lines.append(row_format.format(*row))
        if stacks:
            blanks = [""] * (len(headers) - 1 - (flops_scale is not None))
            for entry in e.stack[1:]:
                extra = [""] if flops_scale is not None else []
                lines.append(row_format.format(*(blanks + [trim(entry)] + extra)))
    lines.append(sep)
    lines.append(f"Self CPU time total: {fmt_time(total_cpu, _format_time(total_cpu))}")
    if has_device_time:
        lines.append(f"Self {dev} time total: {fmt_time(total_dev, _format_time(total_dev))}")
    return "".join(line + "\n" for line in lines)


def _write_chrome_trace(events, path, base_time_ns=None, extra=None):
    pid = os.getpid()
    trace = []
    threads = sorted({e.thread for e in events if e.device_type == DeviceType.CPU})
    trace.append({"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "ts": 0,
                  "args": {"name": "python"}})
    trace.append({"ph": "M", "name": "process_labels", "pid": pid, "tid": 0, "ts": 0,
                  "args": {"labels": "CPU"}})
    for tid in threads:
        trace.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "ts": 0,
                      "args": {"name": f"thread {tid} (python)"}})
    gpu_tracks = set()
    for evt in events:
        if evt.device_type != DeviceType.CPU:
            continue
        args = {"External id": evt.id}
        if evt.sequence_nr >= 0:
            args["Sequence number"] = evt.sequence_nr
        if evt.input_shapes:
            args["Input Dims"] = [list(s) for s in evt.input_shapes]
            args["Input type"] = list(evt.input_types)
            args["Input Strides"] = [list(s) for s in evt.input_strides]
        if evt.stack:
            args["Call stack"] = ";".join(evt.stack)
        if evt.flops:
            args["flops"] = evt.flops
        trace.append({"ph": "X", "cat": evt.category, "name": evt.trace_name, "pid": pid,
                      "tid": evt.thread, "ts": round(evt.time_range.start, 3),
                      "dur": round(evt.time_range.elapsed_us(), 3), "args": args})
        for k in evt.device_events:
            gpu_tracks.add((k.device_index, k.thread))
            trace.append({"ph": "X", "cat": "kernel", "name": k.trace_name,
                          "pid": k.device_index, "tid": k.thread,
                          "ts": round(k.time_range.start, 3),
                          "dur": round(k.time_range.elapsed_us(), 3),
                          "args": {"External id": evt.id, "device": k.device_index,
                                   "stream": k.thread, "correlation": k.id}})
            trace.append({"ph": "s", "id": k.id, "pid": pid, "tid": evt.thread,
                          "ts": round(evt.time_range.start, 3), "cat": "ac2g", "name": "ac2g"})
            trace.append({"ph": "f", "id": k.id, "pid": k.device_index, "tid": k.thread,
                          "ts": round(k.time_range.start, 3), "cat": "ac2g", "name": "ac2g",
                          "bp": "e"})
    for dev, stream in sorted(gpu_tracks):
        trace.append({"ph": "M", "name": "process_name", "pid": dev, "tid": 0, "ts": 0,
                      "args": {"name": "python"}})
        trace.append({"ph": "M", "name": "process_labels", "pid": dev, "tid": 0, "ts": 0,
                      "args": {"labels": f"GPU {dev}"}})
        trace.append({"ph": "M", "name": "thread_name", "pid": dev, "tid": stream, "ts": 0,
                      "args": {"name": f"stream {stream}"}})
    doc = {"schemaVersion": 1, "deviceProperties": [], "displayTimeUnit": "ms",
           "traceName": str(path)}
    if base_time_ns is not None:
        doc["baseTimeNanoseconds"] = base_time_ns
    if extra:
        doc.update(extra)
    doc["traceEvents"] = trace
    data = json.dumps(doc).encode()
    path = os.fspath(path)
    if path.endswith(".gz"):
        with gzip.open(path, "wb") as f:
            f.write(data)
    else:
        with open(path, "wb") as f:
            f.write(data)
