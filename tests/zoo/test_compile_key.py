"""The compile cache's key of library models is the same in every process: Python seeds
``hash()`` per process, and transformers' decoders and diffusers' UNets hold values
derived from it (a ``GenerationConfig``'s own hash, a list made from a set), which made
every warm compile of them miss and compile again (BENCHMARKS.md, the default's table)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.zoo.cases import available

ROOT = Path(__file__).resolve().parents[2]

KEYS = """
import json
from dnnc import compile_cache
from dnnc.models import zoo
small = dict(layers=2, hidden=64, heads=4, vocab=1000)
models = {{"gpt2": lambda: zoo.gpt2(seq=16, **small), "llama": lambda: zoo.llama(seq=16),
           "unet2d": lambda: zoo.unet2d(size=16, channels=(32, 32), groups=8)}}
keys = {{}}
for name in {names!r}:
    model, inputs = models[name]()
    keys[name] = compile_cache.model_key(model, inputs, "cpu")
print(json.dumps(keys))
"""


def _keys(names: list[str], seed: int) -> dict[str, str]:
    env = {**os.environ, "PYTHONHASHSEED": str(seed), "DNNC_COMPILE_CACHE": "1", "DNNC_CACHE": "1"}
    done = subprocess.run(
        [sys.executable, "-c", KEYS.format(names=names)], cwd=ROOT, env=env, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_library_models_have_one_key_in_every_process() -> None:
    names = [n for n, lib in (("gpt2", "transformers"), ("llama", "transformers"), ("unet2d", "diffusers")) if available(lib)]
    if not names:
        pytest.skip("neither transformers nor diffusers is installed")
    first, second = _keys(names, seed=1), _keys(names, seed=2)
    assert all(first[n] for n in names), f"every model is describable: {first}"
    assert first == second
