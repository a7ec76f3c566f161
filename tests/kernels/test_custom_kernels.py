"""``dnnc.CustomKernel`` on the CPU: the torch op it registers (eager, fake,
opcheck), its import into ``extern.dispatch``, compiled programs on the reference
backend against eager PyTorch, artifacts, the partitioner, and the errors."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

import dnnc
from dnnc import Binding, CustomKernel, PushConstant, knobs
from dnnc.errors import KernelDeclarationError
from dnnc.ir import extern
from dnnc.pipeline import lower_for_gpu, to_canonical_tcp
from tests.kernels.kernels import KERNELS_CU, load_example
from tests.kernels.references import mul, scale_and_sum

F32 = {"rtol": 1e-6, "atol": 1e-6}  # the reference backend runs the same torch ops as eager


SCALE_AND_SUM = CustomKernel(
    "scale_and_sum_cpu_test",
    entry="scale_and_sum",
    objects={"sm_90": "scale_and_sum.cubin"},  # never read on the CPU
    bindings=[
        Binding("x", "f32", ["rows", "cols"]),
        Binding("out", "f32", ["rows", "cols"], "write"),
        Binding("sums", "f32", ["rows"], "write"),
    ],
    push_constants=[PushConstant("rows", "i32", "rows"), PushConstant("cols", "i32", "cols"), PushConstant("alpha", "f32")],
    block=[32],
    grid=["ceildiv(rows, 32)"],
    reference=scale_and_sum,
)


class TwoOutputs(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        scaled, sums = SCALE_AND_SUM(torch.relu(x), 0.25)
        return scaled.sum(1) + sums


def test_the_torch_op_runs_eagerly_and_passes_opcheck(rng: torch.Generator) -> None:
    example = load_example()
    a, b = torch.randn(100, generator=rng), torch.randn(100, generator=rng)
    torch.testing.assert_close(example.simple_mul(a, b), a * b, **F32)
    torch.testing.assert_close(torch.ops.dnnc_user.simple_mul(a, b), a * b, **F32)
    before = b.clone()
    torch.testing.assert_close(example.simple_mul_inplace(a, b), a * b, **F32)
    assert torch.equal(b, before), "the op is functional: a readwrite binding's new value is returned"
    torch.library.opcheck(torch.ops.dnnc_user.simple_mul.default, (a, b), test_utils=("test_schema", "test_faketensor"))
    x = torch.randn(5, 7, generator=rng)
    torch.library.opcheck(SCALE_AND_SUM.op.default, (x, 0.5), test_utils=("test_schema", "test_faketensor"))
    assert "simple_mul(Tensor lhs, Tensor rhs) -> Tensor" in str(torch.ops.dnnc_user.simple_mul.default._schema)
    assert "(Tensor x, float alpha) -> (Tensor, Tensor)" in str(SCALE_AND_SUM.op.default._schema)


def test_calls_import_as_dispatches_of_declared_kernels(rng: torch.Generator) -> None:
    example = load_example()
    model, inputs = example.mixed_invocation(n=300)
    program = to_canonical_tcp(model, inputs)
    (kernel,) = [op for op in program.module.ops if isinstance(op, extern.KernelOp)]
    (dispatch,) = [op for op in program.entry.body.walk() if isinstance(op, extern.DispatchOp)]
    assert kernel.declaration() == example.simple_mul_inplace.decl
    assert dispatch.kernel_name == "simple_mul_inplace"
    assert [str(t) for t in (*dispatch.args.types, *dispatch.outputs.types)] == ["tensor<300xf32>"] * 3
    x = torch.randn(6, 9, generator=rng)
    program = to_canonical_tcp(TwoOutputs(), (x,))
    (dispatch,) = [op for op in program.entry.body.walk() if isinstance(op, extern.DispatchOp)]
    assert dispatch.constant_values() == [0.25]
    assert [str(t) for t in dispatch.outputs.types] == ["tensor<6x9xf32>", "tensor<6xf32>"]


@pytest.mark.parametrize("factory", ["simple_mul_model", "mixed_invocation"])
def test_compiled_examples_match_eager_on_the_reference_backend(factory: str, rng: torch.Generator) -> None:
    example = load_example()
    model, _ = getattr(example, factory)(n=777)
    inputs = (torch.randn(777, generator=rng), torch.randn(777, generator=rng))
    compiled = dnnc.compile(model, inputs, device="cpu")
    for _ in range(2):
        fresh = (torch.randn(777, generator=rng), torch.randn(777, generator=rng))
        torch.testing.assert_close(compiled(*fresh), model(*fresh), **F32)


def test_two_outputs_and_a_caller_constant_compile_and_match(rng: torch.Generator, tmp_path: Path) -> None:
    x = torch.randn(6, 9, generator=rng)
    compiled = dnnc.compile(TwoOutputs(), (x,), device="cpu")
    fresh = torch.randn(6, 9, generator=rng)
    torch.testing.assert_close(compiled(fresh), TwoOutputs()(fresh), **F32)
    loaded = dnnc.load(compiled.save(tmp_path / "two.dnnc"))
    torch.testing.assert_close(loaded(fresh), TwoOutputs()(fresh), **F32)


def test_gpu_lowering_and_the_partitioner_leave_user_kernels_in_place() -> None:
    example = load_example()
    model, inputs = example.mixed_invocation(n=256)
    for policy in ("greedy", "auto"):
        with knobs.override(partition=policy, measure=False):
            program = to_canonical_tcp(model, inputs)
            lower_for_gpu(program, backends=["triton"])
        top = [op for op in program.entry.body.block.ops]
        dispatches = [op for op in top if isinstance(op, extern.DispatchOp)]
        assert len(dispatches) == 1, policy
        producers = {v.owner.name for v in dispatches[0].args}
        assert producers == {"tcp.isolated_group"}, policy  # generated code on both sides of the user kernel
        if policy == "auto":
            groups = program.metadata["decisions"]["groups"]
            assert any(g["backend"] == "extern" and g["kind"] == "simple_mul_inplace" for g in groups)


def test_a_call_with_shapes_the_declaration_refuses_names_the_binding() -> None:
    example = load_example()

    class Bad(torch.nn.Module):
        def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
            return example.simple_mul(a, b[:-1])

    with pytest.raises(Exception, match="binding 'rhs' is declared f32\\[n\\]: n is 16 \\(from 'lhs'\\), got \\[15\\]"):
        to_canonical_tcp(Bad(), (torch.randn(16), torch.randn(16)))
    with pytest.raises(KernelDeclarationError, match="binding 'rhs' is declared f32\\[n\\], got a tensor of \\[4\\] float64"):
        example.simple_mul(torch.randn(4), torch.randn(4, dtype=torch.float64))


def test_redeclaring_a_kernel_name_differently_is_refused() -> None:
    load_example()
    with pytest.raises(
        KernelDeclarationError, match="kernel simple_mul is declared already in this process with another declaration"
    ):
        CustomKernel(
            "simple_mul",
            source=KERNELS_CU,
            archs=["sm_90"],
            bindings=[Binding("lhs", "f32", ["n"]), Binding("out", "f32", ["n"], "write")],
            push_constants=[PushConstant("dim", "i32", "n")],
            block=[64],
            grid=["ceildiv(n, 64)"],
            reference=mul,
        )


def test_declaration_errors_are_raised_where_the_kernel_is_declared() -> None:
    with pytest.raises(KernelDeclarationError, match="kernel nothing_out: has no 'write' or 'readwrite' binding"):
        CustomKernel(
            "nothing_out", source=KERNELS_CU, archs=["sm_90"], bindings=[Binding("x", "f32", ["n"])], block=[64], grid=["n"]
        )

    def local(x: torch.Tensor) -> torch.Tensor:
        return x

    with pytest.raises(KernelDeclarationError, match="a reference implementation must be a module-level function"):
        CustomKernel(
            "local_ref",
            source=KERNELS_CU,
            archs=["sm_90"],
            bindings=[Binding("x", "f32", ["n"], "readwrite")],
            block=[64],
            grid=["n"],
            reference=local,
        )


def test_a_kernel_without_a_reference_cannot_run_on_the_cpu(rng: torch.Generator) -> None:
    kernel = CustomKernel(
        "no_reference",
        entry="simple_mul_inplace",
        source=KERNELS_CU,
        archs=["sm_90"],
        bindings=[Binding("lhs", "f32", ["n"]), Binding("rhs", "f32", ["n"], "readwrite")],
        push_constants=[PushConstant("dim", "i32", "n")],
        block=[64],
        grid=["ceildiv(n, 64)"],
    )
    with pytest.raises(KernelDeclarationError, match="kernel no_reference has no reference implementation"):
        kernel(torch.randn(8, generator=rng), torch.randn(8, generator=rng))
    with pytest.raises(KernelDeclarationError, match="kernel no_reference has no reference implementation"):
        dnnc.compile(_Wrap(kernel), (torch.randn(8), torch.randn(8)), device="cpu")(torch.randn(8), torch.randn(8))


class _Wrap(torch.nn.Module):
    def __init__(self, kernel: CustomKernel):
        super().__init__()
        self.kernel = kernel

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return self.kernel(a, b)


def test_the_same_file_loaded_under_two_names_declares_the_same_kernels() -> None:
    """A model file imported by the CLI and by the user's own code gets the same
    declarations (references named by the file's path), so the second load is no conflict."""
    import importlib.util

    from tests.kernels.kernels import EXAMPLE

    first = load_example()
    spec = importlib.util.spec_from_file_location("_dnnc_model_model_again", EXAMPLE / "model.py")
    assert spec is not None and spec.loader is not None
    again = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(again)
    assert again.simple_mul.decl == first.simple_mul.decl
    assert first.simple_mul.decl.reference == f"{EXAMPLE / 'model.py'}:simple_mul_reference"
    assert SCALE_AND_SUM.decl.reference == "tests.kernels.references:scale_and_sum"  # an importable module keeps its name
