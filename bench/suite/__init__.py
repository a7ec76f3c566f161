"""The benchmark suite behind ``bench/run.py``: dnnc against its peers on one GPU in
one run (``workloads``, ``floors``, ``torch_variants``, ``jax_worker``, ``report``)."""
