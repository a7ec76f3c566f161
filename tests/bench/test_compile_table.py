"""bench/compile_table.py without a GPU: which workload stands for each model, the
table rendered from runs' JSON, and clear errors for unknown names."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from bench.compile_table import render, render_contests, table_workloads

ROOT = Path(__file__).resolve().parents[2]


def test_one_serving_size_workload_per_model() -> None:
    chosen = {w.model: w.name for w in table_workloads()}
    assert chosen["resnet50"] == "resnet50-b32" and chosen["conv_block"] == "conv-block-b32"
    assert chosen["bert_layer"] == "bert-s128-b8" and chosen["gpt2_block"] == "gpt2-block"
    assert chosen["efficientnet_b0"] == "efficientnet_b0-b32" and chosen["llama"] == "llama-b8-s128"
    assert chosen["unet2d"] == "unet2d-b8" and chosen["whisper_encoder"] == "whisper_encoder-b1"
    assert len(chosen) == len(table_workloads())


def _row(compile_s: float, median_ms: float, **extra: object) -> dict:
    return {"status": "ok", "compile_s": compile_s, "median_ms": median_ms, **extra}


def test_runs_join_into_one_table(tmp_path: Path) -> None:
    env = {"device": "NVIDIA H200", "torch": "2.11.0", "triton": "3.6.0", "cudnn_backend": 91900}
    first = {
        "date": "2026-11-26",
        "environment": env,
        "results": [
            {
                "workload": "resnet50-b32",
                "model": "resnet50",
                "variants": {
                    "auto": {"cold": _row(16.0, 1.2), "warm": _row(2.5, 1.21)},
                    "greedy": {"cold": _row(12.0, 1.5, torch_ops=3), "warm": {"status": "failed: exit 1"}},
                    "torch.compile": {"cold": _row(20.0, 1.6), "warm": _row(4.0, 1.6)},
                },
            }
        ],
    }
    second = {
        "date": "2026-11-26",
        "environment": env,
        "results": [
            {
                "workload": "conv-block-b32",
                "model": "conv_block",
                "variants": {
                    "auto": {"cold": {"status": "wrong result"}, "warm": None},
                    "greedy": {"cold": _row(3.0, 0.1), "warm": _row(0.5, 0.1)},
                    "torch.compile": {"cold": _row(5.0, 0.2), "warm": _row(1.0, 0.2)},
                },
            }
        ],
    }
    paths = [tmp_path / "a.json", tmp_path / "b.json"]
    for path, run in zip(paths, (first, second), strict=True):
        path.write_text(json.dumps(run))
    table = render(paths)
    lines = [line for line in table.splitlines() if line.startswith("| ")]
    assert lines[0].startswith("| model (workload) | dnnc auto cold s | warm s | run ms | dnnc greedy cold s")
    assert lines[0].endswith("auto / torch.compile |")
    conv, resnet = lines[1], lines[2]  # the suite's order, not the files'
    assert conv.startswith("| conv_block (conv-block-b32) | wrong result | - | - | 3.0 | 0.50 | 0.100 |")
    assert conv.endswith("| - |")
    assert resnet == ("| resnet50 (resnet50-b32) | 16.0 | 2.50 | 1.200 | 12.0 | failed | 1.500* | 20.0 | 4.00 | 1.600 | 0.75x |")
    assert "NVIDIA H200" in table and "2026-11-26" in table


def test_the_contest_table_says_what_each_policy_ran() -> None:
    def result(workload: str, model: str, contest: dict | None) -> dict:
        return {
            "workload": workload,
            "model": model,
            "variants": {"auto": {"cold": _row(10.0, 1.0, contest=contest), "warm": None}},
        }

    results = [
        result("resnet50-b32", "resnet50", None),  # every choice from the shipped specs: no contest
        result("unet2d-b8", "unet2d", {"winner": "auto", "auto": 1.25, "cudnn-only": 1.28, "triton-only": None}),
        result("efficientnet_b0-b32", "efficientnet_b0", {"winner": "auto", "auto": 1.31, "cudnn-only": 1.31}),
    ]
    lines = render_contests(results).splitlines()
    assert lines[0] == "| model (workload) | kept | auto program ms | cudnn-only program ms | triton-only program ms |"
    assert lines[2] == "| unet2d (unet2d-b8) | auto | 1.250 | 1.280 | not timed |"
    assert lines[3] == "| efficientnet_b0 (efficientnet_b0-b32) | auto | 1.310 | same | no cover |"
    assert len(lines) == 4
    assert render_contests(results[:1]) == ""


def test_a_compile_s_contest_is_read_from_its_decision_record() -> None:
    from types import SimpleNamespace

    from bench.suite.torch_variants import contest_programs

    def compiled(decisions: dict | None) -> SimpleNamespace:
        return SimpleNamespace(program=SimpleNamespace(metadata={} if decisions is None else {"decisions": decisions}))

    programs = {
        "winner": "auto",
        "contenders": {
            "auto": {"predicted_ms": 1.0, "program_ms": 1.2},
            "cudnn-only": {"predicted_ms": 1.1, "program_ms": 1.2, "same_program_as": "auto"},
            "triton-only": {"predicted_ms": 2.0, "skipped": "predicted over 1.25x the cheapest cover"},
        },
    }
    assert contest_programs(compiled({"programs": programs})) == {
        "winner": "auto",
        "auto": 1.2,
        "cudnn-only": 1.2,
        "triton-only": None,
        "predicted": {"auto": 1.0, "cudnn-only": 1.1, "triton-only": 2.0},
        "dropped": [],
    }
    dropped = {"programs": programs, "totals": {"dropped": ["triton conv2d #3 (no kernel)"]}}
    assert contest_programs(compiled(dropped))["dropped"] == ["triton conv2d #3 (no kernel)"]
    assert contest_programs(compiled({"policy": "greedy"})) is None
    assert contest_programs(compiled(None)) is None


def test_unknown_names_are_clear_errors() -> None:
    script = str(ROOT / "bench" / "compile_table.py")
    for flag, value, message in (
        ("--workloads", "no-such-model", "unknown workload 'no-such-model'"),
        ("--variants", "fast", "unknown variant 'fast'"),
    ):
        done = subprocess.run([sys.executable, script, flag, value], capture_output=True, text=True)
        assert done.returncode == 2 and message in done.stderr and "Traceback" not in done.stderr
