"""Why export takes longer on the GPU machines: torch.export of one model in a fresh
process, its tensors on the CPU or the GPU, with dnnc's compile workers starting beside
it or not.

    python bench/export_time.py --workloads resnet50-b32,unet2d-b8 [--out DIR]

ResNet-50 at batch 32 exported in 1.7 s on a 2-core development CPU (torch 2.13) and
in 10.4 s inside a cold compile on an H200 host (torch 2.11; BENCHMARKS.md), where a
compile starts its Triton and cuDNN workers (up to 24 processes importing torch) while
it exports. Each condition runs in its own process, so every one pays the first
export's one-time costs: ``export_s`` is ``torch.export.export`` alone and
``for_import_s`` what dnnc adds (the decomposition where an op has no import rule).
Writes ``export-time-<date>-<device>.json`` under ``--out`` (default ``bench/results``).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.fresh_process import last_json  # noqa: E402

RESULTS = ROOT / "bench" / "results"


def measure_in_child(workload: str, device: str, workers: bool) -> dict[str, Any]:
    import torch

    from bench.suite.workloads import WORKLOADS
    from dnnc.frontend.torch_export import for_import

    model, inputs = WORKLOADS[workload].build()
    model = model.to(device).eval()
    inputs = tuple(x.to(device) for x in inputs)
    if workers:
        from dnnc.runtime.kernel_backends import start_workers

        start_workers()
    started = time.perf_counter()
    with torch.no_grad():
        ep = torch.export.export(model, inputs)
    exported = time.perf_counter()
    taken = for_import(ep)
    done = time.perf_counter()
    return {
        "workload": workload,
        "device": device,
        "workers": workers,
        "export_s": round(exported - started, 3),
        "for_import_s": round(done - exported, 3),
        "decomposed": taken is not ep,
        "nodes": len(ep.graph.nodes),
    }


def run_child(workload: str, device: str, workers: bool) -> dict[str, Any]:
    row = last_json([sys.executable, __file__, "--child", workload, "--device", device, *(["--workers"] if workers else [])])
    return {"workload": workload, "device": device, "workers": workers, "status": "ok", **row}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workloads", default="resnet50-b32", help="bench workload names, comma-separated")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--device", default="cpu", help=argparse.SUPPRESS)
    parser.add_argument("--workers", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure_in_child(args.child, args.device, args.workers)))
        return
    from bench.suite.workloads import WORKLOADS

    names = [n.strip() for n in args.workloads.split(",") if n.strip()]
    unknown = [n for n in names if n not in WORKLOADS]
    if unknown:
        parser.error(f"unknown workload {unknown[0]!r}; known: {', '.join(WORKLOADS)}")
    import torch

    cuda = torch.cuda.is_available()
    conditions = [("cpu", False), *([("cuda", False), ("cuda", True)] if cuda else [])]
    record: dict[str, Any] = {
        "date": dt.date.today().isoformat(),
        "machine": torch.cuda.get_device_name() if cuda else f"CPU ({platform.processor() or platform.machine()})",
        "cpus": os.cpu_count(),
        "torch": torch.__version__,
        "results": [],
    }
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / f"export-time-{record['date']}-{'cuda' if cuda else 'cpu'}.json"
    for name in names:
        for device, workers in conditions:
            row = run_child(name, device, workers)
            record["results"].append(row)
            path.write_text(json.dumps(record, indent=2) + "\n")
            what = (
                f"export {row['export_s']:6.2f} s  for_import {row['for_import_s']:5.2f} s"
                if row["status"] == "ok"
                else row["status"]
            )
            print(f"{name:24s} {device:5s} workers {'on ' if workers else 'off'}  {what}", flush=True)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
