"""partition: decide, for the whole graph, which backend runs which ops.

Enumerates overlapping candidate groups per backend (``candidates``), prices
each (``pricing``: roofline estimate, lowering check, measured on a GPU), takes
the cheapest acyclic cover (``cover``); on a GPU, ``auto`` then checks that cover
against the single-backend ones as whole programs (``contest``). Then it makes
the IR say so (``realize``):

* a chosen cuDNN group is outlined as a ``tcp.isolated_group {backend = "cudnn"}``
  (``lower-cudnn`` turns it into a ``cudnn.graph`` later);
* the ops of a chosen Triton group are marked with one ``dnnc.part`` number, so
  ``triton-fuse`` builds exactly that kernel (the layout transposes that
  ``assign-layouts`` adds join whichever kernel they touch);
* views and torch ops stay as they are.

The decision record goes onto the function as ``dnnc.decisions`` (JSON);
the pipeline moves it into ``Program.metadata`` for ``dnnc explain`` and artifacts.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.ir import Block, Operation

from dnnc import knobs
from dnnc.errors import PassError
from dnnc.ir.params import ParamStore
from dnnc.ir.rewriting import ParamPass
from dnnc.partition import DECISIONS_ATTR, memo
from dnnc.partition.backends import BACKENDS
from dnnc.partition.candidates import POLICIES, Candidate, enumerate_candidates, graph_nodes, node_preds
from dnnc.partition.contest import CONTESTS, Build, contest, contest_key
from dnnc.partition.cost import peaks_for
from dnnc.partition.cover import Cover, NoCover, best_cover
from dnnc.partition.pricing import PricingReport, Times, measure, price, recost, should_measure
from dnnc.partition.realize import realize
from dnnc.partition.spec_apply import active as active_specs
from dnnc.partition.spec_apply import apply_specs, mark_configs
from dnnc.partition.spec_facts import cudnn_roots, mark_sites

log = logging.getLogger("dnnc.partition")


def available_backends() -> list[str]:
    """The GPU backends asked for (``knobs.gpu_backends``) that can run here."""
    asked = [b.strip() for b in knobs.get().gpu_backends.split(",") if b.strip()]
    return [b for b in asked if b not in BACKENDS or BACKENDS[b].available()]


def device_name() -> str | None:
    import torch

    return torch.cuda.get_device_name(0) if torch.cuda.is_available() else None


@dataclass(frozen=True)
class Partition(ParamPass):
    name = "partition"

    policy: str = "auto"
    backends: tuple[str, ...] = ()
    """Backends to choose among; empty: ``knobs.gpu_backends`` that can run here."""

    def apply_with_params(self, ctx: Context, op: ModuleOp, params: ParamStore) -> None:
        for fn in [f for f in op.ops if isinstance(f, func.FuncOp) and f.body.blocks]:
            record = self.partition_block(fn.body.block, params, op)
            if record is not None:
                fn.attributes[DECISIONS_ATTR] = StringAttr(json.dumps(record))

    def partition_block(self, block: Block, params: ParamStore, module: ModuleOp | None = None) -> dict[str, Any] | None:
        """The block's groups outlined and marked; its decision record (None: nothing to
        decide). ``module``: the block's module, for building whole contending programs
        (``contest``). Every entry to the partitioner comes through here."""
        if self.policy not in POLICIES:
            raise PassError(f"partition policy {self.policy!r}: expected one of {', '.join(POLICIES)}")
        with memo.one_compile():
            return self._partition_block(block, params, module)

    def _partition_block(self, block: Block, params: ParamStore, module: ModuleOp | None) -> dict[str, Any] | None:
        decided = self.decide(block, params)
        if decided is None:
            return None
        record, chosen, configs = decided
        if record["measured"] and self.policy == "auto" and module is not None:
            winner, programs = self.whole_program_check(module, params, chosen, configs, record)
            if winner != "auto":  # that policy's own cover, decided again here (its times are cached)
                record, chosen, configs = replace(self, policy=winner).decide(block, params) or (record, chosen, configs)
                record["policy"] = "auto"
            record["programs"] = programs
        mark_sites(chosen, cudnn_roots(graph_nodes(block)))
        realize(chosen)
        mark_configs(configs)
        return record

    def decide(
        self, block: Block, params: ParamStore
    ) -> tuple[dict[str, Any], list[Candidate], dict[Operation, dict[str, int]]] | None:
        """The decision record, the chosen candidates of ``self.policy`` and the Triton
        configs tuning specs chose, by root op (IR untouched)."""
        nodes = graph_nodes(block)
        if not nodes:
            return None
        peaks = peaks_for(device_name())
        measured = should_measure()
        candidates = enumerate_candidates(nodes, self.backends or available_backends(), self.policy)
        priced, pricing = price(candidates, params, peaks)
        specs = active_specs()
        applied = apply_specs(priced, specs[0]) if specs is not None else None
        if applied is not None:
            measured = measured and not applied.complete  # the specs are the measured outcome: nothing left to time
            priced = applied.candidates
            recost(priced, pricing)  # times the specs recorded price their groups and calibrate the estimates
        preds = node_preds(nodes)
        if measured:
            priced = measure_what_matters(preds, priced, params, pricing)
        cover = cover_by(preds, priced)
        chosen = [priced[i] for i in cover.chosen]
        record = decision_record(self.policy, nodes, preds, priced, cover, pricing, peaks.name, measured)
        if applied is not None and specs is not None:
            for group, c in zip(record["groups"], chosen):
                group["spec"] = applied.source_of(c)
            warnings = [*specs[0].warnings, *applied.ignored]
            record["specs"] = {
                "fingerprint": specs[1],
                "warnings": warnings,
                "records": len(specs[0].records),
                "complete": applied.complete,
            }
        return record, chosen, applied.configs if applied is not None else {}

    def whole_program_check(
        self,
        module: ModuleOp,
        params: ParamStore,
        chosen: Sequence[Candidate],
        configs: dict[Operation, dict[str, int]],
        record: dict[str, Any],
    ) -> tuple[str, dict[str, Any]]:
        """``auto``'s cover against what ``cudnn-only`` and ``triton-only`` would build,
        as whole programs on the GPU (``contest``): the fastest program's policy wins."""

        def own_policy(policy: str) -> Build:
            def build(copy: ModuleOp, ops: Mapping[Operation, Operation], store: ParamStore) -> None:
                replace(self, policy=policy).apply_with_params(Context(), copy, store)

            return build

        totals = record["totals"]
        contenders: dict[str, tuple[float | None, Build]] = {
            "auto": (totals["chosen_ms"], lambda copy, ops, store: realize(chosen, ops) or mark_configs(configs, ops)),
            "cudnn-only": (totals["cudnn_only_ms"], own_policy("cudnn-only")),
            "triton-only": (totals["triton_only_ms"], own_policy("triton-only")),
        }
        key = contest_key(module, self.backends or tuple(available_backends()), (record.get("specs") or {}).get("fingerprint"))
        found = CONTESTS.get_json(key)
        if isinstance(found, dict) and found.get("winner") in contenders:
            return found["winner"], {**found, "cached": True}
        winner, report = contest(module, params, {k: v for k, v in contenders.items() if v[0] is not None})
        programs = {"winner": winner, "contenders": report}
        if any(c.get("program_ms") is not None for c in report.values()):
            CONTESTS.put_json(key, programs)
        return winner, programs


MEASURE_ROUNDS = 4


def measure_what_matters(
    preds: Sequence[int], candidates: list[Candidate], params: ParamStore, report: PricingReport
) -> list[Candidate]:
    """Time the groups of the cheapest covers until those covers are all measured."""
    times: Times = {}
    for _ in range(MEASURE_ROUNDS):
        chosen: list[Candidate] = []
        for policy in ("auto", "cudnn-only", "triton-only"):
            allowed = policy_candidates(candidates, policy)
            try:
                chosen += [allowed[i] for i in cover_by(preds, allowed).chosen]
            except NoCover:
                continue
        if all(c.measured_ms is not None or c.fixed or c.spec is not None or c.backend not in BACKENDS for c in chosen):
            break
        candidates = measure(chosen, candidates, params, report, times)
    return candidates


def cover_by(preds: Sequence[int], candidates: Sequence[Candidate]) -> Cover:
    return best_cover(preds, [(c.mask, c.cost_ms) for c in candidates])


def policy_candidates(candidates: Sequence[Candidate], policy: str) -> list[Candidate]:
    """The candidates ``policy`` may use (see ``candidates``)."""
    if policy == "auto":
        return list(candidates)
    if policy == "triton-only":
        return [c for c in candidates if c.backend != "cudnn" or c.fixed]
    roots = {min(c.covers) for c in candidates if c.backend == "cudnn" and not c.fixed}
    return [c for c in candidates if not (c.backend == "triton" and c.covers & roots)]


def policy_total(preds: Sequence[int], candidates: Sequence[Candidate], policy: str) -> float | None:
    """The best cover's cost when only ``policy``'s candidates may be used."""
    try:
        return cover_by(preds, policy_candidates(candidates, policy)).cost
    except NoCover:
        return None


def _sub_cover(
    preds: Sequence[int], nodes: frozenset[int], candidates: Sequence[Candidate], without: Candidate
) -> tuple[float, list[Candidate]] | None:
    """The cheapest way to run exactly ``nodes`` with the other candidates inside them."""
    order = sorted(nodes)
    local = {n: i for i, n in enumerate(order)}
    sub_preds = [sum(1 << local[p] for p in range(len(preds)) if preds[n] >> p & 1 and p in local) for n in order]
    inside = [c for c in candidates if c is not without and c.covers <= nodes]
    try:
        found = best_cover(sub_preds, [(sum(1 << local[n] for n in c.covers), c.cost_ms) for c in inside])
    except NoCover:
        return None
    return found.cost, [inside[i] for i in found.chosen]


def decision_record(
    policy: str,
    nodes: Sequence[Any],
    preds: Sequence[int],
    candidates: Sequence[Candidate],
    cover: Cover,
    pricing: PricingReport,
    device: str,
    measured: bool,
) -> dict[str, Any]:
    groups = []
    chosen = [candidates[i] for i in cover.chosen]
    for number, c in enumerate(chosen):
        first = min(c.covers)
        alternatives = [a for a in candidates if a is not c and min(a.covers) == first]
        other = _sub_cover(preds, c.covers, candidates, c)
        if other is None:
            why = "the only candidate for these ops"
        else:
            cost, parts = other
            how = " + ".join(p.label for p in parts)
            why = f"{_ms(c.cost_ms)} vs {_ms(cost)} for the best other way to run these ops ({how})"
        groups.append(
            {
                "group": number,
                "backend": c.backend,
                "kind": c.kind,
                "ops": [op.name.removeprefix("tcp.") for op in c.ops],
                "nodes": sorted(c.covers),
                **_costs(c),
                "alternatives": [
                    {"backend": a.backend, "kind": a.kind, "nodes": sorted(a.covers), **_costs(a)} for a in alternatives
                ],
                "why": why,
            }
        )
    errors = [abs(c.estimated_ms - c.measured_ms) / c.measured_ms for c in candidates if c.measured_ms]
    return {
        "policy": policy,
        "device": device,
        "measured": measured,
        "groups": groups,
        "totals": {
            "chosen_ms": cover.cost,
            "estimated_ms": sum(c.estimated_ms for c in chosen),
            "cudnn_only_ms": policy_total(preds, candidates, "cudnn-only"),
            "triton_only_ms": policy_total(preds, candidates, "triton-only"),
            "nodes": len(nodes),
            "candidates": len(candidates),
            "unique_lowered": pricing.lowered,
            "measured": sum(1 for c in candidates if c.measured_ms is not None),
            "timed_now": pricing.measured,
            "dropped": pricing.dropped,
            "search_states": cover.states,
            "pricing_s": round(pricing.seconds, 3),
        },
        "estimate_error": {
            "count": len(errors),
            "median_relative": sorted(errors)[len(errors) // 2] if errors else None,
            "calibration": pricing.calibration,
        },
    }


def _costs(c: Candidate) -> dict[str, float | None]:
    return {"estimated_ms": c.estimated_ms, "measured_ms": c.measured_ms, "layout_ms": c.layout_ms, "cost_ms": c.cost_ms}


def _ms(value: float) -> str:
    return f"{value:.4f} ms"
