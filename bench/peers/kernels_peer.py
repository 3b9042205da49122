"""The peer of bench/kernels_bench: the same cases with PyTorch and NumPy (matmul in bfloat16 too,
PyTorch only), timed the same way (warm-up calls, then each timed call on its own; median, min and
nearest-rank p90), printed as JSON on stdout in the layout of bench/harness.h's records (--verbose:
progress on stderr).

kernels_bench runs it with the tuned environment (bench/README.md) and passes the cases:

  OMP_NUM_THREADS=2 OPENBLAS_NUM_THREADS=2 OMP_WAIT_POLICY=PASSIVE /usr/bin/python3 \
      bench/peers/kernels_peer.py --matmul-sizes 1024,2048 --matmul-threads 1,2 --repeats 30

A missing torch or numpy is a note in the JSON, not an error: the other peer still reports.
"""

import argparse
import ctypes
import json
import math
import os
import platform
import re
import sys
import time

from peer_timing import label, summarize, time_calls


class Peer:
    def __init__(self, args):
        self.args = args
        self.filters = [re.compile(pattern) for pattern in args.filter]
        self.records = []
        self.notes = []
        self.torch = self._import("torch", "python3-torch")
        self.numpy = self._import("numpy", "python3-numpy")
        self.openblas = self._find_openblas()

    def _import(self, module, package):
        try:
            return __import__(module)
        except ImportError as error:
            self.notes.append(f"{module} is not available ({error}); no {module} figures. "
                              f"bash .ci/setup --bench installs {package}")
            return None

    @staticmethod
    def blas_libraries():
        with open("/proc/self/maps") as maps:
            paths = {line.split()[-1] for line in maps if "blas" in line and "/" in line}
        return sorted(paths)

    def _find_openblas(self):
        # NumPy and PyTorch call the system BLAS; OpenBLAS takes its thread count from its own call,
        # not from torch.set_num_threads, so the 1-thread cases must set both.
        for path in self.blas_libraries():
            if "openblas" in path:
                library = ctypes.CDLL(path)
                if hasattr(library, "openblas_set_num_threads"):
                    library.openblas_get_corename.restype = ctypes.c_char_p
                    return library
        return None

    def set_threads(self, threads):
        if self.torch is not None:
            self.torch.set_num_threads(threads)
        if self.openblas is not None:
            self.openblas.openblas_set_num_threads(threads)

    def measure(self, source, name, params, fn, figures, budget_s=None):
        """budget_s: for a case that may be very slow, fewer calls (3 at least) so that they take about that long."""
        if not all(pattern.search(label(name, params)) for pattern in self.filters):
            return
        warmup, repeats = self.args.warmup, self.args.repeats
        if budget_s is not None:
            start = time.perf_counter()
            fn()
            call_s = time.perf_counter() - start
            if call_s * (warmup + repeats) > budget_s:
                warmup, repeats = 0, max(3, min(repeats, int(budget_s / call_s)))
                self.notes.append(f"{source} {label(name, params)}: {call_s * 1e3:.0f} ms a call, "
                                  f"timed over {repeats} calls only")
        timing = time_calls(fn, warmup, repeats)
        record = {"name": name, "source": source, "params": params, **timing,
                  "figures": figures(timing["median_ms"])}
        self.records.append(record)
        if self.args.verbose:
            print(f"{source:6} {label(name, params)}: {timing['median_ms']:.3g} ms", file=sys.stderr, flush=True)

    def environment(self):
        env = {"python": platform.python_version(), "blas": self.blas_libraries()}
        if self.torch is not None:
            env["torch"] = self.torch.__version__
        if self.numpy is not None:
            env["numpy"] = self.numpy.__version__
        if self.openblas is not None:
            env["openblas_core"] = self.openblas.openblas_get_corename().decode()
        for key in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "OPENBLAS_CORETYPE", "OMP_WAIT_POLICY"):
            if key in os.environ:
                env[key] = os.environ[key]
        return env


# A bfloat16 product without AVX-512 runs PyTorch's slow generic kernel (1.5 GFLOP/s on Zen 3):
# about this many seconds of calls per case at most.
BF16_BUDGET_S = 20.0


def measure_torch_matmul(peer, product, a, b, params, figures):
    """a x b by `product` in float32, then in bfloat16 as kernels_bench's dtype=bfloat16 case."""
    peer.measure("torch", "matmul", params, lambda: product(a, b), figures)
    a16, b16 = a.bfloat16(), b.bfloat16()
    peer.measure("torch", "matmul", {**params, "dtype": "bfloat16"}, lambda: product(a16, b16), figures,
                 budget_s=BF16_BUDGET_S)


def gflops(flops, ms):
    return flops / (ms * 1e6)


def gb_per_s(nbytes, ms):
    return nbytes / (ms * 1e6)


def bench_matmul(peer, sizes, thread_counts):
    torch, np = peer.torch, peer.numpy
    for n in sizes:
        flops = 2.0 * n * n * n
        figures = lambda ms, flops=flops: {"gflops": gflops(flops, ms)}
        if torch is not None:
            generator = torch.Generator().manual_seed(0)
            a = torch.randn(n, n, generator=generator)
            b = torch.randn(n, n, generator=generator)
        if np is not None:
            rng = np.random.default_rng(0)
            a_np = rng.standard_normal((n, n), dtype=np.float32)
            b_np = rng.standard_normal((n, n), dtype=np.float32)
        for threads in thread_counts:
            peer.set_threads(threads)
            params = {"n": n, "threads": threads}
            if torch is not None:
                measure_torch_matmul(peer, torch.mm, a, b, params, figures)
            if np is not None:
                peer.measure("numpy", "matmul", params, lambda: np.matmul(a_np, b_np), figures)


def shape_params(batch, m, k, n, threads):
    """The params of a non-square product, in kernels_bench's order: the batch first, when there is one."""
    params = {"batch": batch} if batch > 1 else {}
    params.update({"m": m, "k": k, "n": n, "threads": threads})
    return params


def bench_matmul_shapes(peer, shapes, thread_counts):
    torch, np = peer.torch, peer.numpy
    for batch, m, k, n in shapes:
        flops = 2.0 * batch * m * k * n
        figures = lambda ms, flops=flops: {"gflops": gflops(flops, ms)}
        lead = (batch,) if batch > 1 else ()
        if torch is not None:
            generator = torch.Generator().manual_seed(0)
            a = torch.randn(*lead, m, k, generator=generator)
            b = torch.randn(*lead, k, n, generator=generator)
        if np is not None:
            rng = np.random.default_rng(0)
            a_np = rng.standard_normal((*lead, m, k), dtype=np.float32)
            b_np = rng.standard_normal((*lead, k, n), dtype=np.float32)
        for threads in thread_counts:
            peer.set_threads(threads)
            params = shape_params(batch, m, k, n, threads)
            if torch is not None:
                measure_torch_matmul(peer, torch.matmul, a, b, params, figures)
            if np is not None:
                peer.measure("numpy", "matmul", params, lambda: np.matmul(a_np, b_np), figures)


def bench_torch_memory_bound(peer, args):
    """The chain, softmax, layer norm and column sums in float32, then in bfloat16 as kernels_bench's
    dtype=bfloat16 cases (layer norm's gamma and beta in bfloat16 too: PyTorch's kernel takes
    one dtype), GB/s counting each dtype's element size."""
    torch = peer.torch
    if torch is None:
        return
    peer.set_threads(args.threads)
    generator = torch.Generator().manual_seed(0)
    n = args.elementwise_size
    x32 = torch.randn(n, generator=generator)
    rows, cols = args.rows, args.cols
    m32 = torch.randn(rows, cols, generator=generator)
    gamma32 = 1.0 + 0.1 * torch.randn(cols, generator=generator)
    beta32 = 0.1 * torch.randn(cols, generator=generator)
    for dtype, suffix, size in ((torch.float32, {}, 4.0), (torch.bfloat16, {"dtype": "bfloat16"}, 2.0)):
        x, m, gamma, beta = (t.to(dtype) for t in (x32, m32, gamma32, beta32))
        # multiply, add, relu, multiply: each reads n elements and writes n elements, as Kestrel counts it.
        chain_bytes = 4 * 2 * size * n
        peer.measure("torch", "relu_chain", {"n": n, "threads": args.threads, **suffix},
                     lambda x=x: torch.relu(x * 1.5 + -0.25) * 0.5,
                     lambda ms, b=chain_bytes: {"gb_per_s": gb_per_s(b, ms)})
        params = {"rows": rows, "cols": cols, "threads": args.threads, **suffix}
        softmax_bytes = 2 * size * rows * cols
        peer.measure("torch", "softmax", params, lambda m=m: torch.softmax(m, dim=-1),
                     lambda ms, b=softmax_bytes: {"gb_per_s": gb_per_s(b, ms)})
        # Kestrel counts its float32 gamma and beta; PyTorch's are in the rows' dtype.
        norm_bytes = size * (2 * rows * cols + 2 * cols)
        peer.measure("torch", "layer_norm", params,
                     lambda m=m, g=gamma, b=beta: torch.nn.functional.layer_norm(m, (cols,), g, b, eps=1e-5),
                     lambda ms, b=norm_bytes: {"gb_per_s": gb_per_s(b, ms)})
    # Bias gradients: [rows, n] summed over the rows, on 1 thread and on args.threads.
    for n in args.column_sum_cols:
        g32 = torch.randn(rows, n, generator=generator)
        for threads in sorted({1, args.threads}):
            peer.set_threads(threads)
            for dtype, suffix, size in ((torch.float32, {}, 4.0), (torch.bfloat16, {"dtype": "bfloat16"}, 2.0)):
                g = g32.to(dtype)
                peer.measure("torch", "column_sum", {"rows": rows, "cols": n, "threads": threads, **suffix},
                             lambda g=g: torch.sum(g, dim=0),
                             lambda ms, b=size * (rows + 1) * n: {"gb_per_s": gb_per_s(b, ms)})
    peer.set_threads(args.threads)


def int_list(text):
    return [int(item) for item in text.split(",") if item]


def shape_list(text):
    """"BxMxKxN,..." as (batch, m, k, n) tuples."""
    return [tuple(int(d) for d in item.split("x")) for item in text.split(",") if item]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--filter", action="append", default=[],
                        help="regex searched in each case's label; when repeated, every one must match")
    parser.add_argument("--verbose", action="store_true", help="print each case's median on stderr")
    parser.add_argument("--matmul-sizes", type=int_list, default=[256, 512, 1024, 2048])
    parser.add_argument("--matmul-shapes", type=shape_list, default=[],
                        help="[batch x] [m,k] x [k,n] products as BxMxKxN, comma-separated")
    parser.add_argument("--matmul-threads", type=int_list, default=[1, 2])
    parser.add_argument("--elementwise-size", type=int, default=1 << 24)
    parser.add_argument("--rows", type=int, default=4096)
    parser.add_argument("--cols", type=int, default=1024)
    parser.add_argument("--column-sum-cols", type=int_list, default=[128, 512])
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()

    peer = Peer(args)
    blas = peer.blas_libraries()
    if peer.numpy is not None and blas and not any("openblas" in path for path in blas):
        peer.notes.append("NumPy and PyTorch use the reference BLAS (" + ", ".join(blas) + "), far below their "
                          "best: install libopenblas0-pthread (bash .ci/setup --bench)")
    if peer.torch is not None:
        with peer.torch.no_grad():
            bench_matmul(peer, args.matmul_sizes, args.matmul_threads)
            bench_matmul_shapes(peer, args.matmul_shapes, args.matmul_threads)
            bench_torch_memory_bound(peer, args)
    else:
        bench_matmul(peer, args.matmul_sizes, args.matmul_threads)
        bench_matmul_shapes(peer, args.matmul_shapes, args.matmul_threads)

    json.dump({"records": peer.records, "environment": peer.environment(), "notes": peer.notes}, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
