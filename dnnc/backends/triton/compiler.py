"""From generated source to something launchable.

``load`` writes a kernel's source into a module file and imports it, so
``@triton.jit`` decorates it then: under ``TRITON_INTERPRET=1`` that gives
Triton's interpreter (CPU tensors), otherwise a JIT function. ``compile_for``
compiles it with ``triton.compile`` for an explicit ``GPUTarget`` (no GPU needed,
so sm_80/sm_90 cubins can be built anywhere) behind a content-keyed cache: the key
is the source, signature, alignment hints, options, target and Triton version;
the value is the compiled artifacts Triton produced, stored only after a compile
succeeded. Loading a cached entry rebuilds Triton's ``CompiledKernel`` from those
files; if that ever fails (another Triton layout), the kernel is compiled again.

Checked on Triton 3.9; the calls used (``ASTSource(fn, signature, constexprs,
attrs)``, ``triton.compile(src, target=, options=)``, ``CompiledKernel(src,
metadata_group, hash)``, ``kernel[grid](*args)``) have these forms since Triton 3.3.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import importlib.util
import logging
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

from dnnc import knobs, progress
from dnnc.backends.triton.kernels import KernelSource
from dnnc.cache import ContentCache, content_key
from dnnc.version import __version__
from dnnc.workers import WorkerPool, worth_sending

log = logging.getLogger("dnnc.triton")

_modules: dict[str, Any] = {}
_compiled: dict[tuple[str, int], Any] = {}
_objects: dict[str, dict[str, Any]] = {}
"""Content key -> Triton's hash and the launch files (base64) of a kernel compiled or
read here: what an artifact stores of it (``object_of``)."""
_cache = ContentCache("triton")


@functools.cache
def interpreting() -> bool:
    """Whether ``@triton.jit`` gives the interpreter in this process (fixed at import)."""
    from triton.runtime.interpreter import InterpretedFunction

    probe = _import_source("import triton\n\n\n@triton.jit\ndef probe():\n    pass\n", "probe", "dnnc_triton_probe")
    return isinstance(probe, InterpretedFunction)


def _source_dir() -> Path:
    directory = knobs.get().cache_dir / "triton-src"
    try:
        directory.mkdir(parents=True, exist_ok=True)
        return directory
    except OSError:
        return Path(tempfile.mkdtemp(prefix="dnnc-triton-"))


def _import_source(text: str, attr: str, stem: str) -> Any:
    """Import ``text`` as a module file (Triton reads a kernel's source from its file)."""
    digest = hashlib.sha256(text.encode()).hexdigest()[:24]
    module_name = f"{stem}_{digest}"
    if module_name in _modules:
        return _modules[module_name]
    path = _source_dir() / f"{module_name}.py"
    if not path.is_file() or path.read_text() != text:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".py")
        with open(fd, "w") as f:
            f.write(text)
        Path(tmp).replace(path)
    spec = importlib.util.spec_from_file_location(module_name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    value = getattr(module, attr)
    _modules[module_name] = value
    return value


def load(source: KernelSource) -> Any:
    """The ``@triton.jit`` function of ``source`` (an interpreter function under TRITON_INTERPRET=1)."""
    return _import_source(source.text, source.name, source.name)


def _jit_function(source: KernelSource) -> Any:
    """A compilable ``JITFunction`` even under the interpreter (which decorates with its own class)."""
    fn = load(source)
    from triton.runtime.interpreter import InterpretedFunction
    from triton.runtime.jit import JITFunction

    return JITFunction(fn.fn) if isinstance(fn, InterpretedFunction) else fn


def _attrs(source: KernelSource, aligned: bool) -> dict[tuple[int, ...], list[list[Any]]]:
    """Every pointer 16-byte aligned (torch allocations are): lets Triton vectorize.
    Tensor descriptors take no hints."""
    if not aligned:
        return {}
    return {(i,): [["tt.divisibility", 16]] for i, t in enumerate(source.signature.values()) if t.startswith("*")}


def cuda_target(capability: int) -> GPUTarget:
    """``GPUTarget`` for ``sm_<capability>``, e.g. 90 for an H100/H200."""
    return GPUTarget("cuda", capability, 32)


FIXED_OPTIONS = {"enable_fp_fusion": True}
"""``triton.compile`` options every kernel takes. Fused multiply-adds: each generated
kernel's sums of products (a depthwise strip's float16 row sums, an epilogue's scale and
shift) take one instruction where they would take two. Triton 3.9 fuses by default and
warns that 3.10 stops unless told; said here, every Triton version compiles the same."""


def _options(source: KernelSource) -> dict[str, Any]:
    return {**source.options, **FIXED_OPTIONS}


def _key(source: KernelSource, target: GPUTarget, aligned: bool) -> str:
    """What a compiled kernel depends on: its source and how it is compiled, for which
    target, by which Triton (its compiler and bundled ptxas) and dnnc. Not torch's or
    cuDNN's versions, so a kernel compiled on a machine without a GPU (a CPU build of
    torch) is taken on the GPU machine it was built for."""
    return content_key(
        {
            "source": source.text,
            "name": source.name,
            "signature": source.signature,
            "aligned": aligned,
            "options": _options(source),
            "target": [target.backend, target.arch, target.warp_size],
            "dnnc": __version__,
            "triton": triton.__version__,
        }
    )


def _here(key: str) -> tuple[str, int]:
    """A kernel's loaded module belongs to the GPU current when it was loaded: one object per GPU."""
    return key, torch.cuda.current_device() if torch.cuda.is_available() else -1


def compile_for(source: KernelSource, target: GPUTarget, aligned: bool = True) -> Any:
    """``triton.compile`` of ``source`` for ``target``: a ``CompiledKernel``, cached by content."""
    options = _options(source)
    key = _key(source, target, aligned)
    here = _here(key)
    if here in _compiled:
        return _compiled[here]
    src = _ast_source(source, aligned)
    kernel = _from_cache(key, src)
    if kernel is None:
        with progress.span("triton.compile in this process"):
            kernel = triton.compile(src, target=target, options=options)
        _store(key, kernel)
    _compiled[here] = kernel
    return kernel


def _ast_source(source: KernelSource, aligned: bool) -> ASTSource:
    fn = _jit_function(source)
    if fn.is_gluon():  # a ``pingpong`` kernel
        from triton.experimental.gluon._runtime import GluonASTSource

        return GluonASTSource(fn, dict(source.signature), {}, _attrs(source, aligned))
    return ASTSource(fn, dict(source.signature), {}, _attrs(source, aligned))


def _store(key: str, kernel: Any) -> None:
    files = {}
    for name, path in kernel.metadata_group.items():
        files[name] = base64.b64encode(Path(path).read_bytes()).decode()
    entry = {"hash": kernel.hash, "files": files}
    _remember(key, entry)
    _cache.put_json(key, entry)


def _from_cache(key: str, src: ASTSource) -> Any | None:
    entry = _cache.get_json(key)
    if not entry:
        return None
    kernel = _kernel_from(entry, src)
    if kernel is not None:
        _remember(key, entry)
    return kernel


def _kernel_from(entry: dict[str, Any], src: ASTSource) -> Any | None:
    """A ``CompiledKernel`` from its files (Triton's metadata JSON and the binary, as
    base64), or None where they do not make one."""
    try:
        from triton.compiler.compiler import CompiledKernel

        with tempfile.TemporaryDirectory(prefix="dnnc-triton-") as tmp:
            group = {}
            for name, data in entry["files"].items():
                if Path(name).name != name:
                    return None  # a kernel file is named by Triton, never a path
                path = Path(tmp) / name
                path.write_bytes(base64.b64decode(data, validate=True))
                group[name] = str(path)
            kernel = CompiledKernel(src, group, entry["hash"])
            kernel.metadata_group = {}  # the files were read; the directory goes away
            return kernel
    except Exception:
        return None


_OBJECT_SUFFIXES = (".json", ".cubin")
"""What launching a compiled kernel reads: Triton's metadata and the binary (not the
intermediate IR and PTX Triton also keeps)."""


def _remember(key: str, entry: dict[str, Any]) -> None:
    """Keep what an artifact would store of a kernel compiled or loaded here: the files
    a launch reads, not the intermediate IR (``object_of``)."""
    files = {n: d for n, d in entry["files"].items() if n.endswith(_OBJECT_SUFFIXES)}
    _objects[key] = {"hash": entry["hash"], "files": files}


def object_of(source: KernelSource, capability: int) -> dict[str, Any] | None:
    """The compiled kernel of ``source`` for ``sm_<capability>`` (the aligned one) as
    an artifact stores it: its content key, Triton's hash and the files a launch
    reads (base64); None where this process has not compiled or loaded it."""
    key = _key(source, cuda_target(capability), True)
    entry = _objects.get(key)
    if entry is None or sorted(Path(n).suffix for n in entry["files"]) != sorted(_OBJECT_SUFFIXES):
        return None
    return {"key": key, **entry}


def adopt(source: KernelSource, capability: int, stored: dict[str, Any]) -> bool:
    """Take an artifact's compiled kernel of ``source`` for ``sm_<capability>``, so
    ``compile_for`` compiles nothing. Only where its content key is the one this
    process computes: the same source, target, options, Triton and dnnc versions; a
    kernel compiled anywhere else is compiled again from the source."""
    key = _key(source, cuda_target(capability), True)
    if stored.get("key") != key:
        return False
    here = _here(key)
    if here in _compiled:
        return True
    kernel = _kernel_from(stored, _ast_source(source, True))
    if kernel is None or kernel.name != source.name or kernel.metadata.target != cuda_target(capability):
        return False
    _remember(key, stored)
    _compiled[here] = kernel
    return True


def precompile(sources: Sequence[KernelSource], target: GPUTarget) -> int:
    """Compile the ``sources`` not yet in the kernel cache side by side in worker
    processes (``knobs.compile_workers``), so the ``compile_for`` calls that follow
    load them from the cache. ``triton.compile`` holds the GIL for most of its work,
    hence processes (``workers``); they compile for an explicit target and never touch the GPU.
    A source that fails here is left to ``compile_for``, which reports the error.
    Returns how many were compiled."""
    settings = knobs.get()
    loaded = {key for key, _ in _compiled}
    missing = [s for s in sources if _key(s, target, True) not in loaded and _cache.get(_key(s, target, True)) is None]
    if settings.compile_workers < 2 or not settings.cache:
        return 0
    pool = _workers(settings.compile_workers)
    if not worth_sending(len(missing), pool):
        return 0
    jobs = [(s, target, settings.cache_dir) for s in missing]
    try:
        compiled = sum(pool.map(_compile_job, jobs))
        progress.tally("compile triton kernels ahead", compiled)
        return compiled
    except Exception as e:  # a pool that broke only costs time: compile_for compiles here
        log.info("triton: parallel compile failed (%s: %s); compiling in this process", type(e).__name__, e)
        return 0


def start_workers() -> None:
    """Start the compile workers while the compile does other work (export takes
    seconds): each takes 3-4 s to start and import Triton and this module, which the
    first ``precompile`` would otherwise wait for."""
    settings = knobs.get()
    if settings.compile_workers >= 2 and settings.cache and not interpreting():
        _workers(settings.compile_workers).start_ahead(_ready, None)


def _ready(_: Any) -> bool:
    """A worker's first job: unpickling it imports this module (and Triton)."""
    return True


@functools.cache
def _workers(count: int) -> WorkerPool:
    """One pool per process, its workers started on first use and kept."""
    return WorkerPool(count)


def _compile_job(job: tuple[KernelSource, GPUTarget, Path]) -> int:
    source, target, cache_dir = job
    try:
        with knobs.override(cache_dir=cache_dir):
            compile_for(source, target)
    except Exception:
        return 0
    return 1
