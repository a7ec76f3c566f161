"""Every setting dnnc reads, typed, in one place.

Environment variables are read here and nowhere else. Code asks ``knobs.get()``;
tests and the CLI change settings with ``knobs.override(...)``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import platformdirs

from dnnc.errors import SettingsError

Device = Literal["auto", "cpu", "cuda"]
Precision = Literal["float32", "float64"]
Partition = Literal["auto", "cudnn-only", "triton-only", "greedy"]


@dataclass(frozen=True)
class Knobs:
    device: Device = "auto"
    """Where compiled programs run: ``auto`` picks the GPU when a GPU backend exists. (DNNC_DEVICE)"""
    reference_precision: Precision = "float32"
    """Precision the CPU reference backend computes floating values in. (DNNC_REFERENCE_PRECISION)"""
    verify_each_pass: bool = True
    """Run the IR verifier after every pass, naming the pass that broke it. (DNNC_VERIFY_EACH_PASS)"""
    dump_dir: Path | None = None
    """Write the IR of every stage to this directory. (DNNC_DUMP_DIR)"""
    log_level: str = "WARNING"
    """Level of the ``dnnc`` logger. (DNNC_LOG_LEVEL)"""
    cache_dir: Path = dataclasses.field(default_factory=lambda: platformdirs.user_cache_path("dnnc"))
    """Content-addressed caches (compiled kernels, measured plans) live under here: by
    default the platform's cache location (``~/.cache/dnnc`` on Linux, or under
    ``$XDG_CACHE_HOME``). (DNNC_CACHE_DIR)"""
    cache: bool = True
    """Read and write the caches under ``cache_dir``; off recompiles everything. (DNNC_CACHE)"""
    compile_cache: bool = True
    """Reuse a whole earlier compile of the same module, inputs and settings, found by a
    key computed before export (``compile_cache``), so a warm compile exports nothing.
    (DNNC_COMPILE_CACHE)"""
    autotune: bool = True
    """Time every candidate plan or config on the GPU and keep the fastest; off takes the
    first heuristic choice. (DNNC_AUTOTUNE)"""
    tune_floor_us: float = 0.0
    """A Triton kernel whose roofline floor (its bytes at the copy rate, its FLOPs at the
    tensor-core rate: ``roofline.floor_us``) is under this many microseconds is
    launch-bound: autotuning times its first and its most parallel config instead of
    all (``configs.launch_bound_pair``). 0 (the default) times every config: at 4, the
    cold compiles of mobilenetv2 and ghostnet (64x64, batch 2, H200) took 1-2 s less
    and ran 0.5% and 2.6% slower (BENCHMARKS.md). (DNNC_TUNE_FLOOR_US)"""
    runtime_compiled_plans: int = 2
    """How many runtime-compiled plans (cuDNN generates and compiles their kernels when it
    builds them, 0.05-1 s each) tuning builds and times per cuDNN graph, the heuristics'
    best first; every precompiled plan among the first ``MAX_TIMED_PLANS`` is timed. Over
    nine suite and zoo models on an H200, 2 built 118 of the 442 runtime-compiled plans
    that timing all of them built, for 0.6% more summed cuDNN kernel time (at most 0.9%
    of one model's tuned kernel time; BENCHMARKS.md). ``dnnc tune`` times them all.
    (DNNC_RUNTIME_COMPILED_PLANS)"""
    merge_products: bool = True
    """Run products of the same rows by different stored weights (an attention layer's
    query, key and value projections, a gated MLP's gate and up) as one product over the
    weights side by side (``merge-sibling-products``): BERT's layer at 8 x 512 tokens
    0.1713 -> 0.1688 ms on an H200. (DNNC_MERGE_PRODUCTS)"""
    cudnn_attention: bool = False
    """Give ``tcp.attention`` (``scaled_dot_product_attention``) to cuDNN's fused SDPA
    too (``cudnn-attention``). Off by default: dnnc's Triton attention kernel is faster
    at some shapes, cuDNN's at others. Attention written out as products and a softmax
    over 512 keys or more goes to cuDNN's fused SDPA either way. (DNNC_CUDNN_ATTENTION)"""
    partition: Partition = "auto"
    """How GPU groups are chosen: ``auto`` prices candidate groups per backend (measured on
    the GPU), takes the cheapest cover and checks it against the single-backend programs as
    whole programs; ``cudnn-only`` / ``triton-only`` restrict that cover to one backend's
    convolutions and matmuls; ``greedy`` outlines every cuDNN pattern, then fuses the rest
    with Triton, without pricing. ``auto`` is never slower than the better single backend
    on the suite (BENCHMARKS.md); its cold compiles take longer than ``greedy``'s.
    (DNNC_PARTITION)"""
    measure: bool = True
    """On a GPU, time candidate groups for the partitioner (cached by content); off
    prices them by the roofline estimate alone. (DNNC_MEASURE)"""
    tuning_specs: str = ""
    """Tuning-spec files or directories of the user layer, highest precedence first,
    separated by the OS path separator (``dnnc compile --tuning-spec``). (DNNC_TUNING_SPECS)"""
    tuning_spec_path: str = ""
    """Tuning-spec files or directories of the project layer, same form. (DNNC_TUNING_SPEC_PATH)"""
    tuning_spec_defaults: bool = True
    """Use the libraries shipped in ``dnnc/specs/defaults`` (the SKU, arch and generic
    layers); ``dnnc tune`` turns them off so it measures instead. (DNNC_TUNING_SPEC_DEFAULTS)"""
    measure_autotune: bool = False
    """Tune each candidate the partitioner times alone (every cuDNN candidate's plans, every
    Triton config); off times the heuristic choices, which is several times faster, and
    only the whole programs ``auto`` compares are tuned. (DNNC_MEASURE_AUTOTUNE)"""
    gpu_backends: str = "cudnn,triton"
    """Backends the GPU pipeline may use, in order of preference; ops none of them take run
    as torch ops (reported as the stopgap). (DNNC_GPU_BACKENDS)"""
    pdl: bool = True
    """Launch a Triton kernel that follows another Triton kernel, or a cuDNN matrix
    product in a config of one wave, with Programmatic Dependent Launch on Hopper and
    later (``triton-launch-order``): it is let onto the GPU while the one before it
    drains, and waits (``griddepcontrol.wait``) before it reads anything. On an H200,
    chains of 32 dependent products took 0.27-0.64 us less per kernel
    (``bench/pdl_probe.py``, BENCHMARKS.md). (DNNC_PDL)"""
    cuda_graph: bool = True
    """Replay a whole compiled program as one CUDA graph per input signature (captured on
    the first call after a warm-up run); off launches every kernel from Python. (DNNC_CUDA_GRAPH)"""
    compressible_arena: bool = False
    """Allocate a program's intermediates (its arena) in memory the GPU may store
    compressed (``dnnc.runtime.compressible``: Compute Data Compression), where the GPU
    offers it. Off by default: on an H200 a copy of float16 values 84% zeros ran 1.73x
    faster in it and one of half zeros 1.03x, but ResNet-50 with random weights (half its
    activations zero) ran no faster, 0.814 -> 0.815 ms at batch 32, 2.799 -> 2.823 at
    batch 128 (``bench/compressible_probe.py``, BENCHMARKS.md). (DNNC_COMPRESSIBLE_ARENA)"""
    graph_fill_kernels: bool = True
    """In a captured CUDA graph (a program's replay, a candidate timed alone), write what
    a memset node writes with a fill kernel in its place (``dnnc.graph_memsets``): the
    kernel after a memset node started 5-6 us after it on an H200, after a kernel node
    within about 1 us. (DNNC_GRAPH_FILL_KERNELS)"""
    compile_workers: int = min(16, os.cpu_count() or 1)
    """Processes that compile the Triton configs an autotuned group tries, side by side
    (through the kernel cache, so ``cache`` must be on), and (at most 8, each with a
    CUDA context) that build cuDNN's runtime-compiled plans; 0 or 1 does both in this
    process. (DNNC_COMPILE_WORKERS)"""
    dynamic_batch_max: int = 64
    """The largest batch a ``torch.compile(..., dynamic=True)`` graph with a symbolic batch
    is compiled for (buckets of powers of two up to it); a larger one runs the graph as
    Dynamo captured it. (DNNC_DYNAMIC_BATCH_MAX)"""
    dynamic_seq_max: int = 512
    """The same for a symbolic sequence length (dimension 1). (DNNC_DYNAMIC_SEQ_MAX)"""
    float64: Literal["float32", "refuse"] = "float32"
    """What a model's float64 computation becomes: ``float32`` computes it in float32 and
    says so once (as TensorRT does: no GPU library dnnc uses has float64 kernels, and
    models compute in it for a few ops, such as diffusers' rotary position tables);
    ``refuse`` makes it an import error. Inputs and outputs in float64 are refused
    either way: the program's signature is what the model's is. (DNNC_FLOAT64)"""
    kernel_compiler: Literal["auto", "nvcc", "nvrtc"] = "auto"
    """What compiles user kernels' ``.cu`` sources: ``auto`` takes nvcc where it is
    installed, else NVRTC. (DNNC_KERNEL_COMPILER)"""

    def backend_names(self) -> list[str]:
        """``gpu_backends`` as names, in order, blanks left out."""
        return [b.strip() for b in self.gpu_backends.split(",") if b.strip()]


_ENV = {
    "device": "DNNC_DEVICE",
    "reference_precision": "DNNC_REFERENCE_PRECISION",
    "verify_each_pass": "DNNC_VERIFY_EACH_PASS",
    "dump_dir": "DNNC_DUMP_DIR",
    "log_level": "DNNC_LOG_LEVEL",
    "cache_dir": "DNNC_CACHE_DIR",
    "cache": "DNNC_CACHE",
    "compile_cache": "DNNC_COMPILE_CACHE",
    "autotune": "DNNC_AUTOTUNE",
    "tune_floor_us": "DNNC_TUNE_FLOOR_US",
    "runtime_compiled_plans": "DNNC_RUNTIME_COMPILED_PLANS",
    "cudnn_attention": "DNNC_CUDNN_ATTENTION",
    "merge_products": "DNNC_MERGE_PRODUCTS",
    "gpu_backends": "DNNC_GPU_BACKENDS",
    "partition": "DNNC_PARTITION",
    "measure": "DNNC_MEASURE",
    "measure_autotune": "DNNC_MEASURE_AUTOTUNE",
    "tuning_specs": "DNNC_TUNING_SPECS",
    "tuning_spec_path": "DNNC_TUNING_SPEC_PATH",
    "tuning_spec_defaults": "DNNC_TUNING_SPEC_DEFAULTS",
    "pdl": "DNNC_PDL",
    "cuda_graph": "DNNC_CUDA_GRAPH",
    "graph_fill_kernels": "DNNC_GRAPH_FILL_KERNELS",
    "compressible_arena": "DNNC_COMPRESSIBLE_ARENA",
    "compile_workers": "DNNC_COMPILE_WORKERS",
    "kernel_compiler": "DNNC_KERNEL_COMPILER",
    "float64": "DNNC_FLOAT64",
    "dynamic_batch_max": "DNNC_DYNAMIC_BATCH_MAX",
    "dynamic_seq_max": "DNNC_DYNAMIC_SEQ_MAX",
}
_BOOLS = (
    "verify_each_pass",
    "cache",
    "compile_cache",
    "autotune",
    "cudnn_attention",
    "merge_products",
    "measure",
    "measure_autotune",
    "cuda_graph",
    "graph_fill_kernels",
    "compressible_arena",
    "pdl",
    "tuning_spec_defaults",
)
_COUNTS = {
    "compile_workers": (0, "0 (compile in this process) or more workers"),
    "runtime_compiled_plans": (1, "1 or more plans (a graph may have no other kind)"),
    "dynamic_batch_max": (2, "2 or more"),
    "dynamic_seq_max": (2, "2 or more"),
}
"""Whole-number settings: the least value, and what the error says is expected."""
_CHOICES = {
    "device": ("auto", "cpu", "cuda"),
    "reference_precision": ("float32", "float64"),
    "partition": ("auto", "cudnn-only", "triton-only", "greedy"),
    "kernel_compiler": ("auto", "nvcc", "nvrtc"),
    "float64": ("float32", "refuse"),
}


def _parse(field: str, raw: str) -> object:
    if field in _BOOLS:
        if raw.lower() in ("1", "true", "yes", "on"):
            return True
        if raw.lower() in ("0", "false", "no", "off"):
            return False
        raise SettingsError(f"{_ENV[field]}={raw!r}: expected 1/0, true/false, yes/no or on/off")
    if field in _COUNTS:
        least, expected = _COUNTS[field]
        try:
            count = int(raw)
        except ValueError:
            raise SettingsError(f"{_ENV[field]}={raw!r}: expected a whole number") from None
        if count < least:
            raise SettingsError(f"{_ENV[field]}={raw!r}: expected {expected}")
        return count
    if field == "tune_floor_us":
        try:
            floor = float(raw)
        except ValueError:
            raise SettingsError(f"{_ENV[field]}={raw!r}: expected a number of microseconds") from None
        if not floor >= 0:
            raise SettingsError(f"{_ENV[field]}={raw!r}: expected 0 (time every config) or more microseconds")
        return floor
    if field == "dump_dir":
        return Path(raw) if raw else None
    if field == "cache_dir":
        return Path(raw).expanduser()
    if field in _CHOICES and raw not in _CHOICES[field]:
        raise SettingsError(f"{_ENV[field]}={raw!r}: expected one of {', '.join(_CHOICES[field])}")
    return raw


def from_env(environ: Mapping[str, str] | None = None) -> Knobs:
    environ = os.environ if environ is None else environ
    values = {field: _parse(field, environ[var]) for field, var in _ENV.items() if var in environ}
    return Knobs(**values)  # type: ignore[arg-type]


_current: Knobs | None = None


def get() -> Knobs:
    global _current
    if _current is None:
        _current = from_env()
    return _current


def names() -> list[str]:
    """Every setting's name (``Knobs``' fields), in declaration order."""
    return [f.name for f in dataclasses.fields(Knobs)]


def check_names(settings: Mapping[str, object], what: str) -> None:
    """A ``SettingsError`` naming the first of ``settings`` that is not a setting."""
    unknown = sorted(set(settings) - set(names()))
    if unknown:
        raise SettingsError(f"{what}: unknown option {unknown[0]!r}; the options are dnnc's settings: {', '.join(names())}")


@contextlib.contextmanager
def override(**changes: object) -> Iterator[Knobs]:
    """Change settings for the duration of a block (validated like the environment)."""
    global _current
    previous = get()
    for field, value in changes.items():
        if field in _CHOICES and value not in _CHOICES[field]:
            raise SettingsError(f"{field}={value!r}: expected one of {', '.join(_CHOICES[field])}")
    _current = dataclasses.replace(previous, **changes)  # type: ignore[arg-type]
    try:
        yield _current
    finally:
        _current = previous
