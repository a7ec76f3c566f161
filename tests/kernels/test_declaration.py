"""Kernel declarations: formulas, the checks made when a kernel is declared, binding
a call's tensors, and the declaration's round trip through JSON and the IR."""

from __future__ import annotations

import pytest
import torch

from dnnc.errors import KernelDeclarationError
from dnnc.ir.extern import KernelOp
from dnnc.ir.text import parse_ir, print_ir
from dnnc.kernels.declaration import Binding, KernelDecl, PushConstant
from dnnc.kernels.formula import parse_formula
from tests.kernels.kernels import simple_mul_decl

F32 = torch.float32


@pytest.mark.parametrize(
    ("text", "values", "expected"),
    [
        ("ceildiv(n, 64)", {"n": 1000}, 16),
        ("ceildiv(n, 64)", {"n": 1024}, 16),
        ("n * 2 + m // 3 - 1", {"n": 5, "m": 10}, 12),
        ("min(n, 65535)", {"n": 70000}, 65535),
        ("max(n % 7, 1)", {"n": 14}, 1),
        ("-n + 10", {"n": 4}, 6),
        (8, {}, 8),
    ],
)
def test_formulas_evaluate_integer_arithmetic(text: str | int, values: dict[str, int], expected: int) -> None:
    assert parse_formula(text, "grid")(values) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("n / 64", "operator Div is not allowed \\(use // or ceildiv\\)"),
        ("n ** 2", "operator Pow is not allowed"),
        ("ceildiv(n)", "ceildiv takes 2 arguments, got 1"),
        ("abs(n)", "'abs\\(n\\)' is not allowed"),
        ("n.real", "'n.real' is not allowed"),
        ("1.5 * n", "1.5 is not an integer"),
        ("n +", "is not a formula"),
        ("", "expected an integer formula"),
    ],
)
def test_bad_formulas_name_the_formula_and_what_is_allowed(text: str, message: str) -> None:
    with pytest.raises(KernelDeclarationError, match=f"grid\\[0\\]: .*{message}"):
        parse_formula(text, "grid[0]")


def test_division_by_zero_names_the_formula_and_the_symbols() -> None:
    with pytest.raises(KernelDeclarationError, match="'ceildiv\\(n, m\\)' divides by zero for m=0, n=4"):
        parse_formula("ceildiv(n, m)", "grid")({"n": 4, "m": 0})


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        (
            {"grid": ("ceildiv(k, 64)",)},
            "grid\\[0\\]: 'ceildiv\\(k, 64\\)' uses k, which no input binding's shape binds \\(bound: n\\)",
        ),
        ({"grid": ("n / 64",)}, "grid\\[0\\]: 'n / 64': operator Div"),
        ({"block": (2048,)}, "block dim x is 2048; CUDA allows 1..1024"),
        ({"block": (64, 1, 128)}, "block dim z is 128; CUDA allows 1..64"),
        ({"block": (64, 32)}, "block \\[64, 32, 1\\] has 2048 threads; CUDA allows 1024 per block"),
        ({"block": (0,)}, "block dim x is 0"),
        ({"source": None, "archs": ()}, "needs a source \\(.cu\\) or prebuilt objects per target"),
        ({"archs": ()}, "a source needs the archs to build it for"),
        ({"archs": ("sm90",)}, "target 'sm90': expected sm_<capability>"),
        ({"objects": (("sm_90", "kernels.o"),)}, "object for sm_90 is 'kernels.o': expected a .cubin or .ptx file"),
        ({"push_constants": (PushConstant("dim", "u32", "n"),)}, "push constant 'dim': type 'u32' is not one of i32, i64, f32"),
        ({"push_constants": (PushConstant("dim", "i32", "m"),)}, "push constant 'dim': 'm' uses m"),
        ({"push_constants": (PushConstant("lhs", "i32", "n"),)}, "'lhs' is declared twice"),
        ({"bindings": (Binding("lhs", "f64", ("n",)),)}, "binding 'lhs': unknown element type 'f64'"),
        (
            {"bindings": (Binding("lhs", "f32", ("n",), "inout"),)},
            "binding 'lhs': access 'inout' is not one of read, readwrite, write",
        ),
        (
            {"bindings": (Binding("lhs", "f32", ("n*2",)),)},
            "input binding 'lhs': dim 'n\\*2' must be an integer or a symbol \\(formulas are for outputs\\)",
        ),
        ({"bindings": (Binding("x", "f32", ("n",)), Binding("y", "f32", ("m",), "write"))}, "binding 'y' dim 0: 'm' uses m"),
        ({"shared_memory": -1}, "shared_memory must be >= 0 bytes"),
    ],
)
def test_inconsistent_declarations_are_refused_when_declared(changes: dict[str, object], message: str) -> None:
    with pytest.raises(KernelDeclarationError, match=f"kernel simple_mul: {message}"):
        simple_mul_decl(**changes)


def test_a_call_binds_symbols_and_derives_outputs_grid_and_constants() -> None:
    decl = KernelDecl(
        "pool",
        bindings=(Binding("x", "f16", ("b", "n")), Binding("y", "f16", ("b", "ceildiv(n, 2)"), "write")),
        push_constants=(PushConstant("n", "i64", "n"), PushConstant("scale", "f32")),
        block=(128,),
        grid=("ceildiv(n, 256)", "b"),
        objects={"sm_90": "pool.cubin"},
    )
    symbols = decl.bind([(3, 1001)], [torch.float16])
    assert symbols == {"b": 3, "n": 1001}
    assert decl.output_shapes(symbols) == [(3, 501)]
    assert decl.grid_for(symbols) == (4, 3, 1)
    assert decl.constant_values(symbols, [0.5]) == [1001, 0.5]
    assert decl.block == (128, 1, 1)


@pytest.mark.parametrize(
    ("shapes", "dtypes", "message"),
    [
        ([(64,), (65,)], [F32, F32], "binding 'rhs' is declared f32\\[n\\]: n is 64 \\(from 'lhs'\\), got \\[65\\] float32"),
        ([(64,), (64,)], [F32, torch.float16], "binding 'rhs' is declared f32\\[n\\], got a tensor of \\[64\\] float16"),
        ([(64,), (8, 8)], [F32, F32], "binding 'rhs' is declared f32\\[n\\] \\(rank 1\\), got \\[8, 8\\] float32"),
        ([(64,)], [F32], "takes 2 tensor\\(s\\) \\(lhs, rhs\\), got 1"),
    ],
)
def test_a_call_that_does_not_fit_names_the_binding(shapes: list, dtypes: list, message: str) -> None:
    with pytest.raises(KernelDeclarationError, match=f"kernel simple_mul: {message}"):
        simple_mul_decl().bind(shapes, dtypes)


def test_grid_and_constants_are_checked_against_limits() -> None:
    decl = simple_mul_decl(grid=("n", "n"))
    with pytest.raises(KernelDeclarationError, match="dim y must be 1..65535 \\('n'\\)"):
        decl.grid_for({"n": 70000})
    with pytest.raises(KernelDeclarationError, match="dim x must be 1..2147483647"):
        simple_mul_decl().grid_for({"n": 0})
    wide = simple_mul_decl(push_constants=(PushConstant("dim", "i32", "n * 1024"),))
    with pytest.raises(KernelDeclarationError, match="push constant 'dim' = 4294967296 does not fit in i32"):
        wide.constant_values({"n": 2**22}, [])
    scaled = simple_mul_decl(push_constants=(PushConstant("dim", "i32", "n"), PushConstant("alpha", "f32")))
    with pytest.raises(KernelDeclarationError, match="takes 1 push constant\\(s\\) from the caller \\(alpha\\), got 0"):
        scaled.constant_values({"n": 4}, [])
    with pytest.raises(KernelDeclarationError, match="push constant 'alpha' is f32, got 'x'"):
        scaled.constant_values({"n": 4}, ["x"])


def test_declarations_round_trip_through_json_and_ir_text() -> None:
    decl = simple_mul_decl(
        objects=(("sm_80", "k80.ptx"), ("sm_90", "k90.cubin"), ("sm_90", "k90.ptx")), flags=("-O3",), shared_memory=1024
    )
    assert KernelDecl.from_json(decl.to_json()) == decl
    text = print_ir(KernelOp(decl))
    assert 'objects = {sm_80 = "k80.ptx", sm_90 = ["k90.cubin", "k90.ptx"]}' in text
    module = parse_ir(f"builtin.module {{\n{text}}}")
    (op,) = module.ops
    assert isinstance(op, KernelOp) and op.declaration() == decl
    assert decl.key() == op.declaration().key() != simple_mul_decl().key()
