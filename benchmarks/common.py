"""Shared timing for the benchmarks: interleaved rounds, median per call, ratio tp/torch."""
import statistics
import time


def timeit(fn, number):
    """Mean seconds per call over `number` back-to-back calls."""
    t0 = time.perf_counter()
    for _ in range(number):
        fn()
    return (time.perf_counter() - t0) / number


def event_time(lib, fn, reps):
    """Milliseconds per call over `reps` back-to-back calls, by the library's CUDA events (lib:
    tensorplay or torch)."""
    start, end = lib.cuda.Event(enable_timing=True), lib.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(reps):
        fn()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / reps


def gpu_time(lib, fn, reps, rounds):
    """Median milliseconds per call over `rounds` event_time rounds, after a warm-up call."""
    fn()
    lib.cuda.synchronize()
    return statistics.median(event_time(lib, fn, reps) for _ in range(rounds))


def compare(tp_fn, torch_fn, number, rounds):
    """Median seconds per call for each library, rounds interleaved after a warm-up call."""
    tp_fn(), torch_fn()
    tps, ths = [], []
    for _ in range(rounds):
        tps.append(timeit(tp_fn, number))
        ths.append(timeit(torch_fn, number))
    return statistics.median(tps), statistics.median(ths)


def run_checked(cases, number, rounds, rtol=1e-4, atol=1e-3):
    """[(name, tp ms, torch ms)] for (name, tp_fn, torch_fn) cases; each result is first
    checked against PyTorch's (exits if they differ)."""
    import numpy as np
    rows = []
    for name, f_tp, f_th in cases:
        ours, ref = np.asarray(f_tp().tolist()), f_th().numpy()
        if ours.shape != ref.shape or not np.allclose(ours, ref, rtol=rtol, atol=atol):
            raise SystemExit(f"{name}: TensorPlay result differs from PyTorch's")
        a, b = compare(f_tp, f_th, number, rounds)
        rows.append((name, a * 1e3, b * 1e3))
    return rows


def print_table(rows, header, markdown, width=24):
    """Prints `header` then the rows, as a markdown table or aligned text."""
    print(header)
    if markdown:
        print("| case | tensorplay | torch | ratio |\n|---|---|---|---|")
    for name, a, b in rows:
        print(f"| `{name}` | {a:.3g} ms | {b:.3g} ms | {a / b:.2f} |" if markdown
              else f"{name:{width}s} tp {a:8.3g} ms  torch {b:8.3g} ms  ratio {a / b:5.2f}")
