"""A probe's Triton kernel built for sm_90 by Triton's compiler on a machine without a GPU,
in a process of its own (a test process's kernels are the interpreter's): what came out,
asked of its PTX and metadata. The interpreter runs a kernel's arithmetic; only the
compiler shows whether its K loops pipeline onto Hopper's wgmma."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

BUILD = """
import importlib, json, sys
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

module, name, values, warps, stages = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
fn = getattr(importlib.import_module(module), name)
signature, constants = {}, {}
for i, (arg, param) in enumerate(zip(fn.arg_names, fn.params)):
    if param.is_constexpr:
        signature[arg], constants[(i,)] = "constexpr", values[arg]
    else:
        signature[arg] = values[arg] if isinstance(values[arg], str) else "i32"
# the pointers 16-byte aligned, as a launch on torch tensors specializes them
aligned = {(i,): [["tt.divisibility", 16]] for i, t in enumerate(signature.values()) if t.startswith("*")}
source = ASTSource(fn, signature, constants, aligned)
built = triton.compile(source, target=GPUTarget("cuda", 90, 32), options={"num_warps": warps, "num_stages": stages})
ptx = built.asm["ptx"]
print(json.dumps({"wgmma": "wgmma.mma_async" in ptx, "cp_async": "cp.async" in ptx, "tma": "cp.async.bulk.tensor" in ptx,
                  "shared_loads": ptx.count("ld.shared") + ptx.count("ldmatrix"), "shared": built.metadata.shared}))
"""


def built_for_sm90(module: str, name: str, values: dict[str, Any], warps: int, stages: int) -> dict[str, Any]:
    """Build ``module.name`` with ``values`` for its parameters (a type string such as
    ``"*fp16"`` for a pointer or ``"tensordesc<fp16[64, 32]>"`` for a TMA descriptor, an
    int for an integer or a constexpr). Says whether the PTX has wgmma, cp.async and TMA
    (``cp.async.bulk.tensor``) instructions, how many loads from shared memory into
    registers it has (none where every product's operands go to wgmma as they lie), and
    the shared memory the kernel takes."""
    return compiled_json(BUILD, module, name, json.dumps(values), str(warps), str(stages))


def compiled_json(code: str, *args: str, env: dict[str, str] | None = None, timeout: int = 300) -> Any:
    """The JSON the last line of ``code`` prints, run with ``args`` in a Python process of
    its own from the repository root (``bench`` and ``tests`` import from there), where
    Triton compiles rather than interprets (``env``: more variables to set)."""
    done = subprocess.run(
        [sys.executable, "-c", code, *args],
        env={**os.environ, "TRITON_INTERPRET": "0", "TRITON_DEFAULT_FP_FUSION": "1", **(env or {})},
        cwd=Path(__file__).resolve().parents[2],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])
