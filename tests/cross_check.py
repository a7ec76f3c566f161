"""Builds artifacts for sm_90 on this machine, as ``test_cross_compile.py`` checks them:
run as a script in a process without TRITON_INTERPRET (the interpreter replaces
Triton's own library functions, which ``triton.compile`` uses). Writes BERT's layer
(batch 1, 128 tokens), its input and the model's float64 output, and a bucketed
layer, under the directory given; then takes every stored kernel back with this
process's compiled kernels forgotten and ``triton.compile`` refused. Prints a JSON
line of what it found."""

from __future__ import annotations

import json
import sys
import zipfile
from pathlib import Path

import torch
import triton

import dnnc
from dnnc.backends.triton import compiler
from dnnc.backends.triton.kernel_backend import parse_records
from dnnc.models import FACTORIES


def _bert(batch: int, seq: int) -> tuple[torch.nn.Module, torch.Tensor]:
    model, (x,) = FACTORIES["bert_layer"](batch=batch, seq=seq)
    return model.eval().half(), x.half()


def main(out: Path) -> dict:
    model, x = _bert(1, 128)
    compiled = dnnc.compile(model, (x,), target="sm_90")
    path = compiled.save(out / "layer.dnnc")
    fresh = torch.randn(x.shape).half()
    torch.save(fresh, out / "x.pt")
    with torch.no_grad():
        torch.save(model.double()(fresh.double()), out / "expected.pt")
    model, x = _bert(2, 16)
    bucketed = dnnc.compile(model, (x,), dynamic={"batch": (1, 4)}, target="sm_90")
    bucketed.save(out / "bucketed.dnnc")
    records = parse_records(json.loads(zipfile.ZipFile(path).read("kernels/sm_90/triton.json")), "triton.json")
    compiler._compiled.clear()
    compiler._objects.clear()

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("triton.compile called for a kernel the artifact stores")

    triton.compile = refuse
    adopted = [
        r.compiled is not None
        and compiler.adopt(r.source, 90, r.compiled)
        and compiler.compile_for(r.source, compiler.cuda_target(90)).name == r.source.name
        for r in records.values()
    ]
    return {
        "device": compiled.device,
        "target": compiled.target,
        "steps": compiled.summary()["steps"],
        "adopted": adopted,
        "buckets": len(bucketed.modules),
    }


if __name__ == "__main__":
    print(json.dumps(main(Path(sys.argv[1]))))
