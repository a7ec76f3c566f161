"""dnnc.compile: the callable it returns, its checks, and where it runs."""

from __future__ import annotations

import copy
import logging
import os
import re
from pathlib import Path

import pytest
import torch
from torch import nn

import dnnc
from dnnc import knobs
from dnnc.backends.reference import ReferenceExecutor
from dnnc.errors import DnncError, InputError
from dnnc.ir.program import Program
from dnnc.log import _said
from tests.numerics import assert_matches


class TwoHeads(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Linear(6, 4)

    def forward(self, x: torch.Tensor, scale: torch.Tensor) -> dict[str, torch.Tensor]:
        h = torch.relu(self.body(x)) * scale
        return {"sum": h.sum(-1), "features": h}


def test_outputs_keep_the_model_structure(rng: torch.Generator) -> None:
    model = TwoHeads().eval()
    x, s = torch.randn(3, 6, generator=rng), torch.randn(4, generator=rng)
    compiled = dnnc.compile(model, (x, s))
    fresh = torch.randn(3, 6, generator=rng), torch.randn(4, generator=rng)
    out = compiled(*fresh)
    with torch.no_grad():
        expected = model(*fresh)
    assert set(out) == {"sum", "features"}
    for key in out:
        assert_matches(out[key], expected[key])


def test_outputs_are_ordinary_tensors_the_caller_may_change_in_place(rng: torch.Generator) -> None:
    """As eager's outputs (and unlike tensors made in inference mode): ``out += 1`` works."""
    model = TwoHeads().eval()
    compiled = dnnc.compile(model, (torch.randn(3, 6, generator=rng), torch.randn(4, generator=rng)))
    out = compiled(torch.randn(3, 6, generator=rng), torch.randn(4, generator=rng))
    for value in out.values():
        assert not value.is_inference()
        before = value.clone()
        value += 1
        torch.testing.assert_close(value, before + 1)


def test_exported_program_input(rng: torch.Generator) -> None:
    model = nn.Sequential(nn.Linear(5, 3), nn.GELU()).eval()
    x = torch.randn(2, 5, generator=rng)
    ep = torch.export.export(model, (x,))
    compiled = dnnc.compile(ep)
    with torch.no_grad():
        assert_matches(compiled(x), model(x))


def test_input_checks_before_running(rng: torch.Generator) -> None:
    compiled = dnnc.compile(nn.Linear(4, 2).eval(), torch.randn(3, 4, generator=rng))
    assert compiled.input_specs[0].shape == (3, 4)
    with pytest.raises(InputError, match=r"expected shape \[3, 4\], got \[2, 4\]"):
        compiled(torch.randn(2, 4))
    with pytest.raises(InputError, match="expected dtype torch.float32, got torch.int64"):
        compiled(torch.ones(3, 4, dtype=torch.int64))
    with pytest.raises(InputError, match="expected a tensor"):
        compiled([[1.0] * 4] * 3)
    with pytest.raises(InputError, match=r"expected 1 input\(s\)"):
        compiled(torch.randn(3, 4), torch.randn(3, 4))


def test_device_choice() -> None:
    model, x = nn.Linear(2, 2).eval(), torch.randn(1, 2)
    if not torch.cuda.is_available():
        with pytest.raises(DnncError, match="torch sees no CUDA GPU"):
            dnnc.compile(model, x, device="cuda")
    with pytest.raises(DnncError, match="unknown device 'tpu'"):
        dnnc.compile(model, x, device="tpu")
    with pytest.raises(DnncError, match="needs example inputs"):
        dnnc.compile(model)
    assert dnnc.compile(model, x, device="cpu").device == "cpu"


def test_reference_backend_is_announced_once(caplog: pytest.LogCaptureFixture) -> None:
    _said.clear()
    model, x = nn.Linear(2, 2).eval(), torch.randn(1, 2)
    with caplog.at_level(logging.WARNING, logger="dnnc"):
        dnnc.compile(model, x)
        dnnc.compile(model, x)
    messages = [r.message for r in caplog.records if "reference backend" in r.message]
    assert len(messages) == 1 and "CPU reference backend" in messages[0]


def test_each_stage_is_logged_as_it_ends(caplog: pytest.LogCaptureFixture) -> None:
    model, x = nn.Linear(2, 2).eval(), torch.randn(1, 2)
    with caplog.at_level(logging.INFO, logger="dnnc.compile"):
        compiled = dnnc.compile(model, x, device="cpu")
    logged = [r.message for r in caplog.records if r.name == "dnnc.compile"]
    assert len(logged) == len(compiled.report.stages) > 0
    first = compiled.report.stages[0]
    assert logged[0].startswith(f"stage {first.name}: ") and logged[0].endswith(f"s, {first.ops} ops after it")


def test_save_and_reload_gives_the_same_results(tmp_path: Path, rng: torch.Generator) -> None:
    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.ReLU()).eval()
    x = torch.randn(1, 3, 7, 7, generator=rng)
    compiled = dnnc.compile(model, x)
    compiled.save_ir(tmp_path / "m.mlir")
    reloaded = Program.load(tmp_path / "m.mlir")
    assert reloaded.text() == compiled.ir
    assert torch.equal(ReferenceExecutor(reloaded).run([x])[0], compiled(x))


def test_float64_reference_precision_keeps_declared_output_dtype(rng: torch.Generator) -> None:
    model, x = nn.Linear(8, 3).eval(), torch.randn(2, 8, generator=rng)
    with knobs.override(reference_precision="float64"):
        compiled = dnnc.compile(model, x)
    out = compiled(x)
    assert out.dtype == torch.float32
    with torch.no_grad():
        assert_matches(out, model(x))


def test_half_model_returns_half(rng: torch.Generator) -> None:
    model = nn.Sequential(nn.Linear(8, 8), nn.LayerNorm(8)).eval().half()
    x = torch.randn(4, 8, generator=rng).half()
    out = dnnc.compile(model, x)(x)
    assert out.dtype == torch.float16 and out.shape == (4, 8)


def test_summary_says_what_runs_the_program(rng: torch.Generator) -> None:
    model = nn.Sequential(nn.Linear(4, 4), nn.ReLU()).eval()
    compiled = dnnc.compile(model, (torch.randn(2, 4, generator=rng),), device="cpu")
    summary = compiled.summary()
    assert set(summary) >= {"steps", "torch_ops", "fallbacks", "user_kernels"}
    assert list(summary["steps"]) == ["reference"] and summary["steps"]["reference"] > 0
    assert compiled.kernels() == {}  # no kernels on the reference backend


def test_checks_against_eager_give_a_verdict(rng: torch.Generator) -> None:
    from dnnc.numerics import check_against_eager

    model = nn.Sequential(nn.Linear(4, 4), nn.ReLU()).eval()
    example = (torch.randn(2, 4, generator=rng),)
    compiled = dnnc.compile(model, example, device="cpu")
    assert check_against_eager(compiled, model, example).ok
    other = nn.Sequential(nn.Linear(4, 4), nn.ReLU()).eval()  # other weights
    verdict = check_against_eager(compiled, other, example)
    assert not verdict.ok and verdict.against == "PyTorch eager" and "relative error" in verdict.problems[0]


def test_low_precision_outputs_are_held_to_the_model_in_float32(rng: torch.Generator) -> None:
    """Two float16 programs that each round differ from each other by more than either
    differs from the float32 truth: each output is held to the truth, at twice eager's
    error there (or the dtype's tolerance)."""
    from dnnc.numerics import compare_with_truth, relative_error

    truth = torch.randn(4096, generator=rng)

    def off_by(rel: float) -> torch.Tensor:
        noise = torch.randn(4096, generator=rng)
        return (truth + noise * rel * truth.norm() / noise.norm()).half()

    eager, ours = off_by(3e-3), off_by(3e-3)
    assert relative_error(ours, eager) > 2e-3, "a fixed 2e-3 between the two would fail a correct program"
    ints = torch.arange(5)
    verdict = compare_with_truth([ours, ints], [eager, ints], [truth, ints], "cpu", "PyTorch eager")
    assert verdict.ok and verdict.eager_worst == pytest.approx(3e-3, rel=0.1), verdict
    said = re.search(r"where eager's own is (\S+);", verdict.describe())
    assert said is not None and float(said[1]) == pytest.approx(3e-3, rel=0.1)
    wrong = compare_with_truth([off_by(1e-2), ints], [eager, ints], [truth, ints], "cpu", "PyTorch eager")
    found = re.match(r"output 0: relative error (\S+) against float32 eager exceeds", wrong.problems[0] if wrong.problems else "")
    assert found is not None and float(found[1]) == pytest.approx(1e-2, rel=0.1), wrong.problems
    nan = ours.clone()
    nan[3] = float("nan")
    assert compare_with_truth([nan], [eager], [truth], "cpu", "x").problems == ["NaNs in different places"]
    assert not compare_with_truth([ours, ints + 1], [eager, ints], [truth, ints], "cpu", "x").ok


def test_check_of_a_float16_model_uses_the_float32_truth(rng: torch.Generator) -> None:
    from dnnc.numerics import check_against_eager

    model = nn.Sequential(nn.Linear(64, 64), nn.GELU(), nn.Linear(64, 8)).eval()
    example = (torch.randn(4, 64, generator=rng),)
    compiled = dnnc.compile(model, example, device="cpu", dtype="f16")
    verdict = check_against_eager(compiled, model.half(), (example[0].half(),))
    assert verdict.ok and verdict.eager_worst is not None and verdict.eager_worst > 0, verdict


def test_random_inputs_keep_integers_in_the_examples_range() -> None:
    from dnnc.inputs import random_like

    g = torch.Generator().manual_seed(0)
    tokens = random_like(torch.tensor([[3, 7], [5, 9]]), g)
    assert tokens.dtype == torch.int64 and int(tokens.min()) >= 3 and int(tokens.max()) <= 9
    assert random_like(torch.zeros(3, dtype=torch.float16), g).dtype == torch.float16


def test_dtype_compiles_a_cast_copy_and_leaves_the_model_alone(rng: torch.Generator) -> None:
    model = TwoHeads().eval()
    x, scale = torch.randn(3, 6, generator=rng), torch.randn(3, 1, generator=rng)
    compiled = dnnc.compile(model, (x, scale), device="cpu", dtype="bf16")
    assert model.body.weight.dtype == torch.float32  # the caller's model is not cast
    got = compiled(x.bfloat16(), scale.bfloat16())
    with torch.no_grad():
        expected = copy.deepcopy(model).bfloat16()(x.bfloat16(), scale.bfloat16())
    assert got["features"].dtype == torch.bfloat16
    assert_matches(got["features"], expected["features"], torch.bfloat16, what="bf16 features")
    assert (
        dnnc.compile(model, (x, scale), device="cpu", dtype=torch.float16)(x.half(), scale.half())["sum"].dtype == torch.float16
    )


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"dtype": "f64"}, r"dtype='f64': expected one of f32, f16, bf16 or a torch floating dtype"),
        ({"dtype": torch.int32}, r"dtype=torch\.int32: expected one of f32, f16, bf16"),
        ({"partition": "fastest"}, r"partition='fastest': expected one of auto, cudnn-only, triton-only, greedy"),
        ({"options": {"fusion": True}}, r"dnnc\.compile: unknown option 'fusion'; the options are dnnc's settings: device, "),
    ],
)
def test_compile_arguments_are_checked(kwargs: dict, message: str) -> None:
    with pytest.raises(DnncError, match=message):
        dnnc.compile(nn.Linear(2, 2).eval(), torch.randn(1, 2), device="cpu", **kwargs)


def test_partition_tuning_specs_and_options_are_the_settings_of_the_compile(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from dnnc import api

    seen: list[knobs.Knobs] = []
    monkeypatch.setattr(api, "_compile", lambda *args: seen.append(knobs.get()))
    specs = [tmp_path / "a.toml", tmp_path / "b"]
    dnnc.compile(nn.Linear(2, 2), torch.randn(1, 2), partition="greedy", tuning_specs=specs, options={"autotune": False})
    assert seen[-1].partition == "greedy" and not seen[-1].autotune
    assert seen[-1].tuning_specs.split(os.pathsep) == [str(p) for p in specs]
    assert knobs.get().autotune  # only for that compile


def test_a_gpu_index_must_be_the_current_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    from dnnc.runtime import device

    if not torch.cuda.is_available():
        with pytest.raises(DnncError, match=r"device='cuda:0' but torch sees no CUDA GPU"):
            device.resolve_device("cuda:0")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    assert device.resolve_device("cuda:0") == "cuda"
    with pytest.raises(
        DnncError, match=r"device='cuda:1': dnnc compiles for and runs on the current GPU \(cuda:0\); make cuda:1"
    ):
        device.resolve_device("cuda:1")
    with pytest.raises(DnncError, match=r"device='cuda:2' but this machine has 2 GPU\(s\): cuda:0 to cuda:1"):
        device.resolve_device("cuda:2")
    with pytest.raises(DnncError, match=r"unknown device 'cuda:x'"):
        device.resolve_device("cuda:x")


def test_a_compiled_module_answers_as_an_inference_module_would(rng: torch.Generator) -> None:
    """``forward``, ``eval`` and ``train(False)`` work; ``to``/``cuda``/``half`` and
    ``train()`` are refused saying what to do; no state to load, no parameters to train."""
    model = nn.Linear(4, 2).eval()
    x = torch.randn(3, 4, generator=rng)
    compiled = dnnc.compile(model, x, device="cpu")
    assert torch.equal(compiled.forward(x), compiled(x))
    assert compiled.eval() is compiled and compiled.train(False) is compiled
    assert compiled.state_dict() == {} and list(compiled.parameters()) == []
    for refused in (lambda: compiled.to("cuda"), compiled.cuda, compiled.half, lambda: compiled.to(torch.float16)):
        with pytest.raises(DnncError, match=r"stays on cpu with the dtypes it was compiled for; compile the model again"):
            refused()
    with pytest.raises(DnncError, match="runs inference only"):
        compiled.train()
