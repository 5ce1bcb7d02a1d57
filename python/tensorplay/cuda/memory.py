"""The CUDA caching allocator from Python: statistics, the cache, the memory fraction
(PyTorch's torch.cuda.memory names)."""
import collections

from tensorplay import _C
from tensorplay.cuda._utils import _compiled, _get_device_index, _is_initialized, _lazy_init

__all__ = ["caching_allocator_alloc", "caching_allocator_delete", "empty_cache",
           "get_per_process_memory_fraction", "max_memory_allocated", "max_memory_cached",
           "max_memory_reserved", "mem_get_info", "memory_allocated", "memory_cached",
           "memory_reserved", "memory_snapshot", "memory_stats", "memory_stats_as_nested_dict",
           "memory_summary", "reset_accumulated_memory_stats", "reset_max_memory_allocated",
           "reset_max_memory_cached", "reset_peak_memory_stats",
           "set_per_process_memory_fraction", "list_gpu_processes"]


def empty_cache():
    """Returns the cached, unused blocks of the caching allocator to the driver."""
    if _is_initialized():
        _C._cuda_emptyCache()


def memory_stats(device=None):
    """The allocator's statistics for ``device``, flat and sorted ("allocated_bytes.all.current", ...)."""
    if not _is_initialized():
        return collections.OrderedDict()
    stats = _C._cuda_memoryStats(_get_device_index(device))
    return collections.OrderedDict(sorted(stats.items()))


def memory_stats_as_nested_dict(device=None):
    """memory_stats as nested dicts ({"allocated_bytes": {"all": {"current": ...}}})."""
    out = {}
    for key, value in memory_stats(device).items():
        node = out
        *path, last = key.split(".")
        for p in path:
            node = node.setdefault(p, {})
        node[last] = value
    return out


def reset_accumulated_memory_stats(device=None):
    if _is_initialized():
        _C._cuda_resetAccumulatedMemoryStats(_get_device_index(device))


def reset_peak_memory_stats(device=None):
    """Resets the "peak" statistics (max_memory_allocated and friends)."""
    if _is_initialized():
        _C._cuda_resetPeakMemoryStats(_get_device_index(device))


def reset_max_memory_allocated(device=None):
    reset_peak_memory_stats(device)


def reset_max_memory_cached(device=None):
    reset_peak_memory_stats(device)


def memory_allocated(device=None):
    """Bytes held by tensors on ``device`` now."""
    return memory_stats(device).get("allocated_bytes.all.current", 0)


def max_memory_allocated(device=None):
    return memory_stats(device).get("allocated_bytes.all.peak", 0)


def memory_reserved(device=None):
    """Bytes the caching allocator holds from the driver on ``device`` (used or cached)."""
    return memory_stats(device).get("reserved_bytes.all.current", 0)


def max_memory_reserved(device=None):
    return memory_stats(device).get("reserved_bytes.all.peak", 0)


def memory_cached(device=None):
    return memory_reserved(device)


def max_memory_cached(device=None):
    return max_memory_reserved(device)


def mem_get_info(device=None):
    """(free, total) device memory in bytes, from the driver."""
    _lazy_init()
    return tuple(_C._cuda_memGetInfo(_get_device_index(device)))


def set_per_process_memory_fraction(fraction, device=None):
    """Caps what the caching allocator may reserve on ``device`` at fraction * total memory."""
    _lazy_init()
    if not isinstance(fraction, float):
        raise TypeError("Invalid type for fraction argument, must be `float`")
    _C._cuda_setMemoryFraction(fraction, _get_device_index(device))


def get_per_process_memory_fraction(device=None):
    _lazy_init()
    return _C._cuda_getMemoryFraction(_get_device_index(device))


def caching_allocator_alloc(size, device=None, stream=None):
    """Raw device memory of ``size`` bytes from the caching allocator (an int address)."""
    _lazy_init()
    from tensorplay.cuda import current_stream
    if stream is None:
        stream = current_stream(device)
    return _C._cuda_rawAlloc(size, stream.cuda_stream, stream.device_index)


def caching_allocator_delete(mem_ptr):
    _lazy_init()
    _C._cuda_rawFree(mem_ptr)


def memory_snapshot():
    """One dict per segment of the caching allocator (device, address, sizes, blocks)."""
    if not _is_initialized():
        return []
    return _C._cuda_memorySnapshot()


def list_gpu_processes(device=None):
    return "no process information: nvml is not used by TensorPlay"


def _fmt(n):
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.2f} {unit}"
        n /= 1024.0


def memory_summary(device=None, abbreviated=False):
    """A table of the allocator's statistics for ``device``, as text."""
    stats = memory_stats(device)
    idx = _get_device_index(device) if _is_initialized() else 0
    lines = ["=" * 75, f" TensorPlay CUDA memory summary, device ID {idx}".ljust(75), "-" * 75,
             f" {'Metric':<26}|{'Cur Usage':>11} |{'Peak Usage':>11} |{'Tot Alloc':>11} |{'Tot Freed':>10}",
             "-" * 75]
    rows = [("Allocated memory", "allocated_bytes", True), ("Active memory", "active_bytes", True),
            ("Requested memory", "requested_bytes", True), ("GPU reserved memory", "reserved_bytes", True),
            ("Non-releasable memory", "inactive_split_bytes", True), ("Allocations", "allocation", False),
            ("Active allocs", "active", False), ("GPU reserved segments", "segment", False),
            ("Non-releasable allocs", "inactive_split", False)]
    pools = ["all"] if abbreviated else ["all", "large_pool", "small_pool"]
    for title, key, is_bytes in rows:
        for pool in pools:
            vals = [stats.get(f"{key}.{pool}.{k}", 0) for k in ("current", "peak", "allocated", "freed")]
            shown = [_fmt(v) if is_bytes else str(v) for v in vals]
            name = title if pool == "all" else f"  from {pool.replace('_pool', '')} pool"
            lines.append(f" {name:<26}|{shown[0]:>11} |{shown[1]:>11} |{shown[2]:>11} |{shown[3]:>10}")
        lines.append("-" * 75)
    lines.append(f" Allocation retries: {stats.get('num_alloc_retries', 0)}    "
                 f"OOMs: {stats.get('num_ooms', 0)}")
    lines.append("=" * 75)
    return "\n".join(lines) + "\n"
