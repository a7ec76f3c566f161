"""What the GPU executor and the artifact need from a backend.

A backend compiles one top-level op it takes (a ``tcp.isolated_group``, a
``cudnn.graph``, an ``extern.dispatch``) into a ``GroupKernel``. The executor owns
memory: it allocates every output as a contiguous (row-major) tensor of the op's
result type and hands it to ``launch``, so kernels never allocate, never synchronize
and can be captured in a CUDA graph.

Each backend is one ``KernelBackend`` entry in ``dnnc.runtime.kernel_backends``; the
executor and the artifact iterate over that table. A kernel's ``record()`` is what
the backend needs to build the same kernel again without tuning (a cuDNN plan, a
Triton config); the artifact stores records as data, one member per backend, keyed
by the op's position among that backend's ops, and loading hands each op its record.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import torch
from xdsl.ir import Operation


class GroupKernel(Protocol):
    backend: str
    """Which backend runs it (its ``KernelBackend.name``)."""

    def launch(self, inputs: Sequence[torch.Tensor], outputs: Sequence[torch.Tensor]) -> None:
        """Enqueue the work on the current torch stream; write results into ``outputs``."""
        ...

    def record(self) -> dict[str, Any] | None:
        """JSON data that rebuilds this kernel without tuning; None: nothing to record."""
        ...


@dataclass(frozen=True)
class Recorded:
    """An artifact's kernel records, parsed: what loading builds from."""

    records: Mapping[str, Mapping[int, Any]] = field(default_factory=dict)
    """Backend name -> the op's position among that backend's ops -> its parsed record."""
    files: Mapping[str, bytes] = field(default_factory=dict)
    """Members holding user kernels' objects."""
    same_version: bool = True
    """Whether this dnnc's version wrote the artifact: a record it no longer reproduces
    then means the file was changed."""


@dataclass
class BuildContext:
    """What building one op's kernel may use besides the op."""

    device: torch.device
    recorded: Recorded | None = None
    """None at compile time (tune); an artifact's records when loading (never tune)."""
    base_dir: Path | None = None
    """Where a user kernel's relative paths start (compile time)."""
    shared: dict[str, Any] = field(default_factory=dict)
    """Kernels one executor's construction shares between identical ops, by a backend's key."""

    def record(self, backend: str, ordinal: int | None) -> Any:
        """The parsed record for the op, or None (compile time, or not recorded)."""
        if self.recorded is None or ordinal is None:
            return None
        return self.recorded.records.get(backend, {}).get(ordinal)


@dataclass(frozen=True)
class SpecChoice:
    """What a tuning spec's decision may say about one backend's kernel beyond choosing
    the backend (a cuDNN plan, a Triton config), and how dnnc reads, checks, prints and
    applies it. Specs, ``dnnc tune`` and the partitioner reach a decision's particulars
    only through this, so a backend brings its own spec fields with it.

    A choice is the decision table of the spec file without ``backend``: a mapping of
    the fields in ``keys`` (absent fields left out)."""

    library: str
    """The ``versions`` key of the library whose releases the choice holds for."""
    keys: tuple[str, ...]
    """The fields a decision for this backend may carry, in the order they are written."""
    problem: Callable[[Mapping[str, Any]], tuple[str, str] | None]
    """The first field of a choice read from a file that is wrong, and what is wrong
    (the message names the field as ``decision.<field>``), or None."""
    describe: Callable[[Mapping[str, Any]], str]
    """The choice in a few words, for reports (after the backend's name)."""
    of_kernel: Callable[[Operation, Any], Mapping[str, Any] | None]
    """The choice that reproduces the kernel built for a top-level op; given no kernel
    (the op was not built here), what a spec put on the op, if anything. None: nothing
    known to write."""
    holds_for: Callable[[Mapping[str, Any], str], str | None]
    """The library versions (PEP 440 range) a choice made with the given installed
    version holds for; None: any version (a bare choice of the backend)."""
    applied: Callable[[Mapping[str, Any]], Any]
    """What the backend builds the chosen kernel from (the partitioner carries it to
    the kernel): a plan, a config; None when the choice names none."""


@dataclass(frozen=True)
class KernelBackend:
    """One backend as the executor and the artifact see it."""

    name: str
    takes: Callable[[Operation], bool]
    """Whether a top-level op is this backend's."""
    build: Callable[[Operation, int | None, BuildContext], GroupKernel]
    """The op's kernel; the ordinal is its position among this backend's ops in the
    program as compiled (None: an op made while building, from a group given back)."""
    no_kernel: tuple[type[Exception], ...] = ()
    """What ``build`` raises when it has no kernel for the op: the op falls back (given
    back, or run as torch ops) instead of failing the build."""
    parse_records: Callable[[Any, str], dict[int, Any]] | None = None
    """An artifact member's JSON (and its name, for errors) -> ordinal -> record; None:
    the backend's kernels record nothing."""
    give_back: Callable[[Operation], None] | None = None
    """Rewrite an op this backend has no kernel for as tcp ops, for ``regroup``; raises
    when it cannot."""
    regroup: Callable[[Any], None] | None = None
    """Group the tcp ops other backends gave back in a module, as this backend's ops."""
    precompile: Callable[[Sequence[Operation], Any], None] | None = None
    """Given top-level ops (of one program or several) and the device: compile their
    kernels side by side, so that building them one by one finds them compiled. Only
    at compile time: an artifact's load builds from its records."""
    start_workers: Callable[[], None] | None = None
    """Start, in the background, the worker processes ``precompile`` will use, while a
    GPU compile exports and lowers the model."""
    gpu_only: bool = False
    """Off a GPU its ops run through their reference rules (torch ops)."""
    spec: SpecChoice | None = None
    """What a tuning spec may choose for its kernels; None: specs do not choose it."""
    records_for_target: Callable[[Sequence[tuple[int, Operation]], int], list[dict[str, Any]]] | None = None
    """Given its ops of a program (each with its ordinal) and a compute capability with
    no such GPU here: the records an artifact stores for them, kernels built for that
    target (``dnnc.compile(..., target=)``). None: it builds nothing ahead, and the
    load builds its kernels from the program (cuDNN: a spec's plan on the graph, else
    the heuristics' plan)."""


GROUP_BACKEND_ATTR = "backend"
"""Attribute on ``tcp.isolated_group`` naming the backend that takes it (a string)."""

GROUP_KIND_ATTR = "kind"
"""Attribute on ``tcp.isolated_group`` naming the pattern or kernel kind (a string)."""
SPEC_PLAN_ATTR = "dnnc.plan"
"""On an outlined cuDNN group: the plan (``PlanRecord`` JSON: engine, knobs, tag) a
tuning spec chose; ``lower-cudnn`` moves it onto the ``cudnn.graph``, which is then
built from it without tuning."""
SPEC_CONFIG_ATTR = "dnnc.triton_config"
"""On an op: the Triton config (JSON) a tuning spec chose for the kernel that holds it
(used as is, not tuned)."""
SITE_ATTR = "dnnc.site"
"""What a tuning spec would match at a cuDNN-rootable op, and the decision-record group
that runs it (JSON, ``partition.spec_facts.site_json``): on an outlined cuDNN group (carried to its
``cudnn.graph``) or on the root op inside a Triton group. ``dnnc tune`` reads it back
from the built program to write records."""


def group_attr(op: object, name: str) -> str | None:
    """A string attribute of a group or graph op (``backend``, ``kind``), or None."""
    from xdsl.dialects.builtin import StringAttr

    attr = getattr(op, "attributes", {}).get(name)
    return attr.data if isinstance(attr, StringAttr) else None
