"""An artifact built for this GPU's architecture on a machine without a GPU (a process
that sees none) loads here in a process with empty caches and ``triton.compile``
made impossible, and computes the model's result as closely as eager fp16 does: a
timm ResNet-50 and a transformers BERT."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from dnnc.models.zoo import ZOO
from tests.runtime.test_gpu_models import assert_as_close_as_eager

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parents[2]

BUILD = """
import sys, torch, dnnc
from dnnc.models.zoo import ZOO
assert not torch.cuda.is_available()
name, target, out = sys.argv[1], sys.argv[2], sys.argv[3]
model, inputs = ZOO[name](**eval(sys.argv[4]))
compiled = dnnc.compile(model, inputs, dtype="f16", target=target)
compiled.save(out)
print(compiled.summary()["steps"])
"""

LOAD = """
import sys, time, torch, triton
def refuse(*args, **kwargs):
    raise AssertionError("triton.compile while loading an artifact built for this GPU")
triton.compile = refuse
import dnnc
started = time.perf_counter()
module = dnnc.load(sys.argv[1])
loaded = time.perf_counter() - started
x = torch.load(sys.argv[2]).cuda()
torch.save(module(x).cpu(), sys.argv[3])
print(loaded, module.summary())
"""

MODELS = {"timm_resnet50": {"batch": 2}, "bert": {"batch": 1, "seq": 128, "layers": 2}}


def _run(script: str, *args: str, env: dict[str, str]) -> str:
    done = subprocess.run([sys.executable, "-c", script, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=400)
    assert done.returncode == 0, done.stderr[-4000:]
    return done.stdout


@pytest.mark.parametrize("name", list(MODELS))
def test_an_artifact_built_without_the_gpu_runs_here_without_compiling(name: str, tmp_path: Path) -> None:
    pytest.importorskip("timm" if name.startswith("timm") else "transformers")
    major, minor = torch.cuda.get_device_capability()
    target = f"sm_{major}{minor}"
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    build_env = {**env, "CUDA_VISIBLE_DEVICES": "", "DNNC_CACHE_DIR": str(tmp_path / "build-cache")}
    path = tmp_path / f"{name}.dnnc"
    steps = _run(BUILD, name, target, str(path), repr(MODELS[name]), env=build_env)
    model, (x,) = ZOO[name](**MODELS[name])
    torch.save(x.half() if x.is_floating_point() else x, tmp_path / "x.pt")
    load_env = {**env, "DNNC_CACHE_DIR": str(tmp_path / "empty-cache"), "TRITON_CACHE_DIR": str(tmp_path / "triton-cache")}
    said = _run(LOAD, str(path), str(tmp_path / "x.pt"), str(tmp_path / "out.pt"), env=load_env)
    print(name, "built:", steps.strip(), "loaded:", said.strip())
    summary = json.loads(json.dumps(eval(said.split(" ", 1)[1])))  # the load's summary() dict
    assert not summary["torch_ops"], summary
    with torch.no_grad():
        expected = model.double()(x.double() if x.is_floating_point() else x)
        model = model.to("cuda", torch.float16)
        eager = model(x.cuda().half() if x.is_floating_point() else x.cuda()).cpu()
    assert_as_close_as_eager(torch.load(tmp_path / "out.pt"), eager, expected, torch.float16)
