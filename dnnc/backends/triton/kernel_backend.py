"""The Triton backend as the executor and the artifact see it (``KernelBackend``).

At compile time a group's configs are tuned (``compile_group``). Loading an artifact
generates the kernel again from the program's IR and the recorded config with dnnc's
own emitter (no config is timed); the recorded source is only compared with it, never
run. The artifact's compiled kernel is loaded where it is the build of that very source
for this target, Triton and dnnc (``compiler.adopt``); otherwise the source is compiled. A record that differs from what this dnnc generates is
refused (``ArtifactError``) when the same dnnc version wrote it, since the file was
changed; from another version it is a warning and the regenerated kernel runs. A
record missing or not fitting its group (kind, tensor count, config) is compiled from
the IR with the first heuristic config, with a warning.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

from xdsl.ir import Operation

from dnnc import knobs
from dnnc.backends.interface import BuildContext, GroupKernel, KernelBackend
from dnnc.backends.triton.configs import OPTIONAL_KEYS
from dnnc.backends.triton.emitter import CodegenError
from dnnc.backends.triton.fusion import TritonFuse
from dnnc.backends.triton.kernels import GroupInfo, KernelSource, generate
from dnnc.backends.triton.marking import is_triton_group, precompile_lowered
from dnnc.backends.triton.skeleton import gathers
from dnnc.backends.triton.spec_choice import TRITON_SPEC
from dnnc.errors import ArtifactError, ArtifactWarning
from dnnc.log import say_once
from dnnc.version import __version__

_SOURCE_FIELDS = ("kind", "name", "text", "signature", "grid", "options")


@dataclass(frozen=True)
class TritonRecord:
    """What an artifact says about one Triton group: the source it was compiled from
    (compared, never run) and the config to generate it again with (None in
    artifacts that did not record one)."""

    source: KernelSource
    config: dict[str, int] | None
    compiled: dict[str, Any] | None = None
    """The kernel compiled for the artifact's target (``compiler.object_of``, with its
    ``target``), or None: taken at load where it is this process's own build of the
    regenerated source (``compiler.adopt``), else the source is compiled."""


def parse_records(records: Any, member: str) -> dict[int, TritonRecord]:
    """Ordinal -> ``TritonRecord``; a malformed record names the member and field."""
    from dnnc.backends.triton.configs import config_problem

    if not isinstance(records, list):
        raise ArtifactError(f"{member}: expected a list of kernel records, got {type(records).__name__}")
    parsed = {}
    for i, r in enumerate(records):
        missing = [f for f in ("ordinal", *_SOURCE_FIELDS) if not isinstance(r, dict) or f not in r]
        if missing:
            raise ArtifactError(f"{member}: kernel record {i} has no field {missing[0]!r}")
        try:
            grid = tuple(int(g) for g in r["grid"])
            source = KernelSource(str(r["kind"]), str(r["name"]), str(r["text"]), dict(r["signature"]), grid, dict(r["options"]))  # type: ignore[arg-type]
        except (TypeError, ValueError) as e:
            raise ArtifactError(f"{member}: kernel record {i} is malformed: {e}") from None
        config = r.get("config")
        if config is not None:
            if not isinstance(config, dict):
                raise ArtifactError(f"{member}: kernel record {i}: config must be a table of integers")
            for key, value in config.items():
                problem = config_problem(str(key), value)
                if problem:
                    raise ArtifactError(f"{member}: kernel record {i}: config.{key}: {problem}")
        ordinal = r["ordinal"]
        if not isinstance(ordinal, int) or isinstance(ordinal, bool) or ordinal < 0 or ordinal in parsed:
            raise ArtifactError(f"{member}: kernel record {i}: ordinal {ordinal!r} is not a new non-negative integer")
        compiled = r.get("object")
        if compiled is not None:
            problem = _object_problem(compiled)
            if problem:
                raise ArtifactError(f"{member}: kernel record {i}: object: {problem}")
        parsed[ordinal] = TritonRecord(source, None if config is None else dict(config), compiled)
    return parsed


def _object_problem(compiled: Any) -> str | None:
    """Why a record's compiled kernel is malformed, or None."""
    if not isinstance(compiled, dict):
        return "expected a table"
    for field in ("target", "key", "hash"):
        if not isinstance(compiled.get(field), str):
            return f"{field} must be a string"
    files = compiled.get("files")
    if not isinstance(files, dict) or not files or not all(isinstance(n, str) and isinstance(d, str) for n, d in files.items()):
        return "files must be a table of file names to base64 text"
    if any("/" in n or "\\" in n or n in ("", ".", "..") for n in files):
        return "files must be plain file names"
    return None


def build(op: Operation, ordinal: int | None, context: BuildContext) -> GroupKernel:
    from dnnc.backends.triton.launch import compile_group

    if context.recorded is None:
        return compile_group(op, context.device)  # type: ignore[arg-type]
    return _rebuild(op, ordinal, context.record("triton", ordinal), context)


def _rebuild(op: Any, ordinal: int | None, record: TritonRecord | None, context: BuildContext) -> GroupKernel:
    import triton

    from dnnc.backends.triton.compiler import adopt, interpreting
    from dnnc.backends.triton.configs import merge_base, with_launch
    from dnnc.backends.triton.launch import TritonKernel, capability_of

    info = GroupInfo.of(op)
    expected = len(op.body.block.args) + len(op.outputs) + gathers(op)  # a gathering kernel's index flag
    heuristic = merge_base(info)
    problem = _record_problem(record, info.kind, expected, heuristic)
    if problem is not None:
        return _compiled_from_ir(op, context, f"Triton group {ordinal} ({info.kind}, {expected} tensors): {problem}")
    assert record is not None and record.config is not None
    config = {**heuristic, **record.config}
    interpret = interpreting()
    try:
        regenerated = generate(op, config, interpret=interpret, info=info)
    except CodegenError as e:
        # a Gluon kernel this Triton (or the interpreter) cannot build: the recorded source is
        # never run
        return _compiled_from_ir(
            op, context, f"Triton group {ordinal} ({info.kind}): its recorded kernel cannot be built here ({e})"
        )
    # A record is written by a GPU build, or by the interpreter in the tests: either form matches
    # (the other form is generated only when this one differs).
    if record.source != regenerated and record.source != _other_form(op, config, interpret, info):
        what = f"Triton group {ordinal} ({info.kind}): the recorded kernel differs from the one dnnc generates for its group and config"
        assert context.recorded is not None
        if context.recorded.same_version:
            raise ArtifactError(f"{what}: the artifact was changed after it was written; refusing it")
        warnings.warn(f"{what} (another dnnc version wrote it); running the generated one", ArtifactWarning, stacklevel=2)
    if interpret:
        return TritonKernel(regenerated, context.device, None, config)
    capability = capability_of(context.device)
    launched = with_launch(config, capability)
    if config.get("PDL") and "PDL" not in launched:
        # recorded with PDL, which this GPU (or the settings here) launches without
        return TritonKernel(generate(op, launched, info=info), context.device, capability, launched)
    compiled = record.compiled
    fits = compiled is not None and record.source == regenerated and compiled["target"] == f"sm_{capability}"
    if fits and not adopt(regenerated, capability, compiled):  # the source is compiled instead
        say_once(
            f"dnnc: the artifact's Triton kernels for sm_{capability} were compiled by another Triton or dnnc "
            f"version (this is Triton {triton.__version__}, dnnc {__version__}): compiling them here"
        )
    return TritonKernel(regenerated, context.device, capability, config)


def _compiled_from_ir(op: Any, context: BuildContext, why: str) -> GroupKernel:
    """The group compiled from the IR with its heuristic config, where its record cannot
    rebuild it (``why``, said as a warning)."""
    from dnnc.backends.triton.launch import compile_group

    warnings.warn(f"{why}; compiling it with the heuristic config", ArtifactWarning, stacklevel=3)
    with knobs.override(autotune=False):
        return compile_group(op, context.device)


def _other_form(op: Any, config: dict[str, int], interpret: bool, info: GroupInfo) -> KernelSource | None:
    """The group's kernel in the form ``interpret`` does not ask for, or None where it has
    none: a Gluon kernel (``STEM``, ``PINGPONG``, ``BOXES``) is built for the GPU only, and a record
    that differs from its one form is a changed record, not a kernel to run as torch ops."""
    try:
        return generate(op, config, interpret=not interpret, info=info)
    except CodegenError:
        return None


def _record_problem(record: TritonRecord | None, kind: str, tensors: int, heuristic: dict[str, int]) -> str | None:
    """Why a record cannot rebuild its group, or None."""
    if record is None:
        return "no recorded kernel"
    if record.source.kind != kind or record.source.tensors != tensors:
        return f"a recorded {record.source.kind} kernel of {record.source.tensors} tensors"
    if record.config is None:
        return "no recorded config"
    unknown = sorted(set(record.config) - set(heuristic) - set(OPTIONAL_KEYS))
    if unknown:
        return f"a recorded config with {', '.join(unknown)}, which a {kind} kernel does not take"
    return None


def _records_for_target(groups: Any, capability: int) -> list[dict[str, Any]]:
    from dnnc.backends.triton.launch import records_for_target

    return records_for_target(groups, capability)


def _regroup(module: Any) -> None:
    from dnnc.backends.triton.launch_order import TritonLaunchOrder
    from dnnc.ir.context import make_context

    TritonFuse().apply(make_context(), module)
    TritonLaunchOrder().apply(make_context(), module)


def _start_workers() -> None:
    from dnnc.backends.triton.compiler import start_workers

    start_workers()


TRITON = KernelBackend(
    "triton",
    takes=is_triton_group,
    build=build,
    no_kernel=(Exception,),  # any failure to generate or compile: the group runs as torch ops
    parse_records=parse_records,
    regroup=_regroup,
    precompile=precompile_lowered,
    start_workers=_start_workers,
    spec=TRITON_SPEC,
    records_for_target=_records_for_target,
)
