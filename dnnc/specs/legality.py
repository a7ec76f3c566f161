"""Whether a spec's decisions can be carried out where they apply in a model
(``dnnc spec verify --model``): at every cuDNN-rootable group the record that wins
is tried the way a compile would use it.

* cuDNN: the group must lower to a ``cudnn.graph``; with a GPU here, the recorded
  engine and knobs (or tag) must build for that graph with the installed cuDNN.
* Triton: the root alone must lower to a Triton kernel that takes every key of the
  config; the kernel is generated with it, and compiled when a GPU is here.

A decision that cannot be carried out is a verdict with the reason, never an
exception: the compile itself would fall back (tune, or other configs) instead.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.dialects.builtin import StringAttr

from dnnc.backends.interface import SPEC_CONFIG_ATTR
from dnnc.ir import cudnn, tcp
from dnnc.ir.program import Program
from dnnc.partition.candidates import Candidate, enumerate_candidates, graph_nodes
from dnnc.specs.apply import plan_json
from dnnc.specs.facts import Site, first_match, sites
from dnnc.specs.format import Record
from dnnc.specs.library import record_label


@dataclass(frozen=True)
class Verdict:
    site: str
    record: str
    ok: bool
    detail: str

    def text(self) -> str:
        return f"{'ok  ' if self.ok else 'FAIL'} {self.site:28s} {self.record}: {self.detail}"


def check_decisions(program: Program, records: Sequence[Record], on_gpu: bool) -> list[Verdict]:
    """One verdict per cuDNN-rootable group of ``program`` that some record decides."""
    verdicts = []
    triton_alone = _triton_roots(program)
    for site in sites(program):
        found = first_match(records, site.prefixes)
        if found is None:
            continue
        record, group = found
        label = f"{record.source} ({record_label(record)}) -> {record.decision.describe()}"
        where = f"{site.label} as {group.kind}" if record.decision.backend == "cudnn" else site.label
        try:
            if record.decision.backend == "cudnn":
                detail = _check_cudnn(group, record, program, on_gpu)
            else:
                detail = _check_triton(site, triton_alone.get(site.root), record, program, on_gpu)
            verdicts.append(Verdict(where, label, True, detail))
        except Exception as e:  # every way a decision can fail is reported, not raised
            verdicts.append(Verdict(where, label, False, f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"))
    return verdicts


def _check_cudnn(group: Candidate, record: Record, program: Program, on_gpu: bool) -> str:
    from dnnc.partition.measure import lower_alone

    lowered = lower_alone(group, program.params)
    plan = plan_json(record)
    if plan is None:
        return "lowers to a cuDNN graph (no plan named)"
    if not on_gpu:
        return "lowers to a cuDNN graph; the engine is checked on a GPU only"
    import torch

    from dnnc.backends.cudnn.runtime import PlanRecord, rebuild_kernel

    graph = next(op for op in lowered.entry.body.block.ops if isinstance(op, cudnn.GraphOp))
    kernel = rebuild_kernel(graph, torch.device("cuda"), PlanRecord.from_json(plan))
    return f"engine {kernel.plan.engine} builds for this graph here"


def _check_triton(site: Site, alone: Candidate | None, record: Record, program: Program, on_gpu: bool) -> str:
    from dnnc.backends.triton.kernels import GroupInfo, generate
    from dnnc.backends.triton.launch import compile_group, spec_or_candidates
    from dnnc.partition.measure import lower_alone

    if alone is None:
        raise ValueError(f"Triton has no kernel for the {site.prefixes[-1].kind} at {site.label} alone")
    lowered = lower_alone(alone, program.params)
    kernel = next(op for op in lowered.entry.body.block.ops if isinstance(op, tcp.IsolatedGroupOp))
    if record.decision.config:
        for op in kernel.body.block.ops:  # as the partitioner marks the root, which is in here
            op.attributes[SPEC_CONFIG_ATTR] = StringAttr(_json(record.decision.config))
    (config,) = spec_or_candidates(GroupInfo.of(kernel))[:1]
    generate(kernel, config)
    if not on_gpu:
        return f"the {GroupInfo.of(kernel).kind} kernel takes the config (generated; compiled on a GPU only)"
    compile_group(kernel, "cuda")
    return f"the {GroupInfo.of(kernel).kind} kernel compiles with it here"


def _triton_roots(program: Program) -> dict:
    """Each op's Triton candidate of that op alone, by op."""
    nodes = graph_nodes(program.entry.body.block)
    return {c.ops[0]: c for c in enumerate_candidates(nodes, ("triton",), "auto") if c.backend == "triton" and len(c.ops) == 1}


def _json(config: object) -> str:
    import json

    return json.dumps(config, sort_keys=True)
