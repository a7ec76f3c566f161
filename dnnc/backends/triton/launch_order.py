"""triton-launch-order: marks each Triton group whose kernel is launched right after a
Triton kernel or a cuDNN matrix product (``LAUNCH_EARLY_ATTR``, ``lets_pdl_follow``),
the groups that may be launched with Programmatic Dependent Launch
(``configs.with_launch``).

A kernel launched with PDL is let onto the GPU once every program of the kernel before
it has exited or called the trigger. Dnnc's Triton kernels never trigger, so one of them
is let on only as the one before drains. On an H200 (each pair cold-compiled in one
call), PDL after every kernel made the diffusers UNet at batch 8 slower, 1.127 ->
1.179 ms (its cuDNN-only program as much slower), and BERT 1 x 128 faster, 0.456 ->
0.409. Taken to be the cause, not profiled: a library convolution that triggers early
(CUTLASS kernels can) lets the next kernel's programs on while it still has waves to
run, and they hold SMs while they wait. After Triton kernels only, the UNet ran 1.121 ->
1.103 and BERT 0.450 -> 0.448; after Triton kernels and cuDNN's matrix products (the
rule here), against after Triton kernels only: BERT 1 x 128 0.451 -> 0.407, T5 encoder
1 x 128 0.238 -> 0.211, GPT-2 8 x 128 0.803 -> 0.777, the UNet b8 1.105 -> 1.103. A
rule by the library kernel's size cannot tell these apart: most of the UNet's
convolutions have fewer results than GPT-2's products.

The program runs its top-level ops in order, one stream: parameters, constants and
views launch nothing, every other op (a cuDNN graph, a user's kernel, a torch op)
launches a kernel that is not dnnc's Triton.
"""

from __future__ import annotations

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, UnitAttr
from xdsl.ir import Block, Operation
from xdsl.passes import ModulePass

from dnnc.backends.interface import GROUP_KIND_ATTR, group_attr
from dnnc.backends.triton.configs import LAUNCH_EARLY_ATTR
from dnnc.backends.triton.marking import is_triton_group
from dnnc.ir import tcp
from dnnc.ir.analysis import moves_no_data


def launches_nothing(op: Operation) -> bool:
    """A top-level op with no kernel of its own: a parameter, a constant, a view
    (``moves_no_data``), the return."""
    return isinstance(op, (*tcp.SOURCE_OPS, func.ReturnOp)) or moves_no_data(op)


class TritonLaunchOrder(ModulePass):
    name = "triton-launch-order"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for f in op.ops:
            if isinstance(f, func.FuncOp) and f.body.blocks:
                mark_block(f.body.block)


def lets_pdl_follow(op: Operation) -> bool:
    """A kernel after which a Triton kernel may be launched with PDL: a Triton kernel (it
    never triggers early) or a cuDNN matrix product. A user's kernel or a torch op: no."""
    if is_triton_group(op):
        return True
    return op.name == "cudnn.graph" and (group_attr(op, GROUP_KIND_ATTR) or "").startswith("matmul")


def mark_block(block: Block) -> None:
    previous_lets = False
    for op in block.ops:
        if launches_nothing(op):
            continue
        is_triton = is_triton_group(op)
        if is_triton and previous_lets:
            op.attributes[LAUNCH_EARLY_ATTR] = UnitAttr()
        elif is_triton:
            op.attributes.pop(LAUNCH_EARLY_ATTR, None)
        previous_lets = lets_pdl_follow(op)
