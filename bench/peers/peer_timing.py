"""Timing shared by the peer scripts: the same warm-up, repeats and median as bench/harness.h."""
import math
import time


def summarize(times_ms):
    times = sorted(times_ms)
    n = len(times)
    median = times[n // 2] if n % 2 == 1 else 0.5 * (times[n // 2 - 1] + times[n // 2])
    rank = max(math.ceil(0.9 * n), 1)
    return {"median_ms": median, "min_ms": times[0], "p90_ms": times[rank - 1], "repeats": n}


def time_calls(fn, warmup, repeats):
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1e3)
    return summarize(times)


def label(name, params):
    return " ".join([name] + [f"{key}={value}" for key, value in params.items()])
