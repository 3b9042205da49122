#!/usr/bin/env python3
"""Fails on an #include that points up Kestrel's layers: core, ops, autodiff and jit, the Keras pieces, the loop, what builds on the loop.

Dependencies point one way: a folder may include its own layer and those below it, never one
above, so that each layer builds and tests without the ones above it. A folder not in LAYERS is
an error too: say where a new folder sits before it is used.

    python3 cmake/check_include_layers.py [repository root]
    python3 cmake/check_include_layers.py --self-test   # it fails on a tree made to fail
"""
import pathlib
import re
import sys
import tempfile

# Lowest first. Folders on one line are one layer and may include each other.
LAYERS = [
    ["framework/core"],
    ["programs"],  # the programs' command line, CLI11 behind a facade: it needs nothing above core
    ["framework/logging"],
    ["framework/io", "framework/data", "framework/distribute"],
    ["framework/ops"],
    ["framework/autodiff", "framework/jit"],
    ["framework/layers", "framework/losses", "framework/metrics", "framework/optimizers"],
    ["framework/model"],
    ["framework/callbacks", "framework/saving"],
    ["datasets", "strategies"],
    ["models"],
    ["kestrel.h"],
    ["tutorials", "bench", "tests"],
]
SOURCE_SUFFIXES = {".h", ".cpp", ".cc"}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def unit_of(relative: str) -> str:
    parts = relative.split("/")
    if parts[0] == "framework" and len(parts) > 2:
        return "/".join(parts[:2])
    return parts[0]


def check(root: pathlib.Path) -> int:
    layer_of = {unit: rank for rank, units in enumerate(LAYERS) for unit in units}
    problems = []
    files = [root / "kestrel.h"]
    for top in ("framework", "programs", "datasets", "strategies", "models", "tutorials", "bench", "tests"):
        files += [p for p in (root / top).rglob("*") if p.suffix in SOURCE_SUFFIXES]
    files = [p for p in files if p.is_file()]
    for path in files:
        relative = path.relative_to(root).as_posix()
        unit = unit_of(relative)
        if unit not in layer_of:
            problems.append(f"{relative}: folder '{unit}' is in no layer; add it to LAYERS in cmake/check_include_layers.py")
            continue
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), start=1):
            match = INCLUDE.match(line)
            if not match or not (root / match.group(1)).is_file():
                continue  # a system, generated or relative include
            target = unit_of(match.group(1))
            if target not in layer_of:
                problems.append(f"{relative}:{number}: includes '{match.group(1)}', in folder '{target}', "
                                "which is in no layer; add it to LAYERS in cmake/check_include_layers.py")
            elif layer_of[target] > layer_of[unit]:
                problems.append(f"{relative}:{number}: includes '{match.group(1)}': {unit} (layer "
                                f"{layer_of[unit]}) must not depend on {target} (layer {layer_of[target]}); "
                                "move the shared piece down, or invert the dependency with an interface below")
    for problem in problems:
        print(problem)
    if problems:
        print(f"check_include_layers: {len(problems)} include(s) point up the layers")
        return 1
    print(f"check_include_layers: {len(files)} files, every include points down or sideways")
    return 0


def self_test() -> int:
    """A tree where ops includes jit must fail, and the same tree the other way round must pass."""
    with tempfile.TemporaryDirectory() as directory:
        root = pathlib.Path(directory)
        (root / "framework/ops").mkdir(parents=True)
        (root / "framework/jit").mkdir(parents=True)
        (root / "kestrel.h").write_text('#include "framework/jit/trace.h"\n')
        (root / "framework/jit/trace.h").write_text('#include "framework/ops/dispatch.h"\n')
        (root / "framework/ops/dispatch.h").write_text("#pragma once\n")
        if check(root) != 0:
            print("self-test: a tree whose includes point down failed")
            return 1
        (root / "framework/ops/dispatch.cpp").write_text('#include "framework/jit/trace.h"\n')
        if check(root) != 1:
            print("self-test: ops including jit was not caught")
            return 1
    print("self-test: passed")
    return 0


if __name__ == "__main__":
    if sys.argv[1:] == ["--self-test"]:
        sys.exit(self_test())
    sys.exit(check(pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()))
