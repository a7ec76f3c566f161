"""Make the IR say what a cover chose: chosen cuDNN groups are outlined as
``tcp.isolated_group {backend = "cudnn"}`` (``lower-cudnn`` turns them into
``cudnn.graph`` ops); the ops of each chosen Triton group get one ``dnnc.part``
number, so ``triton-fuse`` builds exactly that kernel; views and torch ops stay. A tuning spec's cuDNN plan rides on the outlined group."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from xdsl.ir import Operation

from dnnc.backends.interface import GROUP_BACKEND_ATTR, GROUP_KIND_ATTR, SPEC_PLAN_ATTR
from dnnc.backends.triton import PART_ATTR
from dnnc.ir.attrs import int_attr
from dnnc.ir.outline import outline
from dnnc.partition.candidates import Candidate


def realize(chosen: Sequence[Candidate], ops: Mapping[Operation, Operation] | None = None) -> None:
    """``ops``: where the candidates' ops are, when realizing on a clone of their module."""

    def members(c: Candidate) -> list[Operation]:
        return [ops[op] for op in c.ops] if ops is not None else list(c.ops)

    for number, c in enumerate(chosen):
        if c.backend == "triton":
            for member in members(c):
                member.attributes[PART_ATTR] = int_attr(number)
    for c in chosen:
        if c.backend == "cudnn" and not c.fixed:
            group = members(c)
            attrs: dict[str, str] = {GROUP_BACKEND_ATTR: "cudnn", GROUP_KIND_ATTR: c.kind}
            if c.spec_plan is not None:
                attrs[SPEC_PLAN_ATTR] = c.spec_plan
            outline(group, [group[-1].results[0]], attrs)
