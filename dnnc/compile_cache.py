"""Whole compiles cached by what the model is before it is exported.

A warm compile (every measurement and kernel already in the caches) still exported
the model: torch.export and its decomposition to core ATen took 8-13 s of every
compile on the GPU machines (BENCHMARKS.md, "Whole compiles"), where the issue asks
for 3. So ``dnnc.compile`` of a module first computes ``model_key`` without
exporting anything, and where this machine compiled the same model for the same
inputs and settings before, loads that compile's artifact from the ``compiles``
cache instead (``dnnc.load``: nothing compiled, nothing timed). A compile that
misses stores its artifact there afterwards.

The key hashes what the compiled program depends on:
  * the module tree: every submodule's class and its own attributes (numbers,
    strings, flags, dtypes, configuration objects, functions by their code), the
    values of every parameter, buffer and tensor attribute (``tensor_digest``);
  * the source: every file of the packages the model's classes come from that
    this process has loaded (a user's own model files included), and dnnc's own;
  * the example inputs' structure, shapes, dtypes, strides and devices (not their
    values), and non-tensor inputs by value;
  * dnnc's settings that change what a compile decides (``COMPILE_SETTINGS``), the
    tuning-spec files in force (their contents), the library versions and the GPU.
A module the key cannot describe (a forward hook, an attribute of a type it does not
know) is compiled as before, never guessed at. What the key cannot see: code of
other third-party packages the forward calls (identified by nothing; torch's by its
version), environment variables read in ``forward``, and global state a forward
consults (a module-level flag set at run time). ``knobs.compile_cache`` off (or the
cache off) compiles every time.
"""

from __future__ import annotations

import contextlib
import dataclasses
import enum
import functools
import hashlib
import importlib.metadata
import logging
import os
import sys
import tempfile
import time
import types
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import torch

from dnnc import knobs
from dnnc.cache import ContentCache, content_key, environment

log = logging.getLogger("dnnc.compile")

COMPILES = ContentCache("compiles")
"""Artifacts of whole compiles, by ``model_key``."""

MAX_STORED_BYTES = 2 << 30
"""Compiles whose parameters exceed this are not stored: the cache would hold a copy of
every large model compiled, and storing one holds the artifact in memory about twice."""

COMPILE_SETTINGS = (
    "device",
    "reference_precision",
    "autotune",
    "tune_floor_us",
    "runtime_compiled_plans",
    "cudnn_attention",
    "merge_products",
    "partition",
    "measure",
    "measure_autotune",
    "gpu_backends",
    "tuning_spec_defaults",
    "kernel_compiler",
    "float64",
    "pdl",
)
"""The ``Knobs`` fields that change what a compile produces (the tuning-spec paths are
keyed by their files' contents)."""

_HOOKS = (
    "_forward_hooks",
    "_forward_pre_hooks",
    "_forward_hooks_with_kwargs",
    "_forward_pre_hooks_with_kwargs",
    "_forward_hooks_always_called",
)
_NOT_STATE = frozenset(
    (
        *_HOOKS,
        "_parameters",
        "_buffers",
        "_modules",
        "_non_persistent_buffers_set",
        "_backward_hooks",
        "_backward_pre_hooks",
        "_is_full_backward_hook",
        "_state_dict_hooks",
        "_state_dict_pre_hooks",
        "_load_state_dict_pre_hooks",
        "_load_state_dict_post_hooks",
    )
)
"""A module's own attributes that are not its state: its children and tensors (keyed
elsewhere) and the hooks export never runs; forward hooks make a module undescribable."""

BOOKKEEPING = frozenset(("_use_default_values", "_original_object_hash"))
"""Attributes and configuration keys that record how a configuration was made, not what
it is, and whose values differ from process to process because Python seeds ``hash()``
per process: diffusers' list of the config values left at their defaults (in set order)
and transformers' hash of a ``GenerationConfig``. Keyed, they made every warm compile of
a transformers decoder or a diffusers UNet miss."""

MAX_DEPTH = 8


class Undescribable(Exception):
    """The key cannot describe this model: compile it."""


def model_key(model: torch.nn.Module, example_inputs: Sequence[Any], target: str) -> str | None:
    """The model's compile key, or None when it cannot be described (the reason is logged)."""
    if not (knobs.get().compile_cache and knobs.get().cache):
        return None
    try:
        if any(getattr(torch.nn.modules.module, name, None) for name in ("_global_forward_hooks", "_global_forward_pre_hooks")):
            raise Undescribable("a global forward hook is registered")
        device = 0 if target == "cuda" and torch.cuda.is_available() else None
        parts = {
            **environment(device),
            "target": target,
            "settings": {name: getattr(knobs.get(), name) for name in COMPILE_SETTINGS},
            "specs": _spec_files(),
            "inputs": _describe_inputs(example_inputs),
            "modules": [(name, _module_state(m)) for name, m in model.named_modules(remove_duplicate=False)],
            "tensors": _tensors(model),
            "sources": _sources(model),
        }
    except Undescribable as e:
        log.info("dnnc: compiling without the compile cache: %s", e)
        return None
    return content_key(parts)


def load_cached(key: str, target: str, cuda_graph: bool | None) -> Any | None:
    """The compile stored under ``key``, loaded, or None (a miss, or an entry that no
    longer loads: it is compiled again and replaced)."""
    from dnnc.loading import load

    started = time.perf_counter()
    data = COMPILES.get(key)
    if data is None:
        return None
    with tempfile.TemporaryDirectory(prefix="dnnc-compile-cache-") as directory:
        path = Path(directory) / "cached.dnnc"
        path.write_bytes(data)
        try:
            compiled = load(path, device=target, cuda_graph=cuda_graph)
        except Exception as e:
            log.info("dnnc: a cached compile did not load (%s: %s); compiling", type(e).__name__, e)
            return None
    compiled.report.reused = True
    compiled.report.add("compile-cache", started, None)
    return compiled


@contextlib.contextmanager
def compiling(key: str) -> Iterator[None]:
    """Held while this process compiles the module of ``key``: another process about to
    compile the same module waits (an OS file lock, released if the holder dies), then
    finds it in the cache, rather than compiling it beside this one (two compiles
    tuning on one GPU slow each other down many times over)."""
    from filelock import FileLock, Timeout

    if not (knobs.get().cache and knobs.get().compile_cache):
        yield
        return
    folder = knobs.get().cache_dir / "locks" / COMPILES.namespace  # beside the entries, never among them
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:  # no writable cache: nothing to share either
        yield
        return
    lock = FileLock(str(folder / f"{key}.lock"))
    try:
        lock.acquire(timeout=0)
    except Timeout:
        from dnnc import progress

        progress.stage("waiting for another process compiling the same model")
        log.info("dnnc: another process is compiling the same model; waiting for it")
        lock.acquire()
    try:
        yield
    finally:
        lock.release()


def store(key: str, compiled: Any) -> None:
    """Keep ``compiled`` (a ``CompiledModule``) as the artifact ``key`` finds; a module
    whose parameters exceed ``MAX_STORED_BYTES`` is not kept."""
    if compiled.program.params.nbytes() > MAX_STORED_BYTES:
        return
    with tempfile.TemporaryDirectory(prefix="dnnc-compile-cache-") as directory:
        path = Path(directory) / "compiled.dnnc"
        try:
            compiled.save(path)
        except Exception as e:  # a compile that cannot be saved is still a compile
            log.info("dnnc: a compile could not be kept in the compile cache: %s: %s", type(e).__name__, e)
            return
        COMPILES.put(key, path.read_bytes())


def _module_state(module: torch.nn.Module) -> Any:
    for name in _HOOKS:
        if getattr(module, name, None):
            raise Undescribable(f"{type(module).__name__} has a forward hook ({name})")
    if isinstance(module, torch.fx.GraphModule):  # generated: its code says all, and it holds tensor constants
        constants = {k: v for k, v in vars(module).items() if isinstance(v, torch.Tensor)}
        return ["graph-module", hashlib.sha256(module.code.encode()).hexdigest(), describe(constants, "a GraphModule")]
    state = {k: v for k, v in vars(module).items() if k not in _NOT_STATE}
    return [_qualname(type(module)), describe(state, f"{type(module).__name__}")]


def describe(value: Any, where: str, depth: int = 0, seen: frozenset[int] = frozenset()) -> Any:
    """A JSON-able description of a module attribute's value that differs where the
    value does; raises ``Undescribable`` for a value of a kind it does not know."""
    if depth > MAX_DEPTH:
        raise Undescribable(f"{where} nests deeper than {MAX_DEPTH}")
    if value is None or isinstance(value, (bool, int, float, str)):
        return [type(value).__name__, repr(value)]
    if isinstance(value, bytes):
        return ["bytes", hashlib.sha256(value).hexdigest()]
    if isinstance(value, enum.Enum):
        return ["enum", _qualname(type(value)), value.name]
    if isinstance(value, (torch.dtype, torch.device, torch.Size, torch.layout, torch.memory_format)):
        return [type(value).__name__, str(value)]
    if isinstance(value, torch.Tensor):
        return ["tensor", tensor_digest(value)]
    if isinstance(value, type):
        return ["class", _qualname(value)]
    if id(value) in seen:
        return ["cycle"]
    inner = seen | {id(value)}
    if isinstance(value, (list, tuple)):
        return [type(value).__name__, [describe(v, f"{where}[{i}]", depth + 1, inner) for i, v in enumerate(value)]]
    if isinstance(value, (set, frozenset)):
        return [type(value).__name__, sorted(repr(describe(v, f"{where}{{}}", depth + 1, inner)) for v in value)]
    if isinstance(value, dict):
        kept = ((k, v) for k, v in value.items() if k not in BOOKKEEPING)
        return ["dict", sorted((repr(k), describe(v, f"{where}[{k!r}]", depth + 1, inner)) for k, v in kept)]
    if isinstance(value, torch.nn.Module):  # a module held outside ``_modules`` is described like one
        return ["module", _module_state(value)]
    if isinstance(value, functools.partial):
        return ["partial", describe((value.func, value.args, value.keywords), where, depth + 1, inner)]
    if isinstance(value, types.MethodType):
        return ["method", describe(value.__func__, where, depth + 1, inner), _qualname(type(value.__self__))]
    if isinstance(value, types.FunctionType):
        closure = [c.cell_contents for c in value.__closure__ or ()]
        return ["function", _qualname(value), _code_digest(value.__code__), describe(closure, where, depth + 1, inner)]
    if isinstance(value, (types.BuiltinFunctionType, types.BuiltinMethodType)):
        return ["builtin", f"{getattr(value, '__module__', '')}.{value.__qualname__}"]
    if dataclasses.is_dataclass(value) or hasattr(value, "__dict__"):  # configuration objects
        try:
            fields = vars(value)
        except TypeError:
            raise Undescribable(f"{where} is a {_qualname(type(value))}") from None
        return ["object", _qualname(type(value)), describe(fields, where, depth + 1, inner)]
    raise Undescribable(f"{where} is a {_qualname(type(value))}")


def _qualname(obj: Any) -> str:
    return f"{getattr(obj, '__module__', '?')}.{getattr(obj, '__qualname__', getattr(obj, '__name__', '?'))}"


def _code_digest(code: types.CodeType) -> str:
    parts = [
        code.co_code,
        repr(code.co_names).encode(),
        repr([c for c in code.co_consts if not isinstance(c, types.CodeType)]).encode(),
    ]
    parts += [_code_digest(c).encode() for c in code.co_consts if isinstance(c, types.CodeType)]
    return hashlib.sha256(b"\0".join(parts)).hexdigest()


CHUNK = 1 << 24
_WEIGHTS: dict[torch.device, torch.Tensor] = {}


def tensor_digest(t: torch.Tensor) -> list[Any]:
    """Shape, dtype, device and a digest of the bytes, computed where the tensor is (a
    GPU model's weights are not copied to the host to be keyed): on the CPU their
    SHA-1; on a GPU a plain and a position-weighted sum of their 64-bit words (wrapping)."""
    data = t.detach()
    if data.is_sparse or data.is_quantized or data.is_meta:
        raise Undescribable(f"a {data.layout} tensor")
    raw = data.contiguous().reshape(-1).view(torch.uint8)
    head = [list(data.shape), str(data.dtype), data.device.type, bool(data.requires_grad)]
    if raw.device.type == "cpu":
        return [*head, hashlib.sha1(raw.numpy()).hexdigest()]
    return [*head, word_sums(raw)]


def word_sums(raw: torch.Tensor) -> list[list[int]]:
    """Per 128 MiB of ``raw`` (bytes, on any device): the wrapping sum of its 64-bit
    words, and their sum weighted by position (so a moved word counts)."""
    pad = (-raw.numel()) % 8
    if pad:
        raw = torch.cat([raw, raw.new_zeros(pad)])
    words = raw.view(torch.int64)
    if raw.device not in _WEIGHTS:
        _WEIGHTS[raw.device] = torch.arange(CHUNK, device=raw.device, dtype=torch.int64) % 65521 + 1
    weights = _WEIGHTS[raw.device]
    sums = [
        torch.stack([chunk.sum(), (chunk * weights[: chunk.numel()]).sum()])
        for chunk in (words[start : start + CHUNK] for start in range(0, words.numel(), CHUNK))
    ]
    return torch.stack(sums).tolist() if sums else []


def _tensors(model: torch.nn.Module) -> list[Any]:
    named = [*model.named_parameters(remove_duplicate=False), *model.named_buffers(remove_duplicate=False)]
    return [[name, tensor_digest(t)] for name, t in named]


def _describe_inputs(example_inputs: Sequence[Any]) -> Any:
    leaves, spec = torch.utils._pytree.tree_flatten(tuple(example_inputs))
    described = []
    for i, leaf in enumerate(leaves):
        if isinstance(leaf, torch.Tensor):
            described.append(
                ["tensor", list(leaf.shape), list(leaf.stride()), str(leaf.dtype), leaf.device.type, leaf.requires_grad]
            )
        else:
            described.append(describe(leaf, f"example input {i}"))
    return [str(spec), described]


def _sources(model: torch.nn.Module) -> list[Any]:
    """The source of the packages the model's classes come from, and of dnnc itself
    (``package_source``)."""
    packages = {"dnnc"}
    for module in model.modules():
        for cls in type(module).__mro__:
            top = cls.__module__.split(".")[0]
            if top not in ("torch", "builtins", "typing", "abc"):
                packages.add(top)
    return [[top, package_source(top)] for top in sorted(packages)]


def package_source(top: str) -> Any:
    """An installed package by its distribution's version; a package imported from
    anywhere else (an editable install, a project's own code, the ``__main__`` script)
    by the digests of all its Python files, loaded or not."""
    module = sys.modules.get(top)
    path = getattr(module, "__file__", None)
    if path is None:
        raise Undescribable(f"the model's package {top} has no source file")
    root = Path(path).parent if Path(path).name == "__init__.py" else Path(path)
    if {"site-packages", "dist-packages"} & set(root.parts):
        version = _installed_version(top)
        if version is not None:
            return ["installed", version]
    files = sorted(root.rglob("*.py")) if root.is_dir() else [root]
    return ["files", [[str(f.relative_to(root.parent)), _file_digest(str(f))] for f in files]]


def _installed_version(top: str) -> str | None:
    """The version of the distribution that installs package ``top`` (looked up by the
    package's name first: scanning every distribution takes about a second)."""
    try:
        return f"{top} {importlib.metadata.version(top)}"
    except importlib.metadata.PackageNotFoundError:
        names = _distributions().get(top, [])
        return " ".join(sorted(f"{n} {importlib.metadata.version(n)}" for n in names)) or None


@functools.cache
def _distributions() -> dict[str, list[str]]:
    return dict(importlib.metadata.packages_distributions())


_FILES: dict[tuple[str, int, int], str] = {}


def _file_digest(path: str) -> str:
    """A file's SHA-256, remembered by path, size and modification time."""
    try:
        stat = os.stat(path)
    except OSError:
        return "missing"
    key = (path, stat.st_size, stat.st_mtime_ns)
    if key not in _FILES:
        _FILES[key] = hashlib.sha256(Path(path).read_bytes()).hexdigest()
    return _FILES[key]


def _spec_files() -> list[Any]:
    """The tuning-spec files named by the settings, by content."""
    settings = knobs.get()
    named = [p for text in (settings.tuning_specs, settings.tuning_spec_path) for p in text.split(os.pathsep) if p]
    found = []
    for entry in named:
        path = Path(entry)
        files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
        found += [[str(f), _file_digest(str(f))] for f in files]
    return found
