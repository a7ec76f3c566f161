"""The cuDNN backend as the executor and the artifact see it (``KernelBackend``).

Identical graphs (same ``graph_signature``) share one build. At compile time a graph
is built from a tuning spec's plan where one chose it, else from the plan cache, else
tuned (its runtime-compiled plans built ahead in worker processes, ``prebuild``).
Loading an artifact deserializes the recorded plan where it was serialized for this
GPU and cuDNN build, else rebuilds the recorded engine and knobs as the only plan;
an engine that is not valid on this GPU or cuDNN build falls back to cuDNN's
heuristic choice, with a warning, never timing. A graph cuDNN builds no engine for is
given back as tcp ops, for the Triton backend to group.
"""

from __future__ import annotations

import base64
import binascii
import json
import warnings
from typing import Any

from xdsl.ir import Operation

from dnnc import knobs
from dnnc.backends.cudnn.spec_choice import CUDNN_SPEC
from dnnc.backends.interface import GROUP_KIND_ATTR, BuildContext, GroupKernel, KernelBackend, group_attr
from dnnc.errors import ArtifactError, ArtifactWarning, BackendUnavailable
from dnnc.ir import cudnn


def parse_records(records: Any, member: str) -> dict[int, Any]:
    """Ordinal -> ``PlanRecord``; a malformed record names the member and field. A
    record's ``serialized`` plan is base64 text, with ``serialized_for`` naming the GPU
    and cuDNN build it holds for."""
    from dnnc.backends.cudnn.runtime import PlanRecord

    if not isinstance(records, list):
        raise ArtifactError(f"{member}: expected a list of plan records, got {type(records).__name__}")
    parsed: dict[int, Any] = {}
    for i, r in enumerate(records):
        if not isinstance(r, dict) or "ordinal" not in r or "plan" not in r:
            raise ArtifactError(f"{member}: plan record {i} needs the fields 'ordinal' and 'plan'")
        ordinal = r["ordinal"]
        if not isinstance(ordinal, int) or isinstance(ordinal, bool) or ordinal < 0 or ordinal in parsed:
            raise ArtifactError(f"{member}: plan record {i}: ordinal {ordinal!r} is not a new non-negative integer")
        try:
            plan = PlanRecord.from_json(json.dumps(r["plan"]))
            if "serialized" in r:
                plan.serialized = base64.b64decode(str(r["serialized"]), validate=True)
                plan.serialized_for = str(r.get("serialized_for", ""))
        except (TypeError, ValueError, KeyError, AttributeError, binascii.Error) as e:
            raise ArtifactError(f"{member}: plan record {i} is malformed: {type(e).__name__}: {e}") from None
        parsed[ordinal] = plan
    return parsed


def build(op: Operation, ordinal: int | None, context: BuildContext) -> GroupKernel:
    from dnnc.backends.cudnn.signature import graph_signature

    assert isinstance(op, cudnn.GraphOp)
    signature = graph_signature(op)
    key = f"cudnn:{signature}"
    if key not in context.shared:
        if context.recorded is None:
            from dnnc.backends.cudnn.runtime import build_kernel

            context.shared[key] = build_kernel(op, context.device, signature)
        else:
            context.shared[key] = _rebuild(op, context.record("cudnn", ordinal), context, signature)
    return context.shared[key]


def _rebuild(op: cudnn.GraphOp, record: Any, context: BuildContext, signature: str) -> GroupKernel:
    """The recorded plan, else the plan on the graph (a tuning spec's, or what artifacts
    written before plan records carried in their IR), else cuDNN's heuristic choice."""
    from dnnc.backends.cudnn.runtime import PlanRecord, build_kernel, rebuild_kernel

    recorded = record if record is not None else (op.plan.data if op.plan is not None else None)
    if recorded is not None:
        try:
            plan = recorded if isinstance(recorded, PlanRecord) else PlanRecord.from_json(recorded)
            return rebuild_kernel(op, context.device, plan)
        except Exception as e:
            shown = recorded.to_json() if isinstance(recorded, PlanRecord) else recorded
            warnings.warn(
                f"the cuDNN plan recorded for a {group_attr(op, GROUP_KIND_ATTR) or 'cudnn'} graph ({shown}) does not "
                f"build here ({type(e).__name__}: {e}); using cuDNN's heuristic plan",
                ArtifactWarning,
                stacklevel=2,
            )
    with knobs.override(autotune=False):  # heuristics only: load never times plans
        return build_kernel(op, context.device, signature)


def _precompile(ops: Any, device: Any) -> None:
    from dnnc.backends.cudnn.prebuild import precompile

    precompile(ops, device)


def _start_workers() -> None:
    from dnnc.backends.cudnn.prebuild import start_workers

    start_workers()


def _give_back(op: Operation) -> None:
    from dnnc.backends.cudnn.raising import raise_graph

    raise_graph(op)  # type: ignore[arg-type]


def _no_kernel() -> tuple[type[Exception], ...]:
    from dnnc.backends.cudnn.runtime import GraphUnsupported

    return (GraphUnsupported, BackendUnavailable)


CUDNN = KernelBackend(
    "cudnn",
    takes=lambda op: isinstance(op, cudnn.GraphOp),
    build=build,
    no_kernel=_no_kernel(),
    parse_records=parse_records,
    give_back=_give_back,
    precompile=_precompile,
    start_workers=_start_workers,
    spec=CUDNN_SPEC,
)
