"""Compiling a user kernel's ``.cu`` source to a cubin or PTX for one target,
with nvcc where it is installed, else NVRTC (through ``cuda.bindings.nvrtc``: the
``nvidia-cuda-nvrtc`` wheel or a CUDA toolkit), through the content-addressed cache.

The key holds everything that changes the object: the source and every header
it includes with quotes (found and hashed recursively), the flags, include
dirs, the compiler and its version, the target and the kind. Only successes
are stored. A compile error is a ``KernelBuildError`` carrying the compiler's
log, whose lines name the file and line (``kernels.cu(12): error: ...``).
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dnnc import knobs
from dnnc.cache import ContentCache, content_key
from dnnc.errors import KernelBuildError

KINDS = ("cubin", "ptx")
_INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)
_cache = ContentCache("user-kernels")


@dataclass(frozen=True)
class Compiler:
    name: str  # nvcc | nvrtc
    version: str
    path: str


@functools.cache
def _nvcc() -> Compiler | None:
    path = shutil.which("nvcc") or next((p for p in ("/usr/local/cuda/bin/nvcc",) if os.access(p, os.X_OK)), None)
    if path is None:
        return None
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=60, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return Compiler("nvcc", out.strip().splitlines()[-1], path)


@functools.cache
def _nvrtc() -> tuple[Compiler, Any] | None:
    """NVRTC through NVIDIA's Python bindings (``cuda.bindings.nvrtc``), which find the
    library (the ``nvidia-cuda-nvrtc`` wheel, a CUDA toolkit); None where either is missing."""
    try:
        from cuda.bindings import nvrtc

        result, major, minor = nvrtc.nvrtcVersion()
    except Exception:  # no bindings, or no library for them to load
        return None
    if result != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        return None
    return Compiler("nvrtc", f"{major}.{minor}", "cuda.bindings.nvrtc"), nvrtc


def compiler() -> Compiler:
    """The compiler ``knobs.kernel_compiler`` asks for (``auto``: nvcc, else NVRTC)."""
    wanted = knobs.get().kernel_compiler
    if wanted in ("auto", "nvcc") and (nvcc := _nvcc()) is not None:
        return nvcc
    if wanted in ("auto", "nvrtc") and (nvrtc := _nvrtc()) is not None:
        return nvrtc[0]
    raise KernelBuildError(
        f"no CUDA compiler for user kernels (asked for {wanted}): install the CUDA toolkit (nvcc) or "
        "'pip install nvidia-cuda-nvrtc' (part of dnnc[cuda]), or give prebuilt objects per target"
    )


def _headers(source: Path, include_dirs: Sequence[Path]) -> dict[str, str]:
    """Every header the source includes with quotes, recursively: path -> text."""
    found: dict[str, str] = {}
    pending = [source]
    while pending:
        current = pending.pop()
        try:
            text = current.read_text()
        except OSError:
            continue  # the compiler reports a missing header with its line
        for name in _INCLUDE.findall(text):
            for directory in (current.parent, *include_dirs):
                candidate = (directory / name).resolve()
                if candidate.is_file():
                    if str(candidate) not in found:
                        found[str(candidate)] = candidate.read_text()
                        pending.append(candidate)
                    break
    return found


def build(
    source: Path, target: str, kind: str, flags: Sequence[str] = (), include_dirs: Sequence[Path] = (), what: str = ""
) -> tuple[bytes, str]:
    """(object bytes, how it was obtained) for ``target`` (``sm_90``) of ``kind`` (cubin or ptx)."""
    assert kind in KINDS
    try:
        text = source.read_text()
    except OSError as e:
        raise KernelBuildError(f"{what}source {source} cannot be read: {e.strerror or e}") from None
    used = compiler()
    key = content_key(
        {
            "source": text,
            "headers": _headers(source, include_dirs),
            "flags": list(flags),
            "include_dirs": [str(d) for d in include_dirs],
            "compiler": [used.name, used.version],
            "target": target,
            "kind": kind,
        }
    )
    cached = _cache.get(key)
    if cached is not None:
        return cached, f"{source.name} ({used.name} {used.version}, cached)"
    arch = target if kind == "cubin" else target.replace("sm_", "compute_")
    if used.name == "nvcc":
        data = _run_nvcc(used, source, arch, kind, flags, include_dirs, what)
    else:
        data = _run_nvrtc(text, source, arch, kind, flags, include_dirs, what)
    _cache.put(key, data)
    return data, f"{source.name} ({used.name} {used.version})"


def _failure(what: str, compiler_name: str, source: Path, arch: str, log: str) -> KernelBuildError:
    first = next(
        (line.strip() for line in log.splitlines() if "error" in line), log.strip().splitlines()[0] if log.strip() else ""
    )
    return KernelBuildError(f"{what}{compiler_name} could not compile {source} for {arch}: {first}\n{log.rstrip()}")


def _run_nvcc(
    used: Compiler, source: Path, arch: str, kind: str, flags: Sequence[str], include_dirs: Sequence[Path], what: str
) -> bytes:
    with tempfile.TemporaryDirectory(prefix="dnnc-nvcc-") as tmp:
        out = Path(tmp) / f"kernel.{kind}"
        cmd = [used.path, f"-{kind}", f"-arch={arch}", "-o", str(out), *(f"-I{d}" for d in include_dirs), *flags, str(source)]
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        except (OSError, subprocess.SubprocessError) as e:
            raise KernelBuildError(f"{what}nvcc could not run: {e}") from None
        if done.returncode != 0:
            raise _failure(what, "nvcc", source, arch, done.stderr + done.stdout)
        return out.read_bytes()


def _run_nvrtc(
    text: str, source: Path, arch: str, kind: str, flags: Sequence[str], include_dirs: Sequence[Path], what: str
) -> bytes:
    loaded = _nvrtc()
    assert loaded is not None
    _, nvrtc = loaded
    prog = _checked(nvrtc, nvrtc.nvrtcCreateProgram(text.encode(), str(source).encode(), 0, [], []), "create a program")
    try:
        options = [f"--gpu-architecture={arch}", f"-I{source.parent}", *(f"-I{d}" for d in include_dirs), *flags]
        (result,) = nvrtc.nvrtcCompileProgram(prog, len(options), [o.encode() for o in options])
        size = _checked(nvrtc, nvrtc.nvrtcGetProgramLogSize(prog), "read the log size")
        log = b" " * size
        _checked(nvrtc, nvrtc.nvrtcGetProgramLog(prog, log), "read the log")
        if result != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            raise _failure(what, "NVRTC", source, arch, log.rstrip(b"\0").decode(errors="replace"))
        get_size, get = (
            (nvrtc.nvrtcGetCUBINSize, nvrtc.nvrtcGetCUBIN) if kind == "cubin" else (nvrtc.nvrtcGetPTXSize, nvrtc.nvrtcGetPTX)
        )
        size = _checked(nvrtc, get_size(prog), f"read the {kind} size")
        data = b" " * size
        _checked(nvrtc, get(prog, data), f"read the {kind}")
        return data.rstrip(b"\0") if kind == "ptx" else data
    finally:
        nvrtc.nvrtcDestroyProgram(prog)


def _checked(nvrtc: Any, returned: tuple[Any, ...], doing: str) -> Any:
    """What an NVRTC binding returned after its result; a ``KernelBuildError`` where it is not success."""
    result, *values = returned
    if result != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        _, text = nvrtc.nvrtcGetErrorString(result)
        raise KernelBuildError(f"NVRTC could not {doing}: {text.decode()}")
    return values[0] if values else None
