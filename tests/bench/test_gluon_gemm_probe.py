"""``bench/gluon_gemm_probe.py``: its Gluon kernels build for sm_90 on a machine without a
GPU, as the probe runs them (Gluon has no interpreter: the probe checks each kernel's
result against float32 on the GPU before it times it). Built in a process of its own, so
a test process's ``TRITON_INTERPRET`` does not reach Triton's compiler."""

from __future__ import annotations

import pytest

from tests.bench.sm90_build import compiled_json

pytest.importorskip("triton.experimental.gluon.language.nvidia.hopper")

BUILD = "import json; from bench.gluon_gemm_probe import compile_only; print(json.dumps(compile_only(first_only=True)))"


def test_the_kernels_build_for_sm90_with_wgmma_and_tma() -> None:
    built = compiled_json(BUILD, timeout=600)
    assert set(built) == {
        "persistent_128x128x64_w4s4",
        "persistent-noresidual_128x128x64_w4s4",
        "pingpong_128x128x64_w4s4",
        "summed-pingpong_128x128x64_w4s4",
    }
    for name, kernel in built.items():
        assert kernel["built"], f"{name}: {kernel.get('error')}"
        assert kernel["wgmma"] and kernel["tma_loads"] and kernel["tma_stores"], name
        # operand ring, residual / output buffers: within Hopper's 227 KiB of shared memory
        assert kernel["shared"] <= 227 * 1024, name
    assert built["pingpong_128x128x64_w4s4"]["setmaxnreg"] and built["summed-pingpong_128x128x64_w4s4"]["setmaxnreg"]
    assert not built["persistent_128x128x64_w4s4"]["setmaxnreg"]
