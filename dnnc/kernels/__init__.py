"""User CUDA kernels inside compiled programs: declared (``CustomKernel`` or
``extern.kernel`` in the IR), built per architecture (nvcc or NVRTC, cached),
checked against their object code and the device, selected per GPU, launched."""

from dnnc.kernels.custom import CustomKernel
from dnnc.kernels.declaration import Binding, KernelDecl, PushConstant

__all__ = ["Binding", "CustomKernel", "KernelDecl", "PushConstant"]
