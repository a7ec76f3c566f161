"""Compiles one kernel of every kind for sm_90 with ``triton.compile`` and checks the
content-keyed cache; run as a script by test_compile.py in a process without
TRITON_INTERPRET (the interpreter replaces Triton's own library functions).

It also compiles the layout changes around ResNet-50's channels-last convolutions
(stem transpose + channel pad, NHWC max pool between two transposes, NHWC global
mean, an NHWC -> NCHW transpose) at aligned sizes and reports the global memory
instructions of each: 16-byte vectors (``.v4.b32``) on both sides show the loads and
the stores are contiguous along the lanes, which is what coalescing needs."""

from __future__ import annotations

import json
import re
import sys
from dataclasses import replace
from pathlib import Path

import triton

from dnnc import knobs
from dnnc.backends.triton import compiler
from dnnc.backends.triton.configs import candidates, with_launch
from dnnc.backends.triton.fusion import TritonFuse
from dnnc.backends.triton.kernels import GroupInfo, generate
from dnnc.ir import tcp
from dnnc.ir.params import ParamStore
from dnnc.ir.program import Program
from dnnc.ir.text import parse_ir
from dnnc.pipeline import run_passes
from tests.backends.triton.cases import CASES

CHANNELS_LAST = """func.func @forward(%x: tensor<2x3x32x32xf16>, %r: tensor<2x32x32x64xf16>, %f: tensor<2x7x7x256xf16>, %y: tensor<2x16x16x64xf16>) -> (tensor<2x32x32x8xf16>, tensor<2x16x16x64xf16>, tensor<2x256x1x1xf16>, tensor<2x64x16x16xf16>) {
  %xt = tcp.transpose %x {permutation = array<i64: 0, 2, 3, 1>} : tensor<2x3x32x32xf16> -> tensor<2x32x32x3xf16>
  %stem = tcp.pad %xt {low = array<i64: 0, 0, 0, 0>, high = array<i64: 0, 0, 0, 5>, value = 0.0 : f64} : tensor<2x32x32x3xf16> -> tensor<2x32x32x8xf16>
  %rt = tcp.transpose %r {permutation = array<i64: 0, 3, 1, 2>} : tensor<2x32x32x64xf16> -> tensor<2x64x32x32xf16>
  %m = tcp.max_pool2d %rt {kernel = array<i64: 3, 3>, stride = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, dilation = array<i64: 1, 1>, ceil_mode = 0 : i64} : tensor<2x64x32x32xf16> -> tensor<2x64x16x16xf16>
  %pool = tcp.transpose %m {permutation = array<i64: 0, 2, 3, 1>} : tensor<2x64x16x16xf16> -> tensor<2x16x16x64xf16>
  %ft = tcp.transpose %f {permutation = array<i64: 0, 3, 1, 2>} : tensor<2x7x7x256xf16> -> tensor<2x256x7x7xf16>
  %mean = tcp.reduce_mean %ft {axes = array<i64: 2, 3>, keepdim = true} : tensor<2x256x7x7xf16> -> tensor<2x256x1x1xf16>
  %nchw = tcp.transpose %y {permutation = array<i64: 0, 3, 1, 2>} : tensor<2x16x16x64xf16> -> tensor<2x64x16x16xf16>
  func.return %stem, %pool, %mean, %nchw : tensor<2x32x32x8xf16>, tensor<2x16x16x64xf16>, tensor<2x256x1x1xf16>, tensor<2x64x16x16xf16>
}"""
"""Outputs in order: stem (transpose), pool, mean (reduce), nchw (transpose)."""


def memory_instructions(target) -> list[dict]:
    """Kind and the distinct global load / store instructions of each kernel of ``CHANNELS_LAST``."""
    program = Program(parse_ir(CHANNELS_LAST, "channels_last"), ParamStore())
    run_passes(program, [TritonFuse()])
    out = []
    for group in program.entry.body.walk():
        if isinstance(group, tcp.IsolatedGroupOp):
            source = generate(group, candidates(GroupInfo.of(group))[0])
            ptx = compiler.compile_for(source, target).asm["ptx"]
            loads = sorted(set(re.findall(r"ld\.global[.\w]*", ptx)))
            stores = sorted(set(re.findall(r"st\.global[.\w]*", ptx)))
            out.append({"kind": source.kind, "loads": loads, "stores": stores})
    return out


def precompiled(target) -> dict:
    """The other configs of a matmul group, compiled by two worker processes; then
    each loads here from the kernel cache without compiling."""
    program = next(c for c in CASES if c.name.startswith("matmul")).program("f16")
    run_passes(program, [TritonFuse()])
    group = next(g for g in program.entry.body.walk() if isinstance(g, tcp.IsolatedGroupOp))
    sources = [generate(group, config) for config in candidates(GroupInfo.of(group))[1:]]
    with knobs.override(compile_workers=2):
        count = compiler.precompile(sources, target)
    return {"precompiled": count, "precompile_sources": len(sources), "precompiled_load": all_load_from_cache(sources, target)}


def all_load_from_cache(sources, target) -> bool:
    """Every source loads as a cubin with compiling made impossible."""
    compiler._compiled.clear()  # forget the in-process copies
    real_compile = triton.compile

    def refuse(*args, **kwargs):
        raise AssertionError("compiled although the cache holds this kernel")

    triton.compile = refuse
    try:
        return all(compiler.compile_for(s, target).asm["cubin"][:4].hex() == "7f454c46" for s in sources)
    finally:
        triton.compile = real_compile


def adopted(sources, target) -> dict:
    """Each kernel as an artifact stores it (``object_of``), taken into a process
    that has neither compiled it nor cached it (the cache is pointed at an empty
    folder), with compiling made impossible; and a stored kernel whose content key is
    another one's (another Triton, another source) refused."""
    import tempfile

    capability = target.arch
    stored = [compiler.object_of(s, capability) for s in sources]
    compiler._compiled.clear()
    compiler._objects.clear()
    real_compile = triton.compile

    def refuse(*args, **kwargs):
        raise AssertionError("compiled although the artifact holds this kernel")

    with tempfile.TemporaryDirectory() as empty, knobs.override(cache_dir=empty):
        triton.compile = refuse
        try:
            taken = all(o is not None and compiler.adopt(s, capability, o) for s, o in zip(sources, stored))
            launched = all(compiler.compile_for(s, target).asm["cubin"][:4].hex() == "7f454c46" for s in sources)
        finally:
            triton.compile = real_compile
        other = {**stored[0], "key": stored[1]["key"]}
        compiler._compiled.clear()
        refused = not compiler.adopt(sources[0], capability, other)
        suffixes = sorted(Path(n).suffix for n in stored[0]["files"])
    return {"adopted": taken and launched, "adopt_refused_other_key": refused, "object_files": suffixes}


def main() -> dict:
    target = compiler.cuda_target(int(sys.argv[1]) if len(sys.argv) > 1 else 90)
    kinds: dict[str, str] = {}
    waits: dict[str, bool] = {}
    fused: dict[str, bool] = {}
    sources = []
    for case in CASES:
        program = case.program("f16")
        run_passes(program, [TritonFuse()])
        for group in program.entry.body.walk():
            if isinstance(group, tcp.IsolatedGroupOp):
                source = generate(group, candidates(GroupInfo.of(group))[0])
                try:
                    kernel = compiler.compile_for(source, target)
                except Exception as e:
                    if "ptxas" in str(e).lower():
                        return {"skip": f"this Triton cannot run ptxas: {e}"}
                    raise
                kinds[source.kind] = kernel.asm["cubin"][:4].hex()
                fused[source.kind] = bool(kernel.metadata.enable_fp_fusion)
                sources.append(source)
                launched = compiler.compile_for(
                    generate(group, with_launch(candidates(GroupInfo.of(group))[0], target.arch)), target
                )
                waits[source.kind] = "griddepcontrol.wait" in launched.asm["ptx"] and bool(launched.metadata.launch_pdl)
    # A second process would find every kernel in the cache.
    reloaded = all_load_from_cache(sources, target)
    adoption = adopted(sources, target)
    # A failing compile is not remembered: it fails again, and is tried again.
    broken = replace(sources[0], text=sources[0].text.replace("tl.program_id(0)", "tl.program_id(0) + tl.no_such_op()"))
    failures = 0
    for _ in range(2):
        try:
            compiler.compile_for(broken, target)
        except Exception:
            failures += 1
    return {
        **precompiled(target),
        "kinds": kinds,
        "pdl": waits,
        "fp_fusion": fused,
        "reloaded": reloaded,
        **adoption,
        "failures": failures,
        "channels_last": memory_instructions(target),
        "triton": triton.__version__,
    }


if __name__ == "__main__":
    print(json.dumps(main()))
