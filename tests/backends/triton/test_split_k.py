"""Split-K products (``SPLIT_K`` configs): K cut into slices that programs of their own
loop over, the last program of each output tile adding the partials up in slice order
and running the epilogue. Against the reference in every float type with partial tiles
and a last slice that runs past K, launched twice (the scratch is left as it was found,
and the sum does not depend on which program arrives last); on Triton's interpreter on
a CPU and compiled on a GPU. Which products get such configs, and how a config is checked."""

from __future__ import annotations

import json

import pytest
import torch
from torch import nn
from xdsl.dialects.builtin import StringAttr

from dnnc.artifact.kernels import kernel_records
from dnnc.backends.interface import Recorded
from dnnc.backends.reference.interpreter import ReferenceExecutor
from dnnc.backends.triton import compiler
from dnnc.backends.triton.configs import candidates, config_problem, launch_bound_pair, merge_base, product, split_k
from dnnc.backends.triton.emitter import CodegenError
from dnnc.backends.triton.kernel_backend import parse_records
from dnnc.backends.triton.kernels import generate
from dnnc.backends.triton.launch import TritonKernel
from dnnc.backends.triton.skeleton import SPLIT_ARRIVALS, SPLIT_PARTIALS, GroupInfo
from dnnc.ir import tcp
from dnnc.ir.program import Program
from dnnc.ir.text import parse_ir
from dnnc.ir.types import element_of, shape_of, torch_dtype
from dnnc.pipeline import lower_for_gpu, to_canonical_tcp
from dnnc.runtime.gpu_executor import GpuExecutor
from tests.backends.triton.helpers import capability, fused_group, typed_program
from tests.numerics import assert_matches

DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")

CONV = """func.func @forward(%x: tensor<1x5x5x40xT>, %w: tensor<24x40x3x3xT>, %bias: tensor<1x24x1x1xT>) -> tensor<1x5x5x24xT> {
  %t = tcp.transpose %x {permutation = array<i64: 0, 3, 1, 2>} : tensor<1x5x5x40xT> -> tensor<1x40x5x5xT>
  %c = tcp.conv2d %t, %w {stride = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<1x40x5x5xT>, tensor<24x40x3x3xT>) -> tensor<1x24x5x5xT>
  %bb = tcp.broadcast %bias : tensor<1x24x1x1xT> to tensor<1x24x5x5xT>
  %a = tcp.add %c, %bb : tensor<1x24x5x5xT>
  %r = tcp.clamp %a {min = 0.0 : f64} : tensor<1x24x5x5xT>
  %an = tcp.transpose %r {permutation = array<i64: 0, 2, 3, 1>} : tensor<1x24x5x5xT> -> tensor<1x5x5x24xT>
  func.return %an : tensor<1x5x5x24xT>
}"""
"""ResNet's stage-4 3x3 convolution at batch 1 in small: a channels-last input of 5x5
pixels, 24 channels from 40 (K = 360), bias and ReLU in the epilogue, stored NHWC."""

BATCHED = """func.func @forward(%x: tensor<3x9x200xT>, %y: tensor<3x200x20xT>) -> tensor<3x9x20xT> {
  %m = tcp.batch_matmul %x, %y : (tensor<3x9x200xT>, tensor<3x200x20xT>) -> tensor<3x9x20xT>
  %g = tcp.tanh %m : tensor<3x9x20xT>
  func.return %g : tensor<3x9x20xT>
}"""
"""A batched product: the slices of each batch's tiles count apart."""

CASES = {"conv": CONV, "batched": BATCHED}
CONFIG = {"BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_K": 16, "SPLIT_K": 4, "num_warps": 4, "num_stages": 2}
"""Four slices of ceil(360 / 4 / 16) * 16 = 96: the last runs past K (its loads are masked)."""


@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("name", list(CASES))
def test_split_k_products_match_reference(name: str, dtype: str, rng: torch.Generator) -> None:
    program = typed_program(CASES[name], dtype, "split_k")
    inputs = [torch.randn(shape_of(t), generator=rng).to(torch_dtype(t.element_type)) for t in program.input_types]
    expected = ReferenceExecutor(program).run(inputs)
    group = fused_group(program)
    source = generate(group, CONFIG, interpret=compiler.interpreting())
    kernel = TritonKernel(source, DEVICE, capability(DEVICE), CONFIG)
    args = {a: x.to(DEVICE) for a, x in zip(program.entry.body.block.args, inputs)}
    runs = []
    for _ in range(2):
        outs = [torch.empty(shape_of(r), dtype=torch_dtype(element_of(r)), device=DEVICE) for r in group.outputs]
        kernel.launch([args[v] for v in group.operands], outs)
        runs.append([o.cpu() for o in outs])
        assert not kernel.scratch[1].any(), "every tile's count is back to zero after a launch"
    for first, second, e in zip(*runs, expected):
        assert torch.equal(first, second), "the partials are added in slice order whichever program arrives last"
        assert_matches(first, e, DTYPES[dtype], what=f"{name} ({dtype})")


def test_the_kernel_counts_slices_and_owns_its_scratch() -> None:
    group = fused_group(typed_program(CONV, "f16", "split_k"))
    source = generate(group, CONFIG)
    assert source.grid == (2, 2, 4)  # 25 pixels and 24 channels in 16 x 16 tiles, 4 slices each
    assert list(source.signature)[-2:] == [SPLIT_PARTIALS, SPLIT_ARRIVALS]
    assert source.tensors == 4, "a launch passes the input, the weight, the bias and the output"
    assert source.scratch == ((SPLIT_PARTIALS, "float32", 2 * 2 * 4 * 16 * 16), (SPLIT_ARRIVALS, "int32", 4))
    assert "k0 = pid_s * 96 + k_step" in source.text
    assert 'tl.atomic_add(split_arrivals + tile, 1, sem="acq_rel")' in source.text
    assert generate(group, {k: v for k, v in CONFIG.items() if k != "SPLIT_K"}).scratch == ()
    with pytest.raises(CodegenError, match="split-K"):
        generate(group, {**CONFIG, "TMA": 1})


def test_products_with_few_tiles_and_a_long_k_get_split_configs() -> None:
    # ResNet-50's stage-4 3x3 convolution at batch 1: 49 pixels x 512 channels, K = 4608
    # 16-row tiles (4 x 8 of them), split to about two programs per multiprocessor
    assert [(c["BLOCK_M"], c["SPLIT_K"]) for c in split_k(49, 512, 4608)] == [(16, 8), (16, 4)]
    assert [c["SPLIT_K"] for c in split_k(196, 256, 2304)] == [4, 2]  # stage 3: 13 x 4 tiles
    assert split_k(49, 512, 576) == [], "a short K is not split"
    assert split_k(6272, 512, 4608) == [], "at batch 128 the tiles fill the GPU"
    assert split_k(1, 1000, 2048)[0]["BLOCK_M"] == 16, "a GEMV keeps 16-row tiles"
    configs = product(49, 512, 4608)
    assert configs[0]["SPLIT_K"] == 8, "the config a candidate is priced with is the most split"
    assert any("SPLIT_K" not in c for c in configs) and configs[-1]["SPLIT_K"] == 4
    assert [c["SPLIT_K"] for c in split_k(1, 1000, 2048)] == [8, 4], "a GEMV aims at one program per multiprocessor"
    assert "SPLIT_K" not in product(6272, 512, 4608)[0]
    pair = launch_bound_pair(configs)
    assert pair[0] == configs[0] and "SPLIT_K" not in pair[1], "a launch-bound product also times an unsplit config"
    info = GroupInfo.of(
        fused_group(
            typed_program(
                CONV.replace("24x40x3x3", "24x400x3x3").replace("x40x", "x400x").replace("x40xT", "x400xT"), "f16", "split_k"
            )
        )
    )
    assert any("SPLIT_K" in c for c in candidates(info)), "K = 3600 over 4 tiles"


def test_a_split_is_a_positive_count_up_to_the_limit() -> None:
    assert config_problem("SPLIT_K", 16) is None
    assert "at most" in (config_problem("SPLIT_K", 128) or "")
    assert "positive" in (config_problem("SPLIT_K", 0) or "")


@pytest.mark.skipif(torch.cuda.is_available(), reason="interpreter run; the GPU test rebuilds a split kernel from its artifact")
def test_a_recorded_unsplit_config_of_a_few_tile_product_rebuilds_unsplit(rng: torch.Generator) -> None:
    """A tuning spec's or an artifact's config that names no ``SPLIT_K`` is merged over the
    first config that cuts no K (``merge_base``): merged over the first candidate, which is
    split for such a product, it would regenerate another kernel than the one recorded, and
    the load would refuse the artifact as changed."""
    x = torch.randn(3, 1280, generator=rng)
    program = to_canonical_tcp(nn.Linear(1280, 40).eval(), (x,))
    expected = ReferenceExecutor(program).run([x])
    lower_for_gpu(program, backends=["triton"])
    built = GpuExecutor(program, "cpu")
    records = kernel_records(built)["triton"]
    groups = [op for op in program.entry.body.walk() if isinstance(op, tcp.IsolatedGroupOp)]
    (record,) = [r for r in records if r["config"].get("SPLIT_K")]  # the first config, as the interpreter runs
    info = GroupInfo.of(groups[record["ordinal"]])
    config = merge_base(info)
    assert "SPLIT_K" not in config and spec_base_keeps_its_split(info)
    source = generate(groups[record["ordinal"]], config, interpret=True)
    record |= {
        "text": source.text,
        "signature": source.signature,
        "grid": list(source.grid),
        "options": source.options,
        "config": config,
    }
    reloaded = Program(parse_ir(program.text()), program.params)
    executor = GpuExecutor(reloaded, "cpu", Recorded({"triton": parse_records(records, "triton.json")}, same_version=True))
    kernels = [s.kernel for s in executor.steps if getattr(s.kernel, "config", None) is not None]
    assert [k.config.get("SPLIT_K") for k in kernels] == [None] and not any(k.scratch for k in kernels)
    assert_matches(executor.run([x])[0], expected[0], torch.float32)


def spec_base_keeps_its_split(info: GroupInfo) -> bool:
    """A spec's config with a ``SPLIT_K`` of its own keeps it; one without runs unsplit."""
    from dnnc.backends.interface import SPEC_CONFIG_ATTR
    from dnnc.backends.triton.launch import spec_or_candidates

    anchor = info.anchor
    assert anchor is not None
    unsplit = {k: v for k, v in merge_base(info).items() if k.startswith("BLOCK")}
    anchor.attributes[SPEC_CONFIG_ATTR] = StringAttr(json.dumps(unsplit))
    plain = spec_or_candidates(info)
    anchor.attributes[SPEC_CONFIG_ATTR] = StringAttr(json.dumps({**unsplit, "SPLIT_K": 2}))
    split = spec_or_candidates(info)
    del anchor.attributes[SPEC_CONFIG_ATTR]
    return "SPLIT_K" not in plain[0] and split[0]["SPLIT_K"] == 2
