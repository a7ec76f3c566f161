"""The cuDNN backend: grouping, layouts and lowering run anywhere (CPU tests);
building, tuning and executing graphs needs ``nvidia-cudnn-frontend`` and a GPU
(``dnnc.backends.cudnn.runtime``, imported only when a program runs on one).

The names below are the backend's surface for the other stages (the partitioner,
the executor, artifacts, spec tools); each module is imported when a name from it
is first used."""

import importlib.util

from dnnc.lazy import lazy_names
from dnnc.log import say_once

PUBLIC = {
    "grow_epilogue": "grouping",
    "takes_epilogue": "grouping",
    "accepted_pattern": "patterns",
    "group_label": "patterns",
    "build_kernel": "runtime",
    "rebuild_kernel": "runtime",
    "PlanRecord": "runtime",
    "GraphUnsupported": "runtime",
    "MAX_TIMED_PLANS": "runtime",
    "raise_graph": "raising",
    "RaiseError": "raising",
    "graph_signature": "signature",
    "mark_group": "marking",
    "not_lowered": "marking",
    "KERNEL_BACKEND": "kernel_backend:CUDNN",
}
__getattr__ = lazy_names(__name__, PUBLIC)


def has_cudnn_frontend() -> bool:
    """Whether ``nvidia-cudnn-frontend`` is installed (without importing it); said once when not."""
    if importlib.util.find_spec("cudnn") is None:
        say_once("dnnc: nvidia-cudnn-frontend is not installed (pip install 'dnnc[cuda]'); compiling without cuDNN graphs")
        return False
    return True


__all__ = ["has_cudnn_frontend", *PUBLIC]
