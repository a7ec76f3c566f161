"""``stem``: a network's first convolution (stride 2, an NCHW image of at most 4 channels,
64 out) as a Gluon kernel on 2 x 2 cells of the image: offered first on Hopper only, to
the groups it can be, its source built for sm_90 on a machine without a GPU where this
Triton builds it, and (on a Hopper GPU) computing what the reference computes in both
float types and both output layouts, in a program that is replayed, saved and loaded."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from dnnc.backends.reference.interpreter import ReferenceExecutor
from dnnc.backends.triton import stem
from dnnc.backends.triton.configs import candidates, config_problem
from dnnc.backends.triton.emitter import CodegenError
from dnnc.backends.triton.kernels import generate
from dnnc.backends.triton.launch import TritonKernel
from dnnc.backends.triton.skeleton import GroupInfo
from dnnc.ir.types import element_of, shape_of, torch_dtype
from tests.backends.triton.helpers import (
    assert_group_kernel_matches_reference,
    capability,
    fused_group,
    replayed_saved_and_loaded,
    typed_program,
)
from tests.bench.sm90_build import compiled_json
from tests.numerics import assert_matches


def stem_ir(
    c: int = 3, h: int = 64, w: int = 64, o: int = 64, k: int = 7, s: int = 2, p: int = 3, channels_last: bool = False
) -> str:
    """A convolution + bias + ReLU of a 2-image NCHW batch, its result NCHW or channels-last."""
    ho, wo = (h + 2 * p - k) // s + 1, (w + 2 * p - k) // s + 1
    x, wt, b, y = f"2x{c}x{h}x{w}xT", f"{o}x{c}x{k}x{k}xT", f"1x{o}x1x1xT", f"2x{o}x{ho}x{wo}xT"
    result = f"2x{ho}x{wo}x{o}xT" if channels_last else y
    lines = [
        f"func.func @forward(%x: tensor<{x}>, %w: tensor<{wt}>, %b: tensor<{b}>) -> tensor<{result}> {{",
        f"  %c = tcp.conv2d %x, %w {{stride = array<i64: {s}, {s}>, padding = array<i64: {p}, {p}, {p}, {p}>, "
        f"dilation = array<i64: 1, 1>, groups = 1 : i64}} : (tensor<{x}>, tensor<{wt}>) -> tensor<{y}>",
        f"  %bb = tcp.broadcast %b : tensor<{b}> to tensor<{y}>",
        f"  %a = tcp.add %c, %bb : tensor<{y}>",
        f"  %r = tcp.clamp %a {{min = 0.0 : f64}} : tensor<{y}>",
    ]
    if channels_last:
        lines.append(f"  %t = tcp.transpose %r {{permutation = array<i64: 0, 2, 3, 1>}} : tensor<{y}> -> tensor<{result}>")
        lines.append(f"  func.return %t : tensor<{result}>")
    else:
        lines.append(f"  func.return %r : tensor<{result}>")
    return "\n".join([*lines, "}"])


CASES = {
    "resnet": stem_ir(),
    "resnet_channels_last": stem_ir(channels_last=True),
    "window3_four_channels": stem_ir(c=4, h=32, w=32, k=3, p=1),
}
"""ResNet's 7x7/2 stem on 64 x 64 images (32 x 32 out), stored NCHW and channels-last; a
3x3/2 one on 4 channels (two taps a side)."""
CONFIG = {"BLOCK_M": 128, "BLOCK_N": 64, "BLOCK_K": 16, "num_warps": 4, "STEM": 2}
DTYPES = {"f16": torch.float16, "bf16": torch.bfloat16}


def _info(ir: str, dtype: str = "f16") -> GroupInfo:
    return GroupInfo.of(fused_group(typed_program(ir, dtype, "stem")))


def test_the_ir_of_the_cases_is_what_it_says() -> None:
    info = _info(CASES["resnet"])
    assert shape_of(info.anchor.input) == (2, 3, 64, 64) and shape_of(info.outputs[0]) == (2, 64, 32, 32)
    assert shape_of(_info(CASES["resnet_channels_last"]).outputs[0]) == (2, 32, 32, 64)


@pytest.mark.parametrize("name", list(CASES))
def test_a_stem_config_comes_first_on_hopper_only(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stem, "available", lambda: True)
    info = _info(CASES[name])
    assert candidates(info, 90)[0] == CONFIG
    assert not any("STEM" in c for c in candidates(info, 90)[1:])
    for elsewhere in (None, 80, 100):
        assert not any("STEM" in c for c in candidates(info, elsewhere))


def test_where_this_triton_cannot_build_it_none_is_offered(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stem, "available", lambda: False)
    assert not any("STEM" in c for c in candidates(_info(CASES["resnet"]), 90))


@pytest.mark.parametrize(
    "ir",
    [
        stem_ir(c=8),  # more channels than a cell takes
        stem_ir(s=1, p=3, h=32, w=32),  # stride 1
        stem_ir(o=32),  # not one warpgroup's 64 rows
        stem_ir(k=9, p=4),  # a window of 5 cells
        stem_ir(h=40, w=40),  # 20 output columns: not whole tiles of 16
    ],
    ids=["8_channels", "stride_1", "32_out", "window_9", "partial_tiles"],
)
def test_other_convolutions_are_not_offered_one(ir: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stem, "available", lambda: True)
    info = _info(ir)
    assert stem.plan_of(info) is None
    assert not any("STEM" in c for c in candidates(info, 90))


def test_a_float32_stem_is_not_offered_one() -> None:
    assert stem.plan_of(_info(CASES["resnet"], "f32")) is None


def test_the_plan_knows_the_layout_it_stores() -> None:
    assert not stem.plan_of(_info(CASES["resnet"])).channels_last
    plan = stem.plan_of(_info(CASES["resnet_channels_last"]))
    assert plan.channels_last and plan.taps == (4, 4) and plan.tiles == 2 * 4 * 2 and plan.pad == (3, 3)
    assert stem.plan_of(_info(CASES["window3_four_channels"])).taps == (2, 2)


def test_an_artifact_or_spec_config_names_its_stages() -> None:
    assert config_problem("STEM", 2) is None
    assert "2 to 4" in config_problem("STEM", 1)
    assert "2 to 4" in config_problem("STEM", 5)


def test_the_source_holds_the_partitions_and_the_emitters_epilogue(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stem, "available", lambda: True)
    for name in ("resnet", "resnet_channels_last"):
        info = _info(CASES[name])
        source = generate(info.group, CONFIG, info=info)
        assert "gl.warp_specialize(" in source.text and "def loader(" in source.text
        product = source.text.split("def product(")[1].split("@gluon.jit")[0]
        assert "tl." not in product
        # the epilogue runs on the accumulator as wgmma leaves it; only float16 values move
        assert "acc = acc_t" in product and "convert_layout(acc" not in product
        # the loader reads the tile's region once and builds each tap column's copy from it
        loader = source.text.split("def loader(")[1].split("@gluon.jit")[0]
        assert loader.count("fill(") == 1 and loader.count("copy(q_smem, ") == 2 and "gl.load" not in loader
        assert source.grid == (16, 1, 1)  # 16 tiles
    nchw = generate(_info(CASES["resnet"]).group, CONFIG)
    assert "s0 = gl.convert_layout(v1.to(gl.float16), STORE)" in nchw.text
    assert "gl.store(out0 + (n_i) * 65536 + (o_i) * 1024 + (p_i), s0, mask=cmask)" in nchw.text
    assert not nchw.descriptors  # pointers only
    last = generate(_info(CASES["resnet_channels_last"]).group, CONFIG)
    assert "gl.store(" not in last.text.split("def product(")[1].split("@gluon.jit")[0]
    assert "o_smem.permute((1, 0)).store(result)" in last.text and "tma_store(o_tile, [tile_n, tile_y, tile_x, 0]" in last.text
    (descriptor,) = last.descriptors
    assert descriptor.param == "o_tile" and descriptor.shape == (2, 32, 32, 64) and descriptor.block == (1, 8, 16, 64)
    # an output TMA cannot take runs the group's pointer kernel instead
    assert last.fallback is not None and not last.fallback.descriptors and "gluon" not in last.fallback.text


def test_under_the_interpreter_there_is_no_stem_kernel(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stem, "available", lambda: True)
    info = _info(CASES["resnet"])
    with pytest.raises(CodegenError, match="sm_90"):
        generate(info.group, CONFIG, interpret=True, info=info)


BUILD = """
import json
from tests.backends.triton.test_stem import CASES, CONFIG, _info
from dnnc.backends.triton import compiler
from dnnc.backends.triton.kernels import generate

built = {}
for name in CASES:
    info = _info(CASES[name])
    kernel = compiler.compile_for(generate(info.group, CONFIG, info=info), compiler.cuda_target(90))
    ptx = kernel.asm["ptx"]
    built[name] = {"wgmma": ptx.count("wgmma.mma_async"), "setmaxnreg": "setmaxnreg" in ptx,
                   "shared": kernel.metadata.shared, "spills": ".local" in ptx}
print(json.dumps(built))
"""


@pytest.mark.skipif(not stem.available(), reason="this Triton does not build the stem kernel (stem.available)")
def test_stem_kernels_build_for_sm90_without_a_gpu(tmp_path: Path) -> None:
    built = compiled_json(BUILD, env={"DNNC_CACHE_DIR": str(tmp_path)}, timeout=600)
    taps = {"resnet": 16, "resnet_channels_last": 16, "window3_four_channels": 4}
    for name, kernel in built.items():
        assert kernel["wgmma"] == taps[name] and kernel["setmaxnreg"] and not kernel["spills"], name
        assert kernel["shared"] <= 113 * 1024, name  # two programs an SM


DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("name", list(CASES))
def test_stem_kernels_match_reference(name: str, dtype: str, rng: torch.Generator) -> None:
    if capability(DEVICE) != stem.CAPABILITY or not stem.available():
        pytest.skip("the stem kernel runs on Hopper (sm_90) with a Triton that builds it")
    assert_group_kernel_matches_reference(CASES[name], dtype, CONFIG, rng, scales={1: 1 / 8})


STEM_PROGRAM = """func.func @forward(%x: tensor<4x3x64x64xf16>) -> tensor<4x64x32x32xf16> {
  %w = tcp.param @w : tensor<64x3x7x7xf16>
  %b = tcp.param @b : tensor<1x64x1x1xf16>
  %c = tcp.conv2d %x, %w {stride = array<i64: 2, 2>, padding = array<i64: 3, 3, 3, 3>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<4x3x64x64xf16>, tensor<64x3x7x7xf16>) -> tensor<4x64x32x32xf16>
  %bb = tcp.broadcast %b : tensor<1x64x1x1xf16> to tensor<4x64x32x32xf16>
  %a = tcp.add %c, %bb : tensor<4x64x32x32xf16>
  %y = tcp.clamp %a {min = 0.0 : f64} : tensor<4x64x32x32xf16>
  func.return %y : tensor<4x64x32x32xf16>
}"""


@pytest.mark.gpu
def test_a_stem_kernel_runs_in_a_program_and_its_artifact_keeps_it(tmp_path: Path, rng: torch.Generator) -> None:
    if capability(DEVICE) != stem.CAPABILITY or not stem.available():
        pytest.skip("the stem kernel runs on Hopper (sm_90) with a Triton that builds it")
    from dnnc.ir.params import ParamStore
    from dnnc.ir.program import Program
    from dnnc.ir.text import parse_ir
    from dnnc.passes.stages import TRITON_ALONE_STAGE
    from dnnc.pipeline import run_passes

    params = ParamStore()
    params.add("w", (torch.randn(64, 3, 7, 7, generator=rng) / 12).half())
    params.add("b", torch.randn(1, 64, 1, 1, generator=rng).half())
    program = Program(parse_ir(STEM_PROGRAM, "stem"), params)
    run_passes(program, TRITON_ALONE_STAGE)  # the Triton group the partitioner lowers for it
    records = replayed_saved_and_loaded(program, [(4, 3, 64, 64)], "STEM", rng, tmp_path / "stem.dnnc", CONFIG)
    assert [r["config"].get("STEM") for r in records] == [2] and "object" in records[0]


def test_the_pointer_kernel_a_channels_last_stem_falls_back_to_matches_reference(
    monkeypatch: pytest.MonkeyPatch, rng: torch.Generator
) -> None:
    """Where TMA cannot take the output (an unaligned tensor), the launch runs the group's
    pointer kernel: under the interpreter here, against the reference."""
    monkeypatch.setattr(stem, "available", lambda: True)
    program = typed_program(CASES["resnet_channels_last"], "f16", "stem")
    inputs = [torch.randn(shape_of(t), generator=rng).to(torch_dtype(t.element_type)) for t in program.input_types]
    (expected,) = ReferenceExecutor(program).run(inputs)
    group = fused_group(program)
    fallback = generate(group, CONFIG, info=GroupInfo.of(group)).fallback
    plain = {k: v for k, v in CONFIG.items() if k != "STEM"} | {"num_stages": 3}
    kernel = TritonKernel(fallback, DEVICE, capability(DEVICE), plain)
    (y,) = group.outputs
    out = torch.empty(shape_of(y), dtype=torch_dtype(element_of(y)), device=DEVICE)
    args = {a: x.to(DEVICE) for a, x in zip(program.entry.body.block.args, inputs)}
    kernel.launch([args[v] for v in group.operands], [out])
    assert_matches(out.cpu(), expected, torch.float16)
