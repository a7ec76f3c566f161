"""A model compiled for a range of shapes on the GPU: every size matches eager, the
padded rows never change the real ones (CUDA graphs replayed on the padding
buffers included), the buckets share their weights and arena, and the bucketed
artifact loads back with the same sharing."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import torch

import dnnc
from dnnc.bucketed import BucketedModule
from dnnc.models.bert import bert_layer
from dnnc.models.resnet import resnet50
from dnnc.numerics import relative_error

pytestmark = pytest.mark.gpu

FP16 = 2e-2


@pytest.fixture(scope="module")
def resnet() -> tuple[torch.nn.Module, BucketedModule]:
    model, (x,) = resnet50(batch=2)
    model = model.eval().to("cuda", torch.float16)
    return model, dnnc.compile(model, (x.to("cuda", torch.float16),), device="cuda", dynamic={"batch": (1, 8)}, buckets=[2, 8])


def _close(got: torch.Tensor, want: torch.Tensor, bound: float = FP16) -> None:
    err = relative_error(got.float().cpu(), want.float().cpu())
    assert err <= bound, f"relative error {err:.2e} over {bound:.0e}"


def test_every_batch_in_the_range_matches_eager(resnet: tuple[torch.nn.Module, BucketedModule]) -> None:
    model, compiled = resnet
    assert compiled.buckets == ["batch=8", "batch=2"]
    with torch.no_grad():
        for batch in range(1, 9):
            x = torch.randn(batch, 3, 224, 224, device="cuda", dtype=torch.float16)
            for _ in range(3):  # the first call, the graph on the padding buffer's memory, its replay
                got = compiled(x)
            assert got.shape == (batch, 1000)
            _close(got, model(x))


def test_padded_rows_are_exactly_the_bucket_programs_rows(resnet: tuple[torch.nn.Module, BucketedModule]) -> None:
    _, compiled = resnet
    bucket = compiled.modules[(8,)]
    x = torch.randn(5, 3, 224, 224, device="cuda", dtype=torch.float16)
    compiled(torch.randn(7, 3, 224, 224, device="cuda", dtype=torch.float16))  # leaves rows 5 and 6 to be zeroed
    padded = torch.cat([x, torch.zeros(3, 3, 224, 224, device="cuda", dtype=torch.float16)])
    want = bucket(padded)[:5]
    for _ in range(3):
        assert torch.equal(compiled(x), want)
    alone = torch.cat([compiled(x[i : i + 1]) for i in range(5)])
    _close(alone, want, 5e-3)


def _assert_equal_weights_uploaded_once(large, small) -> None:
    """Every weight of the small bucket equal to one of the large bucket's (name, shape,
    dtype, values) is that very tensor, and at least half are. Not all: each bucket's
    program chooses its own kernels, by measuring them, and a weight prepared for a kernel
    the other bucket did not choose has no equal there (ResNet-50 at batch 2 and 8: 88 and
    80 of 108 shared in two compiles on an H200)."""
    mine, theirs = small._executor.env.params, large._executor.env.params
    equal = [
        n
        for n, t in mine.items()
        if n in theirs and theirs[n].shape == t.shape and theirs[n].dtype == t.dtype and torch.equal(theirs[n], t)
    ]
    assert all(theirs[n] is mine[n] for n in equal), "an equal weight was uploaded twice"
    assert len(equal) >= 0.5 * len(mine), f"{len(equal)} of {len(mine)} weights the same in both buckets"


def test_buckets_share_weights_and_the_arena(resnet: tuple[torch.nn.Module, BucketedModule]) -> None:
    _, compiled = resnet
    _assert_equal_weights_uploaded_once(compiled.modules[(8,)], compiled.modules[(2,)])
    large, small = compiled.modules[(8,)], compiled.modules[(2,)]
    arena = lambda m: m._runner.arena.arena.untyped_storage().data_ptr()  # noqa: E731
    assert arena(large) == arena(small)
    assert compiled.memory_peak_bytes == large.memory_peak_bytes


def test_the_bucketed_artifact_loads_back_sharing_its_weights(
    resnet: tuple[torch.nn.Module, BucketedModule], tmp_path: Path
) -> None:
    _, compiled = resnet
    loaded = dnnc.load(compiled.save(tmp_path / "r50.dnnc"))
    assert isinstance(loaded, BucketedModule) and loaded.device == "cuda"
    for batch in (1, 2, 5, 8):
        x = torch.randn(batch, 3, 224, 224, device="cuda", dtype=torch.float16)
        _close(loaded(x), compiled(x), 5e-3)
    _assert_equal_weights_uploaded_once(loaded.modules[(8,)], loaded.modules[(2,)])
    for module in loaded.modules.values():
        assert not module.summary()["fallbacks"]


def test_sequence_range_with_an_attention_mask() -> None:
    model, (x, mask) = bert_layer(batch=2, seq=64, masked=True)
    model = model.eval().to("cuda", torch.float16)
    compiled = dnnc.compile(
        model, (x.to("cuda", torch.float16), mask.to("cuda", torch.float16)), device="cuda", dynamic={"seq": (16, 128)}
    )
    assert compiled.buckets == ["seq=128", "seq=64", "seq=32", "seq=16"]
    reference = copy.deepcopy(model).float()
    with torch.no_grad():
        for seq in (16, 20, 64, 100, 128):
            xi = torch.randn(2, seq, 768, device="cuda", dtype=torch.float16)
            mi = torch.ones(2, seq, device="cuda", dtype=torch.float16)
            got = compiled(xi, mi)
            assert got.shape == (2, seq, 768)
            _close(got, reference(xi.float(), mi.float()))


def test_torch_compile_dynamic_runs_through_buckets_on_the_gpu() -> None:
    from dnnc.frontend import dynamo

    torch._dynamo.reset()
    model, _ = bert_layer(batch=2, seq=32, dim=256, heads=4, ffn=1024, masked=True)
    model = model.eval().to("cuda", torch.float16)
    reference = copy.deepcopy(model).float()
    compiled = torch.compile(model, backend="dnnc", dynamic=True, options={"dynamic_batch_max": 8, "dynamic_seq_max": 64})
    before = len(dynamo.fallbacks)
    with torch.no_grad():
        for batch, seq in ((2, 32), (3, 40), (8, 64), (5, 17)):
            x = torch.randn(batch, seq, 256, device="cuda", dtype=torch.float16)
            mask = torch.ones(batch, seq, device="cuda", dtype=torch.float16)
            got = compiled(x, mask)
            _close(got, reference(x.float(), mask.float()))
    assert len(dynamo.fallbacks) == before, dynamo.fallbacks[before:]
    assert isinstance(dynamo.compiled_graphs[-1], BucketedModule)
    assert dynamo.compiled_graphs[-1].device == "cuda"
