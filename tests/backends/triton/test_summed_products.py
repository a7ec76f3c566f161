"""Two summed convolutions in one Triton kernel (``ops.summed_products``): which form the
generated kernel takes. Their numbers are checked with every case (``cases.py``) on the
interpreter and the GPU."""

from __future__ import annotations

from dnnc.backends.triton import TritonFuse
from dnnc.backends.triton.kernels import generate
from dnnc.backends.triton.skeleton import GroupInfo
from dnnc.ir import tcp
from dnnc.pipeline import run_passes
from tests.backends.triton.cases import CASES

CONFIG = {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32, "num_warps": 4, "num_stages": 3}


def _summed_text(name: str) -> str:
    (case,) = [c for c in CASES if c.name == name]
    program = case.program("f16")
    run_passes(program, [TritonFuse()])
    groups = [op for op in program.entry.body.walk() if isinstance(op, tcp.IsolatedGroupOp)]
    (group,) = [g for g in groups if GroupInfo.of(g).summed is not None]
    return generate(group, CONFIG).text


def test_products_reaching_their_sum_through_bias_adds_share_one_accumulator_and_one_loop() -> None:
    for name in ("summed_convolutions", "summed_convolutions_handed_channels_last"):
        text = _summed_text(name)
        assert "acc_summed" not in text, text
        # one loop over both K, the anchor's padded to BLOCK_K (6 -> 32), then 5 or 12 more
        assert text.count("for k0 in range(") == 1 and "first = k0 < 32" in text, text
        assert text.count("acc += tl.dot(") == 1, text
        assert text.count("tl.load(tl.where(first, ") == 2, text


def test_an_operand_computed_on_its_way_in_keeps_a_loop_per_product() -> None:
    text = _summed_text("summed_convolutions_with_prologue")
    assert text.count("for k0 in range(") == 2 and "first" not in text, text
    assert text.count("acc += tl.dot(") == 2 and "acc_summed" not in text, text


def test_a_product_rectified_before_the_sum_keeps_its_own_accumulator() -> None:
    text = _summed_text("summed_convolutions_channels_last")
    assert text.count("acc += tl.dot(") == 1 and "acc_summed += tl.dot(" in text, text
    assert "+ acc_summed" in text, text


def test_a_strided_1x1_window_reads_without_a_bounds_test() -> None:
    text = _summed_text("summed_convolutions_handed_channels_last")
    assert "(ho_i * 2) * 108 + (wo_i * 2) * 12" in text, text
    assert "inb" not in text, text
