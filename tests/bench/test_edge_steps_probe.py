"""``bench/edge_steps_probe.py``: each step is one Triton group of the kind ResNet-50's
program runs it as, and its first candidate and the probe's own configs compute it (on
Triton's interpreter on a CPU: the probe times them on a GPU)."""

from __future__ import annotations

import pytest
import torch

from bench.edge_steps_probe import STEPS, extra, floor_us
from bench.split_k_probe import prepared
from dnnc.backends.triton.configs import candidates
from dnnc.backends.triton.kernels import generate
from dnnc.backends.triton.launch import TritonKernel
from dnnc.backends.triton.skeleton import GroupInfo
from dnnc.ir.types import element_of, shape_of, torch_dtype
from tests.numerics import assert_matches

KINDS = {"pool": "pool", "mean": "reduce", "classifier": "matmul"}


@pytest.mark.parametrize("step", list(STEPS))
def test_each_step_is_one_group_its_configs_compute(step: str) -> None:
    group, ins, want = prepared(step, STEPS[step].format(n=1), torch.device("cpu"))
    info = GroupInfo.of(group)
    assert info.kind == KINDS[step]
    # the pool's largest block only: the interpreter runs a program at a time
    configs = [extra(step, info)[-1]] if step == "pool" else [candidates(info)[0], extra(step, info)[-1]]
    for config in configs:
        out = torch.empty(shape_of(group.outputs[0]), dtype=torch_dtype(element_of(group.outputs[0])))
        TritonKernel(generate(group, config, info=info), torch.device("cpu"), None, config).launch(ins, [out])
        assert_matches(out, want, torch.float16, what=f"{step} {config}")


def test_the_mean_reads_rows_of_channels_and_tries_two_warps_first() -> None:
    group, _, _ = prepared("mean", STEPS["mean"].format(n=32), torch.device("cpu"))
    assert candidates(GroupInfo.of(group))[0] == {"BLOCK_M": 128, "BLOCK_R": 64, "num_warps": 2}
    assert floor_us("mean", 32, 4000.0) == pytest.approx(2 * 32 * 50 * 2048 / 4000 / 1e3)
