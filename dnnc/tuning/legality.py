"""Whether a spec's decisions can be carried out in a model (``dnnc spec verify
--model``). The model is partitioned with the configured specs (``auto``, nothing
measured) and lowered as a compile would lower it, so every graph has the layouts
and neighbours it will have; then each group a record decided is tried:

* cuDNN: with a GPU here, the recorded engine and knobs (or tag) must build for
  that ``cudnn.graph`` with the installed cuDNN;
* Triton: the kernel holding the root must take every key of the config and
  generate with it, and compile when a GPU is here.

A decision that cannot be carried out is a verdict with the reason, never an
exception: a compile would fall back (tune, or try other configs) instead.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from dnnc.ir import cudnn, tcp
from dnnc.ir.program import Program
from dnnc.partition.spec_facts import marked_sites


@dataclass(frozen=True)
class Verdict:
    site: str
    record: str
    ok: bool
    detail: str
    on_gpu_only: bool = False
    """Part of the check (building the engine, compiling the kernel) needs a GPU and
    was left out here."""

    def text(self) -> str:
        return f"{'ok  ' if self.ok else 'FAIL'} {self.site}  [{self.record}]: {self.detail}"


def check_decisions(program: Program, on_gpu: bool) -> list[Verdict]:
    """Partition ``program`` (canonical; changed in place) with the specs the knobs
    name and lower it; one verdict per group a record decided, in program order."""
    from dnnc.partition.backends import BACKENDS
    from dnnc.partition.decide import decide
    from dnnc.passes import run_passes
    from dnnc.passes.stages import PARTITIONED

    outcome = decide(program, policy="auto", backends=tuple(BACKENDS))
    groups = outcome.record.get("groups", []) if outcome is not None else []
    run_passes(program, PARTITIONED)
    verdicts = []
    for op, facts, number in marked_sites(program):
        source = groups[number].get("spec") if number < len(groups) else None
        if not source:
            continue  # the cost model decided this group
        where = f"{facts.kind} {'x'.join(map(str, facts.shapes.get('input', ())))}"
        try:
            detail = _check_graph(op, on_gpu) if isinstance(op, cudnn.GraphOp) else _check_kernel(op, on_gpu)
            partial = not on_gpu and not (isinstance(op, cudnn.GraphOp) and op.plan is None)
            verdicts.append(Verdict(where, source, True, detail, partial))
        except Exception as e:  # every way a decision can fail is reported, not raised
            first = str(e).splitlines()[0] if str(e) else ""
            verdicts.append(Verdict(where, source, False, f"{type(e).__name__}: {first}"))
    return verdicts


def _check_graph(graph: cudnn.GraphOp, on_gpu: bool) -> str:
    if graph.plan is None:
        return "lowers to a cuDNN graph (no plan named)"
    plan = json.loads(graph.plan.data)
    if not on_gpu:
        return f"lowers to a cuDNN graph; engine {plan['engine']} is checked on a GPU only"
    import torch

    from dnnc.backends.cudnn import PlanRecord, rebuild_kernel

    kernel = rebuild_kernel(graph, torch.device("cuda"), PlanRecord.from_json(graph.plan.data))
    return f"engine {kernel.plan.engine} builds for this graph here"


def _check_kernel(group: tcp.IsolatedGroupOp, on_gpu: bool) -> str:
    from dnnc.backends.triton import GroupInfo, compile_group, generate, spec_or_candidates

    info = GroupInfo.of(group)
    config: dict[str, Any] = spec_or_candidates(info)[0]
    generate(group, config)
    if not on_gpu:
        return f"the {info.kind} kernel takes {_short(config)} (generated; compiled on a GPU only)"
    compile_group(group, "cuda")
    return f"the {info.kind} kernel compiles with {_short(config)} here"


def _short(config: dict[str, Any]) -> str:
    return ",".join(f"{k}={v}" for k, v in config.items())
