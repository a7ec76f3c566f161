"""The benchmark suite behind ``bench/run.py``: dnnc against its peers on one GPU in
one run (``workloads``, ``floors``, ``torch_variants``, ``jax_worker``, ``report``)."""

CHECK = 2e-2
"""Largest relative error against the float32 reference an fp16 result may have
(eager fp16 itself is at ~2e-3 on ResNet-50); shared by every variant, the JAX
worker included (this module imports nothing, so the worker stays free of torch)."""
