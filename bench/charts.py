#!/usr/bin/python3
"""Charts of the benches' JSON, as PNGs for bench/README.md.

    # tutorial 05 once per bucket budget, its JSON and this machine's CPU gathered into one file
    /usr/bin/python3 bench/charts.py tutorial05 --binary build/tutorials/05_tpu_strategy/tpu_strategy \\
        --out bench/charts/data/tutorial05_budgets.json
    # the PNGs from train_step_bench's, kernels_bench's and that file's JSON
    /usr/bin/python3 bench/charts.py plot --train-step bench/charts/data/train_step.json \\
        --kernels bench/charts/data/kernels.json --tutorial05 bench/charts/data/tutorial05_budgets.json \\
        --out-dir bench/charts

Charts: step time per workload (Kestrel eager and jit beside PyTorch eager and TorchScript);
GFLOP/s per workload and per matmul shape against the float32 FMA peak the harness measured;
tutorial 05's padding efficiency and real tokens per second for each bucket budget. Every chart
names the CPU its figures came from (model name and AVX flags, as the JSON recorded them).
Needs Debian's python3-matplotlib.
"""

import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile
import textwrap

DPI = 100  # small PNGs: a chart is a few tens of KB

WORKLOADS = [("mlp", "MLP"), ("cnn", "CNN"), ("bert_tiny", "BERT-tiny"), ("gpt_tiny", "GPT-tiny")]
# (source, mode) of train_step_bench's records, in the order the bench runs them, and their colours.
STEP_MODES = [
    (("kestrel", "eager"), "Kestrel eager", "#9ecae1"),
    (("kestrel", "jit"), "Kestrel jit", "#08519c"),
    (("torch", "eager"), "PyTorch eager", "#fdae6b"),
    (("torch", "torchscript"), "TorchScript", "#d94801"),
]
MATMUL_SOURCES = [("kestrel", "Kestrel", "#08519c"), ("torch", "PyTorch", "#d94801"), ("numpy", "NumPy", "#74c476")]
DEFAULT_BUDGETS = [1, 2, 4, 8, 0]  # 0: each batch padded to its longest text, as before bucketing


def machine_from_cpuinfo():
    """The machine as the bench harness records it: model name, logical cores, AVX flags."""
    cpu, flags = "unknown", []
    with open("/proc/cpuinfo") as cpuinfo:
        for line in cpuinfo:
            key, _, value = line.partition(":")
            key = key.strip()
            if key == "model name" and cpu == "unknown":
                cpu = value.strip()
            elif key == "flags" and not flags:
                flags = sorted(word for word in value.split() if word.startswith("avx"))
    return {"cpu": cpu, "logical_cores": os.cpu_count(), "avx2": "avx2" in flags, "avx512f": "avx512f" in flags,
            "avx_flags": flags}


def cpu_caption(machine):
    """'CPU: AMD EPYC, 2 logical cores; AVX flags: avx avx2 avx512f ...'."""
    flags = machine.get("avx_flags")
    if flags is None:  # written before the harness kept the flags: the two it always had
        flags = [name for name in ("avx2", "avx512f") if machine.get(name)]
    text = "CPU: {}, {} logical cores; AVX flags: {}".format(
        machine.get("cpu", "unknown"), machine.get("logical_cores", "?"), " ".join(flags) or "none")
    return text


def load(path):
    with open(path) as file:
        return json.load(file)


def records(document, name, source=None):
    return [r for r in document["records"] if r["name"] == name and (source is None or r["source"] == source)]


def fma_peak(document):
    """The fma_peak record's figures and ISA, or None for JSON from before the probe."""
    found = records(document, "fma_peak")
    if not found:
        return None
    record = found[0]
    return {"isa": record["params"]["isa"], "threads": record["params"]["threads"],
            "gflops_1_thread": record["figures"]["gflops_1_thread"],
            "gflops_all_threads": record["figures"]["gflops_all_threads"]}


def peak_text(peak):
    if peak is None:
        return "no FMA peak in this run's JSON"
    return "float32 FMA peak ({}): {:.0f} GFLOP/s on 1 thread, {:.0f} on {} threads".format(
        peak["isa"], peak["gflops_1_thread"], peak["gflops_all_threads"], peak["threads"])


def run_text(document):
    settings = document.get("settings", {})
    return "{} at {}, {} timed repeats after {} warm-up (medians)".format(
        document["program"], document.get("timestamp", "?"), settings.get("repeats", "?"), settings.get("warmup", "?"))


def finish(figure, path, caption):
    """Writes the figure with the caption (run, FMA peak, CPU) wrapped to its width under the charts."""
    import matplotlib.pyplot as plt

    columns = int(figure.get_figwidth() * DPI / 6)  # 7.5 pt text is about 6 pixels a character at DPI 100
    caption = "\n".join(line for paragraph in caption.split("\n") for line in textwrap.wrap(paragraph, columns))
    lines = caption.count("\n") + 1
    figure.text(0.01, 0.01, caption, fontsize=7.5, va="bottom", ha="left", color="#333333")
    figure.tight_layout(rect=(0, 0.03 + 0.025 * lines, 1, 1))
    figure.savefig(path, dpi=DPI)
    plt.close(figure)
    print("wrote", path)


def train_step_cases(document):
    """{(precision, model): {(source, mode): record}} for every train_step record."""
    cases = {}
    for r in records(document, "train_step"):
        p = r["params"]
        cases.setdefault((p["precision"], p["model"]), {})[(r["source"], p["mode"])] = r
    return cases


def precisions_of(cases):
    order = ["float32", "mixed_bfloat16", "bfloat16"]
    return [p for p in order if any(key[0] == p for key in cases)]


def label_bars(axis, bars, values, fmt):
    for bar, value in zip(bars, values):
        if value is not None:
            axis.annotate(fmt.format(value), (bar.get_x() + bar.get_width() / 2, bar.get_height()),
                          ha="center", va="bottom", fontsize=7, xytext=(0, 1), textcoords="offset points")


def chart_step_times(document, path):
    """(a) Median step time per workload, one panel each (their times differ a hundredfold)."""
    import matplotlib.pyplot as plt

    cases = train_step_cases(document)
    precisions = precisions_of(cases)
    figure, axes = plt.subplots(len(precisions), len(WORKLOADS), figsize=(11, 3.2 * len(precisions) + 0.6),
                                squeeze=False)
    for row, precision in enumerate(precisions):
        for col, (model, title) in enumerate(WORKLOADS):
            axis = axes[row][col]
            case = cases.get((precision, model), {})
            values = [case[key]["median_ms"] if key in case else None for key, _, _ in STEP_MODES]
            xs = range(len(STEP_MODES))
            bars = axis.bar(xs, [v or 0 for v in values], color=[c for _, _, c in STEP_MODES])
            # The spread of the timed steps: min to p90.
            for x, (key, _, _) in zip(xs, STEP_MODES):
                if key in case:
                    r = case[key]
                    axis.plot([x, x], [r["min_ms"], r["p90_ms"]], color="#444444", linewidth=1)
            label_bars(axis, bars, values, "{:.3g}")
            axis.set_xticks(list(xs))
            axis.set_xticklabels([name.replace(" ", "\n") for _, name, _ in STEP_MODES], fontsize=7)
            axis.set_title("{} ({})".format(title, precision), fontsize=9.5)
            axis.margins(y=0.15)
            if col == 0:
                axis.set_ylabel("ms per training step (median)")
            if not case:
                axis.text(0.5, 0.5, "not run", transform=axis.transAxes, ha="center", color="#888888")
    figure.suptitle("Training step time: Kestrel eager and jit beside PyTorch eager and TorchScript (lower is better)",
                    fontsize=11)
    caption = "{}; bars: median, lines: min to p90; 2 threads each; PyTorch's mixed_bfloat16 is torch.autocast.".format(
        run_text(document))
    caption += "\n" + cpu_caption(document["machine"])
    finish(figure, path, caption)


def peak_line(axis, peak, threads):
    """The FMA peak at `threads` threads as a horizontal line, named in the legend; the y axis shows it."""
    if peak is None:
        return
    if threads >= peak["threads"]:
        value, text = peak["gflops_all_threads"], "float32 FMA peak, {} threads".format(peak["threads"])
    elif threads <= 1:
        value, text = peak["gflops_1_thread"], "float32 FMA peak, 1 thread"
    else:
        value, text = peak["gflops_all_threads"] * threads / peak["threads"], "FMA peak's share, {} threads".format(
            threads)
    axis.axhline(value, color="#cb181d", linestyle="-", linewidth=1.2,
                 label="{} ({}): {:.0f} GFLOP/s".format(text, peak["isa"], value))
    axis.set_ylim(0, max(axis.get_ylim()[1], value) * 1.4)  # headroom for the legend above the bars


def chart_train_step_gflops(document, path):
    """(b) GFLOP/s of each workload's step against the FMA peak of the step's threads."""
    import matplotlib.pyplot as plt

    cases = train_step_cases(document)
    precisions = precisions_of(cases)
    peak = fma_peak(document)
    threads = next(iter(records(document, "train_step")), {"params": {"threads": 2}})["params"]["threads"]
    figure, axes = plt.subplots(1, len(precisions), figsize=(max(7.5, 5.5 * len(precisions) + 0.5), 4.4),
                                squeeze=False)
    width = 0.2
    for col, precision in enumerate(precisions):
        axis = axes[0][col]
        for i, (key, name, colour) in enumerate(STEP_MODES):
            values = [cases.get((precision, model), {}).get(key, {}).get("figures", {}).get("gflops")
                      for model, _ in WORKLOADS]
            xs = [x + (i - 1.5) * width for x in range(len(WORKLOADS))]
            bars = axis.bar(xs, [v or 0 for v in values], width, label=name, color=colour)
            label_bars(axis, bars, values, "{:.0f}")
        peak_line(axis, peak, threads)
        axis.set_xticks(range(len(WORKLOADS)))
        axis.set_xticklabels([title for _, title in WORKLOADS])
        axis.set_ylabel("GFLOP/s (training FLOPs / median step)")
        axis.set_title(precision + ("" if precision == "float32" else " (the peak line is float32's)"), fontsize=9.5)
        axis.legend(fontsize=7, loc="upper left", ncol=2)
    figure.suptitle("Training step GFLOP/s against the machine's float32 FMA peak ({} threads)".format(threads),
                    fontsize=11)
    caption = "{}; {}.\n{}".format(run_text(document), peak_text(peak), cpu_caption(document["machine"]))
    finish(figure, path, caption)


def matmul_label(params):
    if "n" in params and "m" not in params:
        return "{0}x{0}x{0}".format(params["n"])
    shape = "{}x{}x{}".format(params["m"], params["k"], params["n"])
    return "{}x {}".format(params["batch"], shape) if "batch" in params else shape


def chart_matmul_gflops(document, path):
    """(b) float32 matmul GFLOP/s per shape, one panel per thread count, against the FMA peak."""
    import matplotlib.pyplot as plt

    peak = fma_peak(document)
    float32 = [r for r in records(document, "matmul") if r["params"].get("dtype", "float32") == "float32"]
    threads_list = sorted({r["params"]["threads"] for r in float32})
    shapes = []
    for r in float32:
        params = {k: v for k, v in r["params"].items() if k != "threads"}
        if params not in shapes:
            shapes.append(params)
    figure, axes = plt.subplots(1, len(threads_list), figsize=(6 * len(threads_list), 4.6), squeeze=False)
    width = 0.27
    for col, threads in enumerate(threads_list):
        axis = axes[0][col]
        for i, (source, name, colour) in enumerate(MATMUL_SOURCES):
            found = []
            for shape in shapes:
                match = [r for r in float32 if r["source"] == source and r["params"] == dict(shape, threads=threads)]
                found.append(match[0]["figures"] if match else {})
            values = [figures.get("gflops") for figures in found]
            if all(v is None for v in values):
                continue
            xs = [x + (i - 1) * width for x in range(len(shapes))]
            bars = axis.bar(xs, [v or 0 for v in values], width, label=name, color=colour)
            if source == "kestrel":  # Kestrel's share of the peak, as the bench printed it
                shares = [figures.get("fma_peak_fraction") for figures in found]
                label_bars(axis, bars, [100 * v if v is not None else None for v in shares], "{:.0f}%")
        peak_line(axis, peak, threads)
        axis.set_xticks(range(len(shapes)))
        axis.set_xticklabels([matmul_label(s) for s in shapes], rotation=35, ha="right", fontsize=7.5)
        axis.set_xlabel("[batch x] m x k x n")
        axis.set_ylabel("GFLOP/s (2mkn / median)")
        axis.set_title("{} thread{}".format(threads, "" if threads == 1 else "s"), fontsize=9.5)
        axis.legend(fontsize=7, loc="upper left", ncol=2)
    figure.suptitle("float32 matmul GFLOP/s per shape against the machine's float32 FMA peak", fontsize=11)
    caption = "{}; {}.\n{}".format(run_text(document), peak_text(peak), cpu_caption(document["machine"]))
    finish(figure, path, caption)


def budget_name(budget):
    return "per batch\n(--max-shapes 0)" if budget == 0 else "{} shape{}".format(budget, "" if budget == 1 else "s")


def chart_tutorial05(document, path):
    """(c) Tutorial 05's padding efficiency and real tokens per second for each bucket budget."""
    import matplotlib.pyplot as plt

    runs = document["runs"]
    names = [budget_name(r["max_shapes"]) for r in runs]
    figure, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    efficiency = [100 * r["result"]["padding_efficiency"] for r in runs]
    bars = left.bar(range(len(runs)), efficiency, color="#6baed6")
    for bar, r in zip(bars, runs):
        left.annotate("{:.1f}%\n{} shape{}".format(100 * r["result"]["padding_efficiency"],
                                                   r["result"]["distinct_batch_shapes"],
                                                   "" if r["result"]["distinct_batch_shapes"] == 1 else "s"),
                      (bar.get_x() + bar.get_width() / 2, bar.get_height()), ha="center", va="bottom", fontsize=7.5,
                      xytext=(0, 1), textcoords="offset points")
    left.set_ylim(0, 112)
    left.set_ylabel("real tokens / padded tokens (%)")
    left.set_title("Padding efficiency (distinct batch shapes = training compiles)", fontsize=9.5)
    tokens = [r["result"]["real_tokens_per_second"] / 1e3 for r in runs]
    bars = right.bar(range(len(runs)), tokens, color="#08519c")
    for bar, r in zip(bars, runs):
        right.annotate("{:.1f}k/s\n{:.1f} ms/step".format(r["result"]["real_tokens_per_second"] / 1e3,
                                                          r["result"]["step_ms"]),
                       (bar.get_x() + bar.get_width() / 2, bar.get_height()), ha="center", va="bottom", fontsize=7.5,
                       xytext=(0, 1), textcoords="offset points")
    right.margins(y=0.18)
    right.set_ylabel("real tokens per second of fit (thousands)")
    right.set_title("Throughput of text (padding left out)", fontsize=9.5)
    for axis in (left, right):
        axis.set_xticks(range(len(runs)))
        axis.set_xticklabels(names, fontsize=8)
        axis.set_xlabel("training batch lengths at most (--max-shapes)")
    first = runs[0]["result"]
    figure.suptitle("Tutorial 05 (BERT-tiny on 8 simulated TPU cores): bucketing by length, budget of compiled shapes",
                    fontsize=11)
    epochs = document.get("epochs")
    caption = "{} at {}: one run per budget, {}, global batch {}, precision {}; extra flags: {}.\n{}".format(
        os.path.basename(document["binary"]), document.get("timestamp", "?"),
        "the tutorial's default epochs" if epochs is None else "{} epoch(s)".format(epochs),
        first.get("global_batch_size", "?"), first.get("precision", "?"), " ".join(document["extra_args"]) or "none",
        cpu_caption(document["machine"]))
    finish(figure, path, caption)


def run_tutorial05(args):
    """Runs the tutorial once per budget and writes its JSON, the settings and the CPU into one file."""
    budgets = [int(b) for b in args.budgets.split(",")]
    document = {"program": "tutorial05_budgets", "binary": args.binary,
                "timestamp": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
                "machine": machine_from_cpuinfo(), "epochs": args.epochs, "extra_args": args.extra_args, "runs": []}
    environment = dict(os.environ, KESTREL_LOG_LEVEL=os.environ.get("KESTREL_LOG_LEVEL", "warn"))
    with tempfile.TemporaryDirectory(prefix="tutorial05_budgets_") as scratch:
        for budget in budgets:
            json_out = os.path.join(scratch, "budget_{}.json".format(budget))
            flags = ["--max-shapes", str(budget)]
            if args.epochs is not None:
                flags += ["--epochs", str(args.epochs)]
            flags += args.extra_args
            # The outputs go to a scratch folder: only the JSON summary is kept, in the gathered file.
            command = [args.binary] + flags + ["--json-out", json_out,
                                               "--output-dir", os.path.join(scratch, "run_{}".format(budget))]
            print("running:", " ".join(command), flush=True)
            completed = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                       env=environment)
            if completed.returncode != 0:
                sys.stderr.write(completed.stdout)
                sys.exit("tutorial 05 failed with --max-shapes {} (exit {})".format(budget, completed.returncode))
            result = load(json_out)
            print("  padding efficiency {:.1%}, {} shapes, {:.0f} real tokens/s, {:.1f} ms/step".format(
                result["padding_efficiency"], result["distinct_batch_shapes"], result["real_tokens_per_second"],
                result["step_ms"]), flush=True)
            document["runs"].append({"max_shapes": budget, "flags": flags, "result": result})
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as file:
        json.dump(document, file, indent=2)
        file.write("\n")
    print("wrote", args.out)


def plot(args):
    try:
        import matplotlib
    except ImportError:
        sys.exit("charts.py needs matplotlib: apt-get install python3-matplotlib (Debian's, for /usr/bin/python3)")
    matplotlib.use("Agg")
    os.makedirs(args.out_dir, exist_ok=True)
    made = False
    if args.train_step:
        document = load(args.train_step)
        chart_step_times(document, os.path.join(args.out_dir, "train_step_time.png"))
        chart_train_step_gflops(document, os.path.join(args.out_dir, "train_step_gflops.png"))
        made = True
    if args.kernels:
        chart_matmul_gflops(load(args.kernels), os.path.join(args.out_dir, "matmul_gflops.png"))
        made = True
    if args.tutorial05:
        chart_tutorial05(load(args.tutorial05), os.path.join(args.out_dir, "tutorial05_budgets.png"))
        made = True
    if not made:
        sys.exit("plot: give at least one of --train-step, --kernels, --tutorial05")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    runner = commands.add_parser("tutorial05", help="run tutorial 05 once per bucket budget, gather its JSON")
    runner.add_argument("--binary", required=True, help="the built tutorials/05_tpu_strategy/tpu_strategy")
    runner.add_argument("--out", required=True, help="the JSON file to write")
    runner.add_argument("--budgets", default=",".join(str(b) for b in DEFAULT_BUDGETS),
                        help="--max-shapes values, 0 for per-batch padding (default: %(default)s)")
    runner.add_argument("--epochs", type=int, default=None, help="--epochs for each run (default: the tutorial's)")
    runner.add_argument("extra_args", nargs="*", help="more flags for the tutorial, after --")
    plotter = commands.add_parser("plot", help="write the PNGs")
    plotter.add_argument("--train-step", help="train_step_bench --json-out file")
    plotter.add_argument("--kernels", help="kernels_bench --json-out file")
    plotter.add_argument("--tutorial05", help="the file `charts.py tutorial05` wrote")
    plotter.add_argument("--out-dir", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "charts"))
    args = parser.parse_args()
    if args.command == "tutorial05":
        run_tutorial05(args)
    else:
        plot(args)


if __name__ == "__main__":
    main()
