"""The arena runner and recorded Triton kernels, on the CPU through Triton's
interpreter: the memory plan of a real program's steps never overlaps live
buffers, runs from the arena equal the executor's, outputs never alias the arena
across calls, and a program rebuilt from recorded sources compiles nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch import nn

from dnnc.artifact import ArtifactWarning
from dnnc.artifact.kernels import kernel_records
from dnnc.backends.interface import Recorded
from dnnc.backends.reference import ReferenceExecutor
from dnnc.backends.triton.kernel_backend import parse_records
from dnnc.errors import ArtifactError
from dnnc.ir.program import Program
from dnnc.ir.text import parse_ir
from dnnc.pipeline import lower_for_gpu, to_canonical_tcp
from dnnc.runtime.arena import ArenaRunner, buffer_lifetimes
from dnnc.runtime.gpu_executor import GpuExecutor
from tests.numerics import assert_matches
from tests.runtime.test_memory_plan import assert_no_overlap

pytestmark = pytest.mark.skipif(torch.cuda.is_available(), reason="interpreter run; on a GPU the GPU tests cover this")


def triton_records(executor: GpuExecutor) -> list[dict]:
    return kernel_records(executor)["triton"]


def recorded(records: list[dict], same_version: bool = True) -> Recorded:
    """What loading an artifact with these Triton records hands the executor."""
    return Recorded({"triton": parse_records(records, "triton.json")}, same_version=same_version)


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(24)
        self.fc = nn.Linear(24, 24)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = torch.nn.functional.gelu(self.norm(x))
        y = self.fc(h).softmax(-1) + x
        return y.reshape(3, -1), torch.tanh(h).sum(-1)


@pytest.fixture
def lowered(rng: torch.Generator) -> tuple[Program, list]:
    x = torch.randn(3, 5, 24, generator=rng)
    program = to_canonical_tcp(Block().eval(), (x,))
    expected = ReferenceExecutor(program).run([x])
    lower_for_gpu(program, backends=["triton"])
    return program, [x, expected]


def test_memory_plan_of_a_real_program(lowered) -> None:
    program, _ = lowered
    executor = GpuExecutor(program, "cpu")
    buffers, lifetimes = buffer_lifetimes(executor.steps, executor._returned)
    assert len(buffers) >= 3, executor.summary()
    runner = ArenaRunner(executor)
    assert_no_overlap([b.nbytes for b in buffers], lifetimes, runner.plan.offsets)
    assert runner.peak_bytes < sum(-(-b.nbytes // 256) * 256 for b in buffers)  # something is reused
    returned = {i for i, (_, last) in enumerate(lifetimes) if last == len(executor.steps)}
    assert returned, "returned buffers live past the last step"


def test_arena_runs_equal_the_executor_and_outputs_do_not_alias(lowered, rng: torch.Generator) -> None:
    program, (x, expected) = lowered
    executor = GpuExecutor(program, "cpu")
    runner = ArenaRunner(executor)
    first = runner.run([x])
    for got, plain, e in zip(first, executor.run([x]), expected):
        assert torch.equal(got, plain)
        assert_matches(got, e, torch.float32)
    kept = [t.clone() for t in first]
    runner.run([torch.randn(3, 5, 24, generator=rng)])
    for t, k in zip(first, kept):
        assert torch.equal(t, k), "a later call overwrote an output returned earlier"
        assert t.untyped_storage().data_ptr() != runner.arena.untyped_storage().data_ptr()


def test_recorded_sources_rebuild_without_compiling_groups(lowered, monkeypatch: pytest.MonkeyPatch) -> None:
    from dnnc.backends.triton import launch

    program, (x, _) = lowered
    built = GpuExecutor(program, "cpu")
    records = triton_records(built)
    assert [r["ordinal"] for r in records] == list(range(built.summary()["steps"]["triton"]))
    reloaded = Program(parse_ir(program.text()), program.params)
    monkeypatch.setattr(launch, "compile_group", lambda *a: pytest.fail("load compiled a group from the IR"))
    executor = GpuExecutor(reloaded, "cpu", recorded(records))
    assert not executor.fallbacks
    for got, e in zip(executor.run([x]), built.run([x])):
        assert torch.equal(got, e)


def test_a_record_that_does_not_fit_its_group_is_recompiled_with_a_warning(lowered) -> None:
    program, (x, expected) = lowered
    records = triton_records(GpuExecutor(program, "cpu"))
    records[0]["kind"] = "conv2d"
    with pytest.warns(ArtifactWarning, match="Triton group 0 .* a recorded conv2d kernel"):
        executor = GpuExecutor(program, "cpu", recorded(records))
    assert not executor.fallbacks
    assert_matches(executor.run([x])[0], expected[0], torch.float32)


def _payload_text(mark: Path) -> str:
    """Python that leaves ``mark`` behind if anything executes it."""
    return f"import pathlib\npathlib.Path({str(mark)!r}).write_text('ran')\n"


@pytest.mark.parametrize("where", ["prepended", "appended", "replacing"])
def test_a_changed_kernel_record_is_refused_and_never_runs(lowered, tmp_path: Path, where: str) -> None:
    """An artifact is data: the recorded Triton source is compared with the kernel
    dnnc generates from the IR and the recorded config, never executed."""
    program, _ = lowered
    records = triton_records(GpuExecutor(program, "cpu"))
    mark = tmp_path / "payload-ran"
    text = records[0]["text"]
    records[0]["text"] = {
        "prepended": _payload_text(mark) + text,
        "appended": text + "\n" + _payload_text(mark),
        "replacing": _payload_text(mark),
    }[where]
    with pytest.raises(
        ArtifactError, match="Triton group 0 .* differs from the one dnnc generates .* changed after it was written"
    ):
        GpuExecutor(program, "cpu", recorded(records))
    assert not mark.exists()


def test_a_changed_record_of_a_kernel_with_one_form_is_refused(lowered, tmp_path: Path, monkeypatch) -> None:
    """A kernel that only the GPU builds (a Gluon one: no interpreted form to compare the
    record with) is refused like any other when its record was changed, never run as
    torch ops instead."""
    from dnnc.backends.triton import kernel_backend
    from dnnc.backends.triton.emitter import CodegenError

    program, _ = lowered
    records = triton_records(GpuExecutor(program, "cpu"))
    mark = tmp_path / "payload-ran"
    records[0]["text"] = _payload_text(mark) + records[0]["text"]
    generate = kernel_backend.generate

    def one_form(*args, interpret: bool = False, **kwargs):
        if not interpret:
            raise CodegenError("built for the GPU only")
        return generate(*args, interpret=interpret, **kwargs)

    monkeypatch.setattr(kernel_backend, "generate", one_form)
    with pytest.raises(ArtifactError, match="Triton group 0 .* differs from the one dnnc generates"):
        GpuExecutor(program, "cpu", recorded(records))
    assert not mark.exists()


def test_a_record_this_triton_cannot_build_is_compiled_from_the_ir(lowered, monkeypatch) -> None:
    """A recorded kernel that cannot be generated here (a Gluon kernel under a Triton
    without its language) is compiled from the IR with a warning, never run as torch ops."""
    from dnnc.backends.triton import kernel_backend
    from dnnc.backends.triton.emitter import CodegenError

    program, (x, expected) = lowered
    records = triton_records(GpuExecutor(program, "cpu"))

    generate = kernel_backend.generate
    calls = []

    def first_unbuildable(*args, **kwargs):
        calls.append(args)
        if len(calls) == 1:
            raise CodegenError("needs Triton 3.6's Gluon")
        return generate(*args, **kwargs)

    monkeypatch.setattr(kernel_backend, "generate", first_unbuildable)
    with pytest.warns(ArtifactWarning, match="Triton group 0 .* cannot be built here .* Gluon"):
        executor = GpuExecutor(program, "cpu", recorded(records))
    assert not executor.fallbacks
    for got, e in zip(executor.run([x]), expected):
        assert_matches(got, e, torch.float32)


def test_a_changed_record_from_another_version_runs_the_generated_kernel(lowered, tmp_path: Path) -> None:
    program, (x, expected) = lowered
    records = triton_records(GpuExecutor(program, "cpu"))
    mark = tmp_path / "payload-ran"
    records[0]["text"] = _payload_text(mark) + records[0]["text"]
    with pytest.warns(ArtifactWarning, match="another dnnc version wrote it"):
        executor = GpuExecutor(program, "cpu", recorded(records, same_version=False))
    assert_matches(executor.run([x])[0], expected[0], torch.float32)
    assert not mark.exists()


def test_a_record_without_a_config_is_compiled_from_the_ir(lowered) -> None:
    program, (x, expected) = lowered
    records = triton_records(GpuExecutor(program, "cpu"))
    del records[0]["config"]
    with pytest.warns(ArtifactWarning, match="Triton group 0 .* no recorded config"):
        executor = GpuExecutor(program, "cpu", recorded(records))
    assert_matches(executor.run([x])[0], expected[0], torch.float32)


def test_a_recorded_config_of_another_config_makes_another_kernel_and_is_refused(lowered) -> None:
    """The config is validated data; a valid config other than the one the recorded
    source was generated with does not reproduce it."""
    program, _ = lowered
    records = triton_records(GpuExecutor(program, "cpu"))
    config = records[0]["config"]
    key = next(k for k in config if k.startswith("BLOCK"))
    config[key] = config[key] * 2
    with pytest.raises(ArtifactError, match="Triton group 0"):
        GpuExecutor(program, "cpu", recorded(records))


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("config", {"BLOCK": 1 << 30}, r"config.BLOCK: 1073741824 is over 65536"),
        ("config", {"BLOCK": "__import__('os')"}, r"config.BLOCK: .* is not a positive integer"),
        ("config", {"BLOCK": 48}, r"config.BLOCK: 48 is not a power of two"),
        ("config", {"num_warps": 3}, r"config.num_warps: 3 warps"),
        ("config", {"EVIL": 1}, r"config.EVIL: unknown"),
        ("config", [1, 2], r"config must be a table of integers"),
        ("object", "cubin", r"object: expected a table"),
        ("object", {"target": "sm_90", "key": "k", "hash": 1, "files": {"k.cubin": ""}}, r"object: hash must be a string"),
        ("object", {"target": "sm_90", "key": "k", "hash": "h", "files": {}}, r"object: files must be a table"),
        (
            "object",
            {"target": "sm_90", "key": "k", "hash": "h", "files": {"../k.cubin": "AA=="}},
            r"files must be plain file names",
        ),
    ],
)
def test_malformed_recorded_configs_and_kernels_are_refused_when_read(lowered, field: str, value: object, message: str) -> None:
    program, _ = lowered
    records = triton_records(GpuExecutor(program, "cpu"))
    records[0][field] = value
    with pytest.raises(ArtifactError, match=message):
        parse_records(records, "triton.json")


def test_duplicate_ordinals_are_refused(lowered) -> None:
    program, _ = lowered
    records = triton_records(GpuExecutor(program, "cpu"))
    records[1]["ordinal"] = records[0]["ordinal"]
    with pytest.raises(ArtifactError, match="ordinal 0 is not a new"):
        parse_records(records, "triton.json")
