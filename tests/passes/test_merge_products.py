"""merge-sibling-products on models as transformers and diffusers build them (random
weights): the projections of one input become one product each group, and the program
computes what it did before (the reference backend before and after the pass, fresh
random inputs); it runs before the GPU stages unless the knob turns it off."""

from __future__ import annotations

from collections import Counter

import pytest
import torch

from dnnc import knobs
from dnnc.backends.reference.interpreter import ReferenceExecutor
from dnnc.ir import tcp
from dnnc.passes import parse_passes
from dnnc.pipeline import MERGE_STAGE, gpu_stages, run_passes, to_canonical_tcp
from tests.numerics import assert_matches

pytest.importorskip("transformers")


def _products(program) -> Counter:
    return Counter(type(op).__name__ for op in program.entry.body.walk() if isinstance(op, tcp.MatmulOp))


@pytest.mark.parametrize(
    ("name", "args", "merged"),
    [
        # BERT: each layer's query, key and value (3 products become 1): 2 layers
        ("bert", {"batch": 2, "seq": 16, "layers": 2, "hidden": 64, "heads": 4, "vocab": 100}, 4),
        # Llama: query, key and value (grouped: key and value narrower) and the MLP's gate and up
        ("llama", {"batch": 2, "seq": 16, "layers": 2, "hidden": 64, "heads": 4, "kv_heads": 2, "vocab": 100}, 6),
        # T5's encoder: query, key and value without biases
        ("t5_encoder", {"batch": 2, "seq": 16, "layers": 2, "hidden": 64, "heads": 4, "vocab": 100}, 4),
        # Whisper's encoder: the key projection alone without a bias (a zero one in the merge)
        ("whisper_encoder", {"batch": 1, "frames": 32, "layers": 2, "hidden": 64, "heads": 4, "mels": 8}, 4),
    ],
)
def test_sibling_projections_merge_and_keep_their_values(name: str, args: dict, merged: int, rng: torch.Generator) -> None:
    from dnnc.models.zoo import ZOO

    torch.manual_seed(int(torch.randint(0, 2**31, (1,), generator=rng)))
    model, inputs = ZOO[name](**args)
    program = to_canonical_tcp(model.eval(), tuple(inputs))
    expected = ReferenceExecutor(program).run(list(inputs))
    before = sum(_products(program).values())
    run_passes(program, parse_passes("merge-sibling-products,dce"))
    after = sum(_products(program).values())
    assert before - after == merged, program.text()
    actual = ReferenceExecutor(program).run(list(inputs))
    for a, e in zip(actual, expected, strict=True):
        assert a.shape == e.shape
        assert_matches(a, e, torch.float32, what=f"{name} with its projections merged")


def test_the_pass_runs_before_the_gpu_stages_unless_turned_off() -> None:
    stages = gpu_stages(["triton"])
    assert stages[0] == MERGE_STAGE and stages[1] == "gpu-aligned-products"
    with knobs.override(merge_products=False):
        assert MERGE_STAGE not in gpu_stages(["triton"])


SHARED = """func.func @forward(%x: tensor<8x16xf32>) -> (tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>) {
  %wq = tcp.param @q.weight : tensor<16x8xf32>
  %wk = tcp.param @k.weight : tensor<16x8xf32>
  %q = tcp.matmul %x, %wq : (tensor<8x16xf32>, tensor<16x8xf32>) -> tensor<8x8xf32>
  %k = tcp.matmul %x, %wk : (tensor<8x16xf32>, tensor<16x8xf32>) -> tensor<8x8xf32>
  %h = tcp.tanh %q : tensor<8x8xf32>
  %hx = tcp.concat %h, %k {axis = 1 : i64} : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x16xf32>
  %q2 = tcp.matmul %hx, %wq : (tensor<8x16xf32>, tensor<16x8xf32>) -> tensor<8x8xf32>
  %k2 = tcp.matmul %hx, %wk : (tensor<8x16xf32>, tensor<16x8xf32>) -> tensor<8x8xf32>
  func.return %q, %k, %q2, %k2 : tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>
}"""
"""Two layers with the same weights (ALBERT shares one layer's across its depth)."""


def test_layers_sharing_weights_share_the_merged_weights(rng: torch.Generator) -> None:
    from dnnc.ir.params import ParamStore
    from dnnc.ir.program import Program
    from dnnc.ir.text import parse_ir

    params = ParamStore({n: torch.randn(16, 8, generator=rng) for n in ("q.weight", "k.weight")})
    program = Program(parse_ir(SHARED, "shared"), params)
    x = torch.randn(8, 16, generator=rng)
    expected = ReferenceExecutor(program).run([x])
    run_passes(program, parse_passes("merge-sibling-products,dce"))
    used = {op.param_name for op in program.entry.body.walk() if isinstance(op, tcp.ParamOp)}
    assert sum(_products(program).values()) == 2 and used == {"q.weight.merged"}, program.text()
    for a, e in zip(ReferenceExecutor(program).run([x]), expected, strict=True):
        assert_matches(a, e, torch.float32, what="layers sharing merged weights")
