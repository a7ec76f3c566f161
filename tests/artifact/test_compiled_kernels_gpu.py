"""An artifact carries its Triton kernels compiled for its target: a process with
empty caches loads and runs it with ``triton.compile`` made impossible, and computes
what the compiling process computed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import torch

import dnnc
from dnnc.models.bert import bert_layer

pytestmark = pytest.mark.gpu

LOAD = """
import sys, torch, triton
def refuse(*args, **kwargs):
    raise AssertionError("triton.compile while loading an artifact that stores its kernels")
triton.compile = refuse
import dnnc
module = dnnc.load(sys.argv[1])
x = torch.load(sys.argv[2]).cuda()
torch.save(module(x).cpu(), sys.argv[3])
"""


def test_a_process_with_empty_caches_loads_the_kernels_without_compiling(tmp_path: Path) -> None:
    model, (x,) = bert_layer(batch=2, seq=32)
    model, x = model.eval().to("cuda", torch.float16), x.to("cuda", torch.float16)
    compiled = dnnc.compile(model, (x,), device="cuda")
    want = compiled(x).cpu()
    path = compiled.save(tmp_path / "layer.dnnc")
    records = json.loads(zipfile.ZipFile(path).read(f"kernels/{compiled.target}/triton.json"))
    assert records and all(r["object"]["target"] == compiled.target for r in records)
    torch.save(x.cpu(), tmp_path / "x.pt")
    env = {**os.environ, "DNNC_CACHE_DIR": str(tmp_path / "empty-cache"), "TRITON_CACHE_DIR": str(tmp_path / "triton-cache")}
    done = subprocess.run(
        [sys.executable, "-c", LOAD, str(path), str(tmp_path / "x.pt"), str(tmp_path / "out.pt")],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert torch.equal(torch.load(tmp_path / "out.pt"), want)
