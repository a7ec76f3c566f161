"""Compiling for ranges of shapes (``dnnc.compile(dynamic=...)``): bucket choice,
padding and cutting back, range errors, the bucketed artifact, on the CPU reference
backend (``test_buckets_gpu.py`` runs the GPU side)."""

from __future__ import annotations

import json
import zipfile

import pytest
import torch
from torch import nn

import dnnc
from dnnc import buckets as bk
from dnnc.bucketed import BucketedModule
from dnnc.errors import ArtifactError, DnncError, InputError
from dnnc.models.bert import bert_layer


class RowNet(nn.Module):
    """Convolution, pooling and a linear head: every row computed apart, the usual batch model."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.head = nn.Linear(8, 5)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        features = torch.relu(self.bn(self.conv(x)))
        return self.head(features.mean((2, 3))), features


def _row_net() -> tuple[nn.Module, torch.Tensor]:
    torch.manual_seed(0)
    model = RowNet().eval()
    with torch.no_grad():
        model.bn.running_mean.uniform_(-0.5, 0.5)
        model.bn.running_var.uniform_(0.5, 1.5)
    return model, torch.randn(2, 3, 8, 8)


@pytest.fixture(scope="module")
def row_net() -> tuple[nn.Module, BucketedModule]:
    model, x = _row_net()
    return model, dnnc.compile(model, (x,), device="cpu", dynamic={"batch": (1, 8)})


# ranges and buckets ------------------------------------------------------------------


def test_default_buckets_are_powers_of_two_and_the_high_end() -> None:
    assert bk.default_sizes(bk.DimRange("batch", 1, 64)) == [1, 2, 4, 8, 16, 32, 64]
    assert bk.default_sizes(bk.DimRange("seq", 16, 512)) == [16, 32, 64, 128, 256, 512]
    assert bk.default_sizes(bk.DimRange("batch", 3, 100)) == [4, 8, 16, 32, 64, 100]
    assert bk.default_sizes(bk.DimRange("batch", 5, 5)) == [5]


def test_chosen_buckets_always_reach_the_high_end() -> None:
    ranges = bk.ranges_of({"batch": (1, 64)})
    assert bk.bucket_sizes(ranges, [1, 8, 32]) == {"batch": [1, 8, 32, 64]}
    assert bk.bucket_sizes(ranges, {"batch": [32, 1, 8, 8]}) == {"batch": [1, 8, 32, 64]}
    with pytest.raises(DnncError, match="bucket batch=128 is outside the range batch=1..64"):
        bk.bucket_sizes(ranges, [1, 128])
    with pytest.raises(DnncError, match="buckets for 'seq', which is not dynamic"):
        bk.bucket_sizes(ranges, {"seq": [16]})


def test_too_many_buckets_is_an_error() -> None:
    ranges = bk.ranges_of({"batch": (1, 64), "seq": (1, 4096)})
    with pytest.raises(DnncError, match="at most 64"):
        bk.bucket_sizes(ranges, {"batch": list(range(1, 65))})


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("batch=1-64", "expected NAME=LOW..HIGH"),
        ("height=1..64", "dynamic dimension 'height' is not one dnnc knows"),
        ("batch=8..4", "a range runs from 1 or more up to at least its low end"),
        ("batch=0..4", "a range runs from 1 or more"),
    ],
)
def test_range_spellings(text: str, message: str) -> None:
    with pytest.raises(DnncError, match=message):
        bk.parse_range(text)


def test_ranges_by_api_and_cli_agree() -> None:
    assert bk.ranges_of({"batch": (1, 64), "seq": range(16, 513)}) == bk.ranges_of(["batch=1..64", "seq=16..512"])
    assert bk.parse_sizes("1,8,32", bk.ranges_of(["batch=1..64"])) == {"batch": [1, 8, 32]}
    with pytest.raises(DnncError, match="name the dimension"):
        bk.parse_sizes("1,8", bk.ranges_of(["batch=1..64", "seq=1..8"]))


def _plan() -> bk.BucketPlan:
    ranges = bk.ranges_of({"batch": (1, 8), "seq": (4, 16)})
    return bk.BucketPlan(ranges, bk.bucket_sizes(ranges, None), [{"batch": 0, "seq": 1}, {"batch": 0}])


def test_an_input_runs_in_the_smallest_bucket_that_holds_it() -> None:
    plan = _plan()
    assert plan.sizes == {"batch": [1, 2, 4, 8], "seq": [4, 8, 16]}
    assert plan.buckets()[0] == (8, 16)
    assert plan.bucket_for(plan.measure([torch.zeros(3, 9), torch.zeros(3)])) == (4, 16)
    assert plan.bucket_for((8, 16)) == (8, 16)
    assert plan.bucket_for((1, 4)) == (1, 4)


def test_sizes_outside_the_range_or_inputs_that_disagree_are_clear_errors() -> None:
    plan = _plan()
    with pytest.raises(InputError, match=r"batch 9 is outside the compiled range batch=1..8"):
        plan.measure([torch.zeros(9, 8), torch.zeros(9)])
    with pytest.raises(InputError, match=r"seq 3 is outside the compiled range seq=4..16"):
        plan.measure([torch.zeros(2, 3), torch.zeros(2)])
    with pytest.raises(InputError, match="inputs disagree on batch: input 0 has 2, input 1 has 3"):
        plan.measure([torch.zeros(2, 8), torch.zeros(3)])


def test_the_plan_round_trips_through_json() -> None:
    plan = _plan()
    plan.output_axes = [{"batch": 0}]
    again = bk.BucketPlan.from_json(json.loads(json.dumps(plan.to_json())), "here")
    assert again == plan
    with pytest.raises(DnncError, match="here: .*not dynamic"):
        bk.BucketPlan.from_json({**plan.to_json(), "input_axes": [{"height": 2}]}, "here")


def test_padding_zeroes_only_what_a_larger_earlier_input_left() -> None:
    into = torch.zeros(4, 6)
    axes = {"batch": 0, "seq": 1}
    extent = bk.copy_padded(into, torch.ones(3, 5), axes, None)
    assert extent == (3, 5) and into.sum() == 15
    extent = bk.copy_padded(into, torch.full((2, 2), 2.0), axes, extent)
    assert extent == (2, 2)
    expected = torch.zeros(4, 6)
    expected[:2, :2] = 2.0
    assert torch.equal(into, expected)


def test_resized_examples_repeat_rows() -> None:
    x = torch.arange(6).view(2, 3)
    assert torch.equal(bk.resized(x, {"batch": 0}, {"batch": 5}), torch.tensor([[0, 1, 2], [3, 4, 5]] * 2 + [[0, 1, 2]]))
    assert bk.resized(x, {"batch": 0, "seq": 1}, {"batch": 1, "seq": 2}).tolist() == [[0, 1]]


# compiling and running -----------------------------------------------------------------


def test_every_size_in_the_range_matches_eager(row_net: tuple[nn.Module, BucketedModule]) -> None:
    model, compiled = row_net
    assert compiled.buckets == ["batch=8", "batch=4", "batch=2", "batch=1"]
    for batch in range(1, 9):
        x = torch.randn(batch, 3, 8, 8)
        logits, features = compiled(x)
        want_logits, want_features = model(x)
        assert logits.shape == (batch, 5) and features.shape == (batch, 8, 8, 8)
        torch.testing.assert_close(logits, want_logits, rtol=1e-4, atol=1e-5)
        torch.testing.assert_close(features, want_features, rtol=1e-4, atol=1e-5)


def test_padding_never_changes_the_real_rows(row_net: tuple[nn.Module, BucketedModule]) -> None:
    """A padded call's rows are exactly the rows of its bucket's program run on the
    same rows beside any others, and equal to each row run alone."""
    _, compiled = row_net
    x = torch.randn(5, 3, 8, 8)
    logits, _ = compiled(x)
    bucket = compiled.bucket(batch=5)
    assert bucket is compiled.modules[(8,)]
    beside_others = torch.cat([x, 100 * torch.randn(3, 3, 8, 8)])
    assert torch.equal(logits, bucket(beside_others)[0][:5])
    for row in range(5):
        alone, _ = compiled(x[row : row + 1])
        torch.testing.assert_close(logits[row : row + 1], alone, rtol=1e-5, atol=1e-6)


def test_a_smaller_call_after_a_larger_one_sees_zeros_not_stale_rows(row_net: tuple[nn.Module, BucketedModule]) -> None:
    _, compiled = row_net
    compiled(torch.randn(7, 3, 8, 8))
    x = torch.randn(5, 3, 8, 8)
    padded = torch.cat([x, torch.zeros(3, 3, 8, 8)])
    assert torch.equal(compiled(x)[0], compiled.modules[(8,)](padded)[0][:5])


def test_out_of_range_calls_name_the_range(row_net: tuple[nn.Module, BucketedModule]) -> None:
    _, compiled = row_net
    with pytest.raises(InputError, match=r"batch 9 is outside the compiled range batch=1..8"):
        compiled(torch.randn(9, 3, 8, 8))
    with pytest.raises(InputError, match=r"input 0: expected shape \[batch, 3, 8, 8\], got \[5, 3, 9, 9\]"):
        compiled(torch.randn(5, 3, 9, 9))
    with pytest.raises(DnncError, match="outside the compiled range"):
        compiled.bucket(batch=0)


def test_sequence_padding_is_hidden_by_the_attention_mask() -> None:
    model, (x, mask) = bert_layer(batch=2, seq=12, dim=32, heads=2, ffn=64, masked=True)
    compiled = dnnc.compile(model, (x, mask), device="cpu", dynamic={"batch": (1, 4), "seq": (8, 32)}, buckets={"batch": [4]})
    assert compiled.buckets == ["batch=4,seq=32", "batch=4,seq=16", "batch=4,seq=8"]
    for batch, seq in ((1, 8), (3, 13), (4, 32), (2, 17)):
        xi, mi = torch.randn(batch, seq, 32), torch.ones(batch, seq)
        got = compiled(xi, mi)
        assert got.shape == (batch, seq, 32)
        torch.testing.assert_close(got, model(xi, mi), rtol=1e-4, atol=1e-4)


def test_a_model_that_fixes_the_batch_is_an_error_naming_the_line() -> None:
    class Fixed(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return (x * 2).view(8, -1).sum(1)

    with pytest.raises(DnncError, match=r"(?s)dynamic batch=1..16: .*view\(8, -1\)"):
        dnnc.compile(Fixed(), (torch.randn(8, 3),), device="cpu", dynamic={"batch": (1, 16)})


def test_an_output_size_computed_from_the_batch_is_an_error() -> None:
    class Flat(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x.reshape(-1) * 2

    with pytest.raises(DnncError, match=r"output 0 has shape \[3\*batch\]: dimension 0 is 3\*batch"):
        dnnc.compile(Flat(), (torch.randn(8, 3),), device="cpu", dynamic={"batch": (1, 16)})


def test_buckets_without_a_range_is_an_error() -> None:
    model, x = _row_net()
    with pytest.raises(DnncError, match="buckets= needs dynamic="):
        dnnc.compile(model, (x,), device="cpu", buckets=[1, 2])


# the artifact ---------------------------------------------------------------------------


def test_the_artifact_holds_every_bucket_and_the_weights_once(row_net: tuple[nn.Module, BucketedModule], tmp_path) -> None:
    model, compiled = row_net
    path = compiled.save(tmp_path / "net.dnnc")
    single = dnnc.compile(model, (torch.randn(8, 3, 8, 8),), device="cpu").save(tmp_path / "single.dnnc")
    with zipfile.ZipFile(path) as z:
        names = set(z.namelist())
        stored = z.getinfo("params.safetensors").file_size
    with zipfile.ZipFile(single) as z:
        assert stored == z.getinfo("params.safetensors").file_size  # each weight once
    assert {"program.mlir", "buckets/batch=4/program.mlir", "buckets/batch=1/metadata.json"} <= names
    loaded = dnnc.load(path)
    assert isinstance(loaded, BucketedModule) and loaded.buckets == compiled.buckets
    for batch in (1, 3, 8):
        x = torch.randn(batch, 3, 8, 8)
        for got, want in zip(loaded(x), compiled(x)):
            assert torch.equal(got, want)


def test_weights_that_differ_between_buckets_are_kept_apart(tmp_path) -> None:
    """A constant folded per shape (positions 0..seq-1) is one weight per bucket."""

    class Positions(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x + torch.arange(x.shape[1], dtype=x.dtype).cos()

    model = Positions()
    compiled = dnnc.compile(model, (torch.randn(2, 8),), device="cpu", dynamic={"seq": (4, 8)}, buckets=[4, 8])
    loaded = dnnc.load(compiled.save(tmp_path / "p.dnnc"))
    for seq in (4, 5, 8):
        x = torch.randn(2, seq)
        torch.testing.assert_close(loaded(x), model(x))


def _rewrite_manifest(src, dst, change) -> None:
    with zipfile.ZipFile(src) as z:
        members = {n: z.read(n) for n in z.namelist()}
    manifest = json.loads(members["manifest.json"])
    change(manifest)
    members["manifest.json"] = json.dumps(manifest).encode()
    with zipfile.ZipFile(dst, "w") as z:
        for name, data in members.items():
            z.writestr(name, data)


def test_a_manifest_whose_buckets_do_not_match_its_plan_is_refused(row_net: tuple[nn.Module, BucketedModule], tmp_path) -> None:
    _, compiled = row_net
    path = compiled.save(tmp_path / "net.dnnc")

    def drop_entry(m) -> None:
        m["buckets"]["entries"].pop()

    _rewrite_manifest(path, tmp_path / "dropped.dnnc", drop_entry)
    with pytest.raises(ArtifactError, match="buckets.entries"):
        dnnc.load(tmp_path / "dropped.dnnc")

    def stray_prefix(m) -> None:
        m["buckets"]["entries"][1]["prefix"] = "../"

    _rewrite_manifest(path, tmp_path / "stray.dnnc", stray_prefix)
    with pytest.raises(ArtifactError, match="prefix"):
        dnnc.load(tmp_path / "stray.dnnc")

    def unplanned(m) -> None:
        del m["buckets"]

    _rewrite_manifest(path, tmp_path / "unplanned.dnnc", unplanned)
    with pytest.raises(ArtifactError, match=r"lists 'buckets/batch=\d/\w+\.\w+', which is not a member dnnc writes"):
        dnnc.load(tmp_path / "unplanned.dnnc")


def test_a_program_exported_with_dims_brings_its_ranges() -> None:
    from torch.export import Dim

    model, (x, mask) = bert_layer(batch=2, seq=12, dim=32, heads=2, ffn=64, masked=True)
    batch, seq = Dim("batch", min=1, max=4), Dim("seq", min=8, max=16)
    ep = torch.export.export(model, (x, mask), dynamic_shapes=({0: batch, 1: seq}, {0: batch, 1: seq}))
    compiled = dnnc.compile(ep, device="cpu", buckets={"batch": [4]})
    assert [r.text() for r in compiled.plan.ranges.values()] == ["batch=1..4", "seq=8..16"]
    assert compiled.buckets == ["batch=4,seq=16", "batch=4,seq=8"]
    xi, mi = torch.randn(3, 11, 32), torch.ones(3, 11)
    torch.testing.assert_close(compiled(xi, mi), model(xi, mi), rtol=1e-4, atol=1e-4)


def test_a_dim_without_an_upper_bound_is_an_error() -> None:
    from torch.export import Dim

    model, (x,) = bert_layer(batch=2, seq=8, dim=32, heads=2, ffn=64)
    ep = torch.export.export(model, (x,), dynamic_shapes=({0: Dim("b")},))
    with pytest.raises(DnncError, match=r"batch \(\w+\) has no upper bound: export with Dim\('batch', max=...\)"):
        dnnc.compile(ep, device="cpu")
