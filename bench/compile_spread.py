"""How far apart cold compiles of one workload land: each compiled in a fresh process
with empty caches, checked against the float32 reference and timed as a user calls it,
then its artifact loaded in fresh processes and timed again.

    python bench/compile_spread.py --workloads mobilenetv3_large_100-b1 [--compiles 3] [--loads 2] [--out DIR]

A program that times the same on every load but differs from compile to compile says
the compile's decisions differ (the candidates' measured times moved), not the machine.
Each compile's row holds its programs' contest (predicted and measured ms), the steps
per backend and the backend of every step in order (``C`` cuDNN, ``T`` Triton), so two
compiles' choices can be told apart.
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.compile_table import cache_env, environment_record  # noqa: E402
from bench.fresh_process import last_json  # noqa: E402

RESULTS = ROOT / "bench" / "results"
TIMINGS = 3
"""Times of each program per process (each a median of 25), to tell the spread within a
process from the spread between processes."""


def compile_in_child(workload: str, artifact: str) -> dict[str, Any]:
    import torch

    import dnnc
    from bench.gpu_timing import fp16_inputs, median_ms
    from bench.suite.torch_variants import contest_programs, reference_output
    from bench.suite.workloads import WORKLOADS
    from dnnc.numerics import relative_error

    model, inputs = WORKLOADS[workload].build()
    reference = reference_output(model, inputs)
    half = copy.deepcopy(model).cuda().half().eval()
    xs = fp16_inputs(inputs)
    started = time.perf_counter()
    compiled = dnnc.compile(half, xs, device="cuda")
    out = compiled(*xs)
    torch.cuda.synchronize()
    compile_s = time.perf_counter() - started
    first = out if isinstance(out, torch.Tensor) else out[0]
    compiled.save(artifact)
    return {
        "compile_s": round(compile_s, 2),
        "rel_error": relative_error(first.float(), reference),
        "ms": [median_ms(lambda: compiled(*xs)) for _ in range(TIMINGS)],
        "artifact_sha256": hashlib.sha256(Path(artifact).read_bytes()).hexdigest()[:16],
        "steps": compiled.summary().get("steps"),
        "backends": "".join(type(k).__name__[0] for k in compiled.kernels().values()),
        "contest": contest_programs(compiled),
    }


def load_in_child(workload: str, artifact: str) -> dict[str, Any]:
    import torch

    import dnnc
    from bench.gpu_timing import fp16_inputs, median_ms
    from bench.suite.workloads import WORKLOADS

    _, inputs = WORKLOADS[workload].build()
    xs = fp16_inputs(inputs)
    loaded = dnnc.load(artifact, device="cuda")
    loaded(*xs)
    torch.cuda.synchronize()
    return {"ms": [median_ms(lambda: loaded(*xs)) for _ in range(TIMINGS)]}


def spread(workload: str, compiles: int, loads: int) -> dict[str, Any]:
    rows = []
    for i in range(compiles):
        with tempfile.TemporaryDirectory(prefix="dnnc-spread-") as directory:
            env = cache_env(Path(directory), "auto")
            artifact = f"{directory}/{workload}.dnnc"
            row = last_json([sys.executable, __file__, "--child", "compile", workload, artifact], env)
            if row.get("status", "").startswith("failed"):
                rows.append(row)
                continue
            row["loads"] = [
                last_json([sys.executable, __file__, "--child", "load", workload, artifact], env) for _ in range(loads)
            ]
            rows.append(row)
            print(
                f"  compile {i}: {min(row['ms']):.4f} ms, loaded {[round(min(r.get('ms', [0])), 4) for r in row['loads']]}",
                flush=True,
            )
    return {"workload": workload, "compiles": rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workloads", required=False, default="mobilenetv3_large_100-b1", help="comma-separated")
    parser.add_argument("--compiles", type=int, default=3)
    parser.add_argument("--loads", type=int, default=2, help="fresh processes that load each artifact")
    parser.add_argument("--name", default="", help="added to the result file's name")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--child", nargs=3, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        what, workload, artifact = args.child
        row = compile_in_child(workload, artifact) if what == "compile" else load_in_child(workload, artifact)
        print(json.dumps(row, default=str))
        return
    results = []
    for workload in args.workloads.split(","):
        print(f"{workload}:", flush=True)
        results.append(spread(workload, args.compiles, args.loads))
    from bench.gpu_timing import result_path

    path = result_path(args.out, "compile-spread", args.name)
    path.write_text(json.dumps({"environment": environment_record(), "results": results}, indent=1, default=str))
    print("wrote", path)


if __name__ == "__main__":
    main()
