"""``dnnc serve``: an artifact behind Ray Serve, until interrupted."""

from __future__ import annotations

import logging
import os
import signal
import threading
from pathlib import Path

import click

from dnnc.cli.common import console, user_errors
from dnnc.errors import DnncError


@click.command("serve")
@click.argument("artifact", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "--host", default="127.0.0.1", show_default=True, help="Address the HTTP proxy listens on (0.0.0.0: every interface)."
)
@click.option("--port", type=click.IntRange(1, 65535), default=8000, show_default=True)
@click.option("--name", default=None, help="The model's name in the routes (default: the file's stem).")
@click.option(
    "--max-batch", type=click.IntRange(min=1), default=32, show_default=True, help="Requests gathered into one call at most."
)
@click.option(
    "--max-delay-ms",
    type=click.FloatRange(min=0),
    default=0.0,
    show_default=True,
    help="How long a batch waits to fill; 0 runs what has arrived as soon as the model is free.",
)
@click.option("--replicas", type=click.IntRange(min=1), default=None, help="Replicas (default: one per GPU, or one).")
@click.option(
    "--gpus", default=None, metavar="all|N", help="One replica per GPU on this many GPUs (all: every GPU the cluster has)."
)
@click.option("--address", default=None, help="A Ray cluster to join (auto, or ray://host:10001); default: start one here.")
@user_errors
def serve_command(
    artifact: Path,
    host: str,
    port: int,
    name: str | None,
    max_batch: int,
    max_delay_ms: float,
    replicas: int | None,
    gpus: str | None,
    address: str | None,
) -> None:
    """Serve ARTIFACT over the KServe v2 HTTP protocol (Triton's and KServe's clients
    speak it) with Ray Serve: requests gathered into the artifact's buckets, one replica
    per GPU, ready once the artifact has loaded and run. Runs until Ctrl-C or SIGTERM."""
    from dnnc.artifact.store import read_manifest

    try:
        import ray
        from ray import serve
    except ImportError:
        raise DnncError("dnnc serve runs on Ray Serve: pip install 'dnnc[serve]'") from None
    from dnnc.serving.deployment import ServeOptions, application

    manifest = read_manifest(artifact)  # a bad file fails here, before any process starts
    name = name or artifact.stem
    # Ray Serve restarts an HTTP proxy not ready within 5 s, and serve.start then fails
    # with the proxy it waited for killed; on a busy machine a proxy's first start takes
    # longer. The Ray processes this command starts inherit the setting (a cluster joined
    # with --address keeps its own).
    os.environ.setdefault("RAY_SERVE_PROXY_READY_CHECK_TIMEOUT_S", "60")
    ray.init(address=address, include_dashboard=False, log_to_driver=False, logging_level="WARNING")
    # Ours from here on, in place of Ray's: a signal that comes while the application
    # starts (its routes answer before serve.run returns) stops it once it has started.
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    try:
        available = int(ray.cluster_resources().get("GPU", 0))
        on_gpu = manifest.target != "cpu" and available > 0
        if gpus is not None:
            wanted = available if gpus == "all" else _count(gpus)
            if wanted > available:
                raise DnncError(f"--gpus {gpus}: the cluster has {available} GPU(s)")
            replicas, on_gpu = wanted, True
        count = replicas or (available if on_gpu else 1)
        options = ServeOptions(name, max_batch, max_delay_ms, count, 1.0 if on_gpu else 0.0, 0.0 if on_gpu else 1.0)
        quiet = {"log_level": "WARNING"}  # Serve's INFO lines per start and request stay in its log files
        logging.getLogger("ray.serve").setLevel(logging.WARNING)
        serve.start(http_options={"host": host, "port": port}, logging_config=quiet)
        with console.status(f"loading {artifact.name} on {count} replica(s)"):
            serve.run(application(artifact, options), name=name, route_prefix="/", logging_config=quiet)
        where = (
            f"{count} GPU replica(s)"
            if on_gpu
            else f"{count} CPU replica(s) (reference backend)"
            if manifest.target == "cpu"
            else f"{count} replica(s) without a GPU"
        )
        console.print(f"serving {name} at http://{host}:{port}/v2/models/{name}/infer on {where}; Ctrl-C stops")
        stop.wait()
        console.print("stopping")
        serve.shutdown()
    finally:
        ray.shutdown()


def _count(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise click.BadParameter(f"expected all or a number, got {text!r}", param_hint="--gpus") from None
    if n < 1:
        raise click.BadParameter(f"expected 1 or more, got {n}", param_hint="--gpus")
    return n
