"""torch.compile ``mode="max-autotune"`` as a peer, in a process of its own:

    python -m bench.suite.max_autotune WORKLOAD RESULT.json

Inductor's max-autotune benchmarks Triton GEMM and convolution templates against cuBLAS
and cuDNN for every product, so its compile can take many minutes; the suite counts it
as a peer only where the compile finishes within ``COMPILE_LIMIT_S`` (the issue's
five minutes a workload). A compile cannot be interrupted inside a process, so the
worker builds the workload from its name (seeded weights and inputs, the same ones
``bench/run.py`` builds), computes the float32 reference the same way, and checks and
times the variant with ``torch_variants``'s rules; the parent stops it at the limit.
RESULT holds the one row, as ``torch_variants.measure`` makes it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]

COMPILE_LIMIT_S = 300.0
"""A max-autotune compile longer than this is reported, not compared."""

GRACE_S = 120.0
"""What the worker may spend besides the compile: importing torch, building the model and
its float32 reference, and the timed calls."""


def max_autotune_row(
    workload: str, limit_s: float = COMPILE_LIMIT_S, grace_s: float = GRACE_S, command: Sequence[str] | None = None
) -> dict[str, Any]:
    """The max-autotune row of ``workload``: its worker's row when the compile finished
    within ``limit_s``, else a row whose status says why it is not compared. ``command``
    replaces the worker's (it gets RESULT.json as its last argument)."""
    from bench.suite.torch_variants import MAX_AUTOTUNE

    with tempfile.TemporaryDirectory(prefix="dnnc-max-autotune-") as tmp:
        result = Path(tmp) / "result.json"
        argv = [*(command or [sys.executable, "-m", "bench.suite.max_autotune", workload]), str(result)]
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)}
        # A session of its own: Inductor's compile and autotuning processes go with the worker.
        worker = subprocess.Popen(
            argv, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True
        )
        try:
            _, stderr = worker.communicate(timeout=limit_s + grace_s)
        except subprocess.TimeoutExpired:
            os.killpg(worker.pid, signal.SIGKILL)
            worker.communicate()
            return {"variant": MAX_AUTOTUNE, "status": f"over the limit: not done after {limit_s + grace_s:.0f} s"}
        if not result.exists():
            last = (stderr.strip().splitlines() or ["no output"])[-1]
            return {"variant": MAX_AUTOTUNE, "status": f"failed: the worker exited with {worker.returncode}: {last[:300]}"}
        row = json.loads(result.read_text())
    if row.get("status") == "ok" and row["compile_s"] > limit_s:
        return {**row, "status": f"over the limit: compiled in {row['compile_s']:.0f} s (limit {limit_s:.0f} s)"}
    return row


def main(argv: Sequence[str]) -> int:
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    workload_name, result = argv
    import torch

    from bench.suite.torch_variants import MAX_AUTOTUNE, reference_output, torch_variants
    from bench.suite.workloads import WORKLOADS

    if not torch.cuda.is_available():
        row = {"variant": MAX_AUTOTUNE, "status": "failed: no NVIDIA GPU is visible"}
    else:
        model, inputs = WORKLOADS[workload_name].build()
        (row,) = torch_variants(model, inputs, reference_output(model, inputs), {MAX_AUTOTUNE})
    Path(result).write_text(json.dumps(row))
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    raise SystemExit(main(sys.argv[1:]))
