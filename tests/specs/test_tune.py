"""``dnnc tune`` on the CPU: the partitioner's site marks survive to the built program,
each site becomes one record (exact facts, the plan or config it was built with,
version ranges, provenance), the written spec parses back, and applied to a fresh
compile it reproduces the same groups, plans and configs without measuring.
Identical sites decided differently are reported, not silently merged."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from click.testing import CliRunner
from xdsl.dialects.builtin import StringAttr

from dnnc import knobs
from dnnc.backends.interface import GROUP_BACKEND_ATTR, SITE_ATTR, group_attr
from dnnc.backends.triton.kernels import GroupInfo
from dnnc.backends.triton.launch import _unmarked_text, spec_or_candidates
from dnnc.ir import cudnn, tcp
from dnnc.ir.text import print_ir
from dnnc.passes import parse_passes
from dnnc.pipeline import PARTITIONED, run_passes
from dnnc.specs.format import Decision, Target, load_library
from dnnc.specs.match import GroupFacts
from dnnc.tuning.tune import (
    BuiltSite,
    built_sites,
    compare_groups,
    decision_differences,
    records_from,
    spec_text,
)
from tests.partition.test_partition_cpu import block_program, partitioned
from tests.specs.benchmarked import each_benchmarked_model, fp16_program

PLAN = {"engine": 5, "knobs": {"SPLIT_K": 1}, "name": "eng5_k3=1", "ms": 0.0123, "timed": 8}
CONFIG = {"BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 32, "num_warps": 4, "num_stages": 2}
VERSIONS = {"cudnn": "9.19.0", "triton": "3.6.0"}


@pytest.fixture(autouse=True)
def own_cache(tmp_path: Path, monkeypatch):
    """An empty cache, no shipped specs, and this machine taken for an H100 with the
    library versions the records were tuned with."""
    from dnnc.partition import spec_apply as apply
    from dnnc.specs.library import Device

    monkeypatch.setattr(apply, "local_device", lambda required=False: Device("sm_90", "NVIDIA H100 80GB HBM3", VERSIONS))
    with knobs.override(cache_dir=tmp_path / "cache", tuning_spec_defaults=False):
        yield


def _built(policy: str, spec: Path | None = None):
    """The block (fp16) partitioned under ``policy`` and lowered: the program, its
    decision record and stand-ins for what a GPU build leaves (plans, kernel configs)."""
    program, _, _ = block_program(torch.float16)
    with knobs.override(tuning_specs=str(spec) if spec else ""):
        record = partitioned(program, policy)
    run_passes(program, parse_passes(PARTITIONED))
    kernels = {}
    for op in program.entry.body.block.ops:
        if isinstance(op, cudnn.GraphOp) and op.plan is None:
            kernels[op] = SimpleNamespace(record=lambda: {"plan": PLAN}, tuned_ms=PLAN["ms"])
        if isinstance(op, tcp.IsolatedGroupOp) and group_attr(op, GROUP_BACKEND_ATTR) == "triton":
            config = spec_or_candidates(GroupInfo.of(op))[0]
            kernels[op] = SimpleNamespace(config=config, tuned_ms=0.004)
    return program, record, kernels


def _spec(tmp_path: Path, program, record, kernels) -> tuple[Path, list[BuiltSite]]:
    sites = built_sites(program, kernels)
    tuned = records_from(sites, record, Target("sm_90"), VERSIONS, {"by": "dnnc tune", "date": "2026-11-22"})
    assert not tuned.conflicts and not tuned.skipped
    path = tmp_path / "tuned.toml"
    path.write_text(spec_text(tuned, "block", "NVIDIA H100 80GB HBM3"))
    return path, sites


def test_cudnn_sites_become_records_that_reproduce_the_decisions(tmp_path: Path) -> None:
    program, record, kernels = _built("cudnn-only")
    path, sites = _spec(tmp_path, program, record, kernels)
    cudnn_sites = [s for s in sites if s.decision.backend == "cudnn"]
    assert [s.facts.kind for s in cudnn_sites] == ["conv", "conv_bias_add", "matmul_bias"], (
        "the stem, the residual conv, the head"
    )
    assert all(
        s.decision == Decision("cudnn", {"engine": 5, "tag": "eng5_k3=1", "knobs": {"SPLIT_K": 1}}) and s.kernel_ms == 0.0123
        for s in cudnn_sites
    )
    (library,) = load_library(path)
    assert len(library.records) == len({(s.facts.kind, s.facts.dtype, str(s.facts.shapes)) for s in sites})
    first = library.records[0]
    assert first.source.endswith("tuned.toml:5") and first.target == Target("sm_90")
    assert "9.19.0" in first.versions["cudnn"] and "9.20.0" not in first.versions["cudnn"], "one cuDNN minor release"
    assert first.provenance["by"] == "dnnc tune" and first.provenance["kernel_ms"] == 0.0123
    assert first.matcher.matches(first_facts := sites[0].facts) and first_facts.dtype == "f16"

    applied, again, kernels_again = _built("auto", path)
    assert again["specs"]["complete"] and not again["measured"]
    assert compare_groups(record, again).same
    assert decision_differences(sites, built_sites(applied, kernels_again)) == []
    plans = [json.loads(op.plan.data) for op in applied.entry.body.block.ops if isinstance(op, cudnn.GraphOp)]
    assert plans and all(p["engine"] == 5 and p["knobs"] == {"SPLIT_K": 1} for p in plans), "plans from the spec"


def test_triton_sites_carry_their_config(tmp_path: Path) -> None:
    program, record, kernels = _built("triton-only")
    path, sites = _spec(tmp_path, program, record, kernels)
    assert sites and all(s.decision.backend == "triton" and s.kernel_ms == 0.004 for s in sites)
    assert {s.facts.kind for s in sites} == {"conv", "matmul"}, "a Triton site is matched by its root alone"
    text = path.read_text()
    assert 'decision = { backend = "triton", config = {' in text
    ranges = [r.versions["triton"] for r in load_library(path)[0].records]
    assert all("3.6.0" in v and "3.0" in v and "4.0" not in v for v in ranges), "one Triton major release"
    applied, again, _ = _built("auto", path)
    assert again["specs"]["complete"] and compare_groups(record, again).same
    convs = [GroupInfo.of(op) for op in applied.entry.body.block.ops if isinstance(op, tcp.IsolatedGroupOp)]
    spec_configs = {json.dumps(spec_or_candidates(info)[0], sort_keys=True) for info in convs if info.kind == "conv2d"}
    tuned_configs = {json.dumps(s.decision.choice["config"], sort_keys=True) for s in sites if s.facts.kind == "conv"}
    assert spec_configs == tuned_configs


def test_identical_sites_decided_differently_are_reported() -> None:
    facts = GroupFacts("conv_bias_relu", "f16", {"input": (1, 64, 56, 56), "weight": (64, 64, 3, 3), "output": (1, 64, 56, 56)})
    a, b = Decision("cudnn", {"engine": 1}), Decision("cudnn", {"engine": 2})
    tuned = records_from(
        [BuiltSite(facts, 0, a), BuiltSite(facts, 1, a), BuiltSite(facts, 2, b), BuiltSite(facts, 3, None)],
        None,
        Target("sm_90"),
        {},
        {},
    )
    assert len(tuned.records) == 1 and tuned.records[0].decision == a
    assert tuned.conflicts == [
        "conv_bias_relu f16 input 1x64x56x56 weight 64x64x3x3 output 1x64x56x56 (group 2) was tuned to cudnn 2, "
        "but an identical group to cudnn 1; the spec keeps the first"
    ]
    assert tuned.skipped and "no choice known" in tuned.skipped[0]
    assert not tuned.records[0].versions, "no installed version known: no range"


def test_measured_times_become_provenance() -> None:
    facts = GroupFacts("matmul", "f16", {"input": (8, 768), "weight": (768, 768), "output": (8, 768)})
    group = {
        "measured_ms": 0.0101,
        "alternatives": [
            {"backend": "triton", "measured_ms": 0.02},
            {"backend": "triton", "measured_ms": 0.015},
            {"backend": "cudnn", "measured_ms": 0.011},
        ],
    }
    tuned = records_from([BuiltSite(facts, 0, Decision("cudnn"))], {"groups": [group]}, Target("sm_90"), VERSIONS, {})
    assert tuned.records[0].provenance == {"measured_ms": 0.0101, "baseline_ms": 0.015}
    assert not tuned.records[0].versions, "a cuDNN decision without a plan holds for any cuDNN"


def test_triton_config_choice_ignores_site_marks() -> None:
    program, _, _ = _built("triton-only")
    group = next(
        op for op in program.entry.body.block.ops if any(SITE_ATTR in inner.attributes for inner in op.walk() if inner is not op)
    )
    marked = print_ir(group)
    for inner in group.body.block.ops:
        inner.attributes.pop(SITE_ATTR, None)
    assert SITE_ATTR in marked and _unmarked_text(group, GroupInfo.of(group)) == print_ir(group)


def test_tune_refuses_without_a_gpu() -> None:
    from dnnc.cli import main

    if torch.cuda.is_available():
        pytest.skip("a GPU is visible")
    result = CliRunner().invoke(main, ["tune", "dnnc.models:conv_block", "-o", "x.toml"])
    assert result.exit_code != 0 and "measures on a GPU, and none is visible here" in result.output


def test_identical_convs_sharing_a_residual_add_are_reproduced(tmp_path: Path) -> None:
    """In a ResNet bottleneck with a projection, the shortcut conv and the last 1x1
    conv have the same shapes and both could take the residual add; only one does.
    Both prefixes stay priced by their records, so the cover picks as tuning did."""
    from dnnc.models import FACTORIES
    from tests.compile_helpers import compile_program

    def build(policy: str, spec: Path | None = None):
        model, (x,) = FACTORIES["resnet50"](batch=2, image_size=64)
        program = compile_program(model.half(), [x.half()])
        with knobs.override(tuning_specs=str(spec) if spec else ""):
            record = partitioned(program, policy)
        run_passes(program, parse_passes(PARTITIONED))
        for op in program.entry.body.block.ops:
            if isinstance(op, cudnn.GraphOp) and op.plan is None:
                op.plan = StringAttr(json.dumps(PLAN))
        return program, record

    program, record = build("cudnn-only")
    path, sites = _spec(tmp_path, program, record, {})
    kinds = [s.facts.kind for s in sites]
    assert "conv_bias_add_relu" in kinds and "conv_bias" in kinds
    applied, again = build("auto", path)
    assert again["specs"]["complete"] and not again["measured"]
    assert compare_groups(record, again).same
    assert decision_differences(sites, built_sites(applied, {})) == []


def test_groups_swapped_between_identical_sites_are_told_apart_from_other_differences() -> None:
    tuned = {
        "groups": [
            {"backend": "cudnn", "kind": "conv_bias_add_relu", "nodes": [4, 5, 14, 15]},
            {"backend": "cudnn", "kind": "conv_bias", "nodes": [12, 13]},
        ]
    }
    swapped = {
        "groups": [
            {"backend": "cudnn", "kind": "conv_bias", "nodes": [4, 5]},
            {"backend": "cudnn", "kind": "conv_bias_add_relu", "nodes": [12, 13, 14, 15]},
        ]
    }
    other = {"groups": [*swapped["groups"][:1], {"backend": "triton", "kind": "pointwise", "nodes": [12, 13, 14, 15]}]}
    assert compare_groups(tuned, tuned).same
    assert compare_groups(tuned, swapped).swapped
    comparison = compare_groups(tuned, other)
    assert not comparison.same and not comparison.swapped
    assert "with the spec only: triton pointwise at [12, 13, 14, 15]" in comparison.lines()


SHIPPED_SM90 = {
    "sm_90-resnet50.toml": 10,
    "sm_90-mobilenet_v2.toml": 31,
    "sm_90-gpt2.toml": 8,
    "sm_90-bert.toml": 13,
}
"""The shipped sm_90 libraries and their record counts."""


def _shipped_sm90() -> list:
    from dnnc.partition.spec_apply import DEFAULTS, default_layer

    return [(default_layer(lib), lib) for lib in load_library(DEFAULTS)]


def test_shipped_sm90_libraries_resolve_for_sm90_and_cudnn_919_only() -> None:
    """The shipped libraries (written by dnnc tune on an H100 or an H200) parse as arch-layer
    libraries, resolve without warnings on sm_90, give nothing to other architectures,
    and give up their cuDNN engine ids under another cuDNN minor release."""
    from dnnc.specs import resolve
    from dnnc.specs.library import Device

    libraries = _shipped_sm90()
    assert sorted((layer, Path(lib.path).name) for layer, lib in libraries) == sorted(("arch", n) for n in SHIPPED_SM90)
    resolved = resolve(libraries, Device("sm_90", "NVIDIA H200", VERSIONS))
    assert not resolved.warnings and len(resolved.records) == sum(SHIPPED_SM90.values())
    assert not resolve(libraries, Device("sm_80", "NVIDIA A100", VERSIONS)).records, "not for other architectures"
    newer = resolve(libraries, Device("sm_90", "NVIDIA H100", {"cudnn": "9.20.0", "triton": "3.6.0"}))
    assert all(r.decision.backend == "triton" for r in newer.records) and newer.warnings, "engine ids hold for cuDNN 9.19"


@each_benchmarked_model
def test_shipped_sm90_libraries_decide_every_group_of_the_benchmarked_models(
    factory: str, args: dict, site_count: int, undecided: tuple[str, ...]
) -> None:
    """One record applies at every cuDNN-rootable group of each fp16 model the
    benchmark suite compiles on sm_90 but those named, which the compile measures."""
    from dnnc.partition.spec_facts import facts_of, first_match, sites
    from dnnc.specs import resolve
    from dnnc.specs.library import Device

    resolved = resolve(_shipped_sm90(), Device("sm_90", "NVIDIA H100 80GB HBM3", VERSIONS))
    found = sites(fp16_program(factory, args))
    left = [facts_of(s.prefixes[0]) for s in found if first_match(resolved.records, s.prefixes) is None]
    named = tuple(
        f"{f.kind} {'x'.join(map(str, f.shapes['input']))} weight {'x'.join(map(str, f.shapes['weight']))}" for f in left
    )
    assert len(found) == site_count and named == undecided, named
