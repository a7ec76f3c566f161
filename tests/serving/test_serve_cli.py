"""``dnnc serve`` for real: the server started in a subprocess on the CPU reference
backend, concurrent requests from Triton's own HTTP client checked against direct
calls and seen gathered, bad requests answered with protocol errors while the
server keeps serving, and a clean stop on SIGTERM."""

from __future__ import annotations

import concurrent.futures as cf
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import numpy as np
import pytest
import torch

import dnnc
from tests.serving.models import image_net

ray = pytest.importorskip("ray", reason="dnnc serve needs dnnc[serve]")
http = pytest.importorskip("tritonclient.http", reason="the test's client is tritonclient[http]")

REPO = Path(__file__).resolve().parents[2]
START_S = 180


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _started(folder: Path) -> dict:
    model, inputs = image_net()
    path = dnnc.compile(model, inputs, device="cpu", dynamic={"batch": (1, 8)}).save(folder / "net.dnnc")
    port = _free_port()
    env = {**os.environ, "PYTHONPATH": str(REPO), "RAY_DEDUP_LOGS": "0"}
    log = folder / "serve.log"
    with open(log, "w") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "dnnc", "serve", str(path), "--port", str(port), "--max-batch", "8", "--max-delay-ms", "100"],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=folder,
        )
    client = http.InferenceServerClient(f"127.0.0.1:{port}")
    deadline = time.monotonic() + START_S
    while True:
        try:
            if client.is_server_ready():
                break
        except Exception:
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            pytest.fail(f"dnnc serve did not become ready:\n{log.read_text()[-3000:]}")
        time.sleep(0.5)
    return {"url": f"127.0.0.1:{port}", "path": path, "process": process, "log": log}


def _infer(url: str, x: np.ndarray) -> np.ndarray:
    client = http.InferenceServerClient(url)
    given = http.InferInput("image", list(x.shape), "FP32")
    given.set_data_from_numpy(x)
    return client.infer("net", [given], outputs=[http.InferRequestedOutput("output_0")]).as_numpy("output_0")


def _concurrent_requests_are_gathered_and_match_direct_calls(server: dict) -> None:
    rng = np.random.default_rng(1)
    images = [rng.standard_normal((1 + i % 3, 3, 6, 6)).astype(np.float32) for i in range(24)]
    with cf.ThreadPoolExecutor(12) as pool:
        results = list(pool.map(lambda x: _infer(server["url"], x), images))
    direct = dnnc.load(server["path"])
    for x, got in zip(images, results):
        np.testing.assert_allclose(got, direct(torch.from_numpy(x)).numpy(), rtol=1e-5, atol=1e-6)
    stats = http.InferenceServerClient(server["url"]).get_inference_statistics("net")["model_stats"][0]
    gathered = {s["batch_size"] for s in stats["batch_stats"]}
    assert max(gathered) > 1, stats  # some calls ran several requests
    assert stats["execution_count"] < stats["inference_stats"]["queue"]["count"]


def _metadata_and_readiness_follow_the_protocol(server: dict) -> None:
    client = http.InferenceServerClient(server["url"])
    assert client.is_server_live() and client.is_model_ready("net")
    meta = client.get_model_metadata("net")
    assert meta["inputs"] == [{"name": "image", "datatype": "FP32", "shape": [-1, 3, 6, 6]}]


def _post(url: str, body: bytes) -> tuple[int, dict]:
    request = urllib.request.Request(f"http://{url}/v2/models/net/infer", data=body, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


BAD = [
    (b"{not json", "not valid JSON"),
    (
        json.dumps({"inputs": [{"name": "image", "shape": [1, 3, 5, 6], "datatype": "FP32", "data": [0] * 90}]}).encode(),
        "expected shape [batch, 3, 6, 6], got [1, 3, 5, 6]",
    ),
    (
        json.dumps({"inputs": [{"name": "image", "shape": [1, 3, 6, 6], "datatype": "INT64", "data": [0] * 108}]}).encode(),
        "expected datatype FP32, got INT64",
    ),
    (
        json.dumps({"inputs": [{"name": "image", "shape": [9, 3, 6, 6], "datatype": "FP32", "data": [0] * 972}]}).encode(),
        "batch 9 is outside the compiled range batch=1..8",
    ),
]


def _bad_requests_get_protocol_errors_and_the_server_keeps_serving(server: dict) -> None:
    for body, message in BAD:
        status, answer = _post(server["url"], body)
        assert status == 400 and message in answer["error"], answer
        assert _infer(server["url"], np.zeros((1, 3, 6, 6), np.float32)).shape == (1, 5)


def test_dnnc_serve_end_to_end(tmp_path: Path) -> None:
    """One server for every check (a Ray cluster per test would cost its start each time)."""
    server = _started(tmp_path)
    try:
        _metadata_and_readiness_follow_the_protocol(server)
        _concurrent_requests_are_gathered_and_match_direct_calls(server)
        _bad_requests_get_protocol_errors_and_the_server_keeps_serving(server)
        process = server["process"]
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=60) == 0, server["log"].read_text()[-3000:]
    finally:
        if server["process"].poll() is None:
            server["process"].kill()


def test_sigterm_as_soon_as_it_is_ready_stops_cleanly(tmp_path: Path) -> None:
    """The routes answer before the server's own start has returned: a SIGTERM then
    still stops it cleanly (exit 0, not Ray's own handler's 15)."""
    server = _started(tmp_path)
    process = server["process"]
    try:
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=60) == 0, server["log"].read_text()[-3000:]
    finally:
        if process.poll() is None:
            process.kill()
