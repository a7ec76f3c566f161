"""Which GPU stages the pipeline runs, read from the partitioner's backend table: each
backend's stage in order under ``greedy``, the merging of sibling products and the padding of unaligned products before all, one partition stage under a priced policy,
cuDNN's attention stage first whatever the knob (which only widens what it takes), Triton's split of long
reductions before any lowering, and a backend whose library is
missing left out."""

from __future__ import annotations

from dataclasses import replace

import pytest

from dnnc import knobs
from dnnc.errors import DnncError
from dnnc.partition.backends import BACKENDS
from dnnc.pipeline import GPU_FIRST_STAGE, MERGE_STAGE, PARTITION_STAGE, gpu_stages

FIRST = [MERGE_STAGE, GPU_FIRST_STAGE]
"""Before any backend: sibling products merged, then unaligned products padded."""


@pytest.fixture
def cudnn_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(BACKENDS, "cudnn", replace(BACKENDS["cudnn"], available=lambda: True))


@pytest.mark.usefixtures("cudnn_installed")
@pytest.mark.parametrize(
    ("policy", "attention", "stages"),
    [
        ("greedy", False, ["gpu-cudnn-attention", "gpu-cudnn", "gpu-triton-split-reductions", "gpu-triton"]),
        ("greedy", True, ["gpu-cudnn-attention", "gpu-cudnn", "gpu-triton-split-reductions", "gpu-triton"]),
        ("auto", False, ["gpu-cudnn-attention", "gpu-triton-split-reductions", f"{PARTITION_STAGE}auto"]),
        ("cudnn-only", True, ["gpu-cudnn-attention", "gpu-triton-split-reductions", f"{PARTITION_STAGE}cudnn-only"]),
    ],
)
def test_stages_follow_the_policy_and_the_attention_knob(policy: str, attention: bool, stages: list[str]) -> None:
    with knobs.override(partition=policy, cudnn_attention=attention):
        assert gpu_stages(["cudnn", "triton"]) == [*FIRST, *stages]


def test_a_backend_whose_library_is_missing_is_left_out(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(BACKENDS, "cudnn", replace(BACKENDS["cudnn"], available=lambda: False))
    with knobs.override(partition="greedy", cudnn_attention=True):
        assert gpu_stages(["cudnn", "triton"]) == [*FIRST, "gpu-triton-split-reductions", "gpu-triton"]
    with knobs.override(partition="auto", cudnn_attention=True):
        assert gpu_stages(["cudnn", "triton"]) == [*FIRST, "gpu-triton-split-reductions", f"{PARTITION_STAGE}auto"]


def test_an_unknown_backend_is_named() -> None:
    with pytest.raises(DnncError, match="unknown GPU backend 'cudnn-attention'; known: cudnn, triton"):
        gpu_stages(["cudnn-attention"])
