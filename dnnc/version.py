"""The dnnc version, in one place (cache keys and artifacts record it), the digest of
the code that carries it, and the versions of the libraries it builds with."""

import functools
import hashlib
from pathlib import Path

__version__ = "0.1.0"

PACKAGE = Path(__file__).resolve().parent
SOURCE_SUFFIXES = (".py", ".toml")
"""The package's code and the data it ships (tuning specs)."""


@functools.cache
def source_digest(root: Path = PACKAGE) -> str:
    """A digest of every source and shipped-data file under ``root`` (the installed
    package), paths included. Caches key by it beside the version: the version stays the
    same across commits, and a measured time, a contest's winner or a cached compile made
    by other code (a kernel generated another way) must not be served. About 20 ms,
    once per process."""
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        if path.suffix in SOURCE_SUFFIXES and "__pycache__" not in path.parts and path.is_file():
            digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:32]


def code_identity() -> dict[str, str]:
    """The version and the code's digest: what a cache of dnnc's own results keys by."""
    return {"dnnc": __version__, "source": source_digest()}


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
