"""Shared timing for the benchmarks: interleaved rounds, median per call, ratio tp/torch."""
import statistics
import time


def timeit(fn, number):
    """Mean seconds per call over `number` back-to-back calls."""
    t0 = time.perf_counter()
    for _ in range(number):
        fn()
    return (time.perf_counter() - t0) / number


def compare(tp_fn, torch_fn, number, rounds):
    """Median seconds per call for each library, rounds interleaved after a warm-up call."""
    tp_fn(), torch_fn()
    tps, ths = [], []
    for _ in range(rounds):
        tps.append(timeit(tp_fn, number))
        ths.append(timeit(torch_fn, number))
    return statistics.median(tps), statistics.median(ths)
