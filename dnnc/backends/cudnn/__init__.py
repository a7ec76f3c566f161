"""The cuDNN backend: grouping, layouts and lowering run anywhere (CPU tests);
building, tuning and executing graphs needs ``nvidia-cudnn-frontend`` and a GPU
(``dnnc.backends.cudnn.runtime``, imported only when a program runs on one)."""

import importlib.util

from dnnc.log import say_once


def has_cudnn_frontend() -> bool:
    """Whether ``nvidia-cudnn-frontend`` is installed (without importing it); said once when not."""
    if importlib.util.find_spec("cudnn") is None:
        say_once("dnnc: nvidia-cudnn-frontend is not installed (pip install 'dnnc[cuda]'); compiling without cuDNN graphs")
        return False
    return True
