"""The PyTorch-side variants of one workload, each checked against the float32
reference before it is timed: PyTorch eager (cuDNN autotuning on, channels-last
images, as the anchors were measured), eager in one CUDA graph, torch.compile in
the configuration its users pick for latency (``mode="reduce-overhead"``: Inductor
with CUDA graphs, and freezing), and dnnc under each partition policy (the default one
also bound to its inputs and replayed: ``CompiledModule.bind``)."""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Collection
from typing import Any

import torch

from bench.gpu_clocks import Sampler, summary
from bench.gpu_timing import fp16_inputs, in_cuda_graph, median_ms
from bench.suite import CHECK, progress
from dnnc.numerics import relative_error

DNNC_POLICIES = ("auto", "cudnn-only", "triton-only")


def channels_last(model: torch.nn.Module, xs: list[torch.Tensor]) -> tuple[torch.nn.Module, list[torch.Tensor]]:
    """Images (4-D inputs) in channels-last memory, the layout cuDNN prefers; other
    inputs (a diffusion model's timesteps) as they are."""
    if xs and xs[0].dim() == 4:
        model = model.to(memory_format=torch.channels_last)
        return model, [x.contiguous(memory_format=torch.channels_last) if x.dim() == 4 else x for x in xs]
    return model, xs


def reference_output(model: torch.nn.Module, inputs: tuple[torch.Tensor, ...]) -> torch.Tensor:
    """The float32 output every variant is checked against (the model and inputs on the GPU)."""
    with torch.no_grad():
        out = copy.deepcopy(model).cuda().float()(*[x.cuda() for x in inputs])
    return _first(out).float()


def measure(name: str, build: Callable[[], Callable[[], Any]], reference: torch.Tensor) -> dict[str, Any]:
    """Build (timed: the compile time), check the output, then time; peak memory over all of it."""
    entry = _measured(name, build, reference)
    progress(entry)
    return entry


def _measured(name: str, build: Callable[[], Callable[[], Any]], reference: torch.Tensor) -> dict[str, Any]:
    release_others()
    torch.cuda.reset_peak_memory_stats()
    entry: dict[str, Any] = {"variant": name, "resident_mb": torch.cuda.memory_allocated() / 2**20}
    started = time.perf_counter()
    try:
        run = build()
        out = run()
        torch.cuda.synchronize()
    except Exception as e:  # a peer that cannot run this workload is reported, not fatal
        return {**entry, "status": f"failed: {type(e).__name__}: {str(e)[:300]}"}
    entry["compile_s"] = time.perf_counter() - started
    entry["rel_error"] = relative_error(_first(out).float(), reference)
    if not entry["rel_error"] <= CHECK:
        return {**entry, "status": "wrong result"}
    entry["median_ms"] = median_ms(run)
    if entry["median_ms"] >= CLOCKED_MS:
        entry["gpu_clock"] = clocked(run)
    entry["peak_mb"] = torch.cuda.max_memory_allocated() / 2**20
    entry["status"] = "ok"
    return entry


CLOCKED_MS = 1.0
"""Rows whose call takes this long are timed a second time with the GPU's clock and power
sampled (``clocked``): 250 such calls last long enough for the power limit to lower the
clock (``bench/gpu_clocks.py``). Shorter rows are left alone: a sampler's process beside a
timing bound by the host would share its cores."""


def clocked(run: Callable[[], Any]) -> dict[str, Any]:
    """``median_ms`` of ``run`` again, with the SM clock and power over that timing."""
    sampler = Sampler()
    time.sleep(0.3)  # nvidia-smi's start, before the timing
    started = time.time()
    ms = median_ms(run)
    return {"median_ms": ms, **summary(sampler.stop(), started)}


def release_others() -> None:
    """Free what earlier variants left allocated, so a variant's peak is its own (with
    the model and inputs every variant shares, ``resident_mb``): torch.compile's CUDA-graph
    trees keep their memory pool, and its frozen weights, until dynamo is reset."""
    import gc

    torch.cuda.synchronize()
    gc.collect()
    torch._dynamo.reset()
    torch.cuda.empty_cache()


def _first(out: Any) -> torch.Tensor:
    return out[0] if isinstance(out, list | tuple) else out


TORCH_VARIANTS = ("PyTorch eager", "eager + CUDA graph", "torch.compile")
MAX_AUTOTUNE = "torch.compile max-autotune"
"""Inductor's longest search (Triton GEMM and convolution templates benchmarked against
cuBLAS and cuDNN, CUDA graphs on): a peer row only where its compile finishes in
``bench.suite.max_autotune``'s limit, and built in a process of its own so a compile
past the limit can be stopped."""


def torch_variants(
    model: torch.nn.Module,
    inputs: tuple[torch.Tensor, ...],
    reference: torch.Tensor,
    wanted: Collection[str] = TORCH_VARIANTS,
) -> list[dict[str, Any]]:
    """The PyTorch variants named in ``wanted`` (only those are built and timed)."""
    torch.backends.cudnn.benchmark = True
    half = copy.deepcopy(model).cuda().half().eval()
    net, xs = channels_last(half, fp16_inputs(inputs))
    builds = {
        "PyTorch eager": lambda: lambda: net(*xs),
        "eager + CUDA graph": lambda: _graphed(net, xs),
        "torch.compile": lambda: _compiled(net, xs, "reduce-overhead"),
        MAX_AUTOTUNE: lambda: _compiled(net, xs, "max-autotune"),
    }
    with torch.no_grad():
        return [measure(name, builds[name], reference) for name in (*TORCH_VARIANTS, MAX_AUTOTUNE) if name in wanted]


def _graphed(net: torch.nn.Module, xs: list[torch.Tensor]) -> Callable[[], torch.Tensor]:
    replay, out = in_cuda_graph(lambda: net(*xs))

    def run() -> torch.Tensor:
        replay()
        return out

    return run


def _compiled(net: torch.nn.Module, xs: list[torch.Tensor], mode: str) -> Callable[[], Any]:
    import torch._inductor.config as inductor

    inductor.freezing = True
    torch._dynamo.reset()
    compiled = torch.compile(net, mode=mode)
    compiled(*xs)  # compile now, inside the timed build
    compiled(*xs)  # the CUDA graph is recorded on a later call
    return lambda: compiled(*xs)


SPAN_FLOOR_S = 0.5
"""The compile's timed spans (``progress.span``) a dnnc row keeps: those that took this long."""


def dnnc_variants(
    model: torch.nn.Module, inputs: tuple[torch.Tensor, ...], reference: torch.Tensor, policies: tuple[str, ...] = DNNC_POLICIES
) -> list[dict[str, Any]]:
    import dnnc
    from dnnc import knobs, progress

    half = copy.deepcopy(model).cuda().half().eval()
    xs = fp16_inputs(inputs)
    rows = []
    for policy in policies:
        built: list[Any] = []
        spans: dict[str, float] = {}

        def build(policy: str = policy, built: list[Any] = built, spans: dict[str, float] = spans) -> Callable[[], Any]:
            with knobs.override(partition=policy), progress.watching(lambda _: None) as watched:
                compiled = dnnc.compile(half, xs, device="cuda")
            built.append(compiled)
            spans.update({name: round(s.seconds, 2) for name, s in watched.spans.items() if s.seconds >= SPAN_FLOOR_S})
            return lambda: compiled(*xs)

        row = measure(f"dnnc {policy}", build, reference)
        if built:
            row |= stopgaps(built[0])
            row["held_mb"] = held_mb(built[0])
            row["compile_reused"] = built[0].report.reused  # compile_s is then a load from the compile cache
            row["contest"] = contest_programs(built[0])
            row["stages"] = {s.name: round(s.seconds, 2) for s in built[0].report.stages}
            row["spans"] = dict(sorted(spans.items(), key=lambda kv: -kv[1]))
        rows.append(row)
        if policy == DNNC_POLICIES[0] and built and row.get("status") == "ok":
            rows.append(bound_row(f"dnnc {policy} bound", built[0], xs, reference))
    return rows


def bound_row(name: str, compiled: Any, xs: list[torch.Tensor], reference: torch.Tensor) -> dict[str, Any]:
    """The same program bound to the inputs once (``CompiledModule.bind``) and replayed:
    the per-call cost a serving loop that fills fixed input tensors pays. ``compile_s``
    is the bind (its CUDA-graph capture)."""
    bound_inputs = [x.clone() for x in xs]

    def build() -> Callable[[], Any]:
        binding = compiled.bind(*bound_inputs)

        def replay() -> Any:
            binding.replay()
            return binding.outputs

        return replay

    return measure(name, build, reference)


def contest_programs(compiled: Any) -> dict[str, Any] | None:
    """``auto``'s whole-program contest as it ran:
    - policy -> the program's measured ms (None where the contender was skipped or did
      not build): the cudnn-only and triton-only programs timed in the same process as
      the one ``auto`` kept;
    - ``predicted``: policy -> the ms the partitioner predicted, which tells a contender
      whose cover changed from one that timed slow;
    - ``dropped``: the candidate groups pricing dropped because they did not build or
      run alone; they narrow every cover."""
    decisions = compiled.program.metadata.get("decisions") or {}
    programs = decisions.get("programs")
    if not programs:
        return None
    contenders = programs["contenders"]
    return {
        "winner": programs["winner"],
        **{p: c.get("program_ms") for p, c in contenders.items()},
        "predicted": {p: c.get("predicted_ms") for p, c in contenders.items()},
        "dropped": list((decisions.get("totals") or {}).get("dropped") or []),
    }


def held_mb(compiled: Any) -> dict[str, float]:
    """What the compiled program holds on the GPU, MB: weights, kernel workspaces and the
    intermediates' arena (``peak_mb`` adds what the compile and the calls allocated)."""
    memory = compiled.summary().get("memory", {})
    return {k.removesuffix("_bytes"): round(v / 2**20, 1) for k, v in memory.items()}


def stopgaps(compiled: Any) -> dict[str, int]:
    """How many ops of a dnnc program run as torch ops and how many groups fell
    back to another backend: both must be zero for a result to count as dnnc's own; and
    how many memset nodes of its CUDA graph run as fill kernels (``dnnc.graph_memsets``)."""
    summary = compiled.summary()
    return {
        "torch_ops": sum(summary["torch_ops"].values()),
        "fallbacks": len(summary["fallbacks"]),
        "graph_fill_kernels": summary.get("graph_fill_kernels", 0),
    }
