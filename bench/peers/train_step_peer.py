"""The peer of bench/train_step_bench: the MLP, CNN, BERT-tiny and GPT-tiny training steps with PyTorch
eager and TorchScript, timed the same way (the first step on its own, warm-up steps, then each step timed
on its own; median, min and nearest-rank p90), printed as JSON on stdout in the layout of
bench/harness.h's records (--verbose: progress on stderr).

One step is zero-grad, forward, cross-entropy, backward and the optimizer update on the same seeded
batch every step, as shared/BENCH.md defines it: Adam (lr 1e-3, betas (0.9, 0.999), eps 1e-8) for the
MLP and CNN, AdamW (the same, weight decay 0.01 on every parameter) for BERT-tiny and GPT-tiny.
GPT-tiny's cross-entropy is per token, averaged over the tokens whose label is not -100. The CNN takes
PyTorch's own NCHW layout. Mode "torchscript" runs the model through torch.jit.script; the loss and
the optimizer stay in Python, as they are not part of a scripted module. --precision mixed_bfloat16 runs
the forward pass and the loss under torch.autocast("cpu", dtype=torch.bfloat16), PyTorch's counterpart of
Keras's mixed_bfloat16 (float32 parameters and optimizer, bfloat16 matmuls); --precision bfloat16 makes
the parameters bfloat16 too (model.to(torch.bfloat16)). train_step_bench runs this
script once per workload and mode, in the tuned environment (bench/README.md), so each process's
peak memory (VmHWM) is one case's:

  OMP_NUM_THREADS=2 OPENBLAS_NUM_THREADS=2 OMP_WAIT_POLICY=PASSIVE /usr/bin/python3 \\
      bench/peers/train_step_peer.py --threads 2 --repeats 30 --filter 'model=bert_tiny' --filter 'mode=eager'

A missing torch is a note in the JSON, not an error.
"""

import argparse
import json
import os
import platform
import re
import sys
import time

from peer_timing import label, time_calls

# name, batch, training GFLOP per step (3 x forward matmul/conv FLOPs), reference parameter count
WORKLOADS = [("mlp", 256, 0.822, 535_818), ("cnn", 128, 2.021, 225_034), ("bert_tiny", 32, 11.277, 1_478_530),
             ("gpt_tiny", 16, 67.646, 5_289_472)]
MODES = ["eager", "torchscript"]


def status_mb(field):
    """A /proc/self/status memory field ("VmHWM", "VmRSS") in MB (2^20 bytes)."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024.0
    return 0.0


def blas_libraries():
    with open("/proc/self/maps") as maps:
        return sorted({line.split()[-1] for line in maps if "blas" in line and "/" in line})


def time_step(torch, args, name, batch, mode, foreach):
    """Times the training steps of a fresh model and optimizer.

    Returns the timing, the first step's time in ms (TorchScript profiles and optimizes the graph over
    its first runs), the time torch.jit.script took, and the parameter count."""
    from train_step_models import make_batch, make_loss, make_model, make_optimizer  # needs torch, found by now

    torch.manual_seed(0)
    inputs, labels = make_batch(name, batch)
    model = make_model(name)
    if args.precision == "bfloat16":
        model = model.to(torch.bfloat16)
        inputs = [x.to(torch.bfloat16) if x.is_floating_point() else x for x in inputs]
    script_ms = None
    if mode == "torchscript":
        start = time.perf_counter()
        model = torch.jit.script(model)
        script_ms = (time.perf_counter() - start) * 1e3
    model.train()
    optimizer = make_optimizer(name, model.parameters(), foreach)
    loss_fn = make_loss(name)

    autocast = args.precision == "mixed_bfloat16"

    def step():
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
            loss = loss_fn(model(*inputs), labels)
        loss.float().backward()
        optimizer.step()
        return loss.item()  # as Kestrel's train_on_batch, which returns the loss

    start = time.perf_counter()
    step()
    first_step_ms = (time.perf_counter() - start) * 1e3
    timing = time_calls(step, args.warmup, args.repeats)
    return timing, first_step_ms, script_ms, sum(p.numel() for p in model.parameters())


def bench_case(torch, args, workload, mode, peer):
    name, batch, gflop, params_expected = workload
    params = {"model": name, "batch": batch, "threads": args.threads, "mode": mode, "precision": args.precision}
    if not all(pattern.search(label("train_step", params)) for pattern in args.filters):
        return
    base_rss_mb = status_mb("VmRSS")
    # The optimizer's per-tensor loop and its multi-tensor (foreach) update each win on some workloads
    # on CPU: unless told which, time both and keep the faster, so the peer is at its best.
    tried = []
    for foreach in [args.foreach] if args.foreach is not None else [False, True]:
        timing, first_step_ms, script_ms, count = time_step(torch, args, name, batch, mode, foreach)
        if count != params_expected:
            peer["notes"].append(f"the {name} model has {count} parameters, the reference {params_expected}")
        if args.verbose:
            print(f"torch {label('train_step', params)} foreach={foreach}: {timing['median_ms']:.3g} ms",
                  file=sys.stderr, flush=True)
        tried.append((timing, first_step_ms, script_ms, foreach))
    timing, first_step_ms, script_ms, foreach = min(tried, key=lambda item: item[0]["median_ms"])
    if len(tried) > 1:
        peer["notes"].append(f"{name} {mode}: the optimizer with foreach={foreach} (" + ", ".join(
            f"foreach={f} {t['median_ms']:.2f} ms" for t, _, _, f in tried) + ")")
    ms = timing["median_ms"]
    figures = {"gflops": gflop * 1e9 / (ms * 1e6), "samples_per_s": 1e3 * batch / ms, "ms_per_step": ms,
               "first_step_ms": first_step_ms, "peak_rss_mb": status_mb("VmHWM"), "base_rss_mb": base_rss_mb}
    if script_ms is not None:
        figures["script_ms"] = script_ms
    peer["records"].append({"name": "train_step", "source": "torch", "params": params, **timing, "figures": figures})


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--filter", action="append", default=[],
                        help="regex searched in each case's label; when repeated, every one must match")
    parser.add_argument("--verbose", action="store_true", help="print each case's median on stderr")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--precision", choices=["float32", "mixed_bfloat16", "bfloat16"], default="float32")
    parser.add_argument("--foreach", action=argparse.BooleanOptionalAction, default=None,
                        help="the optimizer's multi-tensor update (default: time both, keep the faster)")
    args = parser.parse_args()
    args.filters = [re.compile(pattern) for pattern in args.filter]

    peer = {"records": [], "environment": {"python": platform.python_version()}, "notes": []}
    environment, notes = peer["environment"], peer["notes"]
    try:
        import torch
    except ImportError as error:
        notes.append(f"torch is not available ({error}); no torch figures. bash .ci/setup --bench installs python3-torch")
        torch = None
    if torch is not None:
        torch.set_num_threads(args.threads)
        environment.update({"torch": torch.__version__, "torch_threads": torch.get_num_threads(),
                            "blas": blas_libraries()})
        for workload in WORKLOADS:
            for mode in MODES:
                bench_case(torch, args, workload, mode, peer)
    for key in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "OPENBLAS_CORETYPE", "OMP_WAIT_POLICY"):
        if key in os.environ:
            environment[key] = os.environ[key]

    json.dump(peer, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
