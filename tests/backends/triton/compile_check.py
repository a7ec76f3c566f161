"""Compiles one kernel of every kind for sm_90 with ``triton.compile`` and checks the
content-keyed cache; run as a script by test_compile.py in a process without
TRITON_INTERPRET (the interpreter replaces Triton's own library functions)."""

from __future__ import annotations

import json
import sys
from dataclasses import replace

import triton

from dnnc.backends.triton import compiler
from dnnc.backends.triton.configs import candidates
from dnnc.backends.triton.fusion import TritonFuse
from dnnc.backends.triton.kernels import GroupInfo, generate
from dnnc.ir import tcp
from dnnc.pipeline import run_passes
from tests.backends.triton.cases import CASES


def main() -> dict:
    target = compiler.cuda_target(int(sys.argv[1]) if len(sys.argv) > 1 else 90)
    kinds: dict[str, str] = {}
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
                sources.append(source)
    # A second process would find every kernel in the cache: forget the in-process
    # copies and make compiling impossible.
    compiler._compiled.clear()
    real_compile = triton.compile

    def refuse(*args, **kwargs):
        raise AssertionError("compiled although the cache holds this kernel")

    triton.compile = refuse
    try:
        reloaded = all(compiler.compile_for(s, target).asm["cubin"][:4].hex() == "7f454c46" for s in sources)
        # A failing compile is not remembered: it fails again, and is tried again.
        broken = replace(sources[0], text=sources[0].text.replace("tl.program_id(0)", "tl.program_id(0) + tl.no_such_op()"))
        failures = 0
        triton.compile = real_compile
        for _ in range(2):
            try:
                compiler.compile_for(broken, target)
            except Exception:
                failures += 1
    finally:
        triton.compile = real_compile
    return {"kinds": kinds, "reloaded": reloaded, "failures": failures, "triton": triton.__version__}


if __name__ == "__main__":
    print(json.dumps(main()))
