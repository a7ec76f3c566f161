"""Timing rules every GPU benchmark here shares (METHOD.md): outputs checked
against a float32 reference before anything is timed, CUDA events around a
batch of back-to-back calls, warm-up first, the median of many batches; the
GPU's copy bandwidth and fp16 matmul peak measured in the same run, for floors.
"""

from __future__ import annotations

import datetime as dt
import json
import platform
import statistics
from collections.abc import Callable, Sequence
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import torch


def median_ms(fn: Callable[[], Any], inner: int = 10, repeats: int = 25, warmup: int = 5, head_start: bool = False) -> float:
    """Median over ``repeats`` of the mean time of ``inner`` back-to-back calls.
    ``head_start``: a spin queued before each first event (``dnnc.timing``), so the calls
    start on a GPU already busy rather than one waiting for the host's launches."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    return statistics.median(batch_ms(fn, inner, head_start) for _ in range(repeats))


def batch_ms(fn: Callable[[], Any], inner: int, head_start: bool = False) -> float:
    """The mean GPU time of ``inner`` back-to-back calls, between two events."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    if head_start:
        from dnnc.timing import _head_start

        _head_start()
    start.record()
    for _ in range(inner):
        fn()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / inner


def fp16_inputs(inputs: Sequence[torch.Tensor]) -> list[torch.Tensor]:
    """Inputs on the GPU, floating ones in float16 (token ids stay integers)."""
    return [x.cuda().half() if x.is_floating_point() else x.cuda() for x in inputs]


def checked_kernel_us(fn: Callable[[], Any], out: torch.Tensor, want: torch.Tensor, tolerance: float) -> float | str:
    """A kernel launch ``fn`` that writes ``out``, run once into a zeroed ``out`` and
    checked: its time in microseconds (a CUDA-graph replay, ``dnnc.timing.device_time_ms``)
    where its largest error is within ``tolerance`` of ``want``'s largest magnitude, else
    what went wrong (a wrong result, or a config that does not build or fit). The kernel
    probes record either, so one failing config does not end a run."""
    from dnnc.timing import device_time_ms

    try:
        out.zero_()
        fn()
        torch.cuda.synchronize()
        err = (out.float() - want).abs().max().item()
        if err > tolerance * want.abs().max().item():
            return f"wrong by {err}"
        return round(device_time_ms(fn) * 1e3, 2)
    except Exception as e:
        return f"error: {str(e)[-300:]}"


def in_cuda_graph(fn: Callable[[], Any]) -> tuple[Callable[[], None], Any]:
    """Capture ``fn`` once (after a warm-up on a side stream); returns replay and the captured output."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(2):
            fn()
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = fn()
    return graph.replay, out


def copy_bandwidth_gbs(n_bytes: int = 1 << 30) -> float:
    """Device-to-device copy: reads and writes ``n_bytes`` each."""
    src = torch.empty(n_bytes, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    ms = median_ms(lambda: dst.copy_(src), inner=5, repeats=10)
    return 2 * n_bytes / ms / 1e6


def matmul_tflops(n: int = 8192) -> float:
    a = torch.randn(n, n, device="cuda", dtype=torch.float16)
    b = torch.randn(n, n, device="cuda", dtype=torch.float16)
    ms = median_ms(lambda: a @ b, inner=5, repeats=10)
    return 2 * n**3 / ms / 1e9


def gpu_tag() -> str:
    """The GPU's model in lower case for result file names: "h200" for "NVIDIA H200", "h100"
    for "NVIDIA H100 80GB HBM3", "cpu" where no GPU is visible."""
    if not torch.cuda.is_available():
        return "cpu"
    words = torch.cuda.get_device_name().split()
    return words[1].lower() if len(words) > 1 else "gpu"


def environment() -> dict[str, Any]:
    props = torch.cuda.get_device_properties(0)
    env: dict[str, Any] = {
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "device": props.name,
        "sm": f"{props.major}{props.minor}",
        "python": platform.python_version(),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "cudnn_backend": torch.backends.cudnn.version(),
    }
    for name in ("triton", "nvidia-cudnn-frontend", "xdsl"):
        try:
            env[name] = version(name)
        except PackageNotFoundError:
            env[name] = None
    try:
        import subprocess

        listed = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"], capture_output=True, text=True, check=False
        ).stdout.split()
        env["driver"] = listed[0] if listed else None  # one line per GPU, all the host's one driver
    except OSError:
        env["driver"] = None
    return env


def write_results(name: str, payload: dict[str, Any], out_dir: str | None) -> list[Path]:
    stamp = dt.date.today().isoformat()
    paths = [Path(__file__).with_name("results") / f"{name}-{stamp}.json"]
    if out_dir:
        paths.append(Path(out_dir) / f"{name}-{stamp}.json")
    for p in paths:
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(json.dumps(payload, indent=2) + "\n")
    return paths


def result_path(out: Path, stem: str, name: str = "", suffix: str = ".json", tag: str | None = None) -> Path:
    """``out/<stem>-<date>-<gpu>[-<name>]<suffix>`` (``tag`` in place of the GPU's), ``out`` made."""
    out.mkdir(parents=True, exist_ok=True)
    return out / f"{stem}-{dt.date.today().isoformat()}-{tag or gpu_tag()}{'-' + name if name else ''}{suffix}"


def write_record(out: Path, stem: str, record: dict[str, Any]) -> Path:
    """``record`` as ``<stem>-<date>-<gpu>.json`` under ``out``; says where."""
    path = result_path(out, stem)
    path.write_text(json.dumps(record, indent=1))
    print(f"wrote {path}")
    return path


def environment_line(env: dict[str, Any], ceilings: dict[str, float], extra: str = "") -> str:
    """One sentence for a table's head: GPU, driver, versions, date, and the copy and
    matmul ceilings measured in the same run."""
    return (
        f"{env.get('device')} (sm_{env.get('sm')}), driver {env.get('driver')}, torch {env.get('torch')}, "
        f"cuDNN {env.get('cudnn_backend')}, cudnn-frontend {env.get('nvidia-cudnn-frontend')}, Triton {env.get('triton')}"
        f"{extra}, {env.get('date')}. Measured in the same run: copy {ceilings['copy_gbs']:.0f} GB/s, "
        f"fp16 matmul {ceilings['matmul_tflops']:.0f} TFLOP/s."
    )
