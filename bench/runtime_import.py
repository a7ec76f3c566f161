"""What a process that only loads and runs an artifact pays for dnnc (CPU).

    python bench/runtime_import.py [--runs 5] [--out bench/results/runtime-import-<date>.json]

Compiles a small MLP and ResNet-50 for the CPU reference backend and saves them;
then, in fresh processes (``--runs`` each), times ``import dnnc``, ``dnnc.load`` and
the first call, and counts the dnnc modules imported and how many of them belong to
the compiler (frontend, passes, partition, specs, pipeline, ...). ``torch`` is
imported first and not counted. Medians are reported.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import dnnc
from dnnc.models import resnet50

COMPILER = ("frontend", "pipeline", "partition", "passes", "specs", "tuning", "cli", "api")

FRESH_PROCESS = """
import json, sys, time, torch
started = time.perf_counter()
import dnnc
imported = time.perf_counter()
module = dnnc.load(sys.argv[1], device="cpu")
loaded = time.perf_counter()
module(*[torch.randn(*s) for s in json.loads(sys.argv[2])])
called = time.perf_counter()
names = [m for m in sys.modules if m.startswith("dnnc.")]
print(json.dumps({"import_s": imported - started, "load_s": loaded - imported, "first_call_s": called - loaded,
                  "modules": names}))
"""


def measure(path: Path, shapes: list[list[int]], runs: int) -> dict[str, object]:
    samples = []
    for _ in range(runs):
        done = subprocess.run(
            [sys.executable, "-c", FRESH_PROCESS, str(path), json.dumps(shapes)], capture_output=True, text=True, check=True
        )
        samples.append(json.loads(done.stdout.strip().splitlines()[-1]))
    modules = samples[-1]["modules"]
    return {
        **{k: round(statistics.median(s[k] for s in samples), 4) for k in ("import_s", "load_s", "first_call_s")},
        "dnnc_modules": len(modules),
        "compiler_modules": sorted(m for m in modules if m.split(".")[1] in COMPILER),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    models = {
        "mlp": (torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 8)).eval(), [[4, 64]]),
        "resnet50": (resnet50()[0].eval(), [[1, 3, 224, 224]]),
    }
    rows = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, (model, shapes) in models.items():
            path = Path(tmp) / f"{name}.dnnc"
            with torch.no_grad():
                dnnc.compile(model, tuple(torch.randn(*s) for s in shapes), device="cpu").save(path)
            rows[name] = measure(path, shapes, args.runs)
            print(name, json.dumps({k: v for k, v in rows[name].items() if k != "compiler_modules"}), flush=True)
    result = {
        "date": time.strftime("%Y-%m-%d"),
        "machine": platform.processor() or platform.machine(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "dnnc": dnnc.__version__,
        "runs": args.runs,
        "models": rows,
    }
    out = args.out or Path(__file__).parent / "results" / f"runtime-import-{result['date']}.json"
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
