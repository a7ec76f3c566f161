"""``dnnc tune`` on the GPU: a measured compile of a small network (stem conv,
residual conv, linear head; fp16) becomes a spec, and that spec applied on a fresh
cache reproduces every group, plan and config without measuring, computing the
same outputs as the tuned program."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from dnnc import knobs
from dnnc.specs.format import load_library
from dnnc.tuning import tune as tuning
from tests.partition.test_partition_cpu import Block

pytestmark = pytest.mark.gpu


def test_a_tuned_spec_reproduces_the_measured_compile(tmp_path: Path) -> None:
    torch.manual_seed(0)
    model = Block().eval().cuda().half()
    x = torch.randn(4, 3, 16, 16, device="cuda", dtype=torch.float16)
    with knobs.override(cache_dir=tmp_path / "tuning-cache"):
        run = tuning.tune(model, (x,))
    tuned = run.tuned
    assert run.compiled.program.metadata["decisions"]["measured"], "tuning measures"
    assert tuned.records and not tuned.skipped, tuned.skipped
    assert all(r.decision.choice for r in tuned.records), "plans and configs, not just backends"
    assert all(r.target.arch == run.device.arch for r in tuned.records)
    spec = tmp_path / "tuned.toml"
    spec.write_text(tuning.spec_text(tuned, "block", run.device.name))
    assert len(load_library(spec)[0].records) == len(tuned.records)

    applied, seconds = tuning.reproduce(model, (x,), str(spec), tmp_path / "fresh-cache")
    decisions = applied.program.metadata["decisions"]
    assert decisions["specs"]["complete"] and not decisions["measured"], "nothing measured"
    groups = tuning.compare_groups(run.compiled.program.metadata["decisions"], decisions)
    differing = groups.tuned_only + groups.applied_only
    assert all(backend == "triton" for backend, _, _ in differing), groups.lines()  # Triton extents go by estimate
    kernels = {s.op: s.kernel for s in applied._executor.steps if s.kernel is not None}
    tuned_kernels = {s.op: s.kernel for s in run.compiled._executor.steps if s.kernel is not None}
    assert (
        tuning.decision_differences(
            tuning.built_sites(run.compiled.program, tuned_kernels), tuning.built_sites(applied.program, kernels)
        )
        == []
    )
    torch.testing.assert_close(applied(x), run.compiled(x), rtol=2e-3, atol=2e-3)  # other groups may autotune apart
    assert seconds < run.seconds


def test_the_tune_command_reports_its_progress_and_writes_the_spec(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from dnnc.cli import main

    spec = tmp_path / "block.toml"
    with knobs.override(cache_dir=tmp_path / "cache"):
        result = CliRunner().invoke(main, ["tune", "dnnc.models:conv_block", "-o", str(spec), "--no-check"])
    assert result.exit_code == 0, result.output
    assert "candidate groups timed" in result.output and "kernels built" in result.output, result.output
    assert load_library(spec)[0].records
