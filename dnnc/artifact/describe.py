"""What ``dnnc inspect`` shows of an artifact, as plain data (the CLI formats it)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from xdsl.dialects import func

from dnnc.artifact.manifest import specs_from_json
from dnnc.artifact.store import ArtifactContents
from dnnc.backends.interface import GROUP_BACKEND_ATTR, group_attr
from dnnc.ir import extern, tcp
from dnnc.runtime.kernel_backends import backend_of


def ops_by_backend(contents: ArtifactContents) -> dict[str, int]:
    """Top-level ops of the entry function by the backend that runs them (``cudnn``
    graphs, ``triton`` groups, ``extern`` user kernels), and ``tcp`` ops (reference
    rules on the CPU, torch ops on the GPU)."""
    counts: Counter[str] = Counter()
    for op in contents.program.entry.body.block.ops:
        if isinstance(op, (func.ReturnOp, *tcp.SOURCE_OPS)):
            continue
        backend = backend_of(op)
        if backend is not None:
            counts[backend.name] += 1
        elif isinstance(op, tcp.IsolatedGroupOp):
            counts[group_attr(op, GROUP_BACKEND_ATTR) or "group"] += 1
        else:
            counts["tcp"] += 1
    return dict(counts)


def describe(contents: ArtifactContents) -> dict[str, Any]:
    assert contents.manifest is not None
    m = contents.manifest.data
    return {
        "manifest": {k: m[k] for k in ("format", "schema", "dnnc", "created", "target") if k in m},
        "versions": m.get("versions", {}),
        "inputs": [s.describe() for s in contents.manifest.inputs],
        "outputs": [s.describe() for s in contents.manifest.outputs],
        "input_names": contents.manifest.names("inputs"),
        "output_names": contents.manifest.names("outputs"),
        "ops_by_backend": ops_by_backend(contents),
        "parameters": {"tensors": len(contents.program.params), "bytes": contents.program.params.nbytes()},
        "memory_peak_bytes": contents.summary.get("memory_peak_bytes"),
        "fallbacks": contents.summary.get("fallbacks", []),
        "device_name": contents.summary.get("device_name"),
        "user_kernels": user_kernels(contents),
        "kernel_records": kernel_records(contents.kernels),
        "decisions": contents.program.metadata.get("decisions"),
        **({"buckets": buckets(contents)} if contents.buckets else {}),
    }


def buckets(contents: ArtifactContents) -> dict[str, Any]:
    """A bucketed artifact's ranges and, per bucket, its signature, ops per backend,
    memory plan and decisions (each bucket is partitioned for its own shapes)."""
    assert contents.manifest is not None and contents.buckets is not None
    plan = contents.manifest.plan
    entries = []
    for index, (label, entry) in enumerate(contents.buckets):
        listed = contents.manifest.bucket_field(index)
        entries.append(
            {
                "label": label,
                "inputs": [s.describe() for s in specs_from_json(listed["inputs"])],
                "outputs": [s.describe() for s in specs_from_json(listed["outputs"])],
                "ops_by_backend": ops_by_backend(entry),
                "memory_peak_bytes": entry.summary.get("memory_peak_bytes"),
                "decisions": entry.program.metadata.get("decisions"),
            }
        )
    return {"ranges": [r.text() for r in plan.ranges.values()], "plan": plan.to_json(), "entries": entries}


def kernel_records(kernels: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """Per backend with records: how many, and how many carry their kernel compiled
    (for which targets): a load on that target compiles none of those."""
    out = {}
    for backend, records in sorted(kernels.items()):
        if not records:
            continue
        stored = [r["object"] for r in records if isinstance(r, dict) and isinstance(r.get("object"), dict)]
        out[backend] = {
            "records": len(records),
            "compiled": len(stored),
            "targets": sorted({str(o.get("target")) for o in stored}),
        }
    return out


def user_kernels(contents: ArtifactContents) -> dict[str, Any]:
    """Each user kernel: its objects (target and kind) and the variant the compiling GPU ran."""
    ran = contents.summary.get("user_kernels", {})
    out = {}
    for op in contents.program.module.ops:
        if isinstance(op, extern.KernelOp):
            decl = op.declaration()
            objects = [f"{t} {p.rsplit('.', 1)[-1]}" for t, p in decl.objects]
            if decl.source:
                objects += [f"{a} from {decl.source}" for a in decl.archs]
            out[op.kernel_name] = {"objects": objects, "ran_as": ran.get(op.kernel_name)}
    return out
