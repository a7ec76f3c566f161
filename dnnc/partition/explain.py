"""The partitioner's decision record as text: per group, the ops, the backend and
kind chosen, the estimated and measured times of it and of every alternative
that starts at the same op, and why it won; totals and the estimate's error last.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

GROUP_HEADER = f"{'#':>4}  {'backend':<7} {'kind':<22} {'est ms':>9} {'meas ms':>9} {'cost ms':>9}  ops"


def explain_lines(record: Mapping[str, Any], alternatives: bool = True) -> Iterator[str]:
    measured = record["measured"]
    yield f"policy: {record['policy']}   device: {record['device']}   costs: {'measured on the GPU' if measured else 'roofline estimates (no GPU timing)'}"
    yield GROUP_HEADER
    for g in record["groups"]:
        yield f"{g['group']:>4}  {_row(g)}  {' '.join(_ops(g['ops']))}"
        if alternatives:
            for a in sorted(g["alternatives"], key=lambda a: a["cost_ms"]):
                yield f"{'':>4}    {_row(a)}  (covers {len(a['nodes'])} ops)"
            yield f"{'':>4}    why: {g['why']}"
    t = record["totals"]
    yield "totals:"
    yield f"  chosen cover      {_ms(t['chosen_ms'])}  ({len(record['groups'])} groups over {t['nodes']} ops)"
    yield f"  cudnn-only cover  {_ms(t['cudnn_only_ms'])}"
    yield f"  triton-only cover {_ms(t['triton_only_ms'])}"
    yield f"  uncorrected roofline of the chosen groups {_ms(t['estimated_ms'])}"
    yield (
        f"  candidates {t['candidates']}, lowered alone {t['unique_lowered']}, measured {t['measured']}, "
        f"dropped {len(t['dropped'])}, search states {t['search_states']}, pricing {t['pricing_s']:.2f} s"
    )
    if t.get("search", "exact") != "exact":
        yield f"  cover searched {t['search']}"
    programs = record.get("programs")
    if programs:
        yield f"whole programs on the GPU (the fastest is realized: {programs['winner']}):"
        for name, c in programs["contenders"].items():
            if "program_ms" in c:
                found = "did not build" if c["program_ms"] is None else f"measured {_ms(c['program_ms'])}"
            else:
                found = c["skipped"]
            if "same_program_as" in c:
                found += f" (the same program as {c['same_program_as']}'s: built once)"
            yield f"  {name:<12} predicted {_ms(c['predicted_ms'])}  {found}"
    e = record["estimate_error"]
    if e["count"]:
        yield f"estimate vs measurement: median relative error {e['median_relative']:.0%} over {e['count']} measured candidates"
        yield "  calibration (measured / estimated): " + ", ".join(f"{k} {v:.2f}" for k, v in sorted(e["calibration"].items()))
    else:
        yield "estimate vs measurement: nothing measured"


def _row(entry: Mapping[str, Any]) -> str:
    meas = entry["measured_ms"]
    return (
        f"{entry['backend']:<7} {entry['kind'][:22]:<22} {entry['estimated_ms']:>9.4f} "
        f"{'-' if meas is None else f'{meas:.4f}':>9} {entry['cost_ms']:>9.4f}"
    )


def _ops(ops: list[str]) -> list[str]:
    return [o for o in ops if o != "broadcast"]


def _ms(value: float | None) -> str:
    return "    n/a   " if value is None else f"{value:9.4f} ms"
