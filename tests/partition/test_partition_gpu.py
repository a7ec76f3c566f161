"""The partitioner on the GPU with measurement on: candidates are lowered and
timed alone, the program built from the cheapest cover runs and matches eager as
closely as eager fp16 does (``assert_as_close_as_eager``), the record holds
the measured times, and of the contending covers built as whole programs the
fastest is the one realized, the very program and executor the contest built. How ``auto`` compares with each single-backend policy
compiled on its own is the benchmark's question (bench/partition_policies.py)."""

from __future__ import annotations

import logging
import warnings
from pathlib import Path

import pytest
import torch

from dnnc import knobs
from dnnc.partition.explain import explain_lines
from tests.runtime.test_gpu_models import _run

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("name", ["resnet50", "gpt2_block"])
def test_auto_partition_measured(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from dnnc.partition import contest

    built: list[contest.Built | None] = []
    build_and_time = contest.build_and_time
    monkeypatch.setattr(contest, "build_and_time", lambda *a: built.append(build_and_time(*a)) or built[-1])
    with knobs.override(partition="auto", measure=True, tuning_spec_defaults=False):  # the shipped specs measure nothing
        compiled, _, _ = _run(name, "cudnn,triton", torch.float16)
    record = compiled.program.metadata["decisions"]
    assert record["measured"] and record["totals"]["measured"] > 0
    assert not compiled.summary()["fallbacks"]  # type: ignore[union-attr]
    measured = [g for g in record["groups"] if g["measured_ms"] is not None]
    assert measured and all(g["measured_ms"] > 0 for g in measured)
    text = "\n".join(explain_lines(record))
    assert "median relative error" in text and "whole programs on the GPU" in text
    programs = record["programs"]["contenders"]
    timed = {n: c["program_ms"] for n, c in programs.items() if c.get("program_ms") is not None}
    assert "auto" in timed, programs
    cheapest = min(c["predicted_ms"] for c in programs.values())
    for policy, c in programs.items():  # built and timed exactly where predicted within the margin (or the same program)
        near = c["predicted_ms"] <= contest.margin(policy) * cheapest
        assert ("skipped" not in c) == near or "same_program_as" in c, (policy, programs)
    assert timed[record["programs"]["winner"]] == min(timed.values()), "the fastest whole program is realized"
    if not record["programs"].get("cached"):  # the contest's winner is the compiled program, not built again
        tried = [n for n, c in programs.items() if "program_ms" in c and "same_program_as" not in c]  # built, in order
        winner = built[tried.index(record["programs"]["winner"])]
        assert winner is not None and compiled._executor is winner.executor  # type: ignore[union-attr]
        assert compiled.program.module is winner.program.module


@pytest.mark.parametrize("policy", ["cudnn-only", "triton-only"])
def test_single_backend_policies(policy: str) -> None:
    with knobs.override(partition=policy, measure=False):
        compiled, _, _ = _run("resnet50", "cudnn,triton", torch.float16)
    backends = {g["backend"] for g in compiled.program.metadata["decisions"]["groups"]}
    assert ("cudnn" in backends) == (policy == "cudnn-only")


def test_a_compile_that_prices_engine_less_cudnn_graphs_says_nothing(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]
) -> None:
    """MobileNetV2 compiles cold and warm without a warning, a log line or a fallback to
    report: a cuDNN candidate without an engine (before depthwise convolutions were
    offered to cuDNN without their epilogues, the fused ones) is dropped while pricing,
    the cold compile learning it by building it, the warm one knowing
    (``test_library_refusals`` checks the learning with a stand-in library)."""
    caplog.set_level(logging.WARNING)
    for temperature in ("cold", "warm"):
        with knobs.override(cache_dir=tmp_path, tuning_spec_defaults=False), warnings.catch_warnings(record=True) as warned:
            warnings.simplefilter("always")
            compiled, _, _ = _run("mobilenet_v2", "cudnn,triton", torch.float16)
        record = compiled.program.metadata["decisions"]
        assert record["policy"] == "auto", temperature
        assert not compiled.summary()["fallbacks"]  # type: ignore[union-attr]
        assert not [w for w in warned if "dnnc" in str(w.filename) or "dnnc" in str(w.message)], temperature
        assert not [r.getMessage() for r in caplog.records if r.name.startswith("dnnc")], temperature
        out, err = capfd.readouterr()
        assert "dnnc" not in out + err, (temperature, out, err)
