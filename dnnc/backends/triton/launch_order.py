"""triton-launch-order: marks each Triton group whose kernel is launched right after a
Triton kernel or a cuDNN matrix product (``LAUNCH_EARLY_ATTR``, ``launch_after``),
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
1.103 and BERT 0.450 -> 0.448. After Triton kernels and every cuDNN matrix product,
against after Triton kernels only: BERT 1 x 128 0.451 -> 0.407, T5 encoder 1 x 128
0.238 -> 0.211, GPT-2 8 x 128 0.803 -> 0.777, the UNet b8 level, but the Whisper
encoder b1 0.245 -> 0.304; hence after a product only in a config of one wave
(``configs.ONE_WAVE_FOLLOWER_PROGRAMS``, where what was measured with it is).

The program runs its top-level ops in order, one stream: parameters, constants and
views launch nothing, every other op (a cuDNN graph, a user's kernel, a torch op)
launches a kernel that is not dnnc's Triton.
"""

from __future__ import annotations

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.ir import Block, Operation
from xdsl.passes import ModulePass

from dnnc.backends.interface import GROUP_KIND_ATTR, group_attr
from dnnc.backends.triton.configs import AFTER_LIBRARY, AFTER_TRITON, LAUNCH_EARLY_ATTR
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


def launch_after(op: Operation, is_triton: bool) -> str | None:
    """How a Triton kernel right after ``op`` may be launched with PDL: after a Triton
    kernel (it never triggers early) in any config, after a cuDNN matrix product in a
    config of one wave (``configs.AFTER_LIBRARY``); after anything else (a convolution, a
    user's kernel, a torch op) not at all."""
    if is_triton:
        return AFTER_TRITON
    if op.name == "cudnn.graph" and (group_attr(op, GROUP_KIND_ATTR) or "").startswith("matmul"):
        return AFTER_LIBRARY
    return None


def mark_block(block: Block) -> None:
    previous: str | None = None
    for op in block.ops:
        if launches_nothing(op):
            continue
        is_triton = is_triton_group(op)
        if is_triton and previous is not None:
            op.attributes[LAUNCH_EARLY_ATTR] = StringAttr(previous)
        elif is_triton:
            op.attributes.pop(LAUNCH_EARLY_ATTR, None)
        previous = launch_after(op, is_triton)
