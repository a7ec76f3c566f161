"""``torch.compile(model, backend="dnnc")`` on the CPU reference backend: the test
models match eager (f32, 1e-5 relative), a new shape recompiles through dnnc, and
a graph dnnc cannot take runs as captured, with the reason recorded."""

from __future__ import annotations

import pytest
import torch

from dnnc.errors import DnncError
from dnnc.frontend import dynamo  # registers the backend (an installed dnnc: also its entry point)
from dnnc.models import gpt2_block, mobilenet_v2, resnet50
from dnnc.numerics import relative_error


def _compiled_graphs_after(fn) -> int:
    before = len(dynamo.compiled_graphs)
    fn()
    return len(dynamo.compiled_graphs) - before


def test_models_match_eager(rng: torch.Generator) -> None:
    torch._dynamo.reset()
    for factory, kwargs in (
        (resnet50, {"batch": 1, "image_size": 64}),
        (mobilenet_v2, {"batch": 1, "image_size": 64}),
        (gpt2_block, {"seq": 16, "vocab": 500, "max_len": 64}),
    ):
        model, example = factory(**kwargs)
        model = model.eval()
        fresh = [
            torch.randn(x.shape, generator=rng) if x.is_floating_point() else torch.randint(0, 500, x.shape, generator=rng)
            for x in example
        ]
        compiled = torch.compile(model, backend="dnnc", dynamic=False)
        with torch.no_grad():
            n = _compiled_graphs_after(lambda c=compiled, f=fresh: c(*f))
            got, want = compiled(*fresh), model(*fresh)
        assert n >= 1, factory.__name__
        assert relative_error(got, want) <= 1e-5, factory.__name__


def test_a_new_shape_recompiles_through_dnnc(rng: torch.Generator) -> None:
    torch._dynamo.reset()
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.Linear(16, 4)).eval()
    compiled = torch.compile(model, backend="dnnc", dynamic=False)
    with torch.no_grad():
        for batch, expected_compiles in ((3, 1), (3, 0), (5, 1)):
            x = torch.randn(batch, 8, generator=rng)
            assert _compiled_graphs_after(lambda x=x: compiled(x)) == expected_compiles
            assert relative_error(compiled(x), model(x)) <= 1e-5


def test_unsupported_graphs_fall_back_with_a_reason(rng: torch.Generator) -> None:
    torch._dynamo.reset()

    class UsesDigamma(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.special.digamma(x) * 2

    before = len(dynamo.fallbacks)
    compiled = torch.compile(UsesDigamma(), backend="dnnc", dynamic=False)
    x = torch.randn(4, generator=rng)
    with torch.no_grad():
        assert torch.equal(compiled(x), torch.special.digamma(x) * 2)
    (fallback,) = dynamo.fallbacks[before:]
    assert "aten.digamma.default" in fallback.reason and "no import rule" in fallback.reason


def test_an_installed_dnnc_is_found_through_its_entry_point() -> None:
    import importlib.metadata
    import subprocess
    import sys

    found = [e for e in importlib.metadata.entry_points(group="torch_dynamo_backends") if e.name == "dnnc"]
    if not found:
        import pytest

        pytest.skip("dnnc runs from a source tree here (not installed)")
    assert found[0].value == "dnnc.frontend.dynamo:dnnc_backend"
    probe = "import torch; from torch._dynamo.backends.registry import lookup_backend; print(lookup_backend('dnnc').__module__)"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "dnnc.frontend.dynamo"


class _Small(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.fc(x))


def test_mode_and_options_reach_dnnc_as_settings(monkeypatch: pytest.MonkeyPatch, rng: torch.Generator) -> None:
    """``mode`` picks dnnc's settings (max-autotune: measure more), ``options`` sets
    dnnc's settings by name; the compiled graph matches eager either way."""
    import dnnc
    from dnnc import knobs

    seen: list[tuple[bool, str]] = []
    compile_ = dnnc.compile

    def recording(*args, **kwargs):
        seen.append((knobs.get().measure_autotune, knobs.get().partition))
        return compile_(*args, **kwargs)

    monkeypatch.setattr(dnnc, "compile", recording)
    model, x = _Small().eval(), torch.randn(3, 8, generator=rng)
    for kwargs, expected in (
        ({"mode": "max-autotune"}, (True, "auto")),
        ({"options": {"partition": "greedy"}}, (False, "greedy")),
        ({"mode": "reduce-overhead"}, (False, "auto")),
    ):
        torch._dynamo.reset()
        compiled = torch.compile(model, backend="dnnc", dynamic=False, **kwargs)
        with torch.no_grad():
            assert relative_error(compiled(x), model(x)) <= 1e-5
        assert seen[-1] == expected, kwargs


def test_an_unknown_mode_or_option_is_named() -> None:
    with pytest.raises(DnncError, match=r"unknown mode 'fastest'; dnnc knows default, reduce-overhead, max-autotune"):
        dynamo.settings_for("fastest", None)
    with pytest.raises(DnncError, match=r"unknown option 'epilogue_fusion'; the options are dnnc's settings: device, "):
        dynamo.settings_for(None, {"epilogue_fusion": True})
    assert dynamo.settings_for("max-autotune", {"cuda_graph": False}) == {
        "cuda_graph": False,
        "measure_autotune": True,
        "runtime_compiled_plans": 64,
    }


def test_parameters_and_buffers_are_frozen_and_batchnorm_folded(rng: torch.Generator) -> None:
    """Dynamo passes the module's parameters and buffers as graph inputs; the backend
    compiles them as constants: the program takes the image alone, and its BatchNorm is
    folded into the convolution (no batch norm op left)."""
    from dnnc.ir import tcp

    torch._dynamo.reset()
    bn = torch.nn.BatchNorm2d(4)
    bn.running_mean.uniform_(-0.5, 0.5, generator=rng)
    bn.running_var.uniform_(0.5, 2.0, generator=rng)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), bn, torch.nn.ReLU()).eval()
    image = torch.randn(2, 3, 8, 8, generator=rng)
    compiled = torch.compile(model, backend="dnnc", dynamic=False)
    with torch.no_grad():
        assert _compiled_graphs_after(lambda: compiled(image)) == 1
        got, want = compiled(image), model(image)
    assert relative_error(got, want) <= 1e-5
    program = dynamo.compiled_graphs[-1].program
    assert len(program.input_types) == 1
    assert not any(isinstance(op, tcp.BatchNormOp) for op in program.entry.body.walk())
    assert {op.name for op in program.entry.body.walk()} >= {"tcp.conv2d"}


def test_dynamic_graphs_run_through_buckets(rng: torch.Generator) -> None:
    """``dynamic=True``: the graph's symbolic batch and sequence are dnnc ranges; the
    first call compiles its bucket, a size in another bucket compiles that one, a size
    in a bucket compiled before reuses it, and a size past the range runs as captured."""
    from dnnc.bucketed import BucketedModule
    from dnnc.models.bert import bert_layer

    torch._dynamo.reset()
    model, _ = bert_layer(batch=2, seq=16, dim=32, heads=2, ffn=64, masked=True)
    compiled = torch.compile(model, backend="dnnc", dynamic=True, options={"dynamic_batch_max": 8, "dynamic_seq_max": 32})
    fallbacks = len(dynamo.fallbacks)
    with torch.no_grad():
        for batch, seq in ((2, 16), (3, 20), (4, 9), (3, 17), (8, 32), (9, 40)):
            x, mask = torch.randn(batch, seq, 32, generator=rng), torch.ones(batch, seq)
            mask[:, seq - 2 :] = 0  # positions the mask hides
            got = compiled(x, mask)
            assert got.shape == (batch, seq, 32)
            assert relative_error(got, model(x, mask)) <= 1e-5, (batch, seq)
    assert len(dynamo.fallbacks) == fallbacks
    bucketed = dynamo.compiled_graphs[-1]
    assert isinstance(bucketed, BucketedModule)
    assert bucketed.plan.ranges["batch"].text() == "batch=2..8" and bucketed.plan.ranges["seq"].text() == "seq=2..32"
    assert bucketed.buckets == ["batch=8,seq=32", "batch=4,seq=32", "batch=4,seq=16", "batch=2,seq=16"]


def test_symbolic_sizes_other_than_batch_and_sequence_fall_back_with_the_reason(rng: torch.Generator) -> None:
    torch._dynamo.reset()
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.ReLU()).eval()
    compiled = torch.compile(model, backend="dnnc", dynamic=True)
    before = len(dynamo.fallbacks)
    with torch.no_grad():
        image = torch.randn(2, 3, 9, 10, generator=rng)
        assert relative_error(compiled(image), model(image)) <= 1e-6
    reason = dynamo.fallbacks[before].reason
    assert "dimension 2 of input" in reason and "dnnc's ranges are batch (dimension 0), seq (dimension 1)" in reason
