"""Build, tune and execute ``cudnn.graph`` ops with the cuDNN frontend on a GPU.

Compile time (once per distinct graph in a program):
  build the operation graph from the descriptors and nodes, ``check_support``,
  then either rebuild the plan recorded for this graph (cache hit; no timing), or
  rank plans by heuristics (A, then FALLBACK) and keep the first that builds or,
  with ``knobs.autotune``, the fastest of the first few on fresh inputs. Plans of
  runtime-compiled engines that ``prebuild`` built in worker processes are
  deserialized instead of built here.
  The winner's engine id, knobs and tag go to the content-keyed plan cache, with the
  plan serialized in cuDNN's backend format (``serialized_plan``), so the choice is
  rebuilt later without measuring: deserialized (milliseconds; the format carries
  a runtime-compiled engine's kernel), else from its engine and knobs (a
  runtime-compiled engine compiles its kernel again: 0.1-1 s).
Run time: ``launch`` sets the handle's stream to the current torch stream and
executes with caller-allocated tensors and a workspace sized for the chosen plan
at build time: no allocation, no synchronization, safe under CUDA graph capture.

Any failure to build (no engine, unsupported node) raises ``GraphUnsupported``
with the reason; the executor then runs the graph another way.
"""

from __future__ import annotations

import base64
import json
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from dnnc import knobs, progress
from dnnc.backends.cudnn.prebuilt import prebuilt_for
from dnnc.backends.cudnn.signature import graph_signature
from dnnc.backends.interface import GROUP_KIND_ATTR, group_attr
from dnnc.cache import ContentCache, content_key, environment
from dnnc.errors import BackendUnavailable, DnncError, LibraryRefusal
from dnnc.ir import cudnn as dialect
from dnnc.ir.attrs import ints, scalar
from dnnc.ir.types import element_of, shape_of, torch_dtype
from dnnc.timing import device_time_ms

log = logging.getLogger("dnnc.cudnn")

MAX_TIMED_PLANS = 8
"""At most this many ranked plans are built and timed per graph (the heuristics'
best first), and runtime-compiled ones only among the first this many, at most
``knobs.runtime_compiled_plans`` of them (``tuned_plan``)."""


LOSING_FACTOR = 4.0
LAUNCH_SLACK_MS = 0.05
"""A plan whose one plain call takes longer than ``LOSING_FACTOR`` times the best
plan so far (plus ``LAUNCH_SLACK_MS``, for a launch the host did not queue within the
GPU's head start) loses without being captured and replayed (see ``device_time_ms``)."""


class GraphUnsupported(DnncError):
    """cuDNN cannot run this graph here (no engine, or a node it rejects)."""


class NoEngine(GraphUnsupported, LibraryRefusal):
    """cuDNN (this version, on this GPU) rejects the graph or builds no plan for it:
    asking again gets the same answer. Raised before any plan is run, so a plan that
    fails while timed (out of memory, say) is never taken for one."""


def load_frontend() -> Any:
    try:
        import cudnn
    except ImportError as e:
        raise BackendUnavailable("the cuDNN backend needs nvidia-cudnn-frontend (pip install 'dnnc[cuda]'): " + str(e)) from None
    return cudnn


_HANDLES: dict[int, Any] = {}


def handle_for(device: torch.device) -> Any:
    cudnn = load_frontend()
    index = device.index if device.index is not None else torch.cuda.current_device()
    if index not in _HANDLES:
        with torch.cuda.device(index):
            _HANDLES[index] = cudnn.create_handle()
    return _HANDLES[index]


def _data_type(cudnn: Any, element: Any) -> Any:
    dtype = torch_dtype(element)
    table = {torch.float16: cudnn.data_type.HALF, torch.bfloat16: cudnn.data_type.BFLOAT16, torch.float32: cudnn.data_type.FLOAT}
    if dtype not in table:
        raise NoEngine(f"element type {dtype} has no cuDNN graph data type here")
    return table[dtype]


PYTHON_PLAN_MAGIC = b"CUDNN_FE_PYPLAN\0"
"""How the frontend's serialization of a Python engine's plan starts: that format names
Python types to import and may carry host code, so dnnc neither writes nor reads it."""


@dataclass
class PlanRecord:
    """What is needed to rebuild a chosen plan without timing: engine id and knobs,
    and the plan serialized where cuDNN could (``serialized_plan``), for the GPU and
    cuDNN build ``serialized_for`` names (``serialization_target``). The JSON form
    (``to_json``: tuning specs, the ``plan`` attribute) holds the engine and knobs only."""

    engine: int
    knobs: dict[str, int]
    name: str = ""
    ms: float | None = None
    timed: int = 0
    serialized: bytes | None = None
    serialized_for: str = ""

    def to_json(self) -> str:
        return json.dumps({"engine": self.engine, "knobs": self.knobs, "name": self.name, "ms": self.ms, "timed": self.timed})

    @classmethod
    def from_json(cls, text: str) -> PlanRecord:
        d = json.loads(text)
        return cls(
            int(d["engine"]),
            {str(k): int(v) for k, v in d.get("knobs", {}).items()},
            d.get("name", ""),
            d.get("ms"),
            d.get("timed", 0),
        )


class _Builder:
    """Translates one ``cudnn.graph`` into a frontend ``pygraph``."""

    def __init__(self, op: dialect.GraphOp, handle: Any):
        self.cudnn = load_frontend()
        self.op = op
        block = op.body.block
        io = _data_type(self.cudnn, element_of(op.outputs[0]))
        self.graph = self.cudnn.pygraph(
            io_data_type=io,
            intermediate_data_type=self.cudnn.data_type.FLOAT,
            compute_data_type=self.cudnn.data_type.FLOAT,
            handle=handle,
        )
        self.values: dict[Any, Any] = {}
        self.uids: list[int] = []
        self.extra: list[tuple[int, torch.Tensor]] = []  # pass-by-value scalars (host tensors)
        for i, arg in enumerate(block.args):
            strides = dialect.strides_of(arg.type)
            self.values[arg] = self.graph.tensor(
                name=f"in{i}",
                dim=list(shape_of(arg.type)),
                stride=list(strides or ()),
                data_type=_data_type(self.cudnn, element_of(arg)),
                uid=i + 1,
            )
            self.uids.append(i + 1)
        for node in block.ops:
            if isinstance(node, dialect.ReturnOp):
                for j, (v, s) in enumerate(zip(node.values, op.output_strides())):
                    uid = len(block.args) + j + 1
                    t = self.values[v]
                    t.set_output(True).set_data_type(_data_type(self.cudnn, element_of(op.outputs[j]))).set_stride(
                        list(s)
                    ).set_uid(uid)
                    self.uids.append(uid)
                break
            self.values[node.results[0]] = self.node(node)

    def node(self, node: Any) -> Any:
        g, cudnn, f32 = self.graph, self.cudnn, self.cudnn.data_type.FLOAT
        args = [self.values[v] for v in node.operands]
        if isinstance(node, dialect.ConvFpropOp):
            return g.conv_fprop(
                image=args[0],
                weight=args[1],
                pre_padding=list(ints(node.pre_padding)),
                post_padding=list(ints(node.post_padding)),
                stride=list(ints(node.stride)),
                dilation=list(ints(node.dilation)),
                compute_data_type=f32,
            )
        if isinstance(node, dialect.MatmulOp):
            return g.matmul(A=args[0], B=args[1], compute_data_type=f32)
        if isinstance(node, dialect.PointwiseOp):
            mode = node.mode.data
            if mode == "relu":
                lo, hi = node.clips()
                kwargs = {k: v for k, v in (("lower_clip", lo), ("upper_clip", hi)) if v is not None}
                return g.relu(input=args[0], compute_data_type=f32, **kwargs)
            if mode == "swish":
                return g.swish(input=args[0], compute_data_type=f32)
            return getattr(g, mode)(*args, compute_data_type=f32)
        if isinstance(node, dialect.LayerNormOp):
            uid = 1000 + len(self.extra)
            eps = g.tensor(name=f"eps{uid}", dim=[1, 1, 1, 1], stride=[1, 1, 1, 1], data_type=f32, is_pass_by_value=True, uid=uid)
            self.extra.append((uid, torch.tensor(float(scalar(node.epsilon)), dtype=torch.float32).reshape(1, 1, 1, 1)))
            out = g.layernorm(
                norm_forward_phase=cudnn.norm_forward_phase.INFERENCE,
                input=args[0],
                scale=args[1],
                bias=args[2],
                epsilon=eps,
                compute_data_type=f32,
            )
            return out[0] if isinstance(out, (tuple, list)) else out
        if isinstance(node, dialect.SdpaOp):
            causal = bool(scalar(node.causal))
            kwargs: dict[str, Any] = (
                {"diagonal_alignment": cudnn.diagonal_alignment.TOP_LEFT, "diagonal_band_right_bound": 0} if causal else {}
            )
            out = g.sdpa(q=args[0], k=args[1], v=args[2], generate_stats=False, attn_scale=float(scalar(node.scale)), **kwargs)
            return out[0] if isinstance(out, (tuple, list)) else out
        raise NoEngine(f"{node.name} has no frontend translation yet")


class CudnnGraphKernel:
    """A built and tuned graph; ``launch`` runs the chosen plan."""

    backend = "cudnn"

    def __init__(
        self,
        graph: Any,
        handle: Any,
        uids: list[int],
        extra: list[tuple[int, torch.Tensor]],
        workspace: torch.Tensor,
        plan: PlanRecord,
    ):
        self.graph = graph
        self.handle = handle
        self.uids = tuple(uids + [u for u, _ in extra])
        self.extra = tuple(t for _, t in extra)
        self.workspace = workspace
        self.plan = plan
        self.rebuilt = False
        """True when the plan came from its record (cache) rather than from timing."""
        self.deserialized = False
        """True when the plan was read back from its serialized form rather than built here."""
        self._cudnn = load_frontend()

    @property
    def tuned_ms(self) -> float | None:
        """The plan's time when it won the timing (here or where its record was made)."""
        return self.plan.ms

    def record(self) -> dict[str, Any]:
        """The engine and knobs that rebuild this plan without timing, and the plan
        serialized (base64), which rebuilds it without compiling on the same GPU and cuDNN."""
        record: dict[str, Any] = {"plan": json.loads(self.plan.to_json())}
        if self.plan.serialized is not None:
            record["serialized"] = base64.b64encode(self.plan.serialized).decode("ascii")
            record["serialized_for"] = self.plan.serialized_for
        return record

    def launch(self, inputs: Sequence[torch.Tensor], outputs: Sequence[torch.Tensor]) -> None:
        self._cudnn.set_stream(handle=self.handle, stream=torch.cuda.current_stream().cuda_stream)
        self.graph.execute((*inputs, *outputs, *self.extra), self.workspace, handle=self.handle, tensor_uids=self.uids)


_PLANS = ContentCache("cudnn-plans")
_SERIALIZED = ContentCache("cudnn-serialized-plans")
"""The cached plans serialized (``serialized_plan``), by the plan cache's key."""


def has_cached_plan(signature: str, device: torch.device) -> bool:
    """Whether the plan cache holds this graph's plan (building it then tunes nothing)."""
    return _PLANS.get_json(_plan_key(signature, device)) is not None


def serialization_target(device: torch.device) -> str:
    """What a serialized plan holds for: the cuDNN library build and the GPU."""
    cudnn = load_frontend()
    index = device.index if device.index is not None else torch.cuda.current_device()
    return f"cudnn {cudnn.backend_version()} on {torch.cuda.get_device_name(index)}"


def serialized_plan(graph: Any) -> bytes | None:
    """The graph's built and selected plan in cuDNN's backend format; None where the
    frontend cannot serialize it or the plan is a Python engine's (``PYTHON_PLAN_MAGIC``)."""
    try:
        blob = bytes(graph.serialize(as_bytes=True))
    except Exception as e:
        log.debug("cudnn: the plan does not serialize: %s: %s", type(e).__name__, e)
        return None
    return None if blob.startswith(PYTHON_PLAN_MAGIC) else blob


def deserialized_plan(blob: bytes, handle: Any) -> Any:
    """A graph holding the plan ``serialized_plan`` wrote, ready to execute."""
    if blob.startswith(PYTHON_PLAN_MAGIC):
        raise GraphUnsupported("a serialized Python-engine plan is not read (its format may carry host code)")
    graph = load_frontend().pygraph(handle=handle)
    graph.deserialize(handle, blob)
    return graph


def _plan_key(signature: str, device: torch.device) -> str:
    cudnn = load_frontend()
    return content_key(
        {
            **environment(device),
            "graph": signature,
            "frontend": getattr(cudnn, "__version__", "?"),
            "backend": cudnn.backend_version(),  # the cuDNN library the frontend loaded
            "measured": knobs.get().autotune,  # a heuristic pick never stands in for a measured one
            "runtime_compiled_plans": knobs.get().runtime_compiled_plans if knobs.get().autotune else None,
        }
    )


def _random_buffers(op: dialect.GraphOp, device: torch.device) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """Fresh inputs in a small range (no infs in fp16) and output buffers, for timing."""
    gen = torch.Generator(device=device).manual_seed(0x5EED)
    ins = [
        (torch.rand(shape_of(v.type), generator=gen, device=device, dtype=torch.float32) - 0.5).to(torch_dtype(element_of(v)))
        for v in op.inputs
    ]
    outs = [torch.empty(shape_of(r.type), device=device, dtype=torch_dtype(element_of(r))) for r in op.outputs]
    return ins, outs


def build_kernel(op: dialect.GraphOp, device: torch.device, signature: str | None = None) -> CudnnGraphKernel:
    """Build (and with autotuning, time) the graph; raises GraphUnsupported.
    ``signature``: the graph's ``graph_signature``, when the caller has it already."""
    cudnn = load_frontend()
    handle = handle_for(device)
    cudnn.set_stream(handle=handle, stream=torch.cuda.current_stream(device).cuda_stream)
    if op.plan is not None:  # chosen by a tuning spec: built from it, never tuned
        try:
            return _rebuild(op, device, handle, PlanRecord.from_json(op.plan.data))
        except Exception as e:  # the graph changed since the spec was written (a lowering pads otherwise): tuned, at info
            log.info("cudnn: the plan a tuning spec chose (%s) does not build here (%s); tuning instead", op.plan.data, e)
    signature = signature or graph_signature(op)
    key = _plan_key(signature, device)
    cached = _PLANS.get_json(key)
    if cached is not None:
        record = PlanRecord.from_json(json.dumps(cached))
        record.serialized = _SERIALIZED.get(key)
        record.serialized_for = serialization_target(device) if record.serialized is not None else ""
        try:
            return _rebuild(op, device, handle, record)
        except Exception as e:  # a stale record (other cuDNN build): tune again
            log.info("cudnn: cached plan for %s did not rebuild (%s); tuning again", _describe(op), e)
    try:
        kernel = _tune(op, device, handle, signature)
    except GraphUnsupported:
        raise
    except Exception as e:
        raise GraphUnsupported(f"{type(e).__name__}: {e}") from None
    _PLANS.put_json(key, json.loads(kernel.plan.to_json()))
    if kernel.plan.serialized is not None:
        _SERIALIZED.put(key, kernel.plan.serialized)
    return kernel


def _front(op: dialect.GraphOp, handle: Any) -> _Builder:
    b = _Builder(op, handle)
    b.graph.validate()
    b.graph.build_operation_graph()
    return b


def _ranked(op: dialect.GraphOp, handle: Any) -> _Builder:
    """The graph with its plans ranked by the heuristics (A, then FALLBACK) and checked:
    what tuning, a rebuild by engine tag and a build worker index plans in."""
    cudnn = load_frontend()
    b = _front(op, handle)
    b.graph.create_execution_plans([cudnn.heur_mode.A, cudnn.heur_mode.FALLBACK])
    b.graph.check_support()
    return b


def _tune(op: dialect.GraphOp, device: torch.device, handle: Any, signature: str) -> CudnnGraphKernel:
    """Heuristics rank the plans; without autotuning the first that builds is kept,
    with it the first ``MAX_TIMED_PLANS`` that build and that ``tuned_plan`` keeps are
    timed on fresh inputs (only those are built: building every plan cuDNN lists costs
    seconds per graph). A plan ``prebuild`` built in a worker is deserialized rather
    than built again."""
    cudnn = load_frontend()
    try:  # host-side queries of the library: a refusal here is its answer for this graph
        b = _ranked(op, handle)
        g = b.graph
    except GraphUnsupported:
        raise
    except Exception as e:
        raise NoEngine(f"{type(e).__name__}: {e}") from None
    count = g.get_execution_plan_count()
    if count == 0:
        raise NoEngine("cuDNN has no execution plan for this graph")
    tune = knobs.get().autotune
    pack = uids = None
    if tune:
        ins, outs = _random_buffers(op, device)
        pack = (*ins, *outs, *(t for _, t in b.extra))
        uids = (*b.uids, *(u for u, _ in b.extra))
    prebuilt = prebuilt_for(signature)  # plans ``prebuild`` built in workers
    best: _Plan | None = None
    best_ms, timed, built = None, 0, 0
    what = _describe(op)
    compiled_at_build = 0
    for i in range(count):
        if tune and runtime_compiled(g, i):
            if not tuned_plan(i, compiled_at_build):
                continue
            compiled_at_build += 1
        plan = _plan_at(g, i, handle, device, prebuilt.get(i), what)
        if plan is None:
            continue
        built += 1
        progress.tally("build cudnn kernels", 1)
        if not tune:
            best = plan
            break
        try:
            ms = device_time_ms(
                lambda plan=plan: plan.run(cudnn, g, handle, pack, uids),
                give_up_above_ms=None if best_ms is None else LOSING_FACTOR * best_ms + LAUNCH_SLACK_MS,
            )
        except Exception as e:  # a plan that fails to run is skipped, not fatal
            log.debug("cudnn: %s: plan %d failed: %s", what, i, e)
            continue
        log.debug("cudnn: %s: plan %d runs in %.4f ms", what, i, ms, extra=_timed(op, g, i, ms))
        timed += 1
        if best_ms is None or ms < best_ms:
            best, best_ms = plan, ms
        if timed >= MAX_TIMED_PLANS:
            break
    if best is None and not built:
        raise NoEngine(f"none of cuDNN's {count} execution plans for this graph builds")
    if best is None:
        raise GraphUnsupported("no execution plan of this graph built and ran")
    engine, knob_map = g.get_engine_and_knobs_at_index(best.index)
    record = PlanRecord(
        int(engine), {_knob_name(k): int(v) for k, v in knob_map.items()}, _plan_name(g, best.index), best_ms, timed
    )
    if best.graph is not None:  # deserialized: the graph runs as it is
        graph, workspace, record.serialized = best.graph, best.workspace, best.blob
    else:
        g.build_plan_at_index(best.index)  # the plan ``execute`` runs
        graph = g
        workspace = torch.empty(max(g.get_workspace_size_plan_at_index(best.index), 1), dtype=torch.uint8, device=device)
        record.serialized = serialized_plan(g)
    record.serialized_for = serialization_target(device) if record.serialized is not None else ""
    kernel = CudnnGraphKernel(graph, handle, b.uids, b.extra, workspace, record)
    kernel.deserialized = best.graph is not None
    return kernel


@dataclass
class _Plan:
    """One ranked plan, ready to time: built on the ranked graph (``graph`` None), or
    deserialized from a worker's build into a graph of its own."""

    index: int
    workspace: torch.Tensor
    graph: Any = None
    blob: bytes | None = None

    def run(self, cudnn: Any, ranked: Any, handle: Any, pack: Any, uids: Any) -> None:
        cudnn.set_stream(handle=handle, stream=torch.cuda.current_stream().cuda_stream)  # the capture stream when timing
        if self.graph is None:
            ranked.execute_plan_at_index(pack, self.workspace, index=self.index, handle=handle, tensor_uids=uids)
        else:
            self.graph.execute(pack, self.workspace, handle=handle, tensor_uids=uids)


def _plan_at(g: Any, i: int, handle: Any, device: torch.device, prebuilt: Any, what: str) -> _Plan | None:
    """Plan ``i`` of the ranked graph ``g``: a worker's build when it is this plan
    (``prebuilt.Prebuilt``), else built here; None when it does not build."""
    if prebuilt is not None and prebuilt.name == _plan_name(g, i):
        try:
            graph = deserialized_plan(prebuilt.blob, handle)
            workspace = torch.empty(max(graph.get_workspace_size(), 1), dtype=torch.uint8, device=device)
            return _Plan(i, workspace, graph, prebuilt.blob)
        except Exception as e:  # built here instead
            log.debug("cudnn: %s: plan %d built in a worker does not deserialize: %s", what, i, e)
    started = time.perf_counter()
    try:
        g.build_plan_at_index(i)
    except Exception as e:  # unsupported here: the next one
        log.debug("cudnn: %s: plan %d does not build: %s", what, i, e)
        return None
    log.debug("cudnn: %s: plan %d (%s) built in %.2f s", what, i, _plan_name(g, i), time.perf_counter() - started)
    return _Plan(i, torch.empty(max(g.get_workspace_size_plan_at_index(i), 1), dtype=torch.uint8, device=device))


def runtime_compiled(g: Any, rank: int) -> bool:
    """Whether cuDNN compiles plan ``rank``'s kernel when it builds it (behavior note
    ``RUNTIME_COMPILATION``): a host-side query, microseconds."""
    try:
        return any("RUNTIME_COMPILATION" in str(n) for n in g.get_behavior_notes_for_plan_at_index(rank))
    except Exception:  # no notes: built like any other plan
        return False


def tuned_plan(rank: int, runtime_compiled_before: int) -> bool:
    """Whether tuning builds and times the runtime-compiled plan at ``rank`` after
    ``runtime_compiled_before`` others: among the first ``MAX_TIMED_PLANS`` ranks, the
    first ``knobs.runtime_compiled_plans``. Precompiled plans build in about a
    millisecond and are all timed; a runtime-compiled one takes 0.05-1 s to build, and
    on nine suite and zoo models (H200) one past the second rarely won and then by
    little (``bench/tuning_times.py``)."""
    return rank < MAX_TIMED_PLANS and runtime_compiled_before < knobs.get().runtime_compiled_plans


def _timed(op: dialect.GraphOp, g: Any, rank: int, ms: float) -> dict[str, Any]:
    """One plan's timing as a debug record carries it (``bench/tuning_times.py`` reads
    them): the graph's kind and shapes, the plan's rank, engine and whether cuDNN
    compiles its kernel at build time, and its time. Empty unless debug logging is on."""
    if not log.isEnabledFor(logging.DEBUG):
        return {}
    shapes = [list(shape_of(v.type)) for v in (*op.inputs, *op.outputs)]
    kind = group_attr(op, GROUP_KIND_ATTR) or "graph"
    record = {"backend": "cudnn", "kind": kind, "shapes": shapes, "rank": rank, "name": _plan_name(g, rank), "ms": ms}
    return {"timed": {**record, "runtime_compiled": runtime_compiled(g, rank)}}


def _describe(op: dialect.GraphOp) -> str:
    """The graph's kind and operand shapes, for the debug log."""
    shapes = " ".join("x".join(map(str, shape_of(v.type))) for v in op.inputs)
    return f"{group_attr(op, GROUP_KIND_ATTR) or 'graph'} ({shapes})"


def rebuild_kernel(op: dialect.GraphOp, device: torch.device, record: PlanRecord) -> CudnnGraphKernel:
    """The plan ``record`` names, rebuilt without timing (an artifact's load); raises
    ``GraphUnsupported`` when it cannot be built for this graph on this GPU and cuDNN."""
    handle = handle_for(device)
    load_frontend().set_stream(handle=handle, stream=torch.cuda.current_stream(device).cuda_stream)
    return _rebuild(op, device, handle, record)


UNNAMED_KNOB = "NOT_SET"
"""What the frontend calls a backend knob it has no name for: such knobs cannot be
passed back by name, so their plan is found by its engine tag instead."""


def _rebuild(op: dialect.GraphOp, device: torch.device, handle: Any, record: PlanRecord) -> CudnnGraphKernel:
    """The recorded plan deserialized, where it was serialized for this GPU and cuDNN
    build; else the recorded engine and knobs as the only plan when the frontend can
    name every knob; else (or if that fails) the heuristics' candidate whose engine
    tag (``eng32_k2=2_k6=3...``, every knob by number) is the recorded name. No timing."""
    kernel = None
    if record.serialized is not None and record.serialized_for == serialization_target(device):
        try:
            kernel = _from_serialized(op, device, handle, record)
        except Exception as e:
            log.debug("cudnn: the serialized plan %s did not deserialize (%s); rebuilding it", record.name, e)
    deserialized = kernel is not None
    if kernel is None and UNNAMED_KNOB not in record.knobs:
        try:
            kernel = _rebuild_by_knobs(op, device, handle, record)
        except Exception as e:
            if not record.name:
                raise
            log.debug(
                "cudnn: engine %d with knobs %s did not build (%s); looking for %s", record.engine, record.knobs, e, record.name
            )
    if kernel is None:
        kernel = _rebuild_by_name(op, device, handle, record)
    if not deserialized:  # what an artifact records is the plan as it was rebuilt here
        kernel.plan.serialized = serialized_plan(kernel.graph)
        kernel.plan.serialized_for = serialization_target(device) if kernel.plan.serialized is not None else ""
    kernel.rebuilt = True
    return kernel


def _from_serialized(op: dialect.GraphOp, device: torch.device, handle: Any, record: PlanRecord) -> CudnnGraphKernel:
    assert record.serialized is not None
    b = _Builder(op, handle)  # the tensors' uids and pass-by-value scalars, as the plan was built with
    g = deserialized_plan(record.serialized, handle)
    ws = torch.empty(max(g.get_workspace_size(), 1), dtype=torch.uint8, device=device)
    kernel = CudnnGraphKernel(g, handle, b.uids, b.extra, ws, record)
    kernel.deserialized = True
    return kernel


def _rebuild_by_knobs(op: dialect.GraphOp, device: torch.device, handle: Any, record: PlanRecord) -> CudnnGraphKernel:
    cudnn = load_frontend()
    b = _front(op, handle)
    g = b.graph
    knob_map = {getattr(cudnn.knob_type, name): value for name, value in record.knobs.items()}
    g.create_execution_plan(record.engine, knob_map)
    g.check_support()
    g.build_plans()
    ws = torch.empty(max(g.get_workspace_size(), 1), dtype=torch.uint8, device=device)
    return CudnnGraphKernel(g, handle, b.uids, b.extra, ws, record)


def _rebuild_by_name(op: dialect.GraphOp, device: torch.device, handle: Any, record: PlanRecord) -> CudnnGraphKernel:
    b = _ranked(op, handle)
    g = b.graph
    for i in range(g.get_execution_plan_count()):
        if _plan_name(g, i) == record.name:
            g.build_plan_at_index(i)
            ws = torch.empty(max(g.get_workspace_size_plan_at_index(i), 1), dtype=torch.uint8, device=device)
            return CudnnGraphKernel(g, handle, b.uids, b.extra, ws, record)
    raise GraphUnsupported(f"plan {record.name or record.engine} is not among cuDNN's plans for this graph here")


def _knob_name(k: Any) -> str:
    return getattr(k, "name", str(k)).split(".")[-1]


def _plan_name(g: Any, index: int) -> str:
    try:
        return str(g.get_plan_name_at_index(index))
    except Exception:
        return ""
