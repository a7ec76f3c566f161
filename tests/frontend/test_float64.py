"""A model that computes some values in float64 (diffusers' rotary position tables for
Flux and its kin do) compiles with those values in float32, says so once, and matches
eager within float32's tolerance on fresh random inputs; ``DNNC_FLOAT64=refuse``
makes it the import error it was; float64 inputs and outputs are refused either way."""

from __future__ import annotations

import logging

import pytest
import torch
from torch import nn

import dnnc
from dnnc import knobs
from dnnc.errors import UnsupportedOpError
from tests.compile_helpers import compile_program, run_reference
from tests.numerics import assert_matches


class RotaryInFloat64(nn.Module):
    """Positions times frequencies in float64, their cosine and sine back in float32, as
    ``diffusers.models.embeddings.get_1d_rotary_pos_embed`` computes them for Flux."""

    def __init__(self, dim: int = 16, theta: float = 10000.0):
        super().__init__()
        self.register_buffer("freqs", 1.0 / theta ** (torch.arange(0, dim, 2, dtype=torch.float64) / dim))
        self.proj = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
        angles = torch.outer(pos.double(), self.freqs)
        cos = angles.cos().repeat_interleave(2, dim=1).float()
        sin = angles.sin().repeat_interleave(2, dim=1).float()
        return self.proj(x * cos + x.flip(-1) * sin)


def _inputs(rng: torch.Generator) -> list[torch.Tensor]:
    return [torch.randn(24, 16, generator=rng), torch.randint(0, 64, (24,), generator=rng).float()]


def test_float64_values_are_computed_in_float32(rng: torch.Generator, caplog: pytest.LogCaptureFixture) -> None:
    model, inputs = RotaryInFloat64().eval(), _inputs(rng)
    with caplog.at_level(logging.WARNING, logger="dnnc"):
        program = compile_program(model, inputs)
    assert "f64" not in program.text()
    assert all(p.dtype != torch.float64 for p in program.params.values())
    (got,) = run_reference(program, inputs)
    with torch.no_grad():
        assert_matches(got, model(*inputs), torch.float32)
    said = [r.getMessage() for r in caplog.records if "float64" in r.getMessage()]
    assert len(said) <= 1 and all("run in float32" in m and "test_float64.py" in m for m in said)


def test_compiled_module_matches_eager(rng: torch.Generator) -> None:
    model, inputs = RotaryInFloat64(dim=8).eval(), _inputs(rng)
    inputs[0] = inputs[0][:, :8]
    with knobs.override(compile_cache=False):
        compiled = dnnc.compile(model, inputs, device="cpu")
    with torch.no_grad():
        assert_matches(compiled(*inputs), model(*inputs), torch.float32)


def test_refuse_makes_float64_an_import_error(rng: torch.Generator) -> None:
    with knobs.override(float64="refuse"), pytest.raises(UnsupportedOpError, match="float64 is not supported") as info:
        compile_program(RotaryInFloat64().eval(), _inputs(rng))
    assert "test_float64.py" in str(info.value), "the error names the model's line"


class ReturnsFloat64(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.double() * 2


def test_float64_outputs_and_inputs_are_refused(rng: torch.Generator) -> None:
    with pytest.raises(UnsupportedOpError, match=r"returns a float64 tensor.*\.float\(\)"):
        compile_program(ReturnsFloat64(), [torch.randn(3, generator=rng)])
    with pytest.raises(UnsupportedOpError, match="input 'x'.*float64 is not supported"):
        compile_program(ReturnsFloat64(), [torch.randn(3, generator=rng, dtype=torch.float64)])


def test_the_setting_is_checked() -> None:
    with pytest.raises(dnnc.errors.SettingsError, match="float64='half'"), knobs.override(float64="half"):
        pass
    assert knobs.from_env({"DNNC_FLOAT64": "refuse"}).float64 == "refuse"


@pytest.mark.gpu
def test_float64_values_on_the_gpu(rng: torch.Generator) -> None:
    model, inputs = RotaryInFloat64().eval(), _inputs(rng)
    with torch.no_grad():
        expected = model(*inputs)
    on_gpu = [x.cuda() for x in inputs]
    compiled = dnnc.compile(model.cuda(), on_gpu, device="cuda")
    assert not compiled.summary()["torch_ops"], compiled.summary()
    assert_matches(compiled(*on_gpu), expected, torch.float32, gpu=True)
