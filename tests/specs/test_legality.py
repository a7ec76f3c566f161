"""``dnnc spec verify --model``: the model is partitioned with the spec and lowered as
a compile would, and every decided group is tried. On the CPU a Triton config must
suit its kernel and generate; on a GPU the cuDNN engine must build for that graph
and the kernel must compile. A decision that cannot be carried out is reported with
its reason and fails the command."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from click.testing import CliRunner

from dnnc import knobs
from dnnc.cli import main
from dnnc.tuning.legality import check_decisions
from tests.partition.test_partition_cpu import block_program
from tests.specs.benchmarked import each_benchmarked_model, fp16_program

GOOD = """\
schema = 1
[[record]]
name = "residual conv"
match = { kind = "conv_bias_add*" }
decision = { backend = "cudnn", engine = 0 }
[[record]]
name = "other convs"
match = { kind = "conv*" }
decision = { backend = "triton", config = { BLOCK_M = 32, BLOCK_N = 16, num_warps = 2 } }
"""

BAD_CONFIG = GOOD.replace("BLOCK_M = 32, BLOCK_N = 16", "BLOCK = 64")


def _verdicts(tmp_path: Path, text: str, on_gpu: bool = False):
    path = tmp_path / "spec.toml"
    path.write_text(text)
    program, _, _ = block_program(torch.float16)
    with knobs.override(tuning_specs=str(path), tuning_spec_defaults=False, measure=False, cache_dir=tmp_path / "cache"):
        return check_decisions(program, on_gpu)


def test_decisions_that_can_be_carried_out(tmp_path: Path) -> None:
    verdicts = _verdicts(tmp_path, GOOD)
    assert [(v.ok, v.record.split("'")[1]) for v in verdicts] == [(True, "other convs"), (True, "residual conv")]
    assert "the conv2d kernel takes BLOCK_M=32,BLOCK_N=16" in verdicts[0].detail
    assert "engine 0 is checked on a GPU only" in verdicts[1].detail and verdicts[1].site.startswith("conv_bias_add")


def test_a_config_the_kernel_does_not_take_is_reported(tmp_path: Path) -> None:
    verdicts = _verdicts(tmp_path, BAD_CONFIG)
    bad = [v for v in verdicts if not v.ok]
    assert len(bad) == 1 and "CodegenError: a tuning spec gives BLOCK to a Triton conv2d kernel" in bad[0].detail
    assert bad[0].text().startswith("FAIL conv 2x3x16x16")


def test_verify_with_a_model_fails_on_what_cannot_be_carried_out(tmp_path: Path) -> None:
    spec = tmp_path / "spec.toml"
    spec.write_text(BAD_CONFIG)
    factory = tmp_path / "block.py"
    factory.write_text(
        "import torch\nfrom tests.partition.test_partition_cpu import Block\n\n"
        "def block_model():\n    torch.manual_seed(0)\n    return Block().eval(), (torch.randn(2, 3, 16, 16),)\n"
    )
    args = ["spec", "verify", str(spec), "--arch", "sm_90", "--model", f"{factory}:block_model"]
    result = CliRunner().invoke(main, [*args, "--dtype", "f16"])
    assert result.exit_code != 0, result.output
    assert "1 of 2 decisions can be carried out" in result.output and "1 decisions cannot be carried out" in result.output
    spec.write_text(GOOD)
    result = CliRunner().invoke(main, [*args, "--dtype", "f16", "--without-gpu"])
    assert result.exit_code == 0 and "2 of 2 decisions can be carried out" in result.output
    if not torch.cuda.is_available():
        partial = CliRunner().invoke(main, [*args, "--dtype", "f16"])
        assert partial.exit_code != 0, "asked to verify what it could not check here"
        assert "2 decisions were not fully checked (no GPU here)" in partial.output and "--without-gpu" in partial.output


@pytest.mark.gpu
def test_on_a_gpu_engines_are_built_and_kernels_compiled(tmp_path: Path) -> None:
    if not torch.cuda.is_available():
        pytest.skip("needs an NVIDIA GPU")
    verdicts = _verdicts(tmp_path, GOOD.replace("engine = 0", "engine = 9999"), on_gpu=True)
    assert [v.ok for v in verdicts] == [True, False]
    assert verdicts[0].detail.startswith("the conv2d kernel compiles with BLOCK_M=32,BLOCK_N=16")
    assert ": " in verdicts[1].detail, "the reason, from cuDNN"


@pytest.mark.gpu
@each_benchmarked_model
def test_the_shipped_library_can_be_carried_out_here(factory: str, args: dict, site_count: int, undecided: tuple) -> None:
    """Every engine and config of the shipped sm_90 libraries builds for the group it
    decides in each benchmarked model (on sm_90 with the cuDNN it was tuned with; else
    nothing applies)."""
    if not torch.cuda.is_available():
        pytest.skip("needs an NVIDIA GPU")
    with knobs.override(tuning_specs="", tuning_spec_defaults=True, measure=False):
        verdicts = check_decisions(fp16_program(factory, args), on_gpu=True)
    decided = site_count - len(undecided)
    assert len(verdicts) >= decided and all(v.ok for v in verdicts), [v.text() for v in verdicts if not v.ok]


def test_verify_decides_for_the_cudnn_version_it_is_given(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A record for a cuDNN range is checked against ``--cudnn``, not left out because
    this machine has no cuDNN (it used to be: "1 of 1" where the model had 2)."""
    import dnnc.version

    real = dnnc.version.library_versions
    monkeypatch.setattr(dnnc.version, "library_versions", lambda: {**real(), "cudnn": None})
    spec = tmp_path / "spec.toml"
    spec.write_text(GOOD.replace("engine = 0 }", 'engine = 0 }\nversions = { cudnn = ">=9.19,<9.20" }'))
    factory = tmp_path / "block.py"
    factory.write_text(
        "import torch\nfrom tests.partition.test_partition_cpu import Block\n\n"
        "def block_model():\n    torch.manual_seed(0)\n    return Block().eval(), (torch.randn(2, 3, 16, 16),)\n"
    )
    args = [
        "spec",
        "verify",
        str(spec),
        "--arch",
        "sm_90",
        "--model",
        f"{factory}:block_model",
        "--dtype",
        "f16",
        "--without-gpu",
    ]
    with knobs.override(cache_dir=tmp_path / "cache"):
        given = CliRunner().invoke(main, [*args, "--cudnn", "9.19.0"])
        assert given.exit_code == 0, given.output
        assert "2 of 2 decisions can be carried out" in given.output
        if not torch.cuda.is_available():
            assert "(2 checked without building their engine or compiling their kernel: no GPU here)" in given.output
        assert "(record 'residual conv')]: lowers to a cuDNN graph" in given.output
        older = CliRunner().invoke(main, [*args, "--cudnn", "9.18.0"])
        assert older.exit_code == 0, older.output
        assert "record 'residual conv' skipped: needs cudnn <9.20,>=9.19, installed 9.18.0" in older.output
        assert "(record 'residual conv')]" not in older.output, "the Triton record decides both convolutions there"
        unknown = CliRunner().invoke(main, args)
        assert unknown.exit_code != 0 and "--cudnn VERSION" in unknown.output
