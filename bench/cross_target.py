"""What a program built for this GPU on a machine without it (``dnnc compile --target``)
costs against the one compiled here: each workload is built in a process that sees
no GPU, then compiled here as usual (timed configs and plans); both are checked
against each other and timed in one process, and the artifact built elsewhere is also
loaded cold (a fresh process, empty caches: ``cold_load``).

    python bench/cross_target.py [--workloads resnet50-b32,bert-s128-b8] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

BUILD = """
import sys, time, torch
from bench.suite.workloads import WORKLOADS
import dnnc
assert not torch.cuda.is_available()
model, inputs = WORKLOADS[sys.argv[1]].build()
started = time.perf_counter()
compiled = dnnc.compile(model, inputs, dtype="f16", target=sys.argv[2])
seconds = time.perf_counter() - started
compiled.save(sys.argv[3])
print("RESULT", {"build_s": seconds, "steps": compiled.summary()["steps"]})
"""


def build_elsewhere(name: str, target: str, path: Path) -> dict[str, Any]:
    import ast

    root = Path(__file__).resolve().parents[1]
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env |= {"CUDA_VISIBLE_DEVICES": "", "PYTHONPATH": os.pathsep.join([str(root), env.get("PYTHONPATH", "")])}
    done = subprocess.run(
        [sys.executable, "-c", BUILD, name, target, str(path)], env=env, cwd=root, capture_output=True, text=True
    )
    line = next((x for x in done.stdout.splitlines() if x.startswith("RESULT ")), None)
    if line is None:
        raise RuntimeError(f"building {name} for {target} failed:\n{done.stderr[-3000:]}")
    return ast.literal_eval(line.removeprefix("RESULT "))


def main() -> None:
    import dnnc
    from bench.cold_load import cold_load
    from bench.gpu_timing import environment, fp16_inputs, median_ms, write_record
    from bench.suite.workloads import WORKLOADS
    from dnnc.numerics import relative_error

    parser = argparse.ArgumentParser()
    parser.add_argument("--workloads", default="resnet50-b32,bert-s128-b8")
    parser.add_argument("--out", type=Path, default=Path(os.environ.get("OUT") or Path(__file__).with_name("results")))
    args = parser.parse_args()
    major, minor = torch.cuda.get_device_capability()
    target = f"sm_{major}{minor}"
    record: dict[str, Any] = {"environment": environment(), "target": target, "workloads": {}}
    folder = Path(tempfile.mkdtemp(prefix="dnnc-cross-"))
    for name in args.workloads.split(","):
        path = folder / f"{name}.dnnc"
        entry: dict[str, Any] = {"elsewhere": build_elsewhere(name, target, path)}
        model, inputs = WORKLOADS[name].build()
        model, inputs = model.eval().to("cuda", torch.float16), fp16_inputs(inputs)
        started = time.perf_counter()
        here = dnnc.compile(model, inputs, device="cuda")
        entry["here_compile_s"] = time.perf_counter() - started
        elsewhere = dnnc.load(path)
        with torch.no_grad():
            eager = model(*inputs)
        errors = {
            label: relative_error(m(*inputs).float(), eager.float()) for label, m in (("here", here), ("elsewhere", elsewhere))
        }
        entry["relative_error_vs_eager"] = errors
        for label, module in (("here", here), ("elsewhere", elsewhere)):
            entry[f"{label}_ms"] = median_ms(lambda m=module, x=inputs: m(*x))
        entry["cold_load_elsewhere"] = cold_load(path)
        print(name, json.dumps(entry), flush=True)
        record["workloads"][name] = entry
    write_record(args.out, "cross-target", record)


if __name__ == "__main__":
    main()
