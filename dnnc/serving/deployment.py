"""A dnnc artifact behind Ray Serve: one replica per GPU (or as many as asked), each
loading the artifact once and warming it up before it takes requests, requests
gathered by ``serve.batch`` and run as calls of the artifact's buckets, over the
KServe v2 HTTP protocol.

Ray Serve is the engine: replicas across GPUs and across the machines of a Ray
cluster, its HTTP proxy, request queueing and batching, health checks and Prometheus
metrics are its own. The artifact's bytes travel through Ray's object store, so a
replica on another machine needs no copy of the file.

Routes (KServe v2): ``GET /v2/health/live``, ``/v2/health/ready``,
``/v2/models/<name>`` (metadata), ``/v2/models/<name>/ready``,
``/v2/models/<name>/stats`` (Triton's statistics extension, this replica's),
``POST /v2/models/<name>/infer``.
"""

from __future__ import annotations

import asyncio
import logging
import os
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

log = logging.getLogger("dnnc.serve")


@dataclass(frozen=True)
class ServeOptions:
    """What ``dnnc serve`` takes, as a deployment's settings."""

    name: str
    max_batch: int = 32
    """Requests gathered into one call at most (rows are bounded by the largest bucket too)."""
    max_delay_ms: float = 0.0
    """How long the first request of a batch waits for others. At 0 a batch is what
    arrived while the model ran the one before (Triton's dynamic batcher's default
    too): no wait when requests are few, full batches under load."""
    replicas: int = 1
    gpus_per_replica: float = 0.0
    """1 on a GPU machine: each replica gets its own GPU (Ray sets its visible device)."""
    cpus_per_replica: float = 1.0
    device: str | None = None
    loader: str | None = None
    """``module:function`` called with (artifact path, options) for the ``ServedModel``
    each replica serves, in place of ``ServedModel.load`` (a model served for
    comparison, a preprocessing wrapper): named by whoever starts the server, never
    by the artifact."""


def application(artifact: str | Path, options: ServeOptions) -> Any:
    """The Ray Serve application serving ``artifact`` (``serve.run(app)``), for a user's
    own deployment; ``dnnc serve`` runs it."""
    from ray import serve

    data = Path(artifact).read_bytes()
    deployment = serve.deployment(
        _Replica,
        name=options.name,
        num_replicas=options.replicas,
        ray_actor_options={"num_gpus": options.gpus_per_replica, "num_cpus": options.cpus_per_replica},
        max_ongoing_requests=max(64, 4 * options.max_batch),
        health_check_period_s=5,
    )
    return deployment.bind(data, Path(artifact).name, options)


def app_builder(args: dict[str, str]) -> Any:
    """``serve run dnnc.serving.deployment:app_builder artifact=model.dnnc [max_batch=32]
    [max_delay_ms=5] [replicas=N] [gpus_per_replica=1]``: Ray Serve's config files and CLI
    name an application by such a builder."""
    artifact = args["artifact"]
    fields = {k: v for k, v in args.items() if k != "artifact"}
    typed = {
        k: (int(v) if k in ("max_batch", "replicas") else float(v) if k not in ("name", "device", "loader") else v)
        for k, v in fields.items()
    }
    return application(artifact, ServeOptions(**{"name": Path(artifact).stem, **typed}))


class _Replica:
    """One replica: the artifact loaded and run once (warm-up) before the constructor
    returns, so Ray Serve routes nothing to it until then."""

    def __init__(self, data: bytes, file_name: str, options: ServeOptions):
        from concurrent.futures import ThreadPoolExecutor

        from ray import serve

        self.options = options
        # Every call of the model on one thread of its own: the event loop keeps taking
        # requests while it runs, and CUDA graphs are replayed from the thread that made them.
        self._worker = ThreadPoolExecutor(1, thread_name_prefix="dnnc-model")
        started = time.perf_counter()
        # The artifact's bytes sit in a private folder only while it loads and warms up: the
        # loader reads a path, and nothing of it stays on the replica's disk afterwards.
        with tempfile.TemporaryDirectory(prefix="dnnc-serve-") as folder:
            path = Path(folder) / file_name
            path.write_bytes(data)
            self.model = self._worker.submit(_load, path, options).result()
            self._worker.submit(self.model.warm_up).result()
        self.load_s = time.perf_counter() - started
        self._replica = f"pid {os.getpid()}, devices {os.environ.get('CUDA_VISIBLE_DEVICES', 'all')}"
        self._batched = serve.batch(max_batch_size=options.max_batch, batch_wait_timeout_s=options.max_delay_ms / 1e3)(
            self._run_batch
        )
        self._metrics = _metrics(options.name)
        log.info("dnnc serve: %s loaded and warmed up in %.1f s on %s", options.name, self.load_s, self.model.module.device)

    async def _run_batch(self, pending: list[Any]) -> list[Any]:
        results = await asyncio.get_running_loop().run_in_executor(self._worker, self.model.run, pending)
        if self._metrics is not None:
            self._metrics.observe(len(pending), self.model.stats)
        return results

    async def __call__(self, request: Any) -> Any:
        from starlette.responses import JSONResponse, Response

        from dnnc.serving.protocol import HEADER_LENGTH, ProtocolError, encode_infer, parse_infer

        path = request.url.path.rstrip("/")
        root = request.scope.get("root_path", "")  # the application's route prefix, where it has one
        if root and path.startswith(root):
            path = path[len(root) :]
        model_path = f"/v2/models/{self.options.name}"
        if request.method == "GET":
            if path in ("/v2/health/live", "/v2/health/ready", f"{model_path}/ready"):
                return JSONResponse({"ready": True, "load_s": round(self.load_s, 3)})
            if path == model_path:
                return JSONResponse(self.model.metadata())
            if path == f"{model_path}/stats":
                return JSONResponse({**self.model.stats.as_json(self.options.name), "replica": self._replica})
            return JSONResponse({"error": f"no route {path}"}, status_code=404)
        if request.method != "POST" or path != f"{model_path}/infer":
            return JSONResponse({"error": f"no route {request.method} {path}; infer at POST {model_path}/infer"}, status_code=404)
        try:
            parsed = parse_infer(await request.body(), request.headers.get(HEADER_LENGTH))
            pending = self.model.check(parsed)
        except ProtocolError as e:
            self.model.stats.requests += 1
            self.model.stats.failures += 1
            return JSONResponse({"error": str(e)}, status_code=e.status)
        try:
            result = await self._batched(pending)
        except Exception as e:  # the batch itself failed (its requests' own errors come back as results)
            log.exception("dnnc serve: a batch failed")
            return JSONResponse({"error": f"model {self.options.name!r} failed: {type(e).__name__}: {e}"}, status_code=500)
        if isinstance(result, ProtocolError):
            return JSONResponse({"error": str(result)}, status_code=result.status)
        body, headers = encode_infer(self.options.name, result, parsed)
        return Response(body, headers=headers, media_type=headers.pop("content-type"))

    async def check_health(self) -> None:
        """Ray Serve's health check: the replica answers (a dead GPU context raises here),
        asked on the model's thread, where no capture can be under way."""
        if self.model.module.device == "cuda":
            import torch

            await asyncio.get_running_loop().run_in_executor(self._worker, torch.cuda.synchronize)


def _load(path: Path, options: ServeOptions) -> Any:
    from dnnc.serving.model import ServedModel

    if options.loader is None:
        return ServedModel.load(path, options.device, options.name)
    import importlib

    module_name, _, function = options.loader.partition(":")
    return getattr(importlib.import_module(module_name), function)(path, options)


class _Metrics:
    """Ray Serve metrics (exported to Prometheus with the engine's own): requests,
    gathered calls, queue and compute time."""

    def __init__(self, name: str):
        from ray.serve import metrics

        tags = {"model": name}
        self.requests = metrics.Counter("dnnc_requests", "Requests run", tag_keys=("model",))
        self.calls = metrics.Counter("dnnc_calls", "Calls of the artifact (gathered requests)", tag_keys=("model",))
        boundaries = [0.1, 0.25, 0.5, 1, 2, 5, 10, 25, 50, 100, 250, 1000]
        self.queue = metrics.Histogram("dnnc_queue_ms", "Time a request waited for its call", boundaries, tag_keys=("model",))
        self.compute = metrics.Histogram(
            "dnnc_compute_ms", "Time of the call that ran a request", boundaries, tag_keys=("model",)
        )
        for metric in (self.requests, self.calls, self.queue, self.compute):
            metric.set_default_tags(tags)
        self._seen = (0, 0)

    def observe(self, count: int, stats: Any) -> None:
        self.requests.inc(count)
        self.calls.inc(1)
        queue_ns, compute_ns = stats.queue_ns - self._seen[0], stats.compute_ns - self._seen[1]
        self._seen = (stats.queue_ns, stats.compute_ns)
        self.queue.observe(queue_ns / max(count, 1) / 1e6)
        self.compute.observe(compute_ns / max(count, 1) / 1e6)


def _metrics(name: str) -> _Metrics | None:
    try:
        return _Metrics(name)
    except Exception as e:  # metrics are reporting, never a reason not to serve
        log.warning("dnnc serve: Ray Serve metrics unavailable: %s", e)
        return None
