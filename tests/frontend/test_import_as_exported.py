"""A graph whose every op has an import rule is imported as torch.export gave it,
without the decomposition's re-trace (``for_import``): the composite ops' rules
(``aten/composite.py``) and in-place ops read as their functional forms compute what
eager does, in float32, float16 and bfloat16 on fresh random inputs. An in-place op
whose write another op sees (a value read again that shares storage with what it wrote)
keeps the graph decomposed, and so does an op without a rule; a composite rule that refuses
makes the import decompose and try again."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from dnnc.frontend.torch_export import export, imports_as_exported
from tests.compile_helpers import as_module, compile_program, eager, eager_exact, flat, run_reference
from tests.numerics import TOLERANCE, assert_matches, relative_error


class Composites(nn.Module):
    """Every composite op a rule takes, and in-place activations, as models write them."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(4, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.ln = nn.LayerNorm(8)
        self.fc = nn.Linear(8, 6)
        self.drop = nn.Dropout(0.2)
        with torch.no_grad():
            self.bn.running_mean.uniform_(-0.5, 0.5)
            self.bn.running_var.uniform_(0.5, 1.5)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        y = self.bn(self.conv(x))
        y = F.relu(y, inplace=True)
        y = y + F.hardsigmoid(y) + F.hardswish(y)
        y.add_(1.0)
        y = F.pad(y, (1, 0, 0, 1))
        a, b = y.chunk(2, dim=1)
        rows = self.drop(self.ln(a.mean((2, 3)).reshape(2, 1, 4).repeat(1, 3, 2).contiguous()))
        first, *_ = rows.unbind(1)
        return self.fc(rows).softmax(-1), self.fc(first), F.silu(b * 2, inplace=True)


def _composites_eval() -> nn.Module:
    return Composites().eval()


class SequenceComposites(nn.Module):
    """The composites of audio, text and diffusion models: conv1d, group norm, ``Tensor.to``
    in its overloads, ``torch.min`` of two tensors, ``&`` of masks and ``diff``."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv1d(4, 8, 3, padding=1)
        self.norm = nn.GroupNorm(2, 8)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        y = self.norm(self.conv(x))
        wide = y.to(torch.float32) * 2  # to.dtype
        keyed = y.to(dtype=torch.float32, device=y.device)  # export writes these three as to.device
        placed = y.to(y.device, torch.float32)
        mask = (wide > 0) & (keyed < 1)
        picked = torch.where(mask, torch.min(wide, placed + 0.5), keyed)
        return picked.to(x), picked.diff(dim=-1).to(x.dtype)


def _sequence_composites_eval() -> nn.Module:
    return SequenceComposites().eval()


def _result_read_again(x: torch.Tensor) -> torch.Tensor:
    y = x * 2
    z = y.relu_()  # export reads y after this as the in-place op's result, as z
    return y + z


def _written_through_a_view(x: torch.Tensor) -> torch.Tensor:
    y = x * 2
    y[:, :2].add_(1.0)  # y's first columns change
    return y * 3


def _written_input(x: torch.Tensor) -> torch.Tensor:
    return x.mul(2).relu_() + x


CASES: list[tuple[str, Callable[[], Any], tuple[int, ...], bool]] = [
    ("composites", _composites_eval, (2, 4, 6, 6), True),
    ("sequence composites", _sequence_composites_eval, (2, 4, 10), True),
    ("in-place result read again", lambda: _result_read_again, (3, 5), True),
    ("written through a view", lambda: _written_through_a_view, (3, 5), False),
    ("in-place on a fresh value, input read after", lambda: _written_input, (3, 5), True),
]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16], ids=str)
@pytest.mark.parametrize(("name", "make", "shape", "as_exported"), CASES, ids=[c[0] for c in CASES])
def test_imported_as_exported_only_where_exact(
    name: str, make: Callable[[], Any], shape: tuple[int, ...], as_exported: bool, dtype: torch.dtype, rng: torch.Generator
) -> None:
    model = as_module(make()).to(dtype)
    x = torch.randn(shape, generator=rng).to(dtype)
    ep = torch.export.export(model, (x,))
    assert imports_as_exported(ep) is as_exported, name
    program = compile_program(model, [x])
    native = flat(eager(model, [x]))
    exact = native if dtype == torch.float32 else flat(eager_exact(model, [x]))
    for i, (actual, expected) in enumerate(zip(run_reference(program, [x]), exact, strict=True)):
        if dtype == torch.float32:
            assert_matches(actual, expected.to(actual.dtype), dtype, what=f"{name} output {i}")
            continue
        # A chain of ops rounded to 16 bits at each step (conv, norm, linear): held to the
        # dtype's tolerance, or to twice eager's own error against float64 where that is larger.
        error, eager_error = relative_error(actual, expected), relative_error(native[i], expected)
        bound = max(TOLERANCE[dtype], 2 * eager_error)
        assert error <= bound, (
            f"{name} output {i}: relative error {error:.2e} over {bound:.2e} (eager {dtype}: {eager_error:.2e})"
        )


def test_export_keeps_the_composites_and_an_op_without_a_rule_decomposes() -> None:
    x = torch.randn(2, 4, 6, 6)
    kept = {str(n.target) for n in export(_composites_eval(), [x]).graph.nodes if n.op == "call_function"}
    assert {"aten.conv2d.default", "aten.batch_norm.default", "aten.linear.default", "aten.relu_.default"} <= kept
    sequence = {str(n.target) for n in export(_sequence_composites_eval(), [torch.randn(2, 4, 10)]).graph.nodes}
    expected = {"conv1d.default", "group_norm.default", "to.dtype", "to.device", "min.other", "__and__.Tensor", "diff.default"}
    assert {f"aten.{name}" for name in expected} <= sequence
    rolled = {str(n.target) for n in export(as_module(lambda t: torch.roll(t, 1, 0) + 1), [x]).graph.nodes}
    assert "aten.roll.default" not in rolled and "aten.add.Tensor" in rolled, "roll has no rule: the graph is decomposed"


def test_a_composite_rule_that_refuses_decomposes_and_imports_again(rng: torch.Generator) -> None:
    """conv2d's rule takes batched images only; an unbatched one is left to the
    decomposition, which adds the batch dimension around a convolution."""
    conv = nn.Conv2d(3, 4, 3).eval()
    x = torch.randn(3, 8, 8, generator=rng)
    assert imports_as_exported(torch.export.export(conv, (x,)))
    assert_matches(run_reference(compile_program(conv, [x]), [x])[0], eager(conv, [x]), torch.float32)
