"""Where a loaded artifact runs, given the target it was built for and the device asked for."""

from __future__ import annotations

import warnings
from pathlib import Path

import torch

from dnnc import knobs
from dnnc.errors import ArtifactError, ArtifactWarning
from dnnc.log import say_once
from dnnc.runtime import device as runtime_device_choice


def runtime_device(target: str, requested: str | None, source: Path) -> str:
    """``cpu`` or ``cuda``. A ``cpu`` artifact holds canonical IR for the reference backend
    and is refused on a GPU; a GPU artifact runs on the reference backend where there is
    no GPU, and on a GPU of another architecture after rebuilding its kernels (warned)."""
    requested = requested or knobs.get().device
    if requested not in ("auto", "cpu", "cuda") and not requested.startswith("cuda:"):
        raise ArtifactError(f"unknown device {requested!r}: expected 'auto', 'cpu', 'cuda' or 'cuda:<index>'")
    if target == "cpu":
        if requested.startswith("cuda"):
            raise ArtifactError(
                f"artifact {source} was compiled for the CPU reference backend (target 'cpu') and cannot run on cuda: "
                "compile the model with --device cuda"
            )
        return "cpu"
    device = runtime_device_choice.resolve_device(requested)
    if device == "cpu":
        say_once(f"dnnc: artifact {source} was compiled for {target}; running it on the CPU reference backend")
        return "cpu"
    major, minor = torch.cuda.get_device_capability()
    here = f"sm_{major}{minor}"
    if here != target:
        warnings.warn(
            f"artifact {source} was built for {target}, this GPU is {here}: Triton kernels are compiled for {here} and "
            "cuDNN plans rebuilt from their recorded engines (cuDNN heuristics where an engine is not valid here)",
            ArtifactWarning,
            stacklevel=3,
        )
    return device
