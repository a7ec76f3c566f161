"""ResNet-50 served (``dnnc serve``'s deployment on Ray Serve, KServe v2 over HTTP):
throughput and latency at several concurrency levels, against the same artifact
called directly and against the same model under torch.compile served the same way
(the same deployment, batching and buckets, a torch.compile'd module in each replica).

    python bench/serve_bench.py prepare [--out DIR]        # compile, save, time direct calls
    python bench/serve_bench.py serve --gpus N [--out DIR]  # serve both, drive load, write JSON

Each request is one float16 image (binary tensor data); every variant's answer is
checked against float32 eager before it is timed. The load comes from client
processes on the same machine (aiohttp), each keeping its share of the requests in
flight.
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import json
import multiprocessing
import os
import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

ARTIFACT = Path(os.environ.get("DNNC_SERVE_BENCH_DIR", "/tmp/dnnc-serve-bench")) / "r50.dnnc"
BUCKETS = [1, 8, 32]
CONCURRENCY = [1, 8, 32, 128]
"""Requests in flight, each of one image."""
CONCURRENCY_8 = [1, 4, 16]
"""Requests in flight, each of eight images (a client that batches its own)."""
SECONDS = 4.0
WARMUP_S = 1.5


def _model() -> torch.nn.Module:
    from dnnc.models.resnet import resnet50

    model, _ = resnet50(batch=1)
    return model.eval()


def prepare(out: Path) -> None:
    import dnnc
    from bench.gpu_timing import environment, median_ms, result_path

    ARTIFACT.parent.mkdir(parents=True, exist_ok=True)
    model = _model().half()
    started = time.perf_counter()
    compiled = dnnc.compile(
        model, (torch.randn(2, 3, 224, 224).half(),), device="cuda", dynamic={"batch": (1, 32)}, buckets=BUCKETS
    )
    compile_s = time.perf_counter() - started
    compiled.save(ARTIFACT)
    loaded = dnnc.load(ARTIFACT)
    direct = {}
    with torch.no_grad():
        for batch in BUCKETS:
            x = torch.randn(batch, 3, 224, 224, device="cuda", dtype=torch.float16)
            ms = median_ms(lambda x=x: loaded(x))
            direct[batch] = {"median_ms": ms, "images_per_s": batch / ms * 1e3}
    record = {
        "environment": environment(),
        "compile_s": compile_s,
        "artifact_bytes": ARTIFACT.stat().st_size,
        "direct": direct,
        "served_run": served_run_ms(),
    }
    path = result_path(out, "serve-direct")
    path.write_text(json.dumps(record, indent=1))
    print(json.dumps(record["direct"]), f"compile {compile_s:.1f} s", f"wrote {path}")


class PerRequestInputs:
    """The inputs' way to the device without staging buffers: each request's tensors
    moved on their own, then concatenated on the device (fresh memory every call)."""

    def __init__(self, device: str):
        self.device = device

    def stage(self, requests: Any) -> list[torch.Tensor]:
        return [torch.cat([p.to(self.device) for p in parts]) for parts in zip(*requests)]


def served_run_ms() -> dict[str, Any]:
    """``ServedModel.run`` on gathered one-image requests, without Ray: a call's host
    and device time in the replica, with the staging buffers and with per-request
    tensors (the A/B of the staging change, in one process)."""
    from dnnc.serving.model import Pending, ServedModel

    served = ServedModel.load(ARTIFACT, name="r50")
    served.warm_up()
    staging = served.staging
    images = [torch.randn(1, 3, 224, 224).half() for _ in range(32)]
    result: dict[str, Any] = {}
    for label, way in (("staged", staging), ("per-request", PerRequestInputs(served.module.device))):
        served.staging = way
        for requests in (1, 7, 8, 32):
            times = []
            for _ in range(60):
                pending = [Pending([images[i]], 0, 1) for i in range(requests)]
                started = time.perf_counter()
                served.run(pending)
                times.append((time.perf_counter() - started) * 1e3)
            result[f"{label}-{requests}"] = statistics.median(times[10:])
    served.staging = staging
    return result


class TorchBuckets:
    """torch.compile(mode="reduce-overhead") of the model, fed as dnnc's buckets are:
    each call padded to the next bucket size, so a replica compiles and captures the
    same few shapes dnnc's artifact holds."""

    device = "cuda"

    def __init__(self, plan: Any):
        import torch._inductor.config as inductor

        inductor.freezing = True
        torch._dynamo.config.cache_size_limit = 64
        net = copy.deepcopy(_model()).cuda().half().to(memory_format=torch.channels_last)
        self.compiled = torch.compile(net, mode="reduce-overhead")
        self.plan = plan

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        n = x.shape[0]
        (bucket,) = self.plan.bucket_for((n,))
        if bucket != n:
            x = torch.cat([x, x.new_zeros((bucket - n, *x.shape[1:]))])
        with torch.no_grad():
            out = self.compiled(x.contiguous(memory_format=torch.channels_last))
        return out[:n].clone()  # the graph's output is overwritten by its next replay


def torch_compiled(path: Path, options: Any) -> Any:
    """The ``ServeOptions.loader`` of the torch.compile variant: the artifact's signature and buckets, torch.compile's model."""
    from dnnc.artifact.store import read_manifest
    from dnnc.serving.model import ServedModel

    manifest = read_manifest(path)
    names = [n or f"input_{i}" for i, n in enumerate(manifest.names("inputs"))]
    outputs = [n or f"output_{i}" for i, n in enumerate(manifest.names("outputs"))]
    return ServedModel(TorchBuckets(manifest.plan), options.name, names, outputs, manifest.inputs, manifest.outputs)


def _body(image: np.ndarray) -> tuple[bytes, dict[str, str]]:
    header = json.dumps(
        {
            "inputs": [
                {"name": "x", "shape": list(image.shape), "datatype": "FP16", "parameters": {"binary_data_size": image.nbytes}}
            ],
            "outputs": [{"name": "output_0", "parameters": {"binary_data": True}}],
        }
    ).encode()
    return header + image.tobytes(), {
        "Inference-Header-Content-Length": str(len(header)),
        "Content-Type": "application/octet-stream",
    }


def _decode(raw: bytes, header_length: str) -> np.ndarray:
    split = int(header_length)
    entry = json.loads(raw[:split])["outputs"][0]
    return np.frombuffer(raw[split:], np.float16).reshape(entry["shape"])


async def _drive(url: str, body: bytes, headers: dict[str, str], concurrency: int, seconds: float, warmup: float) -> list[float]:
    import aiohttp

    latencies: list[float] = []
    start = time.perf_counter()
    measure_from, stop = start + warmup, start + warmup + seconds
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=concurrency)) as session:

        async def worker() -> None:
            while (now := time.perf_counter()) < stop:
                async with session.post(url, data=body, headers=headers) as response:
                    await response.read()
                    if response.status != 200:
                        raise RuntimeError(f"HTTP {response.status}: {await response.text()}")
                if now >= measure_from:
                    latencies.append(time.perf_counter() - now)

        await asyncio.gather(*(worker() for _ in range(concurrency)))
    return latencies


def _client(args: tuple[str, bytes, dict[str, str], int, float, float]) -> list[float]:
    return asyncio.run(_drive(*args))


def _load(url: str, image: np.ndarray, concurrency: int) -> dict[str, Any]:
    body, headers = _body(image)
    rows = image.shape[0]
    processes = min(4, concurrency)
    shares = [concurrency // processes + (i < concurrency % processes) for i in range(processes)]
    with multiprocessing.get_context("spawn").Pool(processes) as pool:
        parts = pool.map(_client, [(url, body, headers, share, SECONDS, WARMUP_S) for share in shares])
    latencies = sorted(t for part in parts for t in part)
    q = statistics.quantiles(latencies, n=100)
    return {
        "concurrency": concurrency,
        "images_per_request": rows,
        "requests": len(latencies),
        "requests_per_s": len(latencies) / SECONDS,
        "images_per_s": len(latencies) * rows / SECONDS,
        "p50_ms": q[49] * 1e3,
        "p99_ms": q[98] * 1e3,
    }


def serve_variants(gpus: int, out: Path, wanted: list[str], tag: str | None) -> None:
    import ray
    import requests
    from ray import serve

    from bench.gpu_timing import environment, result_path
    from dnnc.numerics import relative_error
    from dnnc.serving.deployment import ServeOptions, application

    image = np.random.default_rng(0).standard_normal((1, 3, 224, 224)).astype(np.float16)
    with torch.no_grad():
        expected = _model().cuda()(torch.from_numpy(image).float().cuda()).cpu()
    ray.init(include_dashboard=False, log_to_driver=False, logging_level="WARNING")  # replicas inherit PYTHONPATH
    serve.start(http_options={"host": "127.0.0.1", "port": 8000})
    record: dict[str, Any] = {"environment": environment(), "gpus": gpus, "buckets": BUCKETS, "variants": {}}
    variants = (("dnnc", None), ("torch.compile", "bench.serve_bench:torch_compiled"))
    for variant, loader in [(v, loader) for v, loader in variants if v in wanted]:
        name = "r50" if loader is None else "r50tc"
        options = ServeOptions(name, max_batch=32, replicas=gpus, gpus_per_replica=1.0, cpus_per_replica=2.0, loader=loader)
        started = time.perf_counter()
        serve.run(application(ARTIFACT, options), name=name, route_prefix=f"/{name}")  # its routes under /<name>
        ready_s = time.perf_counter() - started
        url = f"http://127.0.0.1:8000/{name}/v2/models/{name}/infer"
        body, headers = _body(image)
        response = requests.post(url, data=body, headers=headers, timeout=60)
        got = _decode(response.content, response.headers["Inference-Header-Content-Length"])
        error = relative_error(torch.from_numpy(got.astype(np.float32)), expected)
        entry: dict[str, Any] = {"ready_s": ready_s, "rel_error": error, "levels": []}
        if not error <= 2e-2:  # NaN included
            entry["status"] = "wrong result"
        else:
            eight = np.concatenate([image] * 8)
            try:
                for images, levels in ((image, CONCURRENCY), (eight, CONCURRENCY_8)):
                    for c in levels:
                        level = _load(url, images, c)
                        entry["levels"].append(level)
                        print(variant, json.dumps(level), flush=True)
            except Exception as e:  # a level that failed is a result too: the others stay recorded
                entry["status"] = f"{type(e).__name__}: {e}"[:2000]
                print(variant, entry["status"], flush=True)
            stats = {}
            for _ in range(8 * gpus):  # each GET reaches one replica: gather every replica's counts
                s = requests.get(f"http://127.0.0.1:8000/{name}/v2/models/{name}/stats", timeout=30).json()
                stats[s.get("replica", "?")] = s["model_stats"][0]
            entry["replicas"] = stats
        record["variants"][variant] = entry
        serve.delete(name)
    serve.shutdown()
    ray.shutdown()
    record["ray_serve_environment"] = {k: v for k, v in os.environ.items() if k.startswith("RAY_SERVE_")}
    path = result_path(out, "serve", f"{gpus}gpu" + (f"-{tag}" if tag else ""))
    path.write_text(json.dumps(record, indent=1))
    print(f"wrote {path}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("step", choices=["prepare", "serve"])
    parser.add_argument("--gpus", type=int, default=1)
    parser.add_argument("--variants", default="dnnc,torch.compile", help="Which served models: dnnc, torch.compile.")
    parser.add_argument("--name", default=None, help="Goes into the result file's name.")
    parser.add_argument("--out", type=Path, default=Path(os.environ.get("OUT") or Path(__file__).with_name("results")))
    args = parser.parse_args()
    if args.step == "prepare":
        prepare(args.out)
    else:
        serve_variants(args.gpus, args.out, args.variants.split(","), args.name)


if __name__ == "__main__":
    main()
