"""How fast dnnc itself compiles, on the CPU: export (PyTorch's torch.export and
core-ATen decomposition, reported separately), import to tcp, and canonicalization.

    python bench/compiler_speed.py [--models resnet50,gpt2_block] [--repeat 3]

Prints a table and writes JSON to bench/results/. The first compile in a process
pays one-time costs (imports, first use of torch kernels); it is reported apart
from the median of the repeats. Goal: ResNet-50 import + canonicalize under 2 s.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import platform
import statistics
import sys
import time
from importlib.metadata import version
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import dnnc
from dnnc.frontend.torch_export import export, import_program
from dnnc.models import FACTORIES
from dnnc.passes import parse_passes
from dnnc.pipeline import CANONICALIZE, count_ops, run_passes

RESULTS = Path(__file__).with_name("results")
GOAL_SECONDS = {"resnet50": 2.0}


def measure(name: str) -> dict[str, float]:
    model, inputs = FACTORIES[name]()
    t0 = time.perf_counter()
    ep = export(model, inputs)
    t1 = time.perf_counter()
    program = import_program(ep)
    t2 = time.perf_counter()
    imported_ops = count_ops(program)
    run_passes(program, parse_passes(CANONICALIZE))
    t3 = time.perf_counter()
    return {
        "export_s": t1 - t0,
        "import_s": t2 - t1,
        "canonicalize_s": t3 - t2,
        "dnnc_s": t3 - t1,
        "ops_imported": imported_ops,
        "ops_canonical": count_ops(program),
        "params": len(program.params),
        "param_mb": program.params.nbytes() / 1e6,
    }


def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default="resnet50,gpt2_block")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out", type=Path, default=None, help="JSON path (default: bench/results/compiler-speed-DATE.json)")
    args = parser.parse_args()
    torch.set_num_threads(max(1, torch.get_num_threads()))

    rows = []
    for name in args.models.split(","):
        first = measure(name)
        runs = [measure(name) for _ in range(args.repeat)]
        median = {k: statistics.median(r[k] for r in runs) for k in first}
        rows.append({"model": name, "first": first, "median": median, "repeat": args.repeat})

    print(f"{'model':<14}{'export s':>10}{'import s':>10}{'canon s':>10}{'dnnc s':>9}{'(first)':>9}{'ops':>11}{'params':>8}")
    for row in rows:
        m, f = row["median"], row["first"]
        ops = f"{int(m['ops_imported'])}->{int(m['ops_canonical'])}"
        print(
            f"{row['model']:<14}{m['export_s']:>10.3f}{m['import_s']:>10.3f}{m['canonicalize_s']:>10.3f}"
            f"{m['dnnc_s']:>9.3f}{f['dnnc_s']:>9.3f}{ops:>11}{int(m['params']):>8}"
        )
        goal = GOAL_SECONDS.get(row["model"])
        if goal is not None:
            verdict = "meets" if f["dnnc_s"] < goal else "MISSES"
            print(
                f"  goal: import + canonicalize under {goal} s: {verdict} (first {f['dnnc_s']:.2f} s, median {m['dnnc_s']:.2f} s)"
            )

    record = {
        "benchmark": "compiler_speed",
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "host": {"cpu": cpu_name(), "threads": torch.get_num_threads(), "python": platform.python_version()},
        "versions": {"dnnc": dnnc.__version__, "torch": torch.__version__, "xdsl": version("xdsl")},
        "rows": rows,
    }
    out = args.out or RESULTS / f"compiler-speed-{dt.date.today().isoformat()}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(record, indent=2) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
