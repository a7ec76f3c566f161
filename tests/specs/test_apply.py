"""Tuning specs inside the partitioner, on the CPU: a record's decision replaces the
cost model for the groups it matches (cuDNN with its plan carried to the
``cudnn.graph``; Triton with its config used by the kernel that holds the root),
spec-decided groups are not timed, the decision record names the record, and the
programs still compute the model (reference backend, fresh inputs)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from dnnc import knobs
from dnnc.backends.interface import GROUP_BACKEND_ATTR, group_attr
from dnnc.backends.triton.emitter import CodegenError
from dnnc.backends.triton.kernels import GroupInfo
from dnnc.backends.triton.launch import spec_or_candidates
from dnnc.ir import cudnn, tcp
from dnnc.passes import parse_passes
from dnnc.pipeline import PARTITIONED, run_passes
from tests.compile_helpers import eager_exact, flat, run_reference
from tests.numerics import assert_matches
from tests.partition.test_partition_cpu import block_program, partitioned

CUDNN_SPEC = """\
schema = 1
[[record]]
name = "residual conv on cuDNN"
match = { kind = "conv_bias_add_relu", dtype = ["f16"] }
decision = { backend = "cudnn", engine = 7, knobs = { SPLIT_K = 2 }, tag = "eng7_k0=2" }
"""

TRITON_SPEC = """\
schema = 1
[[record]]
name = "convs on Triton"
match = { kind = "conv*" }
decision = { backend = "triton", config = { BLOCK_M = 32, BLOCK_N = 16, num_warps = 2 } }
"""


@pytest.fixture
def spec(tmp_path: Path):
    def write(text: str) -> Path:
        path = tmp_path / "spec.toml"
        path.write_text(text)
        return path

    with knobs.override(cache_dir=tmp_path / "cache", tuning_spec_defaults=False):  # only this test's spec
        yield write


def _decided(path: Path, policy: str = "auto"):
    program, model, _ = block_program(torch.float16)
    with knobs.override(tuning_specs=str(path)):
        record = partitioned(program, policy)
    return program, model, record


def _triton_groups(program) -> list[GroupInfo]:
    return [
        GroupInfo.of(op)
        for op in program.entry.body.block.ops
        if isinstance(op, tcp.IsolatedGroupOp) and group_attr(op, GROUP_BACKEND_ATTR) == "triton"
    ]


def _check_model(program, model) -> None:
    for _ in range(2):
        x = torch.randn(2, 3, 16, 16, dtype=torch.float16)
        assert_matches(run_reference(program, [x])[0], flat(eager_exact(model, [x]))[0], torch.float16)


def test_a_cudnn_decision_fixes_the_group_and_its_plan(spec) -> None:
    program, model, record = _decided(spec(CUDNN_SPEC))
    decided = [g for g in record["groups"] if g.get("spec")]
    assert [(g["backend"], g["kind"]) for g in decided] == [("cudnn", "conv_bias_add_relu")]
    assert decided[0]["spec"].endswith("spec.toml:2 (record 'residual conv on cuDNN')")
    assert record["specs"]["records"] == 1 and record["specs"]["fingerprint"]
    run_passes(program, parse_passes(PARTITIONED))
    plans = [json.loads(op.plan.data) for op in program.entry.body.block.ops if isinstance(op, cudnn.GraphOp) and op.plan]
    assert plans == [{"engine": 7, "knobs": {"SPLIT_K": 2}, "name": "eng7_k0=2", "ms": None, "timed": 0}]
    _check_model(program, model)


def test_a_triton_decision_moves_the_convs_and_sets_their_config(spec) -> None:
    program, model, record = _decided(spec(TRITON_SPEC))
    assert not any(g["backend"] == "cudnn" and g["kind"].startswith("conv") for g in record["groups"])
    assert sum(1 for g in record["groups"] if g.get("spec")) == 2, "both convolutions"
    run_passes(program, parse_passes(PARTITIONED))
    convs = [g for g in _triton_groups(program) if g.kind == "conv2d"]
    assert len(convs) == 2
    for info in convs:
        (config,) = spec_or_candidates(info)
        assert config["BLOCK_M"] == 32 and config["BLOCK_N"] == 16 and config["num_warps"] == 2 and "BLOCK_K" in config
    _check_model(program, model)


def test_a_policy_that_cannot_follow_a_decision_says_so(spec) -> None:
    _, _, record = _decided(spec(TRITON_SPEC), "cudnn-only")
    assert any(g["backend"] == "cudnn" and g["kind"].startswith("conv") for g in record["groups"])
    assert any("this policy gives triton no group" in w for w in record["specs"]["warnings"])


def test_spec_decided_groups_are_not_timed(spec, monkeypatch) -> None:
    from dnnc.partition import partitioner, pricing

    path = spec(CUDNN_SPEC)
    timed: list[str] = []
    monkeypatch.setattr(partitioner, "should_measure", lambda: True)
    monkeypatch.setattr(pricing, "_precompile", lambda programs, device: None)
    monkeypatch.setattr(pricing, "_time", lambda c, program, device, report: timed.append(c.kind) or 1.0)
    monkeypatch.setattr(
        partitioner.Partition, "whole_program_check", lambda self, whole, priced, decision, sites: (decision, None)
    )
    program, _, _ = block_program(torch.float16)
    with knobs.override(tuning_specs=str(path)):
        record = partitioned(program, "auto")
    assert timed and "conv_bias_add_relu" not in timed
    assert any(g.get("spec") and g["measured_ms"] is None for g in record["groups"])


def test_a_config_for_another_kernel_kind_is_a_clear_error(spec) -> None:
    program, _, _ = _decided(spec(TRITON_SPEC.replace("BLOCK_N = 16", "BLOCK = 16")))
    run_passes(program, parse_passes(PARTITIONED))
    conv = next(g for g in _triton_groups(program) if g.kind == "conv2d")
    with pytest.raises(CodegenError, match="a tuning spec gives BLOCK to a Triton conv2d kernel, which takes BLOCK_M"):
        spec_or_candidates(conv)


def test_contest_key_changes_with_the_specs() -> None:
    from dnnc.partition.contest import contest_key

    program, _, _ = block_program(torch.float16)
    assert contest_key(program.module, ("cudnn",), "a") != contest_key(program.module, ("cudnn",), "b")
    assert contest_key(program.module, ("cudnn",)) != contest_key(program.module, ("cudnn",), "a")


def test_shipped_libraries_take_the_lowest_layers(tmp_path: Path) -> None:
    from dnnc.partition.spec_apply import configured_libraries
    from dnnc.specs import resolve
    from dnnc.specs.library import Device

    shipped = tmp_path / "defaults"
    shipped.mkdir()
    record = '\n[[record]]\nmatch = {{ kind = "conv*" }}\ndecision = {{ backend = "cudnn", engine = {n} }}\n'
    (shipped / "generic.toml").write_text("schema = 1\n" + record.format(n=1))
    (shipped / "sm_90.toml").write_text('schema = 1\ntarget = { arch = "sm_90" }\n' + record.format(n=2))
    (shipped / "h100.toml").write_text('schema = 1\ntarget = { arch = "sm_90", sku = "H100" }\n' + record.format(n=3))
    user = tmp_path / "mine.toml"
    user.write_text("schema = 1\n" + record.format(n=4))
    with knobs.override(tuning_specs=str(user), tuning_spec_path=""):
        libraries = configured_libraries(shipped)
    assert [(layer, Path(lib.path).name) for layer, lib in libraries] == [
        ("user", "mine.toml"),
        ("generic", "generic.toml"),
        ("sku", "h100.toml"),
        ("arch", "sm_90.toml"),
    ]
    resolved = resolve(libraries, Device("sm_90", "NVIDIA H100 80GB HBM3"))
    assert [r.decision.choice["engine"] for r in resolved.records] == [4, 3, 2, 1]
