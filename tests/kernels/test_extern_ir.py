"""The ``extern`` dialect written by hand: the verifier checks every dispatch
against its kernel, and ``dnnc run`` runs such a file on the reference backend
through the kernel's reference implementation."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from click.testing import CliRunner

from dnnc.cli import main
from dnnc.errors import IRError
from dnnc.ir.text import parse_ir

KERNEL = (
    'extern.kernel @simple_mul {bindings = [{name = "lhs", dtype = "f32", shape = ["n"], access = "read"}, '
    '{name = "rhs", dtype = "f32", shape = ["n"], access = "read"}, {name = "out", dtype = "f32", shape = ["n"], access = "write"}], '
    'push_constants = [{name = "dim", type = "i32", value = "n"}], block = array<i64: 64, 1, 1>, grid = [GRID], '
    'objects = {sm_90 = "kernels_sm_90.cubin"}, reference = "tests.kernels.references:mul"EXTRA}'
)


def _module(
    dispatch: str, grid: str = '"ceildiv(n, 64)"', extra: str = "", arg: str = "tensor<256xf32>", ret: str = "tensor<256xf32>"
) -> str:
    kernel = KERNEL.replace("GRID", grid).replace("EXTRA", extra)
    return (
        f"builtin.module {{\n  {kernel}\n  func.func @forward(%x: {arg}) -> {ret} {{\n"
        f"    %d = {dispatch}\n    func.return %d : {ret}\n  }}\n}}\n"
    )


GOOD = "extern.dispatch @simple_mul(%x, %x) {constants = []} : (tensor<256xf32>, tensor<256xf32>) -> tensor<256xf32>"


def test_a_well_formed_dispatch_verifies() -> None:
    parse_ir(_module(GOOD))


@pytest.mark.parametrize(
    ("dispatch", "kwargs", "message"),
    [
        (GOOD.replace("@simple_mul", "@missing"), {}, "no extern.kernel @missing in the module"),
        (
            GOOD.replace("-> tensor<256xf32>", "-> tensor<255xf32>"),
            {"ret": "tensor<255xf32>"},
            "kernel simple_mul: results are 255xf32, but the declaration gives 256xf32",
        ),
        (
            "extern.dispatch @simple_mul(%x, %x) {constants = []} : (tensor<256xf16>, tensor<256xf16>) -> tensor<256xf32>",
            {"arg": "tensor<256xf16>"},
            "binding 'lhs' is declared f32\\[n\\], got a tensor of \\[256\\] float16",
        ),
        (GOOD.replace("constants = []", "constants = [3 : i32]"), {}, "takes 0 push constant\\(s\\) from the caller"),
        (GOOD, {"grid": '"1", "n * 1000"'}, "grid \\[1, 256000, 1\\] for n=256: dim y must be 1..65535"),
        (GOOD, {"grid": '"n / 2"'}, "grid\\[0\\]: 'n / 2': operator Div is not allowed"),
        (GOOD, {"extra": ", blocks = array<i64: 1>"}, "unknown attribute 'blocks'"),
    ],
)
def test_the_verifier_names_what_is_wrong(dispatch: str, kwargs: dict[str, str], message: str) -> None:
    with pytest.raises(IRError, match=message):
        parse_ir(_module(dispatch, **kwargs), "hand.mlir")


def test_dnnc_run_executes_a_hand_written_program_through_the_reference(
    tmp_path: Path, rng: torch.Generator, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dnnc.kernels import reference

    monkeypatch.setattr(reference, "_known", {})  # as in a fresh process: nothing declared yet
    ir = tmp_path / "simple_mul.mlir"
    ir.write_text(_module(GOOD.replace("(%x, %x)", "(%x, %y)"), arg="tensor<256xf32>, %y: tensor<256xf32>"))
    x, y = torch.randn(256, generator=rng).numpy(), torch.randn(256, generator=rng).numpy()
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "y.npy", y)
    out = tmp_path / "out.npy"
    args = ["run", str(ir), f"--input=@{tmp_path / 'x.npy'}", f"--input=@{tmp_path / 'y.npy'}", f"--output={out}"]
    refused = CliRunner().invoke(main, args)
    assert refused.exit_code != 0 and "Traceback" not in refused.output
    assert "does not import code that an IR file or artifact names" in refused.output
    result = CliRunner().invoke(main, [*args, "--trust-code"])
    assert result.exit_code == 0, result.output
    np.testing.assert_allclose(np.load(out), x * y, rtol=1e-6)
