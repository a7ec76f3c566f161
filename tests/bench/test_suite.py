"""The benchmark suite's parts that need no GPU: the JAX networks compute what the
PyTorch models compute (float32 on the CPU, relative error <= 1e-5, fresh random
inputs), the JAX worker checks and times a network in its own process, floors
count the work, the report renders tables, the chart and the BENCHMARKS.md block,
and the runner refuses clearly without a GPU."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from bench.suite import report
from bench.suite.floors import FLOAT_BYTES, workload_floor
from bench.suite.workloads import WORKLOADS, select
from dnnc.models import FACTORIES
from dnnc.numerics import relative_error

ROOT = Path(__file__).resolve().parents[2]
SMALL = {
    "conv_block": {"batch": 2, "size": 16},
    "resnet50": {"batch": 2, "image_size": 64},
    "mobilenet_v2": {"batch": 2, "image_size": 64},
    "gpt2_block": {"seq": 16, "vocab": 500, "max_len": 64},
    "bert_layer": {"batch": 2, "seq": 16},
}


def _fresh(model: str, rng: torch.Generator) -> tuple[torch.nn.Module, list[torch.Tensor]]:
    net, example = FACTORIES[model](**SMALL[model])
    inputs = [
        torch.randn(x.shape, generator=rng)
        if x.is_floating_point()
        else torch.randint(0, int(x.max()) + 1, x.shape, generator=rng)
        for x in example
    ]
    return net, inputs


@pytest.mark.parametrize("model", sorted(SMALL))
def test_jax_network_matches_the_pytorch_model(model: str, rng: torch.Generator) -> None:
    pytest.importorskip("jax")
    import jax.numpy as jnp

    from bench.suite.jax_nets import NETS

    net, inputs = _fresh(model, rng)
    fn, params = NETS[model]({k: v.detach().numpy() for k, v in net.state_dict().items()}, jnp.float32)
    with torch.no_grad():
        expected = net(*inputs)
    got = torch.from_numpy(np.array(fn(params, *[jnp.asarray(x.numpy()) for x in inputs])))
    assert got.shape == expected.shape
    assert relative_error(got, expected) <= 1e-5


def test_every_workload_has_a_jax_network() -> None:
    pytest.importorskip("jax")
    from bench.suite.jax_nets import NETS

    assert {w.model for w in WORKLOADS.values() if not w.zoo} <= set(NETS)


def test_jax_worker_checks_and_times_in_its_own_process(tmp_path: Path, rng: torch.Generator) -> None:
    pytest.importorskip("jax")
    net, inputs = _fresh("conv_block", rng)
    with torch.no_grad():
        reference = net(*inputs)
    weights, result = tmp_path / "w.npz", tmp_path / "r.json"
    arrays = {k: v.detach().numpy() for k, v in net.state_dict().items()}
    np.savez(weights, __model__=np.array("conv_block"), __reference__=reference.numpy(), __input_0=inputs[0].numpy(), **arrays)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)}
    worker = [sys.executable, "-m", "bench.suite.jax_worker", str(weights), str(result), "--xla", "--dnnc"]
    subprocess.run(worker, cwd=ROOT, env=env, check=True)
    entries = json.loads(result.read_text())
    assert [e["variant"] for e in entries] == ["JAX/XLA", "dnnc from JAX"]  # dnnc on the reference backend here
    for entry in entries:
        assert entry["status"] == "ok", entry
        assert entry["rel_error"] <= 2e-2 and entry["median_ms"] > 0 and entry["compile_s"] > 0
    # a wrong reference is caught before timing
    np.savez(weights, __model__=np.array("conv_block"), __reference__=-reference.numpy(), __input_0=inputs[0].numpy(), **arrays)
    subprocess.run(worker[:-1], cwd=ROOT, env=env, check=True)
    (wrong,) = json.loads(result.read_text())
    assert wrong["status"] == "wrong result" and "median_ms" not in wrong


def test_floor_counts_flops_and_fewest_bytes() -> None:
    model, inputs = WORKLOADS["conv-block-b1"].build()
    floor = workload_floor(model, inputs)
    n, c, h, w = inputs[0].shape
    assert floor.flops == 2 * n * c * h * w * c * 9 + n * c * h * w * 2  # the conv, then bias add and relu
    weights = c * c * 9 + c
    assert floor.bytes == FLOAT_BYTES * (2 * n * c * h * w + weights), "input and output once, weights once"
    assert floor.ms(1.0, 1.0) == pytest.approx(max(floor.flops / 1e9, floor.bytes / 1e6))


def test_workload_selection_and_units() -> None:
    assert [w.name for w in select("resnet50-b32,gpt2-block")] == ["resnet50-b32", "gpt2-block"]
    with pytest.raises(SystemExit, match="unknown workload 'resnet'"):
        select("resnet")
    assert WORKLOADS["bert-s512-b8"].items((torch.zeros(8, 512, 768),)) == 8 * 512
    assert WORKLOADS["resnet50-b32"].items((torch.zeros(32, 3, 8, 8),)) == 32


PAYLOAD = {
    "environment": {"device": "GPU", "driver": "1", "torch": "t", "cudnn_backend": 1, "triton": "3", "date": "today"},
    "ceilings": {"copy_gbs": 3000.0, "matmul_tflops": 700.0},
    "jax": "0.0",
    "results": [
        {
            "workload": "resnet50-b32",
            "unit": "images",
            "items": 32,
            "floor": {"flops": 1.0, "bytes": 1.0, "ms": 0.5},
            "variants": [
                {
                    "variant": "PyTorch eager",
                    "status": "ok",
                    "median_ms": 3.0,
                    "of_floor": 0.5 / 3,
                    "items_per_s": 1e4,
                    "compile_s": 0,
                },
                {
                    "variant": "dnnc auto",
                    "status": "ok",
                    "median_ms": 1.25,
                    "of_floor": 0.4,
                    "items_per_s": 2.6e4,
                    "compile_s": 60,
                },
                {"variant": "JAX/XLA", "status": "failed: OOM"},
            ],
        }
    ],
}


def test_tables_and_benchmarks_block(tmp_path: Path) -> None:
    text = report.tables(PAYLOAD)
    assert "| workload | floor ms | PyTorch eager | dnnc auto | JAX/XLA | auto / best peer |" in text
    assert "| resnet50-b32 | 0.500 | 3.000 (17%) | 1.250 (40%) | failed | 0.42x PyTorch eager |" in text
    assert "| resnet50-b32 (images) | 0.0 / 0 / 1e+04 | 60.0 / 0 / 2.6e+04 | - |" in text
    bench = tmp_path / "BENCHMARKS.md"
    bench.write_text("# Benchmarks\n\nkept\n")
    report.update_benchmarks(bench, text)
    report.update_benchmarks(bench, text.replace("1.250", "1.111"))
    body = bench.read_text()
    assert body.count(report.BEGIN) == 1 and "1.111" in body and "1.250" not in body and "kept" in body


def test_a_compile_from_the_cache_is_marked() -> None:
    """A run repeated on the same machine loads dnnc's program from its compile cache:
    that compile time is marked, and the legend says what the mark means."""
    result = PAYLOAD["results"][0]
    cached = {**result["variants"][1], "compile_s": 0.6, "compile_reused": True}
    text = report.tables({**PAYLOAD, "results": [{**result, "variants": [result["variants"][0], cached]}]})
    assert "| resnet50-b32 (images) | 0.0 / 0 / 1e+04 | 0.6c / 0 / 2.6e+04 |" in text
    assert "marked c was a load from dnnc's compile cache" in text
    assert "compile cache" not in report.tables(PAYLOAD)


def test_chart_is_a_png(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    png = report.chart(PAYLOAD, tmp_path / "suite.png")
    assert png is not None and png.read_bytes()[:4] == b"\x89PNG"


def test_runner_refuses_without_a_gpu() -> None:
    if torch.cuda.is_available():
        pytest.skip("a GPU is visible")
    done = subprocess.run(
        [sys.executable, "bench/run.py", "--workloads", "conv-block-b1"], cwd=ROOT, capture_output=True, text=True
    )
    assert done.returncode != 0 and "none is visible here" in done.stderr


def test_runs_merge_only_on_the_same_machine_and_versions() -> None:
    def run(workloads: list[str], driver: str = "1", ms: float = 1.0) -> dict:
        results = [{**PAYLOAD["results"][0], "workload": w, "floor": {"flops": 1, "bytes": 1, "ms": ms}} for w in workloads]
        return {**PAYLOAD, "environment": {**PAYLOAD["environment"], "driver": driver}, "results": results}

    order = list(WORKLOADS)
    merged = report.merge_runs(run(["gpt2-block", "resnet50-b32"]), run(["resnet50-b32", "conv-block-b1"], ms=2.0), order)
    assert [r["workload"] for r in merged["results"]] == ["conv-block-b1", "resnet50-b32", "gpt2-block"]
    assert merged["results"][1]["floor"]["ms"] == 2.0, "this run's result replaces the earlier one"
    with pytest.raises(report.MergeError, match="driver was '1' and is now '2'"):
        report.merge_runs(run(["gpt2-block"]), run(["conv-block-b1"], driver="2"), order)


def test_runs_of_several_gpus_merge_into_one_result_without_a_gpu(tmp_path: Path) -> None:
    """``bench/merge_suite.py``: a pair run's halves (and a later re-run of one workload)
    become one JSON with its tables beside it; runs of different drivers are refused."""
    from bench.merge_suite import main as merge_main

    def run(workloads: list[str], driver: str = "1", ms: float = 1.0) -> dict:
        results = [{**PAYLOAD["results"][0], "workload": w, "floor": {"flops": 1, "bytes": 1, "ms": ms}} for w in workloads]
        return {**PAYLOAD, "environment": {**PAYLOAD["environment"], "driver": driver}, "results": results}

    files = []
    for i, payload in enumerate([run(["resnet50-b32"]), run(["gpt2-block", "conv-block-b1"]), run(["gpt2-block"], ms=3.0)]):
        files.append(tmp_path / f"run{i}.json")
        files[-1].write_text(json.dumps(payload))
    out = tmp_path / "merged" / "suite.json"
    merge_main([*map(str, files), "--out", str(out)])
    merged = json.loads(out.read_text())
    assert [r["workload"] for r in merged["results"]] == ["conv-block-b1", "resnet50-b32", "gpt2-block"]
    assert merged["results"][2]["floor"]["ms"] == 3.0, "the later run's workload replaces the earlier one's"
    assert "| gpt2-block |" in out.with_suffix(".md").read_text()
    other = tmp_path / "other.json"
    other.write_text(json.dumps(run(["bert-s128-b8"], driver="2")))
    with pytest.raises(SystemExit, match="cannot merge .*driver was '1' and is now '2'"):
        merge_main([str(files[0]), str(other), "--out", str(tmp_path / "x.json")])


def test_auto_against_the_fastest_peer() -> None:
    variants = PAYLOAD["results"][0]["variants"]
    assert report.versus_best_peer(variants) == "0.42x PyTorch eager"
    assert report.versus_best_peer([v for v in variants if v["variant"] != "dnnc auto"]) == "-"


def test_a_run_of_the_default_policy_alone_is_compared_and_stopgaps_are_marked() -> None:
    """A zoo run times only dnnc's default policy: that variant is the one compared with
    the peers, and a dnnc time that ran torch ops or fell back carries a mark."""
    result = PAYLOAD["results"][0]
    greedy = {**result["variants"][1], "variant": "dnnc greedy", "torch_ops": 2, "fallbacks": 0}
    payload = {**PAYLOAD, "results": [{**result, "variants": [result["variants"][0], greedy]}]}
    text = report.tables(payload)
    assert "| workload | floor ms | PyTorch eager | dnnc greedy | greedy / best peer |" in text
    assert "| resnet50-b32 | 0.500 | 3.000 (17%) | 1.250* (40%) | 0.42x PyTorch eager |" in text
    assert "runs that day" not in text, "one run: its workloads share the run's ceilings"
    second = {**result, "workload": "gpt2-block", "ceilings": {"copy_gbs": 2900.0, "matmul_tflops": 700.0}}
    first = {**result, "ceilings": PAYLOAD["ceilings"]}
    assert "(results of 2 runs that day" in report.tables({**PAYLOAD, "results": [first, second]})


def _worker_writing(row: dict) -> list[str]:
    """A stand-in for the max-autotune worker: writes ``row`` to the RESULT path it is given."""
    return [sys.executable, "-c", f"import json, sys; open(sys.argv[1], 'w').write(json.dumps({row!r}))"]


def test_max_autotune_is_stopped_at_its_limit() -> None:
    from bench.suite.max_autotune import max_autotune_row

    sleeper = [sys.executable, "-c", "import time; time.sleep(60)"]
    row = max_autotune_row("conv-block-b1", limit_s=0.5, grace_s=0.5, command=sleeper)
    assert row == {"variant": "torch.compile max-autotune", "status": "over the limit: not done after 1 s"}


def test_max_autotune_past_its_compile_limit_is_reported_not_compared() -> None:
    from bench.suite.max_autotune import max_autotune_row

    done = {"variant": "torch.compile max-autotune", "status": "ok", "median_ms": 0.5, "compile_s": 412.0, "rel_error": 1e-3}
    row = max_autotune_row("conv-block-b1", limit_s=300, command=_worker_writing(done))
    assert row["status"] == "over the limit: compiled in 412 s (limit 300 s)" and row["median_ms"] == 0.5
    within = max_autotune_row("conv-block-b1", limit_s=300, command=_worker_writing({**done, "compile_s": 80.0}))
    assert within == done | {"compile_s": 80.0}
    variants = [*PAYLOAD["results"][0]["variants"], {**row, "median_ms": 0.1}]
    assert report.versus_best_peer(variants) == "0.42x PyTorch eager", "a compile past the limit is no peer"
    assert report.versus_best_peer([*variants, {**within, "median_ms": 1.0}]) == "1.25x torch.compile max-autotune"
    crashed = max_autotune_row("conv-block-b1", command=[sys.executable, "-c", "raise SystemExit('no such workload')"])
    assert crashed["status"] == "failed: the worker exited with 1: no such workload"


def test_max_autotune_worker_says_when_no_gpu_is_visible() -> None:
    if torch.cuda.is_available():
        pytest.skip("a GPU is visible")
    from bench.suite.max_autotune import max_autotune_row

    row = max_autotune_row("conv-block-b1")
    assert row == {"variant": "torch.compile max-autotune", "status": "failed: no NVIDIA GPU is visible"}


@pytest.mark.gpu
def test_max_autotune_row_on_the_gpu() -> None:
    """The worker for real: Inductor's max-autotune compiles the conv block, its output
    is checked against float32, then timed."""
    from bench.suite.max_autotune import max_autotune_row

    row = max_autotune_row("conv-block-b1")
    assert row["status"] == "ok", row
    assert row["rel_error"] <= 2e-2 and row["median_ms"] > 0 and 0 < row["compile_s"] <= 300


def test_the_chart_is_relative_to_eager_in_a_graph_where_plain_eager_was_not_timed() -> None:
    result = PAYLOAD["results"][0]
    graph = {**result["variants"][0], "variant": "eager + CUDA graph"}
    assert report.chart_base(PAYLOAD["results"]) == "PyTorch eager"
    assert report.chart_base([{**result, "variants": [graph, result["variants"][1]]}]) == "eager + CUDA graph"
