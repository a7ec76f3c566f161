"""The compile cache (``dnnc.compile_cache``), on the CPU reference backend: a second
compile of the same module, inputs and settings is the first one's artifact, loaded
without exporting; anything the compiled program depends on (a weight, a module's
attribute, an input's shape, a setting, the model's source file) is a miss; a module
the key cannot describe (a forward hook, an attribute of an unknown type) compiles as
before; outputs keep their structure."""

from __future__ import annotations

import importlib
import os
import sys
import textwrap
import threading
from pathlib import Path

import pytest
import torch
from torch import nn

import dnnc
from dnnc import compile_cache, knobs


@pytest.fixture
def cache(tmp_path: Path):
    with knobs.override(cache_dir=tmp_path / "cache", compile_cache=True, device="cpu"):
        yield tmp_path / "cache"


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.norm = nn.BatchNorm2d(8)
        self.fc = nn.Linear(8, 4)
        self.scale = 0.5

    def forward(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        y = torch.relu(self.norm(self.conv(x))).mean((2, 3))
        return {"logits": self.fc(y) * self.scale, "features": y}


def _model() -> Block:
    torch.manual_seed(0)
    return Block().eval()


def _stages(compiled: dnnc.CompiledModule) -> list[str]:
    return [s.name for s in compiled.report.stages]


def test_a_second_compile_is_the_first_one_loaded(cache: Path, rng: torch.Generator) -> None:
    model, x = _model(), torch.randn(2, 3, 8, 8, generator=rng)
    first = dnnc.compile(model, (x,))
    second = dnnc.compile(model, (x,))
    assert not first.report.reused and "export" in _stages(first)
    assert second.report.reused and "export" not in _stages(second)
    a, b = first(x), second(x)
    assert set(b) == {"logits", "features"}, "the outputs keep the model's structure"
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert second.program.metadata == first.program.metadata


@pytest.mark.parametrize(
    "change",
    ["weight", "buffer", "attribute", "training", "input-shape", "setting"],
)
def test_what_the_program_depends_on_is_a_miss(cache: Path, rng: torch.Generator, change: str) -> None:
    model, x = _model(), torch.randn(2, 3, 8, 8, generator=rng)
    dnnc.compile(model, (x,))
    key = compile_cache.model_key(model, (x,), "cpu")
    settings = {}
    if change == "weight":
        with torch.no_grad():
            model.fc.weight[0, 0] += 1e-3
    elif change == "buffer":
        model.norm.running_var.mul_(2)
    elif change == "attribute":
        model.scale = 0.25
    elif change == "training":  # (a BatchNorm in training mode writes its statistics: dnnc refuses to compile it)
        model.norm.train()
        assert compile_cache.model_key(model, (x,), "cpu") != key
        return
    elif change == "input-shape":
        x = torch.randn(4, 3, 8, 8, generator=rng)
    else:
        settings = {"reference_precision": "float64"}
    with knobs.override(**settings):
        again = dnnc.compile(model, (x,))
    assert not again.report.reused


def test_a_changed_source_file_is_a_miss(cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    package = tmp_path / "mymodels"
    package.mkdir()
    (package / "__init__.py").write_text("")
    source = package / "net.py"
    body = """
        import torch
        class Net(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = torch.nn.Linear(4, 4)
            def forward(self, x):
                return torch.relu(self.lin(x)) {}
    """
    source.write_text(textwrap.dedent(body.format("")))
    monkeypatch.syspath_prepend(str(tmp_path))
    net = importlib.import_module("mymodels.net").Net().eval()
    x = torch.randn(2, 4)
    before = compile_cache.model_key(net, (x,), "cpu")
    source.write_text(textwrap.dedent(body.format("* 2")))  # what the class's file says changed
    after = compile_cache.model_key(net, (x,), "cpu")
    assert before is not None and after is not None and before != after
    for name in [m for m in sys.modules if m.startswith("mymodels")]:
        del sys.modules[name]


def test_a_module_the_key_cannot_describe_compiles_every_time(cache: Path, rng: torch.Generator) -> None:
    model, x = _model(), torch.randn(2, 3, 8, 8, generator=rng)
    handle = model.fc.register_forward_hook(lambda m, i, o: None)
    assert compile_cache.model_key(model, (x,), "cpu") is None
    handle.remove()
    model.lock = threading.Lock()
    assert compile_cache.model_key(model, (x,), "cpu") is None
    first, second = dnnc.compile(model, (x,)), dnnc.compile(model, (x,))
    assert not first.report.reused and not second.report.reused


def test_configuration_objects_and_functions_are_described_by_value(rng: torch.Generator) -> None:
    from types import SimpleNamespace

    def act(t: torch.Tensor) -> torch.Tensor:
        return t * 2

    a = compile_cache.describe({"config": SimpleNamespace(hidden=64, eps=1e-5), "act": act}, "m")
    b = compile_cache.describe({"config": SimpleNamespace(hidden=64, eps=1e-6), "act": act}, "m")
    assert a != b
    assert compile_cache.describe(act, "m") != compile_cache.describe(lambda t: t * 3, "m")


@pytest.mark.parametrize("digest", ["sha1", "word-sums"])
def test_the_tensor_digest_sees_every_byte(rng: torch.Generator, digest: str) -> None:
    """On the CPU a tensor is keyed by the SHA-1 of its bytes; on a GPU by two sums of
    its words computed there (checked here on CPU tensors)."""

    def of(t: torch.Tensor) -> object:
        if digest == "sha1":
            return compile_cache.tensor_digest(t)
        return compile_cache.word_sums(t.contiguous().reshape(-1).view(torch.uint8))

    t = torch.randn(1001, generator=rng)
    before = of(t)
    for i in (0, 500, 1000):
        u = t.clone()
        u[i] = torch.nextafter(u[i], torch.tensor(float("inf")))
        assert of(u) != before
    swapped = t.clone()
    swapped[[3, 7]] = swapped[[7, 3]]
    assert of(swapped) != before, "a permutation is seen"
    assert of(t.clone()) == before
    assert compile_cache.tensor_digest(t.half()) != compile_cache.tensor_digest(t)


def test_off_compiles_every_time(cache: Path, rng: torch.Generator) -> None:
    model, x = _model(), torch.randn(2, 3, 8, 8, generator=rng)
    with knobs.override(compile_cache=False):
        dnnc.compile(model, (x,))
        assert not dnnc.compile(model, (x,)).report.reused
    assert not (cache / "compiles").exists()


def test_a_damaged_entry_is_compiled_again(cache: Path, rng: torch.Generator) -> None:
    model, x = _model(), torch.randn(2, 3, 8, 8, generator=rng)
    dnnc.compile(model, (x,))
    (entry,) = [p for p in (cache / "compiles").rglob("*") if p.is_file()]
    entry.write_bytes(entry.read_bytes()[:-100])
    again = dnnc.compile(model, (x,))
    assert not again.report.reused
    assert dnnc.compile(model, (x,)).report.reused, "the compile after it stored a good entry again"


def test_two_processes_compiling_one_model_compile_it_once(tmp_path) -> None:
    """The second waits on the first's lock, then loads what it stored."""
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    script = (
        "import torch, dnnc\n"
        "torch.manual_seed(0)\n"
        "model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.ReLU(), torch.nn.Flatten(), torch.nn.Linear(8 * 14 * 14, 4)).eval()\n"
        "compiled = dnnc.compile(model, (torch.randn(2, 3, 16, 16),), device='cpu')\n"
        "print('reused' if compiled.report.reused else 'compiled')\n"
    )
    env = {**os.environ, "DNNC_CACHE_DIR": str(tmp_path), "DNNC_COMPILE_CACHE": "1", "PYTHONPATH": str(root)}
    runs = [
        subprocess.Popen([sys.executable, "-c", script], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    outs = [p.communicate(timeout=300) for p in runs]
    assert all(p.returncode == 0 for p in runs), [err[-2000:] for _, err in outs]
    assert sorted(out.strip() for out, _ in outs) == ["compiled", "reused"]
