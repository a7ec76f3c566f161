"""The benchmark suite behind ``bench/run.py``: dnnc against its peers on one GPU in
one run (``workloads``, ``floors``, ``torch_variants``, ``jax_worker``, ``report``)."""

CHECK = 2e-2
"""Largest relative error against the float32 reference an fp16 result may have
(eager fp16 itself is at ~2e-3 on ResNet-50); shared by every variant, the JAX
worker included (this module imports nothing, so the worker stays free of torch)."""


def progress(row: dict) -> None:
    """One line per variant as soon as it is done (a run cut short still shows it)."""
    if row.get("status") == "ok":
        what = f"{row['median_ms']:.4f} ms, compiled in {row.get('compile_s', 0):.1f} s"
    else:
        what = str(row.get("status"))
    print(f"    {row['variant']}: {what}", flush=True)
