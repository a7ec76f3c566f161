"""The test models end to end on the CPU: exported, imported, verified after every
canonicalization pass, numerically equal to PyTorch eager after every pass (float32,
relative error <= 1e-5 on fresh random inputs), with batch norm folded away."""

from __future__ import annotations

from collections import Counter

import pytest
import torch
from torch import nn

from dnnc.frontend.torch_export import export, import_program
from dnnc.models import FACTORIES
from dnnc.passes import parse_passes
from dnnc.pipeline import CANONICALIZE, run_passes
from tests.compile_helpers import eager, eager_exact, run_reference
from tests.numerics import assert_matches


def fresh_inputs(example: tuple[torch.Tensor, ...], rng: torch.Generator) -> list[torch.Tensor]:
    out = []
    for x in example:
        if x.is_floating_point():
            out.append(torch.randn(x.shape, generator=rng).to(x.dtype))
        else:  # token ids: stay inside the vocabulary
            out.append(torch.randint(0, int(x.max()) + 1, x.shape, generator=rng))
    return out


def op_counts(program) -> Counter:
    return Counter(op.name for op in program.entry.body.walk())


@pytest.mark.parametrize("name", list(FACTORIES))
def test_model_matches_eager_after_every_pass(name: str, rng: torch.Generator) -> None:
    model, example = FACTORIES[name]()
    program = import_program(export(model, example))
    program.verify()
    inputs = fresh_inputs(example, rng)
    expected = eager(model, inputs)
    assert_matches(run_reference(program, inputs)[0], expected, torch.float32, what=f"{name} imported")
    for p in parse_passes(CANONICALIZE):
        run_passes(program, [p], verify_each=True)
        program.verify()  # the IR, and every parameter it names stored with its type
        assert_matches(run_reference(program, inputs)[0], expected, torch.float32, what=f"{name} after {p.name}")

    counts = op_counts(program)
    assert "tcp.batch_norm" not in counts
    convs = sum(isinstance(m, nn.Conv2d) for m in model.modules())
    assert counts["tcp.conv2d"] == convs
    norms = sum(isinstance(m, nn.LayerNorm) for m in model.modules())
    assert counts["tcp.layer_norm"] == norms
    # every stored parameter is used, and nothing in the IR is computed from parameters alone
    assert len(program.params) == counts["tcp.param"]


def test_resnet50_folds_every_batchnorm_into_its_conv() -> None:
    model, example = FACTORIES["resnet50"]()
    program = import_program(export(model, example))
    imported = op_counts(program)
    assert imported["tcp.batch_norm"] == 53 and imported["tcp.conv2d"] == 53
    run_passes(program, parse_passes(CANONICALIZE))
    counts = op_counts(program)
    # each conv keeps one broadcast bias add; the other adds are the 16 residual adds and
    # the fc bias (already of the output's shape at batch 1, so not broadcast)
    assert counts["tcp.conv2d"] == 53 and counts["tcp.broadcast"] == 53 and counts["tcp.add"] == 53 + 16 + 1
    assert counts["tcp.param"] == 53 * 2 + 2


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_mobilenet_low_precision(dtype: torch.dtype, rng: torch.Generator) -> None:
    """Folding a half-precision model computes in float64 and stores the result in
    the model's dtype; the compiled program stays within that dtype's tolerance of
    the float64 truth, as PyTorch eager does."""
    model, example = FACTORIES["mobilenet_v2"](image_size=96)
    model = model.to(dtype)
    inputs = [torch.randn(example[0].shape, generator=rng).to(dtype)]
    program = import_program(export(model, inputs))
    run_passes(program, parse_passes(CANONICALIZE))
    assert all(program.params[op.param_name].dtype == dtype for op in program.param_ops())
    truth = eager_exact(model, inputs)
    assert_matches(run_reference(program, inputs)[0], truth.to(dtype), dtype)


def test_batch_norm_calibrates_for_a_batch_of_one() -> None:
    """A 1x1 map at batch 1 (a squeeze-excite block) has one value per channel, which
    train-mode batch norm refuses; calibration runs on two random examples instead."""
    from dnnc.models._init import calibrate_batchnorm

    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 8, 3), nn.AdaptiveAvgPool2d(1), nn.Conv2d(8, 8, 1), nn.BatchNorm2d(8))
    calibrate_batchnorm(model, torch.empty(1, 3, 8, 8))
    bn = model[3]
    assert not model.training and bool((bn.running_var != 1).any()) and bool((bn.running_mean != 0).any())
