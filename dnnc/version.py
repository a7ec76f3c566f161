"""The dnnc version, in one place (cache keys and artifacts record it), and the
versions of the libraries it builds with."""

import functools

__version__ = "0.1.0"


def library_versions() -> dict[str, str | None]:
    """torch, Triton, the cuDNN frontend and the cuDNN library (as torch reports it,
    e.g. ``"91900"``); None for what is not installed. Artifacts record these, and
    measured times and contest winners are keyed by them (so it is asked often)."""
    return dict(_installed())


@functools.cache
def _installed() -> dict[str, str | None]:
    from importlib.metadata import PackageNotFoundError, version

    import torch

    found: dict[str, str | None] = {"torch": torch.__version__}
    for key, package in (("triton", "triton"), ("cudnn_frontend", "nvidia-cudnn-frontend")):
        try:
            found[key] = version(package)
        except PackageNotFoundError:
            found[key] = None
    cudnn = torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None
    found["cudnn"] = str(cudnn) if cudnn else None
    return found
