"""Suite runs of one machine type merged into one result, without a GPU.

    python bench/merge_suite.py RUN.json [RUN.json ...] --out bench/results/suite-<date>-<gpu>.json [--update]

``scripts/device_run.sh suite-gpus`` leaves one JSON per GPU, and a suite split over
several calls one per call; each holds the workloads it ran. They are merged in order
(a later run's workload replaces an earlier one's; the runs must share the GPU model,
driver and versions, ``report.merge_runs``) into the JSON named by ``--out``, with its
tables (``.md``) and chart (``.png``) beside it. ``--update`` also rewrites the suite's
block in BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.suite import report
from bench.suite.workloads import WORKLOADS

ROOT = Path(__file__).resolve().parents[1]


def merged(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """One payload of ``runs``, in order: a later run's workload replaces an earlier one's."""
    result = runs[0]
    for run in runs[1:]:
        result = report.merge_runs(result, run, list(WORKLOADS))
    return result


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", nargs="+", type=Path, help="suite JSON files of one machine type, earliest first")
    parser.add_argument("--out", type=Path, required=True, help="the merged JSON (tables and chart beside it)")
    parser.add_argument("--update", action="store_true", help="also rewrite the suite's block in BENCHMARKS.md")
    args = parser.parse_args(argv)
    try:
        payload = merged([json.loads(p.read_text()) for p in args.runs])
    except report.MergeError as e:
        raise SystemExit(f"cannot merge {', '.join(map(str, args.runs))}: {e}") from None
    except (OSError, json.JSONDecodeError) as e:
        raise SystemExit(f"cannot read a suite run: {e}") from None
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(payload, indent=1) + "\n")
    text = report.tables(payload)
    args.out.with_suffix(".md").write_text(text)
    report.chart(payload, args.out.with_suffix(".png"))
    if args.update:
        report.update_benchmarks(ROOT / "BENCHMARKS.md", text)
    print(f"merged {len(payload['results'])} workloads from {len(args.runs)} runs into {args.out}")


if __name__ == "__main__":
    main()
