"""``boxes``: stride-1 3x3 convolutions of a channels-last input as Gluon implicit GEMMs on
4-D TMA boxes of the image: offered first on Hopper only, where a patch
of 128 pixels wastes little, its source built for sm_90 on a machine without a GPU, and
(on a Hopper GPU) computing what the reference computes in both float types on maps the
patches do not divide, in a program that is replayed, saved and loaded."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from dnnc.backends.triton import boxes, pingpong
from dnnc.backends.triton.configs import candidates, config_problem
from dnnc.backends.triton.emitter import CodegenError
from dnnc.backends.triton.kernels import generate
from dnnc.backends.triton.skeleton import GroupInfo
from dnnc.ir.params import ParamStore
from dnnc.ir.program import Program
from dnnc.ir.text import parse_ir
from dnnc.passes.stages import TRITON_ALONE_STAGE
from dnnc.pipeline import run_passes
from tests.backends.triton.helpers import (
    assert_group_kernel_matches_reference,
    capability,
    fused_group,
    replayed_saved_and_loaded,
    typed_program,
)
from tests.bench.sm90_build import compiled_json

pytestmark = pytest.mark.skipif(not pingpong.available(), reason="this Triton has no Gluon")


def box_ir(n: int, h: int, c: int, o: int, w: int | None = None, stride: int = 1) -> str:
    """A 3x3 convolution (padding 1) + bias + ReLU of an NHWC input by an OHWI weight, both
    brought to NCHW / OIHW in the group as ``triton-conv-weights`` leaves them, its result
    channels-last."""
    w = w or h
    ho, wo = (h - 1) // stride + 1, (w - 1) // stride + 1
    x, xt, wt, wc = f"{n}x{h}x{w}x{c}xT", f"{n}x{c}x{h}x{w}xT", f"{o}x3x3x{c}xT", f"{o}x{c}x3x3xT"
    y, yt, b = f"{n}x{o}x{ho}x{wo}xT", f"{n}x{ho}x{wo}x{o}xT", f"1x1x1x{o}xT"
    return f"""func.func @forward(%x: tensor<{x}>, %w: tensor<{wt}>, %b: tensor<{b}>) -> tensor<{yt}> {{
  %xt = tcp.transpose %x {{permutation = array<i64: 0, 3, 1, 2>}} : tensor<{x}> -> tensor<{xt}>
  %wo = tcp.transpose %w {{permutation = array<i64: 0, 3, 1, 2>}} : tensor<{wt}> -> tensor<{wc}>
  %c = tcp.conv2d %xt, %wo {{stride = array<i64: {stride}, {stride}>, padding = array<i64: 1, 1, 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64}} : (tensor<{xt}>, tensor<{wc}>) -> tensor<{y}>
  %t = tcp.transpose %c {{permutation = array<i64: 0, 2, 3, 1>}} : tensor<{y}> -> tensor<{yt}>
  %bb = tcp.broadcast %b : tensor<{b}> to tensor<{yt}>
  %a = tcp.add %t, %bb : tensor<{yt}>
  %r = tcp.clamp %a {{min = 0.0 : f64}} : tensor<{yt}>
  func.return %r : tensor<{yt}>
}}"""


def _info(ir: str, dtype: str = "f16") -> GroupInfo:
    return GroupInfo.of(fused_group(typed_program(ir, dtype, "window")))


def _offered(info: GroupInfo, capability: int | None = 90) -> list[dict]:
    return [c for c in candidates(info, capability) if "BOXES" in c]


def config(bn: int, box_h: int, stages: int) -> dict[str, int]:
    return {"BLOCK_M": 128, "BLOCK_N": bn, "BLOCK_K": 64, "num_warps": 4, "BOXES": stages, "BOX_H": box_h}


RESIDENT = {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 64, "num_warps": 4, "BOXES": 2, "BOX_H": 2}
"""The resident form of a 64 -> 64 convolution: 2 x 32 patches, the weight in shared memory."""


@pytest.mark.parametrize(
    "shape, offered",
    [
        ((32, 56, 64, 64), config(64, 8, boxes.STAGES_N64)),  # 56 x 64 computed
        ((32, 28, 128, 128), config(128, 4, boxes.STAGES_N128)),  # 28 x 32
        ((32, 14, 256, 256), config(128, 8, boxes.STAGES_N128)),  # 16 x 16, one wave
        ((128, 28, 128, 128), config(128, 4, boxes.STAGES_N128)),
    ],
    ids=["56x56", "28x28", "14x14-b32", "28x28-b128"],
)
def test_resnet_3x3_convolutions_are_offered_one_first_on_hopper_only(shape, offered) -> None:
    """First: it prices the group in the partitioner's rounds (a 64 -> 64 one the resident
    form first, where this Triton builds it)."""
    info = _info(box_ir(*shape))
    hopper = candidates(info, 90)
    resident = [RESIDENT] if shape[2:] == (64, 64) and boxes.resident_available() else []
    assert _offered(info) == [*resident, offered] and hopper[: len(resident) + 1] == [*resident, offered]
    for elsewhere in (None, 80, 100):
        assert not _offered(info, elsewhere)


@pytest.mark.parametrize(
    "shape",
    [(128, 14, 256, 256), (32, 7, 512, 512), (1, 56, 64, 64)],
    ids=["14x14-b128", "7x7", "b1"],
)
def test_patches_that_waste_much_or_fill_few_sms_are_not_offered(shape) -> None:
    """14 x 14 computed as 16 x 16 over several waves, 7 x 7 in a 128-pixel patch, and
    fewer tiles than half the SMs."""
    info = _info(box_ir(*shape))
    assert boxes.plan_of(info) is not None
    assert not _offered(info)


@pytest.mark.parametrize(
    "ir",
    [box_ir(8, 14, 48, 64), box_ir(8, 14, 64, 96), box_ir(8, 14, 64, 64, stride=2)],
    ids=["channels-48", "outputs-96", "stride-2"],
)
def test_convolutions_it_does_not_fit_have_no_plan(ir: str) -> None:
    assert boxes.plan_of(_info(ir)) is None


def partitioned(n: int, h: int, c: int, o: int, rng: torch.Generator) -> Program:
    """A 3x3 convolution + bias + ReLU of an NCHW input, partitioned to Triton
    (``dnnc.part``) with its weight and bias parameters, lowered as the partitioner lowers
    a candidate alone (``TRITON_ALONE_STAGE``: channels-last at its edges)."""
    x, y = f"{n}x{c}x{h}x{h}xf16", f"{n}x{o}x{h}x{h}xf16"
    ir = f"""func.func @forward(%x: tensor<{x}>) -> tensor<{y}> {{
  %w = tcp.param @w : tensor<{o}x{c}x3x3xf16>
  %b = tcp.param @b : tensor<1x{o}x1x1xf16>
  %c = tcp.conv2d %x, %w {{dnnc.part = 0 : i64, stride = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64}} : (tensor<{x}>, tensor<{o}x{c}x3x3xf16>) -> tensor<{y}>
  %bb = tcp.broadcast %b {{dnnc.part = 0 : i64}} : tensor<1x{o}x1x1xf16> to tensor<{y}>
  %a = tcp.add %c, %bb {{dnnc.part = 0 : i64}} : tensor<{y}>
  %r = tcp.clamp %a {{dnnc.part = 0 : i64, min = 0.0 : f64}} : tensor<{y}>
  func.return %r : tensor<{y}>
}}"""
    params = ParamStore()
    params.add("w", (torch.randn(o, c, 3, 3, generator=rng) / (3 * c**0.5)).half())
    params.add("b", torch.randn(1, o, 1, 1, generator=rng).half())
    program = Program(parse_ir(ir, "window"), params)
    run_passes(program, TRITON_ALONE_STAGE)
    return program


def test_the_partitioners_3x3_group_is_one_with_its_ohwi_weight(rng: torch.Generator) -> None:
    """The group a partitioned 3x3 convolution becomes (``triton-channels-last``, then
    ``triton-conv-weights`` and ``triton-fuse``): handed channels-last, its weight parameter
    stored OHWI, read as the ``O x 9C`` matrix."""
    program = partitioned(32, 28, 128, 128, rng)
    (group,) = [op for op in program.entry.body.walk() if type(op).__name__ == "IsolatedGroupOp"]
    info = GroupInfo.of(group)
    plan = boxes.plan_of(info)
    assert plan is not None and (plan.c, plan.o, plan.h) == (128, 128, 28)
    assert _offered(info) == [config(128, 4, boxes.STAGES_N128)]


def test_the_resident_form_reads_three_boxes_of_two_more_rows() -> None:
    info = _info(box_ir(32, 56, 64, 64))
    if not boxes.resident_available():
        with pytest.raises(CodegenError, match="Triton 3.6"):
            generate(info.group, RESIDENT, info=info)
        return
    source = generate(info.group, RESIDENT, info=info)
    assert [d.block for d in source.descriptors] == [(1, 4, 32, 64), (64, 64), (1, 2, 32, 64)]
    assert "tap_rows" in source.text and source.grid == (pingpong.PROGRAMS, 1, 1)
    with pytest.raises(CodegenError, match="2 stages"):
        generate(info.group, {**RESIDENT, "BOXES": 4}, info=info)


def test_a_box_kernel_stores_its_tile_through_tma_and_refuses_other_tiles() -> None:
    info = _info(box_ir(32, 28, 128, 128))
    source = generate(info.group, config(128, 4, 4), info=info)
    assert [d.param for d in source.descriptors] == ["x_tile", "w_tile", "o_tile"]
    assert [d.block for d in source.descriptors] == [(1, 4, 32, 64), (128, 64), (1, 4, 32, 128)]
    assert source.descriptors[1].shape == (128, 9 * 128) and source.fallback is not None
    assert source.grid == (pingpong.PROGRAMS, 1, 1)
    consume = source.text.index("def consume")
    # the bias is read before the product, so its latency passes while the tile multiplies
    assert consume < source.text.index("= gl.load(") < source.text.index("warpgroup_mma(", consume)
    with pytest.raises(CodegenError, match="128 pixels"):
        generate(info.group, config(128, 4, 4) | {"BLOCK_M": 64}, info=info)
    with pytest.raises(CodegenError, match="box kernel needs"):
        generate(info.group, config(128, 4, 4), interpret=True, info=info)


def test_an_artifact_or_spec_config_names_its_stages_and_rows() -> None:
    assert config_problem("BOXES", 7) is None and config_problem("BOX_H", 8) is None
    assert "2 to 8" in config_problem("BOXES", 9)
    assert "power of two" in config_problem("BOX_H", 6)


def test_the_box_layout_is_the_descriptors() -> None:
    """The kernel views its buffers in ``BOX_LAYOUT``; the launch's descriptors take
    Gluon's default layout for the same blocks."""
    from triton.experimental.gluon import language as gl

    for block in ([1, 8, 16, 64], [1, 4, 32, 128]):
        assert gl.NVMMASharedLayout.get_default_for(block, gl.float16) == eval(f"gl.{boxes.BOX_LAYOUT}")


BUILD = """
import json
from tests.backends.triton.test_boxes import KERNELS, _info
from dnnc.backends.triton import compiler
from dnnc.backends.triton.kernels import generate

built = {}
for name, (ir, config) in KERNELS.items():
    info = _info(ir)
    source = generate(info.group, config, info=info)
    compiled = compiler.compile_for(source, compiler.cuda_target(90))
    ptx = compiled.asm["ptx"]
    built[name] = {"wgmma": "wgmma.mma_async" in ptx, "setmaxnreg": "setmaxnreg" in ptx, "shared": compiled.metadata.shared,
                   "tma_4d": "cp.async.bulk.tensor.4d" in ptx, "spills": ".local" in ptx}
print(json.dumps(built))
"""
KERNELS = {
    "56x56": (box_ir(32, 56, 64, 64), config(64, 8, boxes.STAGES_N64)),
    "28x28": (box_ir(4, 28, 128, 128), config(128, 4, boxes.STAGES_N128)),
    # ragged: patches past the map's edges, a channel tile past the output's channels
    "ragged": (box_ir(2, 10, 128, 192, w=12), config(128, 8, boxes.STAGES_N128)),
    "wide": (box_ir(2, 6, 64, 64, w=70), config(64, 2, boxes.STAGES_N64)),
}
if boxes.resident_available():
    KERNELS["resident"] = (box_ir(2, 10, 64, 64, w=36), RESIDENT)
"""Each patch shape and channel width, on ResNet's maps and on ones the patches do not divide."""


def test_box_kernels_build_for_sm90_without_a_gpu(tmp_path: Path) -> None:
    built = compiled_json(BUILD, env={"DNNC_CACHE_DIR": str(tmp_path)}, timeout=600)
    for name, b in built.items():
        assert b["wgmma"] and b["setmaxnreg"] and b["tma_4d"] and not b["spills"], name
        assert b["shared"] <= 227 * 1024, name  # an SM's shared memory for one block on Hopper


DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["f16", "bf16"])
@pytest.mark.parametrize("name", list(KERNELS))
def test_box_kernels_match_reference(name: str, dtype: str, rng: torch.Generator) -> None:
    if capability(DEVICE) != boxes.CAPABILITY:
        pytest.skip("box kernels run on Hopper (sm_90) only")
    ir, cfg = KERNELS[name]
    # inputs of unit variance summed over 9 C: the weight scaled to keep the outputs near 1
    assert_group_kernel_matches_reference(ir, dtype, cfg, rng, scales={1: 0.05})


@pytest.mark.gpu
def test_a_box_kernel_runs_in_a_program_and_its_artifact_keeps_it(tmp_path: Path, rng: torch.Generator) -> None:
    if capability(DEVICE) != boxes.CAPABILITY:
        pytest.skip("box kernels run on Hopper (sm_90) only")
    program = partitioned(16, 28, 64, 128, rng)  # 112 tiles: offered, so handed channels-last
    cfg = config(128, 4, boxes.STAGES_N128)
    records = replayed_saved_and_loaded(program, [(16, 28, 28, 64)], "BOXES", rng, tmp_path / "boxes.dnnc", cfg)
    assert [r["config"].get("BOXES") for r in records] == [boxes.STAGES_N128] and "object" in records[0]


@pytest.mark.parametrize("name", ["28x28", "resident"])
def test_a_box_kernel_launched_with_pdl_waits_at_its_first_line(name: str) -> None:
    """Gluon kernels launched with Programmatic Dependent Launch wait for the kernel before
    them before any load, as Triton's do (``pingpong.with_pdl``)."""
    if name not in KERNELS:
        pytest.skip("this Triton does not build the resident form")
    ir, cfg = KERNELS[name]
    info = _info(ir)
    plain = generate(info.group, cfg, info=info)
    early = generate(info.group, {**cfg, "PDL": 1}, info=info)
    assert "launch_pdl" not in plain.options and early.options["launch_pdl"] is True
    lines = early.text.splitlines()
    first = lines.index(next(line for line in lines if line.startswith(f"def {early.name}("))) + 1
    assert "griddepcontrol.wait" in lines[first] and "griddepcontrol" not in plain.text


@pytest.mark.gpu
def test_a_box_kernel_launched_with_pdl_matches_reference(rng: torch.Generator) -> None:
    if capability(DEVICE) != boxes.CAPABILITY:
        pytest.skip("box kernels run on Hopper (sm_90) only")
    ir, cfg = KERNELS["28x28"]
    assert_group_kernel_matches_reference(ir, "f16", {**cfg, "PDL": 1}, rng, scales={1: 0.05})
