"""partition: decide, for the whole graph, which backend runs which ops.

Enumerates overlapping candidate groups per backend (``enumeration``), prices
each once (``pricing``: roofline estimate, lowering check, measured on a GPU:
``Priced``), takes the cheapest acyclic cover (``cover``); on a GPU, ``auto`` then
checks that cover against the covers ``cudnn-only`` and ``triton-only`` take from
the same priced candidates, as whole programs (``contest``). Then it makes the IR
say so (``realize``):

* a chosen cuDNN group is outlined as a ``tcp.isolated_group {backend = "cudnn"}``
  (``lower-cudnn`` turns it into a ``cudnn.graph`` later);
* the ops of a chosen Triton group are marked with one ``dnnc.part`` number, so
  ``triton-fuse`` builds exactly that kernel (the layout transposes that
  ``assign-layouts`` adds join whichever kernel they touch);
* views and torch ops stay as they are.

``partition_block`` returns the decision record (and the contest's winner as built,
``Partitioned``); ``partition.decide`` hands both to the pipeline, which keeps the
record in ``Program.metadata`` for ``dnnc explain`` and artifacts. The ``partition``
pass leaves the record on the function as ``dnnc.decisions`` (JSON) instead.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.ir import Block, Operation

from dnnc import knobs, progress
from dnnc.errors import PassError
from dnnc.ir.params import ParamStore
from dnnc.ir.program import Program
from dnnc.ir.rewriting import ParamPass
from dnnc.partition import DECISIONS_ATTR, memo
from dnnc.partition.backends import BACKENDS, building_elsewhere, usable
from dnnc.partition.candidates import POLICIES, Candidate, graph_nodes, node_preds, policy_candidates
from dnnc.partition.contest import CONTESTS, Built, contest, contest_key
from dnnc.partition.cover import Cover, NoCover, best_cover
from dnnc.partition.enumeration import enumerate_candidates
from dnnc.partition.pricing import PricingReport, Times, measure, price, recost, should_measure
from dnnc.partition.realize import realize
from dnnc.partition.spec_apply import Applied, apply_specs, mark_configs
from dnnc.partition.spec_apply import active as active_specs
from dnnc.partition.spec_facts import library_roots, mark_sites
from dnnc.roofline import peaks_for
from dnnc.specs.library import Resolved

log = logging.getLogger("dnnc.partition")


def available_backends() -> list[str]:
    """The GPU backends asked for (``knobs.gpu_backends``) that can run here."""
    asked = knobs.get().backend_names()
    return [b for b in asked if b not in BACKENDS or usable(b)]


def device_name() -> str | None:
    """The GPU programs are priced for: the one here, none (an H100's peaks) when
    building for another."""
    import torch

    return torch.cuda.get_device_name(0) if torch.cuda.is_available() and not building_elsewhere() else None


@dataclass(frozen=True)
class Partition(ParamPass):
    name = "partition"

    policy: str = "auto"
    backends: tuple[str, ...] = ()
    """Backends to choose among; empty: ``knobs.gpu_backends`` that can run here."""

    def apply_with_params(self, ctx: Context, op: ModuleOp, params: ParamStore) -> None:
        for fn in [f for f in op.ops if isinstance(f, func.FuncOp) and f.body.blocks]:
            outcome = self.partition_block(fn.body.block, params, Program(op, params))
            if outcome is not None:
                fn.attributes[DECISIONS_ATTR] = StringAttr(json.dumps(outcome.record))

    def partition_block(self, block: Block, params: ParamStore, whole: Program | None = None) -> Partitioned | None:
        """The block's groups outlined and marked, with the decision record (None:
        nothing to decide). ``whole``: the program the block belongs to, for building
        whole contending programs (``contest``). Every entry to the partitioner comes through here."""
        if self.policy not in POLICIES:
            raise PassError(f"partition policy {self.policy!r}: expected one of {', '.join(POLICIES)}")
        with memo.one_compile():
            return self._partition_block(block, params, whole)

    def _partition_block(self, block: Block, params: ParamStore, whole: Program | None) -> Partitioned | None:
        priced = self.price(block, params)
        if priced is None:
            return None
        decision = priced.choose(self.policy)
        prefixes = library_roots(priced.nodes)
        built = None
        if priced.measured and self.policy == "auto" and whole is not None:
            decision, built = self.whole_program_check(whole, priced, decision, prefixes)
        mark_sites(decision.chosen, prefixes)
        realize(decision.chosen)
        mark_configs(decision.configs)
        return Partitioned(decision.record, built)

    def price(self, block: Block, params: ParamStore) -> Priced | None:
        """The block's candidates for ``self.policy``, priced, the tuning specs applied, and
        on a GPU the groups of every policy's cheapest cover measured (None: no nodes)."""
        nodes = graph_nodes(block)
        if not nodes:
            return None
        peaks = peaks_for(device_name())
        measured = should_measure()
        with progress.span("partition: enumerate candidates"):
            candidates = enumerate_candidates(nodes, self.backends or available_backends(), self.policy)
        with progress.span("partition: estimate and check lowering"):
            priced, pricing = price(candidates, params, peaks)
        specs = active_specs()
        applied = apply_specs(priced, specs[0]) if specs is not None else None
        if applied is not None:
            measured = measured and not applied.complete  # the specs are the measured outcome: nothing left to time
            priced = applied.candidates
            recost(priced, pricing)  # times the specs recorded price their groups and calibrate the estimates
        preds = node_preds(nodes)
        if measured:
            progress.stage("gpu-partition: timing candidate groups")
            with progress.span("partition: time candidate groups"):
                priced = measure_what_matters(preds, priced, params, pricing)
        return Priced(nodes, preds, priced, pricing, peaks.name, measured, applied, specs)

    def whole_program_check(
        self,
        whole: Program,
        priced: Priced,
        decision: Decision,
        prefixes: Mapping[Operation, Sequence[Candidate]],
    ) -> tuple[Decision, Built | None]:
        """``auto``'s cover against the covers ``cudnn-only`` and ``triton-only`` take from
        the same priced candidates, as whole programs on the GPU (``contest``): the
        fastest program's cover is the decision, its record saying ``auto`` and the
        contest; and that program as the contest built it (None when the winner came
        from the contest cache)."""
        decisions = {"auto": decision}
        swapped = priced.ties_swapped(decision)
        if swapped is not None:
            decisions[TIES_SWAPPED] = swapped
        for policy in POLICIES:
            if policy not in decisions:
                try:
                    decisions[policy] = priced.choose(policy)
                except NoCover:
                    continue
        contenders = {
            p: (d.record["totals"]["chosen_ms"], Contender(p, d.chosen, d.configs, prefixes)) for p, d in decisions.items()
        }
        specs = (decision.record.get("specs") or {}).get("fingerprint")
        key = contest_key(whole.module, self.backends or tuple(available_backends()), specs)
        found = CONTESTS.get_json(key)
        built = None
        if isinstance(found, dict) and found.get("winner") in contenders:
            winner, programs = found["winner"], {**found, "cached": True}
        else:
            with progress.span("partition: whole-program contest"):
                winner, report, built = contest(whole, contenders)
            programs = {"winner": winner, "contenders": report}
            if any(c.get("program_ms") is not None for c in report.values()):
                CONTESTS.put_json(key, programs)
        chosen = decisions[winner]
        chosen.record["policy"] = "auto"
        chosen.record["programs"] = programs
        return chosen, built


@dataclass(frozen=True)
class Partitioned:
    """What partitioning a block gives: the decision record, and where a whole-program
    contest built the winner, that program and executor (``contest.Built``), which a
    compile goes on with instead of lowering and building the same program again."""

    record: dict[str, Any]
    built: Built | None = None


@dataclass(frozen=True)
class Decision:
    """One policy's cover: its record, its groups in the cover's order, and the Triton
    configs tuning specs chose for it, by root op."""

    record: dict[str, Any]
    chosen: list[Candidate]
    configs: dict[Operation, dict[str, int]]


@dataclass
class Priced:
    """What a block's pricing found; any policy's cover is chosen from it without
    pricing, lowering or measuring again."""

    nodes: list[Operation]
    preds: list[int]
    candidates: list[Candidate]
    pricing: PricingReport
    device: str
    measured: bool
    applied: Applied | None
    specs: tuple[Resolved, str] | None

    def ties_swapped(self, decision: Decision) -> Decision | None:
        """``decision``'s cover with each group whose ops another backend's measured group
        runs within ``TIE`` of its cost run by that group instead (None where no group
        has such a rival): the other side of the near-ties, as one more whole program
        for the contest to time."""
        allowed = policy_candidates(self.candidates, "auto")
        position = {id(c): i for i, c in enumerate(allowed)}
        chosen = []
        for c in decision.chosen:
            rivals = [
                a
                for a in allowed
                if a.covers == c.covers
                and a.backend != c.backend
                and a.measured_ms is not None
                and c.measured_ms is not None
                and a.cost_ms <= TIE * c.cost_ms
            ]
            chosen.append(min(rivals, key=lambda a: a.cost_ms) if rivals else c)
        if all(a is c for a, c in zip(chosen, decision.chosen)) or any(id(a) not in position for a in chosen):
            return None
        cover = Cover(sum(a.cost_ms for a in chosen), tuple(position[id(a)] for a in chosen))
        record = decision_record(TIES_SWAPPED, self.nodes, self.preds, allowed, cover, self.pricing, self.device, self.measured)
        if "specs" in decision.record:
            record["specs"] = decision.record["specs"]
        return Decision(record, chosen, decision.configs)

    def choose(self, policy: str) -> Decision:
        """``policy``'s cheapest cover of the priced candidates (``NoCover`` if none)."""
        allowed = policy_candidates(self.candidates, policy)
        cover = cover_by(self.preds, allowed)
        chosen = [allowed[i] for i in cover.chosen]
        record = decision_record(policy, self.nodes, self.preds, allowed, cover, self.pricing, self.device, self.measured)
        if self.applied is not None and self.specs is not None:
            for group, c in zip(record["groups"], chosen):
                group["spec"] = self.applied.source_of(c)
            record["specs"] = {
                "fingerprint": self.specs[1],
                "warnings": [*self.specs[0].warnings, *self.applied.ignored],
                "records": len(self.specs[0].records),
                "complete": self.applied.complete,
            }
        return Decision(record, chosen, self.applied.configs if self.applied is not None else {})


@dataclass(frozen=True)
class Contender:
    """A contest's ``Build``: makes a copy of the module say what ``policy``'s cover
    chose, as the partitioner marks the module itself (sites, groups, configs)."""

    policy: str
    chosen: Sequence[Candidate]
    configs: Mapping[Operation, dict[str, int]]
    prefixes: Mapping[Operation, Sequence[Candidate]]

    @property
    def cover(self) -> tuple[frozenset[int], frozenset[tuple[int, tuple[tuple[str, int], ...]]]]:
        """What makes the program: the chosen candidates and the configs, by identity
        (two policies whose covers are equal build the same program)."""
        configs = frozenset((id(op), tuple(sorted(c.items()))) for op, c in self.configs.items())
        return frozenset(id(c) for c in self.chosen), configs

    def __call__(self, copy: ModuleOp, ops: Mapping[Operation, Operation], store: ParamStore) -> None:
        mark_sites(self.chosen, self.prefixes, ops)
        realize(self.chosen, ops)
        mark_configs(dict(self.configs), ops)


TIE = 1.03
"""A group's rival from another backend, measured within this factor of its cost, is a
near-tie the groups' times alone cannot settle (``Priced.ties_swapped``). ResNet-50's
14x14 1x1 reductions at batch 32 on an H200 measured 9.10 us as Triton groups and 9.11
as cuDNN's alone, and the compile took either; in the whole program's replay the cuDNN
kernels ran 8.6 us and the Triton ones 11.2, and the programs 0.835 and 0.844 ms."""
TIES_SWAPPED = "auto with ties swapped"
"""The contest's name for ``auto``'s cover with its near-ties swapped."""

MEASURE_ROUNDS = 4

MEASURE_MARGIN = 1.5
"""A single-backend policy's cheapest cover is measured only while it is priced within
this many times the cheapest cover (``auto``'s, which may use every candidate). One
further out cannot enter the whole-program contest, which builds covers priced within
``contest.MARGIN`` (1.25) of the cheapest, unless measuring ``auto``'s groups moves the
prices by a fifth against it, and its groups were compiled and timed for nothing. On
an H200 this took 0.8-1.2 s off the pricing of convnext_tiny, efficientnet_b0 and
mobilenetv3 at batch 32; a UNet's, whose triton-only cover is priced 2.3 times
``auto``'s, did not change (BENCHMARKS.md)."""


def measure_what_matters(
    preds: Sequence[int], candidates: list[Candidate], params: ParamStore, report: PricingReport
) -> list[Candidate]:
    """Time the groups of the cheapest covers (``auto``'s, and each single-backend
    policy's priced within ``MEASURE_MARGIN`` of it) until those covers are all measured."""
    times: Times = {}
    for _ in range(MEASURE_ROUNDS):
        chosen = [c for cover in covers_worth_measuring(preds, candidates) for c in cover]
        if all(c.measured_ms is not None or c.fixed or c.spec is not None or c.backend not in BACKENDS for c in chosen):
            break
        candidates = measure(chosen, candidates, params, report, times)
    return candidates


def covers_worth_measuring(preds: Sequence[int], candidates: Sequence[Candidate]) -> list[list[Candidate]]:
    """The cheapest cover of every policy that has one, at today's prices, keeping those
    priced within ``MEASURE_MARGIN`` of the cheapest of them."""
    found: list[tuple[float, list[Candidate]]] = []
    for policy in ("auto", "cudnn-only", "triton-only"):
        allowed = policy_candidates(candidates, policy)
        try:
            cover = cover_by(preds, allowed)
        except NoCover:
            continue
        found.append((cover.cost, [allowed[i] for i in cover.chosen]))
    if not found:
        return []
    cheapest = min(cost for cost, _ in found)
    return [chosen for cost, chosen in found if cost <= MEASURE_MARGIN * cheapest]


def cover_by(preds: Sequence[int], candidates: Sequence[Candidate]) -> Cover:
    """The cheapest cover; a graph the exact search found too wide once in this compile
    is searched in program order from then on (``memo.wide``)."""
    graph = tuple(preds)
    weighted = tuple((c.mask, c.cost_ms) for c in candidates)
    compile_memo = memo.current()
    found = compile_memo.covers.get((graph, weighted))
    if found is None:
        found = best_cover(preds, weighted, exact=graph not in compile_memo.wide)
        compile_memo.covers[(graph, weighted)] = found
    if not found.exact:
        compile_memo.wide.add(graph)
    return found


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
            "search": "exact" if cover.exact else "in program order (the exact search was too wide)",
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
