"""The partitioner on the CPU: candidates per backend and policy, programs that
still compute the model after partitioning and lowering (reference backend, fresh
random inputs, ``dnnc.numerics.TOLERANCE``), measurement cache keys, the
decision record and the structure of ``dnnc explain`` (not its numbers)."""

from __future__ import annotations

import json
from collections import Counter

import pytest
import torch
from click.testing import CliRunner
from torch import nn

from dnnc import knobs
from dnnc.backends.interface import GROUP_BACKEND_ATTR, group_attr
from dnnc.cli import main
from dnnc.ir import cudnn, tcp
from dnnc.ir.program import Program
from dnnc.ir.work import work_of
from dnnc.partition import DECISIONS_ATTR
from dnnc.partition.candidates import graph_nodes, node_preds
from dnnc.partition.cost import estimate_ms
from dnnc.partition.cover import best_cover
from dnnc.partition.enumeration import enumerate_candidates
from dnnc.partition.explain import GROUP_HEADER, explain_lines
from dnnc.partition.extract import extract
from dnnc.partition.measure import measurement_key
from dnnc.partition.partitioner import Partition
from dnnc.passes import parse_passes
from dnnc.pipeline import PARTITIONED, run_passes
from dnnc.roofline import H100, peaks_for
from tests.compile_helpers import compile_program, eager_exact, flat, run_reference
from tests.numerics import assert_matches

BACKENDS = ("cudnn", "triton")


class Block(nn.Module):
    """conv+bn+relu, maxpool, a residual conv block, global pool and a linear head."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2))
        self.conv = nn.Conv2d(16, 16, 3, padding=1)
        self.head = nn.Linear(16, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.stem(x)
        y = torch.relu(self.conv(y) + y)
        return self.head(y.mean((2, 3)))


def block_program(dtype: torch.dtype = torch.float32) -> tuple[Program, nn.Module, torch.Tensor]:
    torch.manual_seed(0)
    model = Block().eval()
    for m in model.modules():  # batch-norm statistics that are not the identity
        if isinstance(m, nn.BatchNorm2d):
            m.running_mean.uniform_(-0.5, 0.5)
            m.running_var.uniform_(0.5, 2.0)
    model = model.to(dtype)
    x = torch.randn(2, 3, 16, 16, dtype=dtype)
    return compile_program(model, [x]), model, x


@pytest.fixture
def own_cache(tmp_path):
    """An empty cache directory (contest winners are cached by content)."""
    with knobs.override(cache_dir=tmp_path):
        yield tmp_path


def partitioned(program: Program, policy: str) -> dict:
    run_passes(program, [Partition(policy=policy, backends=BACKENDS)])
    return json.loads(program.entry.attributes[DECISIONS_ATTR].data)


def test_candidates_per_backend_and_policy() -> None:
    program, _, _ = block_program()
    nodes = graph_nodes(program.entry.body.block)
    assert not any(isinstance(op, tcp.BroadcastOp) for op in nodes), "bias broadcasts are compile-time, not nodes"
    auto = enumerate_candidates(nodes, BACKENDS, "auto")
    kinds = Counter(c.kind for c in auto if c.backend == "cudnn")
    # every prefix of each epilogue: the stem conv, the residual conv, the head matmul
    assert {"conv", "conv_bias", "conv_bias_relu", "conv_bias_add", "conv_bias_add_relu", "matmul", "matmul_bias"} <= set(kinds)
    assert {"conv2d", "pool", "reduce", "matmul"} <= {c.kind for c in auto if c.backend == "triton"}
    roots = {min(c.covers) for c in auto if c.backend == "cudnn"}
    cudnn_only = enumerate_candidates(nodes, BACKENDS, "cudnn-only")
    assert not any(c.backend == "triton" and c.covers & roots for c in cudnn_only)
    assert not any(c.backend == "cudnn" for c in enumerate_candidates(nodes, BACKENDS, "triton-only"))
    torch_only = enumerate_candidates(nodes, ("cudnn",), "auto")
    assert {c.backend for c in torch_only} <= {"cudnn", "torch", "view"}
    with pytest.raises(ValueError, match="unknown partition policy"):
        enumerate_candidates(nodes, BACKENDS, "fastest")


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
@pytest.mark.parametrize("policy", ["auto", "cudnn-only", "triton-only"])
def test_partitioned_program_computes_the_model(policy: str, dtype: torch.dtype) -> None:
    program, model, _ = block_program(dtype)
    record = partitioned(program, policy)
    run_passes(program, parse_passes(PARTITIONED))
    ops = list(program.entry.body.block.ops)
    graphs = [op for op in ops if isinstance(op, cudnn.GraphOp)]
    triton = [op for op in ops if isinstance(op, tcp.IsolatedGroupOp) and group_attr(op, GROUP_BACKEND_ATTR) == "triton"]
    chosen = Counter(g["backend"] for g in record["groups"])
    assert len(graphs) == chosen["cudnn"]
    # triton-fuse builds exactly the chosen kernels, plus a transpose of the NCHW input
    # where a cuDNN convolution reads it (priced as the candidate's layout_ms)
    edge = [g for g in triton if group_attr(g, "kind") == "transpose"]
    assert len(triton) - len(edge) == chosen["triton"]
    assert len(edge) <= sum(1 for g in record["groups"] if g["layout_ms"] > 0)
    assert "dnnc.part" not in program.text()
    loose = [
        op.name
        for op in ops
        if isinstance(op, tcp.TcpOp) and not isinstance(op, (*tcp.SOURCE_OPS, tcp.IsolatedGroupOp, tcp.ReshapeOp, cudnn.GraphOp))
    ]
    assert not loose, f"ops left outside any kernel: {loose}"
    for _ in range(2):  # fresh random inputs each time
        x = torch.randn(2, 3, 16, 16, dtype=dtype)
        assert_matches(run_reference(program, [x])[0], flat(eager_exact(model, [x]))[0], dtype)


def test_decision_record() -> None:
    program, _, _ = block_program(torch.float16)
    record = partitioned(program, "auto")
    assert record["policy"] == "auto" and record["measured"] is False
    covered = sorted(n for g in record["groups"] for n in g["nodes"])
    assert covered == list(range(record["totals"]["nodes"])), "every op in exactly one group"
    t = record["totals"]
    assert t["chosen_ms"] <= min(t["cudnn_only_ms"], t["triton_only_ms"]) + 1e-12
    for g in record["groups"]:
        assert g["why"] and g["cost_ms"] >= 0 and {"backend", "kind", "ops", "alternatives"} <= set(g)


def test_explain_output_structure() -> None:
    program, _, _ = block_program(torch.float16)
    record = partitioned(program, "auto")
    lines = list(explain_lines(record))
    assert lines[0].startswith("policy: auto") and "roofline estimates" in lines[0]
    assert lines[1] == GROUP_HEADER
    assert sum(1 for line in lines if line.strip().startswith("why:")) == len(record["groups"])
    for label in ("chosen cover", "cudnn-only cover", "triton-only cover", "uncorrected roofline"):
        assert any(label in line for line in lines), label
    assert lines[-1] == "estimate vs measurement: nothing measured"
    short = list(explain_lines(record, alternatives=False))
    assert not any("why:" in line for line in short) and len(short) < len(lines)


def test_explain_command(tmp_path) -> None:
    record_path = tmp_path / "decisions.json"
    result = CliRunner().invoke(
        main,
        [
            "explain",
            "dnnc.models:resnet50",
            "--arg",
            "batch=1",
            "--arg",
            "image_size=64",
            "--dtype",
            "f16",
            "--backends",
            "cudnn,triton",
            "--no-alternatives",
            "--json",
            str(record_path),
        ],
    )
    assert result.exit_code == 0, result.output
    assert GROUP_HEADER in result.output and "chosen cover" in result.output
    record = json.loads(record_path.read_text())
    assert {g["backend"] for g in record["groups"]} <= {"cudnn", "triton", "view"}
    bad = CliRunner().invoke(main, ["explain", "dnnc.models:resnet50", "--policy", "fastest"])
    assert bad.exit_code != 0 and "fastest" in bad.output


def test_measurement_key_changes_with_every_input(monkeypatch) -> None:
    from dnnc.partition.pricing import identity

    program, _, _ = block_program(torch.float16)
    nodes = graph_nodes(program.entry.body.block)
    cands = [c for c in enumerate_candidates(nodes, BACKENDS, "auto") if c.backend == "cudnn"]
    a, b = cands[0], cands[1]
    text = identity(a, program.params)[2]
    base = measurement_key(a, text)
    assert measurement_key(a, text) == base, "stable"
    assert measurement_key(b, identity(b, program.params)[2]) != base, "group text and kind"
    with knobs.override(autotune=not knobs.get().autotune):
        assert measurement_key(a, text) != base, "autotune setting"
    from dnnc import version

    versions = version.library_versions
    monkeypatch.setattr(version, "library_versions", lambda: {"torch": "0.0", "triton": None, "cudnn": None})
    assert measurement_key(a, text) != base, "library versions"
    monkeypatch.setattr(version, "library_versions", versions)
    assert measurement_key(a, text) == base
    monkeypatch.setattr(version, "__version__", "9.9.9")
    assert measurement_key(a, text) != base, "dnnc version"


def test_groups_known_to_lower_are_not_lowered_again(monkeypatch, own_cache) -> None:
    """A warm compile skips the lowering check of groups that lowered before (only
    successes are remembered: a group that failed is checked again)."""
    from dnnc.partition import memo
    from dnnc.partition.pricing import price

    program, _, _ = block_program(torch.float16)
    nodes = graph_nodes(program.entry.body.block)
    first, report = price(enumerate_candidates(nodes, BACKENDS, "auto"), program.params, H100)
    assert report.lowered > 0

    def refuse(c, params):
        raise AssertionError(f"{c.label} lowered again")

    monkeypatch.setattr(memo, "lower_alone", refuse)
    again, report_again = price(enumerate_candidates(nodes, BACKENDS, "auto"), program.params, H100)
    assert len(again) == len(first) and report_again.lowered == report.lowered


def test_measurement_rounds_time_each_distinct_group_once(monkeypatch, own_cache) -> None:
    """The GPU timing is replaced by a fake (twice the estimate; the first cuDNN group
    asked for fails): the rounds time only groups of the current best covers, each distinct
    group once, drop the one that fails, and stop when the covers are all measured."""
    from dnnc.partition import pricing
    from dnnc.partition.candidates import policy_candidates
    from dnnc.partition.partitioner import MEASURE_MARGIN, measure_what_matters
    from dnnc.partition.pricing import PricingReport, identity, price
    from dnnc.roofline import H100

    program, _, _ = block_program(torch.float16)
    nodes = graph_nodes(program.entry.body.block)
    priced, report = price(enumerate_candidates(nodes, BACKENDS, "auto"), program.params, H100)
    timed: list[tuple[str, str, str]] = []
    failed: set[tuple[str, str, str]] = set()

    autotune_seen: set[bool] = set()

    def fake_time(c, lowered, device, report: PricingReport):
        assert isinstance(lowered, Program), "timed as lowered alone"
        autotune_seen.add(knobs.get().autotune)
        timed.append(identity(c, program.params))
        if c.backend == "cudnn" and not failed:
            failed.add(identity(c, program.params))
            return "fails here"
        return 2 * c.estimated_ms

    monkeypatch.setattr(pricing, "_time", fake_time)
    monkeypatch.setattr(pricing, "_precompile", lambda programs, device: None)
    preds = node_preds(nodes)
    kept = measure_what_matters(preds, priced, program.params, report)
    assert timed and len(timed) == len(set(timed)), "each distinct group timed once"
    assert autotune_seen == {False}, "candidates are timed untuned (knobs.measure_autotune is off)"
    assert failed and any("(fails here)" in d for d in report.dropped)
    costs = {}
    for policy in ("auto", "cudnn-only", "triton-only"):
        allowed = policy_candidates(kept, policy)
        cover = best_cover(preds, [(c.mask, c.cost_ms) for c in allowed])
        costs[policy] = cover.cost
        if cover.cost > MEASURE_MARGIN * costs["auto"]:
            continue
        for i in cover.chosen:
            c = allowed[i]
            assert c.measured_ms is not None or c.backend not in ("cudnn", "triton"), f"{policy}: {c.label} unmeasured"
            assert c.identity not in failed, f"{policy}: {c.label} failed to run but was chosen"
    assert min(costs.values()) == costs["auto"]
    assert len(timed) < sum(1 for c in priced if c.backend in ("cudnn", "triton")), "not every candidate is timed"


def test_a_cover_priced_far_above_the_cheapest_is_not_measured(own_cache) -> None:
    """A single-backend policy's cover priced over ``MEASURE_MARGIN`` times the cheapest
    gives no groups to measure; within it, its groups are measured beside ``auto``'s."""
    from dnnc.partition import memo
    from dnnc.partition.candidates import policy_candidates
    from dnnc.partition.partitioner import MEASURE_MARGIN, covers_worth_measuring
    from dnnc.partition.pricing import price
    from dnnc.roofline import H100

    program, _, _ = block_program(torch.float16)
    nodes = graph_nodes(program.entry.body.block)
    priced, _ = price(enumerate_candidates(nodes, BACKENDS, "auto"), program.params, H100)
    preds = node_preds(nodes)
    with memo.one_compile():
        everything = covers_worth_measuring(preds, priced)
        assert len(everything) == 3, "at the estimates, every policy's cover is within the margin"
        auto = [id(c) for c in everything[0]]
        for c in priced:
            if c.backend == "triton" and id(c) not in auto:
                c.cost_ms *= 10 * MEASURE_MARGIN  # the Triton groups auto does not use cost far more
        triton_only = best_cover(preds, [(c.mask, c.cost_ms) for c in policy_candidates(priced, "triton-only")])
        kept = covers_worth_measuring(preds, priced)
    assert len(kept) == 2 and [id(c) for c in kept[0]] == auto
    assert triton_only.cost > MEASURE_MARGIN * sum(c.cost_ms for c in everything[0])


def test_extract_is_name_free() -> None:
    """Two identical blocks give one text (so they are measured once)."""
    program, _, _ = block_program()
    nodes = graph_nodes(program.entry.body.block)
    convs = [op for op in nodes if isinstance(op, tcp.Conv2dOp)]
    texts = {extract([c], program.params).text() for c in convs}
    assert len(texts) == len({(str(c.operands[0].type), str(c.operands[1].type)) for c in convs})


def test_roofline_counts_fusion_in_bytes() -> None:
    program, _, _ = block_program(torch.float16)
    nodes = graph_nodes(program.entry.body.block)
    conv = next(op for op in nodes if isinstance(op, tcp.Conv2dOp))
    chain = [conv, *[u.operation for u in conv.results[0].uses]]
    alone, fused = work_of([conv]), work_of(chain)
    assert fused.flops > alone.flops
    assert fused.bytes < work_of([conv]).bytes + work_of(chain[1:]).bytes, "the conv result no longer goes to memory"
    assert estimate_ms(fused, "cudnn", "conv_bias", H100) > 0
    assert peaks_for("NVIDIA H100 80GB HBM3") is H100 and not peaks_for(None).measured


def test_a_cover_two_policies_share_is_built_once(monkeypatch) -> None:
    from types import SimpleNamespace

    from dnnc.partition import contest

    built: list[str] = []

    def fake_build(program, build):
        built.append(build.name)
        return contest.Built(None, f"{build.name} executor", {"auto": 2.0, "cudnn-only": 3.0}[build.name])

    monkeypatch.setattr(contest, "build_and_time", fake_build)
    same = ("the same groups", "the same configs")
    contenders = {
        "auto": (1.0, SimpleNamespace(name="auto", cover=same)),
        "cudnn-only": (1.1, SimpleNamespace(name="cudnn-only", cover=("other groups", ()))),
        "triton-only": (1.0, SimpleNamespace(name="triton-only", cover=same)),
    }
    winner, report, fastest = contest.contest(None, contenders)
    assert built == ["auto", "cudnn-only"], "triton-only's cover is auto's: its program is not built again"
    assert winner == "auto" and fastest is not None and fastest.executor == "auto executor"
    assert report["triton-only"] == {"predicted_ms": 1.0, "program_ms": 2.0, "same_program_as": "auto"}
    totals = dict.fromkeys(("chosen_ms", "cudnn_only_ms", "triton_only_ms", "estimated_ms"), 1.0)
    totals |= {
        "nodes": 3,
        "candidates": 5,
        "unique_lowered": 2,
        "measured": 5,
        "dropped": [],
        "search_states": 9,
        "pricing_s": 0.1,
    }
    record = {
        "measured": True,
        "policy": "auto",
        "device": "GPU X",
        "groups": [],
        "totals": totals,
        "programs": {"winner": winner, "contenders": report},
        "estimate_error": {"count": 0},
    }
    shown = [line for line in explain_lines(record) if line.strip().startswith("triton-only  predicted")]
    assert shown and "measured" in shown[0] and "the same program as auto's" in shown[0], shown


def test_contest_times_close_contenders_and_takes_the_fastest(monkeypatch) -> None:
    from dnnc.partition import contest

    times = {"auto": 3.0, "cudnn-only": 1.0, "broken": None}
    built: list[str] = []

    def fake_build(program, build):
        built.append(build)
        return contest.Built(None, f"{build} executor", times[build]) if times[build] is not None else None

    monkeypatch.setattr(contest, "build_and_time", fake_build)
    contenders = {
        "auto": (1.0, "auto"),
        "cudnn-only": (1.2, "cudnn-only"),
        "broken": (1.1, "broken"),
        "far": (2.0, "far"),
        "just over": (1.3, "just over"),
    }
    winner, report, fastest = contest.contest(None, contenders)
    assert winner == "cudnn-only", "the fastest program wins, not the cheapest prediction"
    assert fastest is not None and fastest.executor == "cudnn-only executor", "the winner as it was built comes back"
    assert built == ["auto", "cudnn-only", "broken"], "only contenders within the margin are built"
    assert "skipped" in report["far"] and report["broken"]["program_ms"] is None
    assert report["just over"]["skipped"] == "predicted over 1.25x the cheapest cover"
    assert contest.contest(None, {"broken": (1.0, "broken")})[:3:2] == ("broken", None), "nothing timed: the first stands"


def test_the_triton_only_program_is_built_only_within_its_tighter_margin(monkeypatch) -> None:
    """``contest.MARGINS``: a Triton-only program predicted 1.2x the cheapest is not built
    (none such has won), a cuDNN-only one predicted the same is; within 1.1x both are."""
    from dnnc.partition import contest

    built: list[str] = []
    monkeypatch.setattr(contest, "build_and_time", lambda program, build: built.append(build) or contest.Built(None, build, 1.0))
    contenders = {"auto": (1.0, "auto"), "cudnn-only": (1.2, "cudnn-only"), "triton-only": (1.2, "triton-only")}
    _, report, _ = contest.contest(None, contenders)
    assert built == ["auto", "cudnn-only"]
    assert report["triton-only"]["skipped"] == "predicted over 1.1x the cheapest cover"
    built.clear()
    contest.contest(None, {**contenders, "triton-only": (1.08, "triton-only")})
    assert built == ["auto", "cudnn-only", "triton-only"]


def _contending(monkeypatch, fastest: str) -> tuple[Program, dict[str, Counter]]:
    """The conv block's program, and the kernels of each contender the contest builds
    (GPU timing replaced: each is checked on the reference backend; ``fastest`` times
    fastest)."""
    from dnnc.partition import contest

    program, model, _ = block_program(torch.float16)
    x = torch.randn(2, 3, 16, 16, dtype=torch.float16)
    expected = flat(eager_exact(model, [x]))[0]
    kernels: dict[str, Counter] = {}

    def fake_build(program, build):
        built = contest.contender_program(program, build)
        assert_matches(run_reference(built, [x])[0], expected, torch.float16)
        kernels[build.policy] = _kernels(built)
        return contest.Built(built, None, 1.0 if build.policy == fastest else 2.0)

    monkeypatch.setattr(contest, "build_and_time", fake_build)
    return program, kernels


@pytest.mark.parametrize("fastest", ["auto", "cudnn-only", "triton-only"])
def test_auto_realizes_the_fastest_whole_program(monkeypatch, own_cache, fastest: str) -> None:
    """GPU timing replaced: each contending program is built on a copy (checked by
    running it on the reference backend) from the candidates priced once, and the
    fastest policy's cover is the one ``auto`` realizes, with the contest in its record."""
    from dnnc.partition import contest, partitioner
    from dnnc.partition.pricing import price

    monkeypatch.setattr(partitioner, "should_measure", lambda: True)
    monkeypatch.setattr(partitioner, "measure_what_matters", lambda preds, cands, params, report: cands)
    pricings: list[int] = []
    monkeypatch.setattr(partitioner, "price", lambda cands, *a: pricings.append(len(cands)) or price(cands, *a))
    program, kernels = _contending(monkeypatch, fastest)
    monkeypatch.setattr(contest, "MARGIN", 100.0)
    monkeypatch.setattr(contest, "MARGINS", {})
    record = partitioned(program, "auto")
    assert set(kernels) == {"auto", "cudnn-only", "triton-only"}
    assert len(pricings) == 1, "the contenders' covers come from the one pricing"
    assert record["programs"]["winner"] == fastest and record["policy"] == "auto"
    run_passes(program, parse_passes(PARTITIONED))
    assert _kernels(program) == kernels[fastest], "the realized program is the fastest contender's"
    assert any(line.startswith("whole programs on the GPU") for line in explain_lines(record))
    # compiled again: the winner comes from the contest cache, nothing is built
    kernels.clear()
    again, _, _ = block_program(torch.float16)
    cached = partitioned(again, "auto")
    assert not kernels and cached["programs"]["cached"] and cached["programs"]["winner"] == fastest


def test_near_ties_are_swapped_in_one_more_contending_program(monkeypatch, own_cache) -> None:
    """GPU timing replaced: where a chosen group's rival from the other backend measured
    within ``TIE`` of it, ``auto``'s cover with those groups swapped is one more whole
    program in the contest (right on the reference backend); when it runs fastest its
    cover is realized, as ``auto``'s."""
    from dnnc.partition import partitioner

    def tied(preds, cands, params, report):
        for c in cands:
            if c.role is not None:
                c.measured_ms = c.cost_ms = 1.0
        return cands

    monkeypatch.setattr(partitioner, "should_measure", lambda: True)
    monkeypatch.setattr(partitioner, "measure_what_matters", tied)
    program, kernels = _contending(monkeypatch, partitioner.TIES_SWAPPED)
    record = partitioned(program, "auto")
    assert partitioner.TIES_SWAPPED in kernels and kernels[partitioner.TIES_SWAPPED] != kernels["auto"]
    assert record["programs"]["winner"] == partitioner.TIES_SWAPPED and record["policy"] == "auto"
    run_passes(program, parse_passes(PARTITIONED))
    assert _kernels(program) == kernels[partitioner.TIES_SWAPPED]


def test_the_compile_goes_on_with_the_contest_winner_as_built(monkeypatch, own_cache) -> None:
    """GPU timing replaced: ``lower_for_gpu`` gives back the winning contender's executor
    and the program becomes the one the contest built (not lowered again), with the
    decision record and the sites a spec speaks about; a warm compile (winner cached)
    builds no contender and lowers the program itself."""
    from dnnc.partition import contest, partitioner
    from dnnc.partition.spec_facts import marked_sites
    from dnnc.pipeline import lower_for_gpu

    monkeypatch.setattr(partitioner, "should_measure", lambda: True)
    monkeypatch.setattr(partitioner, "measure_what_matters", lambda preds, cands, params, report: cands)
    monkeypatch.setattr(contest, "MARGIN", 100.0)
    monkeypatch.setattr(contest, "MARGINS", {})
    times = {"auto": 2.0, "cudnn-only": 1.0, "triton-only": 3.0}
    built: dict[str, Program] = {}

    def fake_build(program, build):
        built[build.policy] = contest.contender_program(program, build)
        return contest.Built(built[build.policy], f"{build.policy} executor", times[build.policy])

    monkeypatch.setattr(contest, "build_and_time", fake_build)
    program, model, _ = block_program(torch.float16)
    program.base_dir = own_cache  # where an IR file's relative paths (user kernels) start
    x = torch.randn(2, 3, 16, 16, dtype=torch.float16)
    expected = flat(eager_exact(model, [x]))[0]
    with knobs.override(partition="auto"):
        executor = lower_for_gpu(program, backends=["cudnn", "triton"])
    record = program.metadata["decisions"]
    winner = record["programs"]["winner"]
    assert winner == min(built, key=times.__getitem__), "the fastest of the programs built (a shared cover is built once)"
    assert executor == f"{winner} executor"
    assert all(b.base_dir == own_cache for b in built.values()), "contenders resolve paths as the program does"
    assert program.module is built[winner].module and program.params is built[winner].params
    assert record["policy"] == "auto"
    assert list(marked_sites(program)), "the contender carries the spec sites, as the partitioned module does"
    assert_matches(run_reference(program, [x])[0], expected, torch.float16)

    built.clear()
    again, _, _ = block_program(torch.float16)
    with knobs.override(partition="auto"):
        assert lower_for_gpu(again, backends=["cudnn", "triton"]) is None
    assert not built and again.metadata["decisions"]["programs"]["cached"]
    assert _kernels(again) == _kernels(program), "the cached winner's cover, lowered here"


def test_contest_key_changes_with_every_input() -> None:
    from dnnc.partition.contest import contest_key

    program, _, _ = block_program(torch.float16)
    other, _, _ = block_program(torch.float32)
    base = contest_key(program.module, BACKENDS)
    assert contest_key(program.module, BACKENDS) == base
    assert contest_key(other.module, BACKENDS) != base, "program text"
    assert contest_key(program.module, ("triton",)) != base, "backends"
    with knobs.override(autotune=not knobs.get().autotune):
        assert contest_key(program.module, BACKENDS) != base, "autotune setting"


def test_a_cached_time_is_used_without_lowering_or_timing(monkeypatch, own_cache) -> None:
    from dnnc.partition import measure, memo, pricing
    from dnnc.partition.pricing import PricingReport, identity, price

    program, _, _ = block_program(torch.float16)
    nodes = graph_nodes(program.entry.body.block)
    priced, _ = price(enumerate_candidates(nodes, BACKENDS, "auto"), program.params, H100)
    c = next(c for c in priced if c.backend == "cudnn")
    with knobs.override(autotune=False):  # candidates are timed untuned (knobs.measure_autotune off)
        measure._CACHE.put_json(measurement_key(c, identity(c, program.params)[2]), {"ms": 0.25})
    monkeypatch.setattr(memo, "lower_alone", lambda *a: pytest.fail("lowered a group whose time is cached"))
    monkeypatch.setattr(pricing, "_time", lambda *a: pytest.fail("timed a group whose time is cached"))
    pricing.measure([c], priced, program.params, PricingReport(), {})
    assert c.measured_ms == 0.25


def _kernels(program: Program) -> Counter:
    return Counter(
        group_attr(op, "kind") or op.name
        for op in program.entry.body.block.ops
        if isinstance(op, cudnn.GraphOp | tcp.IsolatedGroupOp)
    )


class BreakReturn:
    """A pass that makes invalid IR: the function returns a value of another type."""

    name = "break-return"

    @classmethod
    def from_spec(cls, spec):
        return cls()

    def apply(self, ctx, module) -> None:
        from xdsl.dialects import func

        fn = next(op for op in module.ops if isinstance(op, func.FuncOp))
        ret = fn.body.block.last_op
        ret.operands = [fn.body.block.args[0]] * len(ret.operands)


def test_a_contender_made_invalid_names_the_pass_that_broke_it(monkeypatch) -> None:
    """Contenders are verified once, after the partitioned stages; when that fails, the
    stages run again on a fresh copy, verified after each pass, to name the one."""
    from dnnc import passes
    from dnnc.errors import PassError
    from dnnc.partition import contest
    from dnnc.passes import stages

    program, _, _ = block_program(torch.float16)
    monkeypatch.setattr(stages, "PARTITIONED", "dce,break-return,dce")
    monkeypatch.setattr(passes, "PASSES", {**{n: passes.PASSES[n] for n in ("dce",)}, "break-return": BreakReturn})
    before = program.text()
    with pytest.raises(PassError, match="pass break-return produced invalid IR"):
        contest.contender_program(program, lambda copy, ops, store: None)
    assert program.text() == before, "the program itself is left as it was"
    with knobs.override(verify_each_pass=False):
        contest.contender_program(program, lambda copy, ops, store: None)  # not verified at all


def partitioned_by_spec(model: nn.Module, spec: str, tmp_path) -> tuple[nn.Module, Program, dict]:
    """``model`` in float16 on a 2x8x6x6 input, partitioned under ``auto`` with only the
    tuning spec ``spec`` (TOML text) deciding: the model, the program, the decision record."""
    path = tmp_path / "spec.toml"
    path.write_text(spec)
    torch.manual_seed(0)
    model = model.eval().half()
    program = compile_program(model, [torch.randn(2, 8, 6, 6, dtype=torch.float16)])
    with knobs.override(tuning_specs=str(path), tuning_spec_defaults=False):
        record = partitioned(program, "auto")
    return model, program, record


class ResidualChain(nn.Module):
    """Two residual 1x1 blocks: ``relu(conv(y) + y)`` twice, channels 8 -> 8."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Conv2d(8, 8, 1)
        self.a = nn.Conv2d(8, 8, 1)
        self.b = nn.Conv2d(8, 8, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.stem(x))
        y = torch.relu(self.a(y) + y)
        return torch.relu(self.b(y) + y)


CONV_ALONE_SPEC = """schema = 1
mode = "replace"

[[record]]
match = { kind = "conv", dtype = ["f16"], input = ["*", 8, 6, 6], weight = [8, 8, 1, 1] }
decision = { backend = "cudnn" }
"""


def test_elementwise_code_between_cudnn_convolutions_runs_channels_last(tmp_path) -> None:
    """Each convolution alone on cuDNN (a spec says so), its bias, residual add and ReLU on
    Triton: those kernels read and write the channels-last tensors the convolutions
    exchange; the residual stream is not kept NCHW beside them (a kernel writing both
    layouts, one read against the other)."""
    model, program, record = partitioned_by_spec(ResidualChain(), CONV_ALONE_SPEC, tmp_path)
    assert Counter(g["kind"] for g in record["groups"] if g["backend"] == "cudnn") == {"conv": 3}
    run_passes(program, parse_passes(PARTITIONED))
    triton = [
        op
        for op in program.entry.body.block.ops
        if isinstance(op, tcp.IsolatedGroupOp) and group_attr(op, GROUP_BACKEND_ATTR) == "triton"
    ]
    assert all(len(group.results) == 1 for group in triton)
    # the input's transpose to NHWC and the output's back to NCHW, nothing between
    transposes = [op for op in program.entry.body.walk() if isinstance(op, tcp.TransposeOp)]
    assert len(transposes) == 2, program.text()
    for _ in range(2):
        x = torch.randn(2, 8, 6, 6, dtype=torch.float16)
        assert_matches(run_reference(program, [x])[0], flat(eager_exact(model, [x]))[0], torch.float16)


class TritonResiduals(nn.Module):
    """A cuDNN 1x1 stem, two residual 1x1 blocks, a 3x3 convolution: ResNet's bottleneck
    stream in small."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Conv2d(8, 16, 1)
        self.a = nn.Conv2d(16, 16, 1)
        self.b = nn.Conv2d(16, 16, 1)
        self.c = nn.Conv2d(16, 16, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.stem(x))
        y = torch.relu(self.a(y) + y)
        y = torch.relu(self.b(y) + y)
        return self.c(y)


TRITON_RESIDUALS_SPEC = """schema = 1
mode = "replace"

[[record]]
match = { kind = "conv", dtype = ["f16"], input = ["*", 16, 6, 6], weight = [16, 16, 1, 1] }
decision = { backend = "triton", config = { BLOCK_M = 64, BLOCK_N = 16, BLOCK_K = 16, num_warps = 4, num_stages = 3 } }

[[record]]
match = { kind = "conv_bias_relu", dtype = ["f16"], input = ["*", 8, 6, 6] }
decision = { backend = "cudnn" }

[[record]]
match = { kind = "conv_bias", dtype = ["f16"], input = ["*", 16, 6, 6], weight = [16, 16, 3, 3] }
decision = { backend = "cudnn" }
"""


def test_triton_residual_convolutions_between_cudnn_ones_exchange_channels_last(tmp_path) -> None:
    """The residual 1x1 convolutions on Triton (a spec says so) between cuDNN ones: each
    kernel reads the NHWC stream (input and residual) and stores NHWC, so no transpose
    kernel runs between them; only the program's input and output are transposed."""
    model, program, record = partitioned_by_spec(TritonResiduals(), TRITON_RESIDUALS_SPEC, tmp_path)
    assert Counter((g["backend"], g["kind"]) for g in record["groups"]) == {
        ("cudnn", "conv_bias_relu"): 1,
        ("triton", "conv2d"): 2,
        ("cudnn", "conv_bias"): 1,
    }
    run_passes(program, parse_passes(PARTITIONED))
    groups = [op for op in program.entry.body.block.ops if isinstance(op, tcp.IsolatedGroupOp)]
    convs = [g for g in groups if group_attr(g, "kind") == "conv2d"]
    assert len(convs) == 2
    for group in convs:
        assert [t.get_shape() for t in group.result_types] == [(2, 6, 6, 16)], group
    assert len(groups) == 4, program.text()  # the two convolutions, the edges' transposes
    for _ in range(2):
        x = torch.randn(2, 8, 6, 6, dtype=torch.float16)
        assert_matches(run_reference(program, [x])[0], flat(eager_exact(model, [x]))[0], torch.float16)


class _Projections(torch.nn.Module):
    """Query, key and value of one input, as an attention layer projects them."""

    def __init__(self) -> None:
        super().__init__()
        self.q, self.k, self.v = (torch.nn.Linear(32, 32) for _ in range(3))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.q(x) * self.k(x) + self.v(x)


def test_explain_prices_the_program_the_compile_partitions() -> None:
    """With the stages a compile runs before partitioning: the three projections are one
    merged product, as the compile runs them, not three."""
    from dnnc.api import explain

    record = explain(_Projections().eval(), (torch.randn(16, 32),), policy="auto", backends=("triton",))
    products = [g for g in record["groups"] if "matmul" in g["ops"]]
    assert len(products) == 1, [g["ops"] for g in record["groups"]]
    with knobs.override(merge_products=False):
        record = explain(_Projections().eval(), (torch.randn(16, 32),), policy="auto", backends=("triton",))
    assert len([g for g in record["groups"] if "matmul" in g["ops"]]) == 3
