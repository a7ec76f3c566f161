"""JAX/XLA in its own process (XLA and PyTorch each want the GPU's memory):

    python -m bench.suite.jax_worker WEIGHTS.npz RESULT.json [--xla] [--dnnc]

``WEIGHTS.npz`` holds the model name (``__model__``), its ``state_dict`` in
float32, the inputs (``__input_0``...) and the float32 reference output
(``__reference__``). The network from ``jax_nets`` is jitted in fp16, checked
against the reference, then timed (wall clock around ``block_until_ready``, the
median of batches of calls); compile time and peak device memory are recorded.
With ``--dnnc`` the same jitted fp16 function also goes through dnnc
(``dnnc.jax.compile``: its StableHLO imported, compiled with the ``auto``
partition) and is checked and timed the same way, JAX arrays in and out. RESULT
holds a list of entries, one per variant asked for (default: ``--xla``).
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")  # before jax is imported

import numpy as np


def _load(weights: Path) -> tuple[str, Any, Any, list[Any], np.ndarray]:
    import jax.numpy as jnp

    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from bench.suite.jax_nets import NETS

    data = np.load(weights)
    model = str(data["__model__"])
    sd = {k: data[k] for k in data.files if not k.startswith("__")}
    inputs = [data[k] for k in sorted(k for k in data.files if k.startswith("__input_"))]
    fn, params = NETS[model](sd, jnp.float16)
    xs = [jnp.asarray(x, jnp.float16) if np.issubdtype(x.dtype, np.floating) else jnp.asarray(x) for x in inputs]
    return model, fn, params, xs, data["__reference__"]


def _checked_and_timed(entry: dict[str, Any], call: Any, reference: np.ndarray, compile_s: float) -> dict[str, Any]:
    from bench.suite import CHECK

    entry["compile_s"] = compile_s
    got = np.asarray(call(), np.float32)
    entry["rel_error"] = float(np.linalg.norm(got - reference) / max(np.linalg.norm(reference), 1e-30))
    if not entry["rel_error"] <= CHECK:
        return {**entry, "status": "wrong result"}
    entry["median_ms"] = median_ms(call)
    entry["status"] = "ok"
    return entry


def run(weights: Path) -> dict[str, Any]:
    import jax

    _, fn, params, xs, reference = _load(weights)
    entry: dict[str, Any] = {"variant": "JAX/XLA", "jax": jax.__version__, "device": str(jax.devices()[0])}
    jitted = jax.jit(fn)
    started = time.perf_counter()
    jitted(params, *xs).block_until_ready()
    entry = _checked_and_timed(entry, lambda: jitted(params, *xs), reference, time.perf_counter() - started)
    stats = jax.devices()[0].memory_stats() or {}
    entry["peak_mb"] = stats.get("peak_bytes_in_use", 0) / 2**20 or None
    return entry


def run_dnnc(weights: Path) -> dict[str, Any]:
    """The same JAX function compiled by dnnc from its StableHLO."""
    import functools

    import jax

    import dnnc.jax
    from dnnc import knobs

    _, fn, params, xs, reference = _load(weights)
    entry: dict[str, Any] = {"variant": "dnnc from JAX", "jax": jax.__version__}
    started = time.perf_counter()
    with knobs.override(partition="auto"):
        compiled = dnnc.jax.compile(functools.partial(fn, params), *xs)  # the GPU where there is one
        compiled(*xs).block_until_ready()
    entry = _checked_and_timed(entry, lambda: compiled(*xs), reference, time.perf_counter() - started)
    if compiled.module.device == "cuda":
        entry["steps"] = compiled.module.summary()["steps"]
    return entry


def median_ms(fn: Any, inner: int = 10, repeats: int = 25, warmup: int = 5) -> float:
    for _ in range(warmup):
        fn().block_until_ready()
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        for _ in range(inner):
            out = fn()
        out.block_until_ready()
        times.append((time.perf_counter() - started) * 1e3 / inner)
    return statistics.median(times)


def main() -> None:
    weights, result = Path(sys.argv[1]), Path(sys.argv[2])
    asked = [a for a in sys.argv[3:] if a in ("--xla", "--dnnc")] or ["--xla"]
    entries = []
    for flag, fn, name in (("--xla", run, "JAX/XLA"), ("--dnnc", run_dnnc, "dnnc from JAX")):
        if flag not in asked:
            continue
        try:
            entries.append(fn(weights))
        except Exception as e:  # reported in the results, never fatal to the suite
            entries.append({"variant": name, "status": f"failed: {type(e).__name__}: {str(e)[:300]}"})
    result.write_text(json.dumps(entries))


if __name__ == "__main__":
    main()
