"""An artifact is data: loading and running a ``.dnnc`` never executes Python the
file carries (a Triton kernel record's text) or names (a user kernel's reference),
whatever the file says and even with its hashes made to match."""

from __future__ import annotations

import hashlib
import json
import zipfile
from pathlib import Path

import torch
from torch import nn

import dnnc


class _Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(self.fc(x), -1)


def payload(mark: Path) -> str:
    """Python that leaves ``mark`` behind if anything executes it."""
    return f"import pathlib\npathlib.Path({str(mark)!r}).write_text('ran')\n"


def rewrite_member(path: Path, member: str, data: bytes) -> None:
    """Replace one member and record its new SHA-256 in the manifest, as a crafted file would."""
    with zipfile.ZipFile(path) as z:
        contents = {n: z.read(n) for n in z.namelist()}
    contents[member] = data
    manifest = json.loads(contents["manifest.json"])
    manifest["members"][member] = hashlib.sha256(data).hexdigest()
    contents["manifest.json"] = json.dumps(manifest).encode()
    with zipfile.ZipFile(path, "w") as z:
        for name, body in contents.items():
            z.writestr(name, body)


def _gpu_artifact(tmp_path: Path, net: nn.Module, x: torch.Tensor) -> Path:
    """A GPU-form program (Triton groups) saved as built for sm_90, on this CPU machine."""
    from dnnc.api import CompiledModule
    from dnnc.pipeline import CompileReport, lower_for_gpu

    reference = dnnc.compile(net, (x,), device="cpu")
    program = reference.program
    lower_for_gpu(program, backends=["triton"])
    module = CompiledModule(program, CompileReport(), "cpu", reference._in_spec, reference._out_spec, target="sm_90")
    return module.save(tmp_path / "gpu.dnnc")


def test_a_kernel_record_carrying_code_loads_and_runs_without_running_it(tmp_path: Path) -> None:
    net, x = _Net().eval(), torch.randn(4, 8)
    path = _gpu_artifact(tmp_path, net, x)
    mark = tmp_path / "payload-ran"
    record = {
        "ordinal": 0,
        "kind": "softmax",
        "name": "k0",
        "text": payload(mark) + "import triton\n",
        "signature": {"x": "*fp32", "y": "*fp32"},
        "grid": [1, 1, 1],
        "options": {"num_warps": 4},
        "config": {"BLOCK_M": 4, "BLOCK_R": 16, "num_warps": 4},
    }
    rewrite_member(path, "kernels/sm_90/triton.json", json.dumps([record]).encode())
    loaded = dnnc.load(path, device="cpu")
    with torch.no_grad():
        torch.testing.assert_close(loaded(x), net(x), rtol=1e-5, atol=1e-6)
    assert not mark.exists()
