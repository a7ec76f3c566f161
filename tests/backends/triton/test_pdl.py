"""Programmatic Dependent Launch on the CPU: which configs carry ``PDL`` (a kernel after
another Triton kernel in any config, after a cuDNN matrix product in a config of one wave,
``triton-launch-order``; Hopper and later; the setting on), what a kernel so configured
looks like (a wait at its first line, in
every kind, and ``launch_pdl`` among its compile options), what a tuning spec keeps of it
(nothing) and what an artifact's record may say. Compiled for sm_90 in
``test_compile.py``; run on a GPU in ``test_pdl_gpu.py``."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest
from xdsl.dialects.builtin import StringAttr

from dnnc import knobs
from dnnc.backends.triton.configs import (
    AFTER_LIBRARY,
    AFTER_TRITON,
    LAUNCH_EARLY_ATTR,
    ONE_WAVE_FOLLOWER_PROGRAMS,
    candidates,
    config_problem,
    with_launch,
)
from dnnc.backends.triton.fusion import TritonFuse
from dnnc.backends.triton.kernels import GroupInfo, generate
from dnnc.backends.triton.launch import spec_or_candidates
from dnnc.backends.triton.spec_choice import TRITON_SPEC
from dnnc.ir import tcp
from dnnc.pipeline import run_passes
from tests.backends.triton.cases import CASES, Case


def _groups(cases: list[Case] = CASES) -> list[tcp.IsolatedGroupOp]:
    groups = []
    for case in cases:
        program = case.program("f16")
        run_passes(program, [TritonFuse()])
        groups += [g for g in program.entry.body.walk() if isinstance(g, tcp.IsolatedGroupOp)]
    return groups


@pytest.mark.parametrize(
    ("capability", "on", "pdl"), [(90, True, True), (100, True, True), (80, True, False), (None, True, False), (90, False, False)]
)
def test_pdl_where_the_gpu_has_it_and_the_setting_is_on(capability: int | None, on: bool, pdl: bool) -> None:
    with knobs.override(pdl=on):
        assert ("PDL" in with_launch({"BLOCK": 256, "num_warps": 4}, capability)) is pdl
        assert ("PDL" in with_launch({"BLOCK": 256, "PDL": 1}, capability)) is pdl, (
            "a recorded PDL is dropped where it cannot run"
        )


def test_every_config_offered_on_hopper_after_a_triton_kernel_is_launched_with_pdl() -> None:
    for group in _groups():
        info = GroupInfo.of(group)
        assert not any("PDL" in c for c in spec_or_candidates(info, 90)), f"{info.kind}: follows no Triton kernel"
        group.attributes[LAUNCH_EARLY_ATTR] = StringAttr(AFTER_TRITON)
        assert all(c.get("PDL") == 1 for c in spec_or_candidates(info, 90)), info.kind
        assert not any("PDL" in c for c in spec_or_candidates(info, 80)), info.kind
        assert not any("PDL" in c for c in spec_or_candidates(info)), "the interpreter launches plainly"


def _layer_norm_group(rows: int) -> tcp.IsolatedGroupOp:
    text = f"""func.func @forward(%x: tensor<{rows}x384xf16>, %w: tensor<384xf16>, %b: tensor<384xf16>) -> tensor<{rows}x384xf16> {{
  %n = tcp.layer_norm %x, %w, %b {{axis = 1 : i64, epsilon = 1.0e-05 : f64}} : tensor<{rows}x384xf16>, tensor<384xf16>
  func.return %n : tensor<{rows}x384xf16>
}}"""
    (group,) = _groups([Case("layer_norm", ("layer_norm",), text)])
    return group


@pytest.mark.parametrize("rows", [128, 1500, 8192])
def test_after_a_library_product_only_configs_of_one_wave_are_launched_with_pdl(rows: int) -> None:
    """A Whisper encoder's layer norm (1500 rows of 384) behind a cuDNN product: some of
    its configs fit one wave and some do not; BERT's at 1 x 128 all do."""
    group = _layer_norm_group(rows)
    info = GroupInfo.of(group)
    group.attributes[LAUNCH_EARLY_ATTR] = StringAttr(AFTER_LIBRARY)
    configs = spec_or_candidates(info, 90)
    programs = [math.prod(generate(group, c, info=info).grid) for c in configs]
    assert [c.get("PDL") == 1 for c in configs] == [p <= ONE_WAVE_FOLLOWER_PROGRAMS for p in programs]
    assert [{k: v for k, v in c.items() if k != "PDL"} for c in configs] == [
        {k: v for k, v in c.items() if k != "PDL"} for c in spec_or_candidates(GroupInfo.of(_layer_norm_group(rows)), 90)
    ], "the same configs, only the launch differs"
    if rows == 128:
        assert all(c.get("PDL") == 1 for c in configs)
    if rows == 8192:
        assert not any(c.get("PDL") == 1 for c in configs)
    assert not any("PDL" in c for c in spec_or_candidates(info, 80))


def test_a_kernel_launched_with_pdl_waits_at_its_first_line() -> None:
    kinds = set()
    for group in _groups():
        info = GroupInfo.of(group)
        config = candidates(info)[0]
        plain, launched = generate(group, config), generate(group, {**config, "PDL": 1})
        body = launched.text.split(f"def {launched.name}(", 1)[1].splitlines()
        assert body[1] == "    tl.extra.cuda.gdc_wait()", f"{info.kind}: the wait comes before any load"
        assert launched.text.count("gdc_wait") == 1 and "gdc_wait" not in plain.text
        assert launched.options == {**plain.options, "launch_pdl": True}
        assert launched.text.replace("    tl.extra.cuda.gdc_wait()\n", "") == plain.text, "nothing else changes"
        kinds.add(info.kind)
    assert {"pointwise", "matmul", "conv2d", "reduce", "attention"} <= kinds


def test_a_tuning_spec_records_no_launch_mode() -> None:
    kernel = SimpleNamespace(config={"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32, "PDL": 1})
    assert TRITON_SPEC.of_kernel(None, kernel) == {"config": {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32}}


def test_an_artifact_record_may_say_pdl_once() -> None:
    assert config_problem("PDL", 1) is None
    assert config_problem("PDL", 2) == "2: PDL is 1 where given"
