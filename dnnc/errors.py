"""Errors dnnc raises for bad input. Each message names the op, shape or file and
what was expected; the CLI prints them without a traceback."""

from __future__ import annotations


class DnncError(Exception):
    """Base of every user-facing dnnc error."""


class UnsupportedOpError(DnncError):
    """The importer met ops (or arguments of them) it has no rule for. ``problems``
    holds one entry per unsupported op and reason when the whole model was surveyed
    (``dnnc.frontend.problems.UnsupportedOp``), so tools can list them."""

    def __init__(self, message: str, problems: tuple[object, ...] = ()):
        super().__init__(message)
        self.problems = problems


class ExportError(DnncError):
    """``torch.export`` could not trace the model (data-dependent control flow,
    Python it cannot follow, or a model that raises for the example inputs)."""


class IRError(DnncError):
    """Textual IR that does not parse or does not verify."""


class ParamError(DnncError):
    """A parameter store that does not match the IR that uses it."""


class InputError(DnncError):
    """Run-time inputs that do not match what the program was compiled for."""


class OutOfRangeError(InputError):
    """An input size outside the range a bucketed module was compiled for."""


class PassError(DnncError):
    """An unknown pass, bad pass options, or a pass that left invalid IR."""


class ModelLoadError(DnncError):
    """A model given as ``file.py:factory`` that cannot be loaded."""


class BackendUnavailable(DnncError):
    """A backend's library or device is missing (e.g. the cuDNN frontend on a CPU machine)."""


class LibraryRefusal(DnncError):
    """A library's definite answer that it has no kernel for a graph: the same graph,
    library version and GPU always get it (cuDNN with no engine for a grouped
    convolution's fused graph), so it is a fact to remember, unlike a failure (a plan
    that ran out of memory while timed)."""


class ArtifactError(DnncError):
    """A ``.dnnc`` artifact that is missing, truncated, corrupt, of another schema
    version, or built for a target it cannot run on here."""


class ArtifactWarning(UserWarning):
    """An artifact that loads, but not exactly as it was built (other version or GPU)."""


class KernelDeclarationError(DnncError):
    """A user kernel's declaration that is inconsistent in itself, or with its call,
    its object code (the PTX ``.entry`` or cubin parameters) or the device's limits."""


class KernelBuildError(DnncError):
    """A user kernel that does not compile (nvcc or NVRTC), or whose objects are
    missing or unreadable."""


class SettingsError(DnncError, ValueError):
    """A ``DNNC_*`` environment variable or a knob override with a value it does not take."""
