"""Run a program whose ``tcp.isolated_group``s go through the Triton backend and
whose other ops run by the reference rules, on any device (CPU under
TRITON_INTERPRET=1, or CUDA). A stand-in for the real executor, for tests only."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import torch
from xdsl.dialects import func

from bench.split_k_probe import conv
from dnnc.backends.reference.rules import RULES
from dnnc.backends.triton import TritonFuse, compile_group
from dnnc.ir import tcp
from dnnc.ir.params import ParamStore
from dnnc.ir.program import Program
from dnnc.ir.text import parse_ir
from dnnc.ir.types import element_of, shape_of, torch_dtype
from dnnc.pipeline import run_passes

TORCH_DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}


class _Env:
    """Reference rules in each value's own dtype (what a GPU executor does)."""

    compute_dtype = None

    def __init__(self, program: Program, device: torch.device):
        self.device = device
        self.params = {name: program.params[name].to(device) for name in (op.param_name for op in program.param_ops())}

    def param(self, name: str) -> torch.Tensor:
        return self.params[name]

    def run_block(self, op: tcp.IsolatedGroupOp, args: Sequence[torch.Tensor]) -> list[torch.Tensor]:
        raise AssertionError("groups run as Triton kernels here")


def run_with_triton(
    program: Program, inputs: Sequence[torch.Tensor], device: torch.device | str
) -> tuple[list[torch.Tensor], int]:
    """Outputs of ``program`` and the number of groups launched as Triton kernels."""
    device = torch.device(device)
    env = _Env(program, device)
    block = program.entry.body.block
    values = {a: x.to(device) for a, x in zip(block.args, inputs)}
    launched = 0
    for op in block.ops:
        args = [values[v] for v in op.operands]
        if isinstance(op, func.ReturnOp):
            return args, launched
        if isinstance(op, tcp.IsolatedGroupOp):
            kernel = compile_group(op, device)
            outs = [torch.empty(shape_of(r), dtype=torch_dtype(element_of(r)), device=device) for r in op.outputs]
            kernel.launch([a.contiguous() for a in args], outs)
            launched += 1
        else:
            result = RULES[type(op)](op, args, env)
            outs = result if isinstance(result, list) else [result]
            outs = [o.to(torch_dtype(element_of(r))) for o, r in zip(outs, op.results)]
        values.update(zip(op.results, outs))
    raise AssertionError("no func.return")


def assert_group_kernel_matches_reference(
    ir: str, dtype: str, config: dict[str, int], rng: torch.Generator, scales: dict[int, float] | None = None
) -> None:
    """``ir`` (one fused group, in ``dtype``) as the kernel ``config`` makes of it, against
    the reference on fresh random inputs (input ``i`` times ``scales[i]``), launched twice on
    the same buffers: a Gluon kernel's barriers start over. On the CUDA device."""
    from dnnc.backends.reference.interpreter import ReferenceExecutor
    from dnnc.backends.triton.kernels import generate
    from dnnc.backends.triton.launch import TritonKernel
    from dnnc.backends.triton.skeleton import GroupInfo
    from tests.numerics import assert_matches

    program = typed_program(ir, dtype, "group")
    inputs = [torch.randn(shape_of(t), generator=rng).to(torch_dtype(t.element_type)) for t in program.input_types]
    inputs = [x * (scales or {}).get(i, 1) for i, x in enumerate(inputs)]
    (expected,) = ReferenceExecutor(program).run(inputs)
    program = typed_program(ir, dtype, "group")
    group = fused_group(program)
    kernel = TritonKernel(generate(group, config, info=GroupInfo.of(group)), torch.device("cuda"), 90, config)
    args = {a: x.cuda() for a, x in zip(program.entry.body.block.args, inputs)}
    (y,) = group.outputs
    out = torch.empty(shape_of(y), dtype=torch_dtype(element_of(y)), device="cuda")
    for _ in range(2):
        out.fill_(float("nan"))
        kernel.launch([args[v] for v in group.operands], [out])
        assert_matches(out.cpu(), expected, TORCH_DTYPES[dtype], what=f"{config} ({dtype})")


def typed_program(ir: str, dtype: str, name: str) -> Program:
    """``ir`` written for an element type ``T`` (``xT>``), in ``dtype``, without parameters."""
    return Program(parse_ir(ir.replace("xT>", f"x{dtype}>"), name), ParamStore())


def fused_group(program: Program) -> tcp.IsolatedGroupOp:
    """The one Triton group ``triton-fuse`` makes of ``program``."""
    run_passes(program, [TritonFuse()])
    (group,) = [op for op in program.entry.body.walk() if isinstance(op, tcp.IsolatedGroupOp)]
    return group


def capability(device: torch.device) -> int | None:
    """``device``'s compute capability as one number (90 for sm_90), None off CUDA (the interpreter)."""
    if device.type != "cuda":
        return None
    major, minor = torch.cuda.get_device_capability(device)
    return major * 10 + minor


def windowed_conv(n: int, h: int, c: int, o: int, dtype: str, rng: torch.Generator, stride: int = 1) -> Program:
    """A 3x3 convolution (padding 1) + bias + ReLU between channels-last neighbours, as a
    partitioned Triton group (``dnnc.part``), its weight ``w`` and bias ``b`` random
    parameters of ``dtype``."""
    params = ParamStore()
    params.add("w", (torch.randn(o, c, 3, 3, generator=rng) / 8).to(TORCH_DTYPES[dtype]))
    params.add("b", torch.randn(1, o, 1, 1, generator=rng).to(TORCH_DTYPES[dtype]))
    return Program(parse_ir(conv(h, c, o, n, stride=stride, dtype=dtype), "window"), params)


def replayed_saved_and_loaded(
    program: Program,
    shapes: Sequence[tuple[int, ...]],
    key: str,
    rng: torch.Generator,
    path: Path,
    config: dict[str, int] | None = None,
) -> list[dict]:
    """``program`` (float16 inputs of ``shapes``) compiled for the CUDA device with one
    kernel whose config has ``key`` (``config`` given to every Triton group, else each
    group's first heuristic config), replayed on new inputs against the reference, saved
    to ``path`` and loaded again (the kernel still there, the result the same). Returns the
    artifact's Triton records."""
    import json
    import zipfile

    import dnnc
    from dnnc import knobs
    from dnnc.backends.reference.interpreter import ReferenceExecutor
    from dnnc.backends.triton import launch
    from dnnc.compiled import CompiledModule
    from dnnc.report import CompileReport
    from dnnc.runtime.gpu_executor import GpuExecutor
    from tests.numerics import assert_matches

    def keyed(module: CompiledModule) -> list:
        return [s.kernel for s in module._executor.steps if getattr(s.kernel, "config", {}).get(key)]

    reference = ReferenceExecutor(program)
    first = launch.spec_or_candidates
    if config is not None:
        launch.spec_or_candidates = lambda info, capability=None: [config]
    try:
        with knobs.override(autotune=False):
            compiled = CompiledModule(program, CompileReport(), "cuda", executor=GpuExecutor(program, "cuda"))
    finally:
        launch.spec_or_candidates = first
    assert len(keyed(compiled)) == 1, f"one kernel with {key}"
    for _ in range(3):  # the captured program replayed on new inputs
        inputs = [torch.randn(s, generator=rng).half() for s in shapes]
        want = reference.run(inputs)[0]
        assert_matches(compiled(*[x.cuda() for x in inputs]).cpu(), want, torch.float16)
    saved = compiled.save(path)
    records = json.loads(zipfile.ZipFile(saved).read(f"kernels/{compiled.target}/triton.json"))
    loaded = dnnc.load(saved)
    assert keyed(loaded), f"the loaded program keeps its kernel with {key}"
    assert_matches(loaded(*[x.cuda() for x in inputs]).cpu(), want, torch.float16)
    return records
