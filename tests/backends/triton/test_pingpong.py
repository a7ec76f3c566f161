"""``pingpong``: ResNet's residual 1x1 convolution and a block's summed expansion +
strided downsample as Gluon kernels, offered after the Triton tiles on Hopper only, built
for sm_90 on a machine without a GPU, and (on a Hopper GPU) computing what the reference
computes in both float types."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from bench.split_k_probe import summed
from dnnc.backends.triton import pingpong
from dnnc.backends.triton.configs import candidates, config_problem
from dnnc.backends.triton.emitter import CodegenError
from dnnc.backends.triton.kernels import generate
from dnnc.backends.triton.skeleton import GroupInfo
from tests.backends.triton.helpers import (
    assert_group_kernel_matches_reference,
    capability,
    fused_group,
    replayed_saved_and_loaded,
    typed_program,
)
from tests.backends.triton.test_tma import CONV_RESIDUAL
from tests.bench.sm90_build import compiled_json

pytestmark = pytest.mark.skipif(not pingpong.available(), reason="this Triton has no Gluon")

SUMMED = """func.func @forward(%y: tensor<2x7x7x16xT>, %x: tensor<2x14x14x32xT>, %w1: tensor<64x16x1x1xT>, %w2: tensor<64x32x1x1xT>, %b1: tensor<1x1x1x64xT>, %b2: tensor<1x1x1x64xT>) -> tensor<2x7x7x64xT> {
  %yt = tcp.transpose %y {permutation = array<i64: 0, 3, 1, 2>} : tensor<2x7x7x16xT> -> tensor<2x16x7x7xT>
  %c1 = tcp.conv2d %yt, %w1 {stride = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<2x16x7x7xT>, tensor<64x16x1x1xT>) -> tensor<2x64x7x7xT>
  %t1 = tcp.transpose %c1 {permutation = array<i64: 0, 2, 3, 1>} : tensor<2x64x7x7xT> -> tensor<2x7x7x64xT>
  %bb1 = tcp.broadcast %b1 : tensor<1x1x1x64xT> to tensor<2x7x7x64xT>
  %a1 = tcp.add %t1, %bb1 : tensor<2x7x7x64xT>
  %xt = tcp.transpose %x {permutation = array<i64: 0, 3, 1, 2>} : tensor<2x14x14x32xT> -> tensor<2x32x14x14xT>
  %c2 = tcp.conv2d %xt, %w2 {stride = array<i64: 2, 2>, padding = array<i64: 0, 0, 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<2x32x14x14xT>, tensor<64x32x1x1xT>) -> tensor<2x64x7x7xT>
  %t2 = tcp.transpose %c2 {permutation = array<i64: 0, 2, 3, 1>} : tensor<2x64x7x7xT> -> tensor<2x7x7x64xT>
  %bb2 = tcp.broadcast %b2 : tensor<1x1x1x64xT> to tensor<2x7x7x64xT>
  %a2 = tcp.add %t2, %bb2 : tensor<2x7x7x64xT>
  %sum = tcp.add %a1, %a2 : tensor<2x7x7x64xT>
  %r = tcp.clamp %sum {min = 0.0 : f64} : tensor<2x7x7x64xT>
  func.return %r : tensor<2x7x7x64xT>
}"""
"""A block's end where it changes width: a 1x1 expansion of 16 channels and a stride-2
1x1 downsample of 32, summed into 64 channels on a 7x7 map (98 pixels: one partial tile)."""
CASES = {"conv_residual": CONV_RESIDUAL, "summed": SUMMED}
DTYPES = {"f16": torch.float16, "bf16": torch.bfloat16}


def _group(name: str, dtype: str):
    program = typed_program(CASES[name], dtype, name)
    return program, fused_group(program)


SIZES = {"2x5x7x16": "32x14x14x256", "2x16x5x7": "32x256x14x14", "24x16x1x1": "1024x256x1x1"}
SIZES |= {"1x24x1x1": "1x1024x1x1", "2x24x5x7": "32x1024x14x14", "2x5x7x24": "32x14x14x1024"}
RESNET_STAGE3_B32 = CONV_RESIDUAL
for small, large in SIZES.items():
    RESNET_STAGE3_B32 = RESNET_STAGE3_B32.replace(small, large)
"""ResNet-50's stage-3 expansion at batch 32: 6272 pixels x 1024 channels, 392 tiles."""
STAGE2 = {"2x5x7x16": "32x28x28x128", "2x16x5x7": "32x128x28x28", "24x16x1x1": "512x128x1x1"}
STAGE2 |= {"1x24x1x1": "1x512x1x1", "2x24x5x7": "32x512x28x28", "2x5x7x24": "32x28x28x512"}
RESNET_STAGE2_B32 = CONV_RESIDUAL
for small, large in STAGE2.items():
    RESNET_STAGE2_B32 = RESNET_STAGE2_B32.replace(small, large)
"""Its stage-2 expansion (K = 128): the residual in buffers of its own."""
CONFIG = {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "num_warps": 4, "PINGPONG": 4}
RESIDUAL_CONFIG = {**CONFIG, "PINGPONG": pingpong.RESIDUAL_STAGES}
"""A kernel reading a residual tile of a short K keeps it in buffers of its own, beside
fewer operand stages."""
KERNELS = {"conv_residual": ("conv_residual", RESIDUAL_CONFIG), "residual_shared": ("conv_residual", CONFIG)}
KERNELS["summed"] = ("summed", CONFIG)
"""Each form of the kernel: the residual in buffers of its own and in the output's, and two
products summed."""


@pytest.mark.parametrize(
    "ir, config",
    [(RESNET_STAGE3_B32, CONFIG), (RESNET_STAGE2_B32, RESIDUAL_CONFIG), (summed(28, 512, 1024, 32, 2), CONFIG)],
    ids=["expansion", "short-expansion", "summed"],
)
def test_pingpong_configs_come_after_the_triton_tiles_on_hopper_only(ir: str, config: dict) -> None:
    info = GroupInfo.of(fused_group(typed_program(ir, "f16", "stage3")))
    hopper = candidates(info, 90)
    offered = [c for c in hopper if "PINGPONG" in c]
    assert offered == [config] and hopper[-1] == config
    for elsewhere in (None, 80, 100):
        assert not any("PINGPONG" in c for c in candidates(info, elsewhere))


@pytest.mark.parametrize("name", list(CASES))
def test_products_of_few_tiles_are_not_offered_one(name: str) -> None:
    """Under ``pingpong.MIN_TILES`` no epilogue would run beside a product."""
    info = GroupInfo.of(_group(name, "f16")[1])
    assert pingpong.plan_of(info) is not None
    assert not any("PINGPONG" in c for c in candidates(info, 90))


def test_a_summed_input_past_int32_offsets_is_not_offered_one() -> None:
    """The loader addresses the second input's rows in int32."""
    info = GroupInfo.of(fused_group(typed_program(summed(112, 64, 256, 4096, 2), "f16", "huge")))
    assert pingpong.plan_of(info) is None
    assert pingpong.plan_of(GroupInfo.of(fused_group(typed_program(summed(112, 64, 256, 32, 2), "f16", "fits")))) is not None


def test_a_3x3_convolution_is_not_offered_one() -> None:
    ir = CONV_RESIDUAL.replace("24x16x1x1xT", "24x16x3x3xT").replace("array<i64: 0, 0, 0, 0>", "array<i64: 1, 1, 1, 1>")
    program = typed_program(ir, "f16", "window")
    info = GroupInfo.of(fused_group(program))
    assert pingpong.plan_of(info) is None
    assert not any("PINGPONG" in c for c in candidates(info, 90))


def test_a_residual_kernel_reads_its_tile_in_a_buffer_of_its_own_at_three_stages() -> None:
    _, group = _group("conv_residual", "f16")
    info = GroupInfo.of(group)
    assert pingpong.plan_of(info).residual is not None
    assert pingpong.plan_of(GroupInfo.of(_group("summed", "f16")[1])).residual is None
    own = generate(group, RESIDUAL_CONFIG, info=info).text
    shared = generate(group, CONFIG, info=info).text
    assert "r_bufs = gl.allocate_shared_memory" in own and "residual = r_bufs.index(ME).load(ACC)" in own
    assert "r_bufs = c_bufs" in shared and "residual = buf.load(ACC)" in shared


def test_an_artifact_or_spec_config_names_its_stages() -> None:
    assert config_problem("PINGPONG", 4) is None
    assert "at least 2" in config_problem("PINGPONG", 1)
    assert "at most 8" in config_problem("PINGPONG", 9)


def test_translate_takes_tl_calls_to_gluon_and_refuses_what_gluon_lacks() -> None:
    assert pingpong.translate(["    v = tl.where(x < 0.0, 0.0, tl.maximum(x, y))"]) == [
        "    v = gl.where(x < 0.0, 0.0, gl.maximum(x, y))"
    ]
    with pytest.raises(CodegenError, match="tl.sigmoid"):
        pingpong.translate(["    v = tl.sigmoid(x)"])
    with pytest.raises(CodegenError, match="tl.arange"):
        pingpong.translate(["    r = tl.arange(0, 16)"])


def test_a_bias_is_loaded_before_the_product_and_the_tile_after_it() -> None:
    epilogue = [
        "    pid_b = 0",
        "    rm = off_m + gl.arange(0, BLOCK_M, layout=gl.SliceLayout(1, ACC))[:, None]",
        "    rn = off_n + gl.arange(0, BLOCK_N, layout=gl.SliceLayout(0, ACC))[None, :]",
        "    o_i = pid_b * 64 + rn",
        "    cmask = (rm < 98) & (rn < 64)",
        "    x0 = gl.load(in2 + o_i, mask=rn < 64, other=0)",
        "    x1 = x0.to(gl.float32)",
        "    x2 = gl.load(in3 + rm * 64 + rn, mask=cmask, other=0)",
        "    v0 = acc + x1 + x2.to(gl.float32)",
        "    result = v0.to(gl.float16)",
    ]
    head, rest = pingpong.hoisted_loads(epilogue)
    assert head == [epilogue[0], epilogue[2], epilogue[3], epilogue[5]]
    assert rest == [line for line in epilogue if line not in head]
    # a name assigned twice, or a line that assigns nothing: nothing moves
    assert pingpong.hoisted_loads([*epilogue, "    x0 = x1"]) == ([], [*epilogue, "    x0 = x1"])
    assert pingpong.hoisted_loads([*epilogue, "    gl.store(out0, result)"])[0] == []
    _, group = _group("conv_residual", "f16")
    text = generate(group, CONFIG, info=GroupInfo.of(group)).text
    bias = text.index("= gl.load(")
    assert text.index("tile_origin(pid + j * programs)", text.index("def consume")) < bias < text.index("warpgroup_mma(")


BUILD = """
import json, sys
from tests.backends.triton.test_pingpong import KERNELS, _group
from dnnc.backends.triton import compiler
from dnnc.backends.triton.kernels import generate
from dnnc.backends.triton.skeleton import GroupInfo

built = {}
for name, (case, config) in KERNELS.items():
    _, group = _group(case, "f16")
    info = GroupInfo.of(group)
    source = generate(group, config, info=info)
    compiled = compiler.compile_for(source, compiler.cuda_target(90))
    ptx = compiled.asm["ptx"]
    built[name] = {"wgmma": "wgmma.mma_async" in ptx, "setmaxnreg": "setmaxnreg" in ptx, "shared": compiled.metadata.shared,
                   "cp_async": "cp.async.ca" in ptx or "cp.async.cg" in ptx, "grid": list(source.grid),
                   "descriptors": [d.param for d in source.descriptors], "fallback": source.fallback is not None}
print(json.dumps(built))
"""


def test_pingpong_kernels_build_for_sm90_without_a_gpu(tmp_path: Path) -> None:
    built = compiled_json(BUILD, env={"DNNC_CACHE_DIR": str(tmp_path)}, timeout=600)
    residual, shared, both = built["conv_residual"], built["residual_shared"], built["summed"]
    assert residual["wgmma"] and residual["setmaxnreg"] and not residual["cp_async"]
    assert residual["descriptors"] == ["a_tile", "w_tile", "r_tile", "o_tile"]
    # the downsample's strided rows by cp.async; its weight by TMA
    assert both["wgmma"] and both["setmaxnreg"] and both["cp_async"]
    assert both["descriptors"] == ["a_tile", "w_tile", "v_tile", "o_tile"]
    assert residual["grid"] == [1, 1, 1] and residual["fallback"] and both["fallback"]
    # an SM's shared memory for one block on Hopper: 227 KB
    assert all(b["shared"] <= 227 * 1024 for b in (residual, shared, both))
    assert shared["wgmma"] and shared["descriptors"] == residual["descriptors"]


DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("name", list(KERNELS))
def test_pingpong_kernels_match_reference(name: str, dtype: str, rng: torch.Generator) -> None:
    if capability(DEVICE) != pingpong.CAPABILITY:
        pytest.skip("ping-pong kernels run on Hopper (sm_90) only")
    case, config = KERNELS[name]
    assert_group_kernel_matches_reference(CASES[case], dtype, config, rng)


@pytest.mark.gpu
def test_a_pingpong_kernel_runs_in_a_program_and_its_artifact_keeps_it(tmp_path: Path, rng: torch.Generator) -> None:
    if capability(DEVICE) != pingpong.CAPABILITY:
        pytest.skip("ping-pong kernels run on Hopper (sm_90) only")
    from tests.backends.triton.test_tma_gpu import _program

    shapes = [(8, 14, 14, 64), (8, 14, 14, 256)]
    records = replayed_saved_and_loaded(_program(rng), shapes, "PINGPONG", rng, tmp_path / "pingpong.dnnc", RESIDUAL_CONFIG)
    assert [r["config"].get("PINGPONG") for r in records] == [pingpong.RESIDUAL_STAGES] and "object" in records[0]
