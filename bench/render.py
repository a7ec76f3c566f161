"""Markdown tables for BENCHMARKS.md from the JSON the GPU benchmarks write.

python bench/render.py bench/results/cudnn-....json [bench/results/triton-bandwidth-....json]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.gpu_timing import environment_line


def models_table(data: dict[str, Any]) -> str:
    lines = [environment_line(data["environment"], data["peaks"]), ""]
    variants: list[str] = []
    for r in data["results"]:
        for v in r["variants"]:
            if v not in variants:
                variants.append(v)
    lines.append("| workload | floor ms | " + " | ".join(variants) + " | dnnc compile s |")
    lines.append("|---|---|" + "---|" * len(variants) + "---|")
    for r in data["results"]:
        cells = []
        best = min((e["median_ms"] for e in r["variants"].values() if "median_ms" in e), default=None)
        for v in variants:
            e = r["variants"].get(v)
            if e is None:
                cells.append("")
            elif "median_ms" not in e:
                cells.append(e["status"])
            else:
                text = f"{e['median_ms']:.4f}"
                cells.append(f"**{text}**" if e["median_ms"] == best else text)
        compile_s = next((e.get("compile_s") for e in r["variants"].values() if e.get("compile_s")), None)
        lines.append(
            f"| {r['workload']} | {r['floor_ms']:.4f} | " + " | ".join(cells) + f" | {compile_s:.1f} |"
            if compile_s
            else f"| {r['workload']} | {r['floor_ms']:.4f} | " + " | ".join(cells) + " | |"
        )
    return "\n".join(lines)


def bandwidth_table(data: dict[str, Any]) -> str:
    rows = data.get("results") or data.get("rows") or []
    if not rows:
        return json.dumps(data, indent=1)[:2000]
    keys = [k for k, v in rows[0].items() if not isinstance(v, (list, dict))]
    lines = ["| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
    for r in rows:
        lines.append("| " + " | ".join(f"{r[k]:.3g}" if isinstance(r[k], float) else str(r[k]) for k in keys) + " |")
    return "\n".join(lines)


def main() -> None:
    for path in sys.argv[1:]:
        data = json.loads(Path(path).read_text())
        print(f"<!-- {path} -->")
        print(models_table(data) if "peaks" in data else bandwidth_table(data))
        print()


if __name__ == "__main__":
    main()
