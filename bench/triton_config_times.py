"""How much each Triton config of a model's kernels takes, and how close cheaper choices
come to timing them all.

    python bench/triton_config_times.py --timm mobilenetv2_100,ghostnet_100 [--size 64 --batch 2] --out DIR
    python bench/triton_config_times.py --summarize bench/results/triton-config-times-2026-11-25-h200.jsonl

Compiles each model cold on the GPU with every config of every Triton kernel timed
(``DNNC_TUNE_FLOOR_US=0``) and records each timing (the debug records
``launch.compile_group`` writes: kind, tensor shapes, config, ms) as one JSON line, a
``{"model": ...}`` line before each model's. The summary sums, per kernel kind, the
time of the first (heuristic) config, of the best, of the most parallel one and of the
faster of the first and the most parallel (``configs.launch_bound_pair``): what
``knobs.tune_floor_us`` trades.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

RESULTS = Path(__file__).with_name("results")


class _Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.rows: list[dict[str, Any]] = []

    def emit(self, record: logging.LogRecord) -> None:
        timed = getattr(record, "timed", None)
        if isinstance(timed, dict):
            self.rows.append(timed)


def record(models: list[str], batch: int, size: int) -> list[dict[str, Any]]:
    import torch

    import dnnc
    from dnnc import knobs
    from dnnc.models.zoo import timm_model

    collect = _Collect()
    logger = logging.getLogger("dnnc.triton")
    logger.addHandler(collect)
    logger.setLevel(logging.DEBUG)
    for name in models:
        collect.rows.append({"model": name})
        model, inputs = timm_model(name, batch=batch, size=size)
        model = model.cuda().half().eval()
        with (
            tempfile.TemporaryDirectory(prefix="dnnc-configs-") as cache,
            knobs.override(cache_dir=Path(cache), tune_floor_us=0.0),
        ):
            dnnc.compile(model, [x.cuda().half() for x in inputs], device="cuda")
        torch.cuda.synchronize()
    return collect.rows


def kernels(rows: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """The timings grouped by kernel (one kernel's configs are timed one after another)."""
    found: list[list[dict[str, Any]]] = []
    for row in rows:
        if "model" in row:
            continue
        current = found[-1] if found else None
        same = current is not None and (current[0]["kind"], current[0]["shapes"]) == (row["kind"], row["shapes"])
        if same and all(c["config"] != row["config"] for c in current):  # type: ignore[union-attr]
            current.append(row)  # type: ignore[union-attr]
        else:
            found.append([row])
    return found


def _most_parallel(timings: list[dict[str, Any]]) -> dict[str, Any]:
    from dnnc.backends.triton.configs import launch_bound_pair

    pair = launch_bound_pair([t["config"] for t in timings])
    return next(t for t in timings if t["config"] == pair[-1])


def summarize(rows: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Per kind (and ``all``): kernels, configs timed, and summed microseconds of the
    first, best, most parallel and better-of-the-pair configs."""
    sums: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for timings in kernels(rows):
        first, best = timings[0]["ms"], min(t["ms"] for t in timings)
        parallel = _most_parallel(timings)
        for key in (timings[0]["kind"], "all"):
            s = sums[key]
            s["kernels"] += 1
            s["configs"] += len(timings)
            s["pair_configs"] += 1 if parallel is timings[0] else 2
            s["first_us"] += 1e3 * first
            s["best_us"] += 1e3 * best
            s["parallel_us"] += 1e3 * parallel["ms"]
            s["pair_us"] += 1e3 * min(first, parallel["ms"])
    return {kind: {name: round(value, 1) for name, value in s.items()} for kind, s in sums.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--timm", default="mobilenetv2_100,ghostnet_100")
    parser.add_argument("--batch", type=int, default=2)
    parser.add_argument("--size", type=int, default=64)
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--summarize", type=Path, default=None, help="summarize a recorded JSON-lines file instead")
    args = parser.parse_args()
    if args.summarize is not None:
        rows = [json.loads(line) for line in args.summarize.read_text().splitlines() if line.strip()]
    else:
        import datetime as dt

        import torch

        rows = record([m for m in args.timm.split(",") if m], args.batch, args.size)
        name = torch.cuda.get_device_name().split()[1].lower()
        args.out.mkdir(parents=True, exist_ok=True)
        path = args.out / f"triton-config-times-{dt.date.today().isoformat()}-{name}.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
        print(f"wrote {path}")
    for kind, s in sorted(summarize(rows).items()):
        print(f"{kind:12s} {json.dumps(s)}")


if __name__ == "__main__":
    main()
