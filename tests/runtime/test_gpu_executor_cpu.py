"""The GPU executor's bookkeeping, on the CPU: a program lowered for the GPU, run
on CPU tensors, where no cuDNN graph can be built (no frontend or no GPU) and
Triton runs only under its interpreter. Every graph must be raised to Triton groups
with its reason recorded (and a Triton group that cannot build falls back to torch
ops), never crash, and the result must equal the reference backend's on the
canonical program."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from dnnc.backends.interface import GROUP_BACKEND_ATTR, group_attr
from dnnc.backends.reference import ReferenceExecutor
from dnnc.ir import cudnn
from dnnc.passes import parse_passes
from dnnc.pipeline import CUDNN_STAGE, lower_for_gpu, run_passes, to_canonical_tcp
from dnnc.runtime.gpu_executor import GpuExecutor
from tests.numerics import assert_matches


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.c1 = nn.Conv2d(8, 16, 3, padding=1)
        self.c2 = nn.Conv2d(16, 16, 1)
        self.fc = nn.Linear(16, 5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.c1(x))
        y = torch.relu(self.c2(y) + y)
        return self.fc(torch.nn.functional.max_pool2d(y, 2).mean((2, 3)))


def test_graphs_without_an_engine_run_as_triton_groups(rng: torch.Generator) -> None:
    model = Net().eval()
    x = torch.randn(2, 8, 9, 9, generator=rng)
    program = to_canonical_tcp(model, (x,))
    expected = ReferenceExecutor(program).run([x])
    run_passes(program, parse_passes(CUDNN_STAGE))  # the cuDNN stage even where the frontend is missing
    graphs = [op for op in program.entry.body.walk() if isinstance(op, cudnn.GraphOp)]
    assert len(graphs) == 3
    executor = GpuExecutor(program, "cpu")
    (got,) = executor.run([x])
    assert_matches(got, expected[0], torch.float32)
    summary = executor.summary()
    assert [f["runs_as"] for f in summary["fallbacks"] if f["backend"] == "cudnn"] == ["triton"] * 3, summary
    assert "cudnn" not in summary["steps"], summary
    top = list(program.entry.body.block.ops)
    assert not any(isinstance(op, cudnn.GraphOp) for op in top)
    assert sum(group_attr(op, GROUP_BACKEND_ATTR) == "triton" for op in top) >= 3


def test_pipeline_without_the_frontend_leaves_convolutions_to_triton(rng: torch.Generator) -> None:
    import importlib.util

    model = Net().eval()
    x = torch.randn(2, 8, 9, 9, generator=rng)
    program = to_canonical_tcp(model, (x,))
    lower_for_gpu(program, backends=["cudnn", "triton"])
    has_graphs = any(isinstance(op, cudnn.GraphOp) for op in program.entry.body.walk())
    assert has_graphs == (importlib.util.find_spec("cudnn") is not None)


def test_records_of_a_program_with_regrouped_graphs_fit_it_when_loaded(rng: torch.Generator) -> None:
    """Records are keyed by position in the program as saved, the regrouped graphs'
    Triton groups included: loading rebuilds every group from its own record."""
    import warnings

    from dnnc.artifact.kernels import kernel_records
    from dnnc.backends.interface import Recorded
    from dnnc.backends.triton.kernel_backend import parse_records
    from dnnc.ir.program import Program
    from dnnc.ir.text import parse_ir

    model = Net().eval()
    x = torch.randn(2, 8, 9, 9, generator=rng)
    program = to_canonical_tcp(model, (x,))
    run_passes(program, parse_passes(CUDNN_STAGE))
    built = GpuExecutor(program, "cpu")
    assert any(f["runs_as"] == "triton" for f in built.summary()["fallbacks"])
    records = kernel_records(built)["triton"]
    assert sorted(r["ordinal"] for r in records) == list(range(built.summary()["steps"]["triton"]))
    saved = Program(parse_ir(program.text()), program.params)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a record that did not fit its group would warn
        loaded = GpuExecutor(saved, "cpu", Recorded({"triton": parse_records(records, "triton.json")}))
    assert not loaded.fallbacks
    assert_matches(loaded.run([x])[0], built.run([x])[0], torch.float32)


def test_returned_buffers_apart_from_the_arena_are_left_alone_by_its_runs(rng: torch.Generator) -> None:
    """``ArenaRunner.returned_apart``: the buffers a returned value lives in are tensors of
    their own (a binding's outputs), the rest stay the arena's; a later run in the arena
    does not touch them."""
    from dnnc.runtime.arena import ArenaRunner

    model = Net().eval()
    x = torch.randn(2, 8, 9, 9, generator=rng)
    program = to_canonical_tcp(model, (x,))
    expected = ReferenceExecutor(program).run([x])[0]
    run_passes(program, parse_passes(CUDNN_STAGE))
    arena = ArenaRunner(GpuExecutor(program, "cpu"))
    buffers = arena.returned_apart()
    (apart,) = arena.run_in_place([x], buffers)
    assert apart.untyped_storage().data_ptr() != arena.arena.untyped_storage().data_ptr()
    assert_matches(apart, expected, torch.float32)
    kept = apart.clone()
    (inside,) = arena.run_in_place([torch.randn(2, 8, 9, 9, generator=rng)])
    assert inside.untyped_storage().data_ptr() == arena.arena.untyped_storage().data_ptr()
    assert torch.equal(apart, kept)
    moved = sum(a is not b for step, views in arena._outputs.items() for a, b in zip(views, buffers[step]))
    assert moved == len(arena._returned) == 1


def test_summary_counts_the_weights_and_workspaces_a_program_holds(rng: torch.Generator) -> None:
    """``summary()["memory"]``: the weights on the device and the kernels' own workspaces,
    each storage once (a workspace two kernels share counts once)."""
    model = Net().eval()
    x = torch.randn(2, 8, 9, 9, generator=rng)
    program = to_canonical_tcp(model, (x,))
    run_passes(program, parse_passes(CUDNN_STAGE))
    executor = GpuExecutor(program, "cpu")
    weights = sum(program.params[op.param_name].numel() * 4 for op in program.param_ops())  # float32
    assert executor.summary()["memory"] == {"weights_bytes": weights, "workspace_bytes": 0}
    kernels = [s.kernel for s in executor.steps if s.kernel is not None]
    shared, own = torch.empty(1000, dtype=torch.uint8), torch.empty(24, dtype=torch.uint8)
    kernels[0].workspace, kernels[1].workspace, kernels[2].workspace = shared, shared[:10], own
    assert executor.memory() == {"weights_bytes": weights, "workspace_bytes": 1024}


class Video(nn.Module):
    """A patch embedding, a grouped temporal kernel and a full 3-D kernel: the three forms
    a 3-D convolution imports as."""

    def __init__(self) -> None:
        super().__init__()
        self.patch = nn.Conv3d(4, 8, (1, 2, 2), stride=(1, 2, 2))
        self.temporal = nn.Conv3d(8, 8, (3, 1, 1), padding=(1, 0, 0), groups=2)
        self.full = nn.Conv3d(8, 6, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.full(torch.relu(self.temporal(self.patch(x))))


class Upsampler(nn.Module):
    """Transposed convolutions in their two forms: one that tiles its output (kernel =
    stride) and the general one (stride 2, padding, output padding, groups)."""

    def __init__(self) -> None:
        super().__init__()
        self.tile = nn.ConvTranspose2d(4, 8, 2, stride=2)
        self.general = nn.ConvTranspose2d(8, 6, 3, stride=2, padding=1, output_padding=1, groups=2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.general(torch.relu(self.tile(x)))


class VideoUpsampler(nn.Module):
    """A 3-D transposed convolution of each form."""

    def __init__(self) -> None:
        super().__init__()
        self.tile = nn.ConvTranspose3d(4, 4, (1, 2, 2), stride=(1, 2, 2))
        self.general = nn.ConvTranspose3d(4, 6, 3, stride=2, padding=1, output_padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.general(torch.relu(self.tile(x)))


@pytest.mark.parametrize(
    "model,shape",
    [(Video, (2, 4, 3, 8, 6)), (Upsampler, (2, 4, 5, 6)), (VideoUpsampler, (1, 4, 2, 3, 4))],
    ids=["3d", "transposed", "transposed-3d"],
)
def test_convolutions_of_other_forms_lower_for_the_gpu(
    model: type[nn.Module], shape: tuple[int, ...], rng: torch.Generator
) -> None:
    """3-D and transposed convolutions, imported as 2-D ones, lowered for the GPU and run
    with Triton's interpreter (cuDNN's graphs, where the frontend is installed, fall back
    here): the same result as the reference backend, no op left to torch."""
    net = model().eval()
    x = torch.randn(*shape, generator=rng)
    program = to_canonical_tcp(net, (x,))
    expected = ReferenceExecutor(program).run([x])
    lower_for_gpu(program, backends=["cudnn", "triton"])
    executor = GpuExecutor(program, "cpu")
    (got,) = executor.run([x])
    assert_matches(got, expected[0], torch.float32)
    assert not executor.summary()["torch_ops"], executor.summary()
