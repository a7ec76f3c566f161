"""What building, tuning, serializing and rebuilding cuDNN plans costs, for ResNet-50's graphs.

    python bench/cudnn_plan_builds.py --batch 32 --out DIR

ResNet-50 (fp16, channels-last, the ``gpu-cudnn`` stage's graphs: 29 distinct ones) is
lowered without building anything; then, in this process, each distinct graph has its
first ``MAX_TIMED_PLANS`` ranked plans built and timed one by one (the build's seconds,
the plan's engine tag and milliseconds: which plans are expensive to build, which win),
the winner is rebuilt from its engine and knobs, serialized in cuDNN's backend format,
deserialized, and checked to compute the same output as the plan it came from. A
second, fresh process then deserializes every winner and rebuilds every winner from its
engine and knobs, as an artifact's load would. Writes ``cudnn-plan-builds-b<N>.json``.
Needs a GPU and nvidia-cudnn-frontend.
"""

from __future__ import annotations

import argparse
import base64
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dnnc import knobs
from dnnc.backends.cudnn import runtime
from dnnc.backends.cudnn.signature import graph_signature
from dnnc.ir import cudnn as dialect
from dnnc.timing import device_time_ms


def graphs(batch: int) -> list[dialect.GraphOp]:
    from dnnc.models.resnet import resnet50
    from dnnc.partition.backends import BACKENDS
    from dnnc.passes import run_passes
    from dnnc.passes.stages import STAGES
    from dnnc.pipeline import to_canonical_tcp

    model, (x,) = resnet50(batch=batch)
    with knobs.override(partition="greedy"):
        program = to_canonical_tcp(model.half().eval(), (x.half(),))
        for stage in (*BACKENDS["cudnn"].first_stages(), "gpu-cudnn"):
            run_passes(program, STAGES[stage])
    distinct: dict[str, dialect.GraphOp] = {}
    for op in program.module.walk():
        if isinstance(op, dialect.GraphOp):
            distinct.setdefault(graph_signature(op), op)
    return list(distinct.values())


def seconds(fn: Any) -> tuple[Any, float]:
    started = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - started


def tune(op: dialect.GraphOp, device: torch.device, handle: Any) -> dict[str, Any]:
    cudnn = runtime.load_frontend()
    row: dict[str, Any] = {"graph": runtime._describe(op)}
    b, row["front_s"] = seconds(lambda: runtime._front(op, handle))
    g = b.graph
    _, row["heuristics_s"] = seconds(
        lambda: (g.create_execution_plans([cudnn.heur_mode.A, cudnn.heur_mode.FALLBACK]), g.check_support())
    )
    row["count"] = g.get_execution_plan_count()
    ins, outs = runtime._random_buffers(op, device)
    pack, uids = (*ins, *outs, *(t for _, t in b.extra)), (*b.uids, *(u for u, _ in b.extra))

    def run(graph: Any, ws: torch.Tensor, index: int | None) -> None:
        cudnn.set_stream(handle=handle, stream=torch.cuda.current_stream().cuda_stream)
        if index is None:
            graph.execute(pack, ws, handle=handle, tensor_uids=uids)
        else:
            graph.execute_plan_at_index(pack, ws, index=index, handle=handle, tensor_uids=uids)

    plans = []
    for i in range(min(row["count"], runtime.MAX_TIMED_PLANS)):
        plan: dict[str, Any] = {"index": i, "name": runtime._plan_name(g, i)}
        try:
            plan["runtime_compiled"] = any("RUNTIME_COMPILATION" in str(n) for n in g.get_behavior_notes_for_plan_at_index(i))
            _, plan["build_s"] = seconds(lambda i=i: g.build_plan_at_index(i))
            ws = torch.empty(max(g.get_workspace_size_plan_at_index(i), 1), dtype=torch.uint8, device=device)
            plan["ms"] = device_time_ms(lambda i=i, ws=ws: run(g, ws, i))
        except Exception as e:
            plan["error"] = f"{type(e).__name__}: {str(e)[:160]}"
        plans.append(plan)
    row["plans"] = plans
    best = min((p for p in plans if "ms" in p), key=lambda p: p["ms"])
    engine, knob_map = g.get_engine_and_knobs_at_index(best["index"])
    record = runtime.PlanRecord(
        int(engine), {runtime._knob_name(k): int(v) for k, v in knob_map.items()}, best["name"], best["ms"]
    )
    row["winner"] = best["index"]
    row["record"] = json.loads(record.to_json())
    _, row["rebuild_by_knobs_s"] = seconds(lambda: runtime._rebuild_by_knobs(op, device, handle, record))
    g.build_plan_at_index(best["index"])
    blob, row["serialize_s"] = seconds(lambda: runtime.serialized_plan(g))
    if blob is None:
        row["serialized"] = None
        return row
    row["serialized"] = base64.b64encode(blob).decode("ascii")
    row["serialized_bytes"] = len(blob)
    again, row["deserialize_s"] = seconds(lambda: runtime.deserialized_plan(blob, handle))
    ws = torch.empty(max(g.get_workspace_size_plan_at_index(best["index"]), 1), dtype=torch.uint8, device=device)
    run(g, ws, best["index"])
    torch.cuda.synchronize()
    want = [o.clone() for o in outs]
    run(again, torch.empty(max(again.get_workspace_size(), 1), dtype=torch.uint8, device=device), None)
    torch.cuda.synchronize()
    row["deserialized_equal"] = all(torch.equal(a, b) for a, b in zip(want, outs))
    return row


def fresh_process_load(path: Path, batch: int) -> dict[str, Any]:
    """In this (fresh) process: every winner deserialized, then every winner rebuilt from its engine and knobs."""
    device = torch.device("cuda")
    (handle, _), init_s = seconds(lambda: (runtime.handle_for(device), None))
    rows = json.loads(path.read_text())["graphs"]
    each = []
    started = time.perf_counter()
    for row in rows:
        if row.get("serialized"):
            _, s = seconds(lambda row=row: runtime.deserialized_plan(base64.b64decode(row["serialized"]), handle))
            each.append({"name": row["record"]["name"], "deserialize_s": s})
    deserialize_s = time.perf_counter() - started
    ops = graphs(batch)
    started = time.perf_counter()
    for op, row in zip(ops, rows):
        record = runtime.PlanRecord.from_json(json.dumps(row["record"]))
        runtime._rebuild(op, device, handle, record)
    rebuild_s = time.perf_counter() - started
    return {"handle_s": init_s, "deserialize_all_s": deserialize_s, "rebuild_all_s": rebuild_s, "each": each}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--out", type=Path, default=Path(__file__).with_name("results"))
    parser.add_argument("--load-only", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.load_only is not None:
        print(json.dumps(fresh_process_load(args.load_only, args.batch)))
        return
    device = torch.device("cuda")
    handle = runtime.handle_for(device)
    rows = []
    for op in graphs(args.batch):
        rows.append(tune(op, device, handle))
        print(json.dumps({k: v for k, v in rows[-1].items() if k not in ("plans", "serialized")}), flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / f"cudnn-plan-builds-b{args.batch}.json"
    cudnn = runtime.load_frontend()
    result: dict[str, Any] = {
        "device": torch.cuda.get_device_name(device),
        "cudnn": cudnn.backend_version(),
        "frontend": getattr(cudnn, "__version__", "?"),
        "torch": torch.__version__,
        "batch": args.batch,
        "graphs": rows,
    }
    path.write_text(json.dumps(result, indent=1))
    load = subprocess.run(
        [sys.executable, __file__, "--batch", str(args.batch), "--load-only", str(path)],
        capture_output=True,
        text=True,
        check=True,
    )
    result["fresh_process"] = json.loads(load.stdout.strip().splitlines()[-1])
    builds = [p for r in rows for p in r["plans"] if "build_s" in p]
    result["summary"] = {
        "plans_built": len(builds),
        "build_s": sum(p["build_s"] for p in builds),
        "runtime_compiled_build_s": sum(p["build_s"] for p in builds if p.get("runtime_compiled")),
        "rebuild_by_knobs_s": sum(r["rebuild_by_knobs_s"] for r in rows),
        "deserialize_s": sum(r.get("deserialize_s", 0.0) for r in rows),
        "all_deserialized_equal": all(r.get("deserialized_equal") for r in rows),
    }
    path.write_text(json.dumps(result, indent=1))
    print(json.dumps(result["summary"]), json.dumps({k: v for k, v in result["fresh_process"].items() if k != "each"}))


if __name__ == "__main__":
    main()
