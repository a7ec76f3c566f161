"""How long each Triton config and cuDNN plan that tuning times takes, and how close
timing fewer of them comes to timing them all.

    python bench/tuning_times.py --workloads unet2d-b8,convnext_tiny-b32 --out DIR
    python bench/tuning_times.py --timm mobilenetv2_100,ghostnet_100 [--size 64 --batch 2] --out DIR
    python bench/tuning_times.py --summarize bench/results/tuning-times-2026-11-26-h200.jsonl

Compiles each model cold on the GPU (a fresh cache directory) with every config of
every Triton kernel timed (``DNNC_TUNE_FLOOR_US=0``) and records each timing as one
JSON line: the debug records ``launch.compile_group`` (Triton: kind, tensor shapes,
config, its rank among the heuristics' configs, ms) and ``cudnn.runtime._tune``
(cuDNN: graph kind, shapes, plan rank and engine, whether cuDNN compiles the plan's
kernel at build time, ms) write; a ``{"model": ...}`` line comes before each
model's, a ``{"compiled": ...}`` line after them (the compile's seconds, its contest
and its spans). Files of the earlier Triton-only form (no ``backend``, no ``rank``) are read
too.

The summary sums, per backend and kind, the time of what tuning would keep when it
timed less: the first (heuristic) config or plan, the best of the first two and
three, the faster of the first and the most parallel Triton config
(``configs.launch_bound_pair``), and for cuDNN every precompiled plan with only the
first one or two runtime-compiled ones (runtime-compiled plans are what a cuDNN
tuning spends its time building). Counts say what each choice times.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

RESULTS = Path(__file__).with_name("results")
LOGGERS = ("dnnc.triton", "dnnc.cudnn")


class _Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.rows: list[dict[str, Any]] = []

    def emit(self, record: logging.LogRecord) -> None:
        timed = getattr(record, "timed", None)
        if isinstance(timed, dict):
            self.rows.append(timed)


def record(specs: list[str], batch: int, size: int) -> list[dict[str, Any]]:
    import torch

    import dnnc
    from bench.compile_time import build
    from dnnc import knobs, progress

    collect = _Collect()
    for name in LOGGERS:
        logger = logging.getLogger(name)
        logger.addHandler(collect)
        logger.setLevel(logging.DEBUG)
    for spec in specs:
        collect.rows.append({"model": spec})
        model, inputs = build(spec, batch, size, torch.float16, "cuda")
        with (
            tempfile.TemporaryDirectory(prefix="dnnc-tuning-") as cache,
            knobs.override(cache_dir=Path(cache), tune_floor_us=0.0),
            progress.watching(lambda _: None) as watched,
        ):
            started = time.perf_counter()
            compiled = dnnc.compile(model, inputs, device="cuda")
            seconds = time.perf_counter() - started
        torch.cuda.synchronize()
        decisions = compiled.program.metadata.get("decisions") or {}
        spans = {name: round(s.seconds, 3) for name, s in sorted(watched.spans.items(), key=lambda kv: -kv[1].seconds)}
        collect.rows.append(
            {"compiled": spec, "seconds": round(seconds, 2), "contest": decisions.get("programs"), "spans": spans}
        )
    return collect.rows


def _key(row: dict[str, Any]) -> tuple[str, str, str]:
    return row.get("backend", "triton"), row["kind"], json.dumps(row["shapes"])


def kernels(rows: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """The timings grouped by tuning (one kernel's configs, one graph's plans, are timed
    one after another in rank order): a row starts a new group when its kernel differs
    or its rank does not follow the last one's (a config seen again, in rankless rows)."""
    found: list[list[dict[str, Any]]] = []
    for row in rows:
        if "kind" not in row or "ms" not in row:  # a model's name or its compile's summary
            continue
        current = found[-1] if found else None
        if current is not None and _key(current[0]) == _key(row) and _follows(current, row):
            current.append(row)
        else:
            found.append([row])
    return found


def _follows(group: list[dict[str, Any]], row: dict[str, Any]) -> bool:
    if "rank" in row and "rank" in group[-1]:
        return row["rank"] > group[-1]["rank"]
    return all(c.get("config") != row.get("config") for c in group)


def _most_parallel(timings: list[dict[str, Any]]) -> dict[str, Any]:
    from dnnc.backends.triton.configs import launch_bound_pair

    pair = launch_bound_pair([t["config"] for t in timings])
    return next(t for t in timings if t["config"] == pair[-1])


def _runtime_compiled_first(timings: list[dict[str, Any]], keep: int) -> list[dict[str, Any]]:
    """Every precompiled plan, and the first ``keep`` runtime-compiled ones."""
    kept, compiled = [], 0
    for t in timings:
        if t.get("runtime_compiled"):
            compiled += 1
            if compiled > keep:
                continue
        kept.append(t)
    return kept


Choice = Callable[[list[dict[str, Any]]], list[dict[str, Any]]]


def _choices(backend: str) -> dict[str, Choice]:
    """What a tuning that timed less would time, by name (each takes one tuning's rows)."""
    found: dict[str, Choice] = {
        "first": lambda t: t[:1],
        "top2": lambda t: t[:2],
        "top3": lambda t: t[:3],
    }
    if backend == "triton":
        found["pair"] = lambda t: [t[0], _most_parallel(t)]
    else:
        found["rc1"] = lambda t: _runtime_compiled_first(t, 1) or t[:1]
        found["rc2"] = lambda t: _runtime_compiled_first(t, 2) or t[:1]
    return found


def summarize(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per ``backend kind`` (and per backend): tunings, rows timed, summed microseconds
    of the best and of each cheaper choice's pick (``<choice>_us``) with the rows it
    times (``<choice>_timed``; runtime-compiled plans for cuDNN in ``<choice>_rc``), and
    how often each rank won (``wins``)."""
    sums: dict[str, dict[str, Any]] = defaultdict(lambda: defaultdict(float))
    for timings in kernels(rows):
        backend = timings[0].get("backend", "triton")
        best = min(timings, key=lambda t: t["ms"])
        for key in (f"{backend} {timings[0]['kind']}", backend):
            s = sums[key]
            s["tunings"] += 1
            s["timed"] += len(timings)
            s["best_us"] += 1e3 * best["ms"]
            wins = s.setdefault("wins", defaultdict(int))
            wins[str(best.get("rank", timings.index(best)))] += 1
            if backend == "cudnn":
                s["rc"] += sum(1 for t in timings if t.get("runtime_compiled"))
            for name, choose in _choices(backend).items():
                picked = {id(t): t for t in choose(timings)}.values()
                s[f"{name}_us"] += 1e3 * min(t["ms"] for t in picked)
                s[f"{name}_timed"] += len(picked)
                if backend == "cudnn":
                    s[f"{name}_rc"] += sum(1 for t in picked if t.get("runtime_compiled"))
    return {
        kind: {name: dict(sorted(v.items())) if isinstance(v, dict) else round(v, 1) for name, v in s.items()}
        for kind, s in sums.items()
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--timm", default="", help="timm model names, comma-separated")
    parser.add_argument("--workloads", default="", help="bench workload names, comma-separated")
    parser.add_argument("--batch", type=int, default=2, help="timm models' batch")
    parser.add_argument("--size", type=int, default=64, help="timm models' image size")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--name", default="", help="added to the result file's name")
    parser.add_argument("--summarize", type=Path, default=None, help="summarize a recorded JSON-lines file instead")
    args = parser.parse_args()
    if args.summarize is not None:
        rows = [json.loads(line) for line in args.summarize.read_text().splitlines() if line.strip()]
    else:
        from bench.gpu_timing import result_path

        specs = [f"timm:{n}" for n in args.timm.split(",") if n] + [w for w in args.workloads.split(",") if w]
        if not specs:
            parser.error("name models with --timm or --workloads")
        path = result_path(args.out, "tuning-times", args.name, suffix=".jsonl")
        rows = []
        for spec in specs:  # written after each model: a run cut short keeps what it measured
            rows += record([spec], args.batch, args.size)
            path.write_text("".join(json.dumps(r) + "\n" for r in rows))
            print(f"{spec}: {rows[-1].get('seconds')} s, wrote {path}", flush=True)
    for kind, s in sorted(summarize(rows).items()):
        print(f"{kind:24s} {json.dumps(s)}")


if __name__ == "__main__":
    main()
