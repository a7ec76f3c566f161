"""Why export takes longer on the GPU machines: torch.export of one model in a fresh
process, its tensors on the CPU or the GPU, with dnnc's compile workers starting beside
it or not.

    python bench/export_time.py --workloads resnet50-b32,unet2d-b8 [--profile] [--out DIR]

ResNet-50 at batch 32 exported in 1.7 s on a 2-core development CPU (torch 2.13) and
in 10.4 s inside a cold compile on an H200 host (torch 2.11; BENCHMARKS.md), where a
compile starts its Triton and cuDNN workers (up to 24 processes importing torch) while
it exports. Each condition runs in its own process, so every one pays the first
export's one-time costs: ``export_s`` is ``torch.export.export`` alone, ``again_s`` the
same export repeated in that process (what is left once the one-time costs are paid) and
``for_import_s`` what dnnc adds (the decomposition where an op has no import rule). With
``--profile`` each first export is profiled and the functions that took the most time of
their own are kept (``top_own``).
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


TOP = 25


def top_own(profile: Any) -> list[dict[str, Any]]:
    """The functions with the most time of their own (not counting what they call)."""
    import pstats

    stats = pstats.Stats(profile)
    rows = [
        {
            "function": f"{'/'.join(Path(file).parts[-3:])}:{line}:{name}",
            "calls": calls,
            "own_s": round(own, 3),
            "cumulative_s": round(cum, 3),
        }
        for (file, line, name), (_, calls, own, cum, _) in stats.stats.items()  # type: ignore[attr-defined]
    ]
    rows.sort(key=lambda r: -r["own_s"])
    return rows[:TOP]


def measure_in_child(workload: str, device: str, workers: bool, profiled: bool) -> dict[str, Any]:
    import cProfile

    import torch

    from bench.suite.workloads import WORKLOADS
    from dnnc.frontend.torch_export import for_import

    model, inputs = WORKLOADS[workload].build()
    model = model.to(device).eval()
    inputs = tuple(x.to(device) for x in inputs)
    if workers:
        from dnnc.runtime.kernel_backends import start_workers

        start_workers()
    profile = cProfile.Profile() if profiled else None
    started = time.perf_counter()
    if profile is not None:
        profile.enable()
    with torch.no_grad():
        ep = torch.export.export(model, inputs)
    if profile is not None:
        profile.disable()
    exported = time.perf_counter()
    taken = for_import(ep)
    done = time.perf_counter()
    with torch.no_grad():
        torch.export.export(model, inputs)
    again = time.perf_counter()
    return {
        "workload": workload,
        "device": device,
        "workers": workers,
        "export_s": round(exported - started, 3),
        "for_import_s": round(done - exported, 3),
        "again_s": round(again - done, 3),
        "decomposed": taken is not ep,
        "nodes": len(ep.graph.nodes),
        **({"top_own": top_own(profile)} if profile is not None else {}),
    }


def run_child(workload: str, device: str, workers: bool, profiled: bool) -> dict[str, Any]:
    flags = [*(["--workers"] if workers else []), *(["--profile"] if profiled else [])]
    row = last_json([sys.executable, __file__, "--child", workload, "--device", device, *flags])
    return {"workload": workload, "device": device, "workers": workers, "status": "ok", **row}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workloads", default="resnet50-b32", help="bench workload names, comma-separated")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--device", default="cpu", help=argparse.SUPPRESS)
    parser.add_argument("--workers", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--profile", action="store_true", help="profile each first export (slows it down)")
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure_in_child(args.child, args.device, args.workers, args.profile)))
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
            row = run_child(name, device, workers, args.profile)
            record["results"].append(row)
            path.write_text(json.dumps(record, indent=2) + "\n")
            what = (
                f"export {row['export_s']:6.2f} s  again {row['again_s']:5.2f} s  for_import {row['for_import_s']:5.2f} s"
                if row["status"] == "ok"
                else row["status"]
            )
            print(f"{name:24s} {device:5s} workers {'on ' if workers else 'off'}  {what}", flush=True)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
