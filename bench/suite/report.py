"""The suite's results as Markdown tables (for BENCHMARKS.md, between markers that
``update_benchmarks`` rewrites) and as a bar chart PNG (matplotlib)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from bench.gpu_timing import environment_line
from bench.suite.torch_variants import MAX_AUTOTUNE, TORCH_VARIANTS

BEGIN, END = "<!-- suite:begin -->", "<!-- suite:end -->"
PEERS = (*TORCH_VARIANTS, MAX_AUTOTUNE, "JAX/XLA")
"""The variants dnnc is compared with; one that did not run, failed, or (max-autotune)
compiled past its limit has no status ``ok`` and is left out of the comparison."""
SAME_RUN_KEYS = ("device", "driver", "torch", "cudnn_backend", "nvidia-cudnn-frontend", "triton")
"""What must match for two runs' results to stand in one table."""


class MergeError(ValueError):
    pass


def merge_runs(previous: Mapping[str, Any], current: Mapping[str, Any], order: Sequence[str]) -> dict[str, Any]:
    """One payload from an earlier run and this one on the same machine and versions:
    this run's workloads replace the earlier run's, listed in ``order``. Each result
    keeps the ceilings measured in its own run (its floor share is computed from them)."""
    before, now = previous["environment"], current["environment"]
    differing = [k for k in SAME_RUN_KEYS if before.get(k) != now.get(k)]
    if differing:
        k = differing[0]
        raise MergeError(f"cannot merge runs: {k} was {before.get(k)!r} and is now {now.get(k)!r}")
    by_name = {r["workload"]: r for r in previous["results"]}
    by_name |= {r["workload"]: r for r in current["results"]}
    rank = {name: i for i, name in enumerate(order)}
    results = sorted(by_name.values(), key=lambda r: rank.get(r["workload"], len(rank)))
    return {**current, "results": results, "jax": current.get("jax") or previous.get("jax")}


def variant_names(results: Sequence[Mapping[str, Any]]) -> list[str]:
    names: list[str] = []
    for r in results:
        for v in r["variants"]:
            if v["variant"] not in names:
                names.append(v["variant"])
    return names


def _cell(v: Mapping[str, Any] | None) -> str:
    if v is None:
        return "-"
    if v.get("status") != "ok":
        return str(v.get("status", "?")).split(":")[0]
    share = v.get("of_floor")
    stopgap = "*" if v.get("torch_ops") or v.get("fallbacks") else ""
    return f"{v['median_ms']:.3f}{stopgap}" + (f" ({share:.0%})" if share is not None else "")


def dnnc_reference_variant(names: Sequence[str]) -> str:
    """The dnnc variant compared with the peers: ``dnnc auto`` where it ran, else the
    one dnnc policy that did (a run of the default policy alone)."""
    ran = [n for n in names if n.startswith("dnnc ") and n != "dnnc from JAX"]
    return "dnnc auto" if "dnnc auto" in ran or len(ran) != 1 else ran[0]


def versus_best_peer(variants: Sequence[Mapping[str, Any]], ours: str = "dnnc auto") -> str:
    """``ours`` time over the fastest peer's (below 1: dnnc is faster), naming that peer."""
    by_name = {v["variant"]: v for v in variants if v.get("status") == "ok"}
    peers = [by_name[p] for p in PEERS if p in by_name]
    if ours not in by_name or not peers:
        return "-"
    best = min(peers, key=lambda v: v["median_ms"])
    return f"{by_name[ours]['median_ms'] / best['median_ms']:.2f}x {best['variant']}"


def _ceilings_text(payload: Mapping[str, Any]) -> dict[str, float]:
    """The run's ceilings; where runs were merged, the lowest of each (the text says so)."""
    runs = [r.get("ceilings") for r in payload["results"] if r.get("ceilings")] or [payload["ceilings"]]
    return {k: min(c[k] for c in runs) for k in ("copy_gbs", "matmul_tflops")}


def tables(payload: Mapping[str, Any]) -> str:
    results = payload["results"]
    names = variant_names(results)
    runs = {json.dumps(r["ceilings"], sort_keys=True) for r in results if r.get("ceilings")}
    merged = f" (results of {len(runs)} runs that day; the lowest ceilings shown)" if len(runs) > 1 else ""
    ours = dnnc_reference_variant(names)
    lines = [
        environment_line(payload["environment"], _ceilings_text(payload), f", JAX {payload.get('jax') or 'n/a'}") + merged,
        "",
        "Median ms per call (share of the physical floor in brackets); every result was checked against float32 first.",
        f"The last column is {ours}'s time over the fastest peer's (below 1.00: dnnc is faster).",
        "A dnnc time marked * ran some ops as torch ops or fell back to another backend (the JSON counts them).",
        "",
        "| workload | floor ms | " + " | ".join(names) + f" | {ours.removeprefix('dnnc ')} / best peer |",
        "|---|---|" + "---|" * len(names) + "---|",
    ]
    for r in results:
        by_name = {v["variant"]: v for v in r["variants"]}
        cells = " | ".join(_cell(by_name.get(n)) for n in names)
        lines.append(f"| {r['workload']} | {r['floor']['ms']:.3f} | {cells} | {versus_best_peer(r['variants'], ours)} |")
    reused = any(v.get("compile_reused") for r in results for v in r["variants"])
    legend = " (a compile time marked c was a load from dnnc's compile cache)" if reused else ""
    lines += ["", f"Compile s / peak GPU MB / throughput (items/s){legend}:", ""]
    lines += ["| workload | " + " | ".join(names) + " |", "|---|" + "---|" * len(names)]
    for r in results:
        by_name = {v["variant"]: v for v in r["variants"]}
        cells = []
        for n in names:
            v = by_name.get(n)
            if v is None or v.get("status") != "ok":
                cells.append("-")
            else:
                cached = "c" if v.get("compile_reused") else ""
                cells.append(f"{v.get('compile_s', 0):.1f}{cached} / {v.get('peak_mb') or 0:.0f} / {v['items_per_s']:.3g}")
        lines.append(f"| {r['workload']} ({r['unit']}) | " + " | ".join(cells) + " |")
    return "\n".join(lines + clock_lines(results, names)) + "\n"


def clock_lines(results: Sequence[Mapping[str, Any]], names: Sequence[str]) -> list[str]:
    """Mean SM clock (MHz) over a second timing of each row of a millisecond or more
    (``torch_variants.clocked``), marked ``cap`` where the power limit lowered it."""
    clocked = [r for r in results if any((v.get("gpu_clock") or {}).get("samples") for v in r["variants"])]
    if not clocked:
        return []
    lines = [
        "",
        "Mean SM clock, MHz, over a second timing of rows of a millisecond or more (cap: the power limit lowered it):",
        "",
    ]
    lines += ["| workload | " + " | ".join(names) + " |", "|---|" + "---|" * len(names)]
    for r in clocked:
        by_name = {v["variant"]: v.get("gpu_clock") or {} for v in r["variants"]}
        cells = []
        for n in names:
            clock = by_name.get(n) or {}
            cap = " cap" if clock.get("power_capped") else ""
            cells.append(f"{clock['sm_mhz_mean']:.0f}{cap}" if clock.get("samples") else "-")
        lines.append(f"| {r['workload']} | " + " | ".join(cells) + " |")
    return lines


def update_benchmarks(path: Path, text: str, heading: str = "## GPU: dnnc against its peers") -> None:
    """Replace what stands between the suite's markers (adding the section at the end once)."""
    current = path.read_text() if path.exists() else ""
    block = f"{BEGIN}\n{text}{END}"
    if BEGIN in current and END in current:
        start, end = current.index(BEGIN), current.index(END) + len(END)
        current = current[:start] + block + current[end:]
    else:
        current = (
            current.rstrip("\n")
            + f"\n\n{heading}\n\n`python bench/run.py` (the README's Benchmarks section says what it runs).\n\n{block}\n"
        )
    path.write_text(current)


CHART_BASES = ("PyTorch eager", "eager + CUDA graph")
"""What the chart's bars are relative to: plain eager where the run timed it, else eager in
one CUDA graph (the suite's peer since plain eager left its default variants)."""


def chart_base(results: Sequence[Mapping[str, Any]]) -> str:
    """The first of ``CHART_BASES`` that some workload timed."""
    timed = {v["variant"] for r in results for v in r["variants"] if v.get("status") == "ok"}
    return next((b for b in CHART_BASES if b in timed), CHART_BASES[0])


def chart(payload: Mapping[str, Any], path: Path) -> Path | None:
    """Grouped bars, one group per workload, ms relative to eager (``CHART_BASES``; lower is better)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    results = payload["results"]
    names = variant_names(results)
    base_name = chart_base(results)
    fig, ax = plt.subplots(figsize=(max(8, 1.6 * len(results)), 4.5))
    width = 0.8 / max(1, len(names))
    for i, name in enumerate(names):
        xs, ys = [], []
        for j, r in enumerate(results):
            by_name = {v["variant"]: v for v in r["variants"]}
            base, v = by_name.get(base_name), by_name.get(name)
            if v and v.get("status") == "ok" and base and base.get("status") == "ok":
                xs.append(j + i * width)
                ys.append(v["median_ms"] / base["median_ms"])
        ax.bar(xs, ys, width, label=name)
    ax.set_xticks([j + 0.4 - width / 2 for j in range(len(results))], [r["workload"] for r in results], rotation=20, ha="right")
    ax.set_ylabel(f"time relative to {base_name} (lower is better)")
    ax.axhline(1.0, color="grey", linewidth=0.8)
    ax.legend(fontsize=8, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
