"""The cuDNN backend: grouping, layouts and lowering run anywhere (CPU tests);
building, tuning and executing graphs needs ``nvidia-cudnn-frontend`` and a GPU
(``dnnc.backends.cudnn.runtime``, imported only when a program runs on one)."""
