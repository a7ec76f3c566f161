"""A content-addressed, on-disk cache shared by the backends.

The key is a hash of everything that changes the stored result (source text,
config, target, library versions ...), given as a mapping. Only successes are
ever stored: callers ``put`` after a compile or a measurement worked, so a
failure is retried next time rather than remembered. Writes are atomic (a
temporary file renamed into place), so concurrent compiles never see half a file.

Each entry starts with the SHA-256 of its payload, checked on every read: a file that
was truncated, damaged or replaced (a garbage kernel binary, an edited PTX) is a miss,
removed and rebuilt, never a result. The digest catches damage, not an attacker who
can write the cache directory (who could recompute it).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from dnnc import knobs

HEADER = b"dnnc-cache 1 sha256:"
"""An entry is ``HEADER``, the payload's hex SHA-256, a newline, then the payload."""
_DIGEST_LEN = 64


def frame(data: bytes) -> bytes:
    return HEADER + hashlib.sha256(data).hexdigest().encode() + b"\n" + data


def unframe(entry: bytes) -> bytes | None:
    """The payload of an entry whose digest matches, else None."""
    start = len(HEADER)
    end = start + _DIGEST_LEN
    if not entry.startswith(HEADER) or entry[end : end + 1] != b"\n":
        return None
    data = entry[end + 1 :]
    return data if hashlib.sha256(data).hexdigest().encode() == entry[start:end] else None


def environment(device: Any = None) -> dict[str, Any]:
    """What every cached build or measurement depends on besides its own input: the
    dnnc version and its code (``version.source_digest``), the libraries' versions
    (torch, Triton, the cuDNN frontend and library);
    with ``device`` (a CUDA device or its index), that GPU's name and compute
    capability. One definition, so no cache forgets a version another one keys by."""
    from dnnc.version import code_identity, library_versions

    found: dict[str, Any] = {**code_identity(), "versions": library_versions()}
    if device is not None:
        import torch

        major, minor = torch.cuda.get_device_capability(device)
        found |= {"gpu": torch.cuda.get_device_name(device), "cc": f"{major}.{minor}"}
    return found


def content_key(parts: Mapping[str, Any]) -> str:
    """A stable hash of ``parts`` (JSON-serialisable values; keys sorted)."""
    text = json.dumps(parts, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


class ContentCache:
    """Files under ``<cache_dir>/<namespace>/<key[:2]>/<key>``."""

    def __init__(self, namespace: str, root: Path | None = None):
        self.namespace = namespace
        self._root = root

    @property
    def directory(self) -> Path:
        return (self._root or knobs.get().cache_dir) / self.namespace

    def _path(self, key: str) -> Path:
        return self.directory / key[:2] / key

    def get(self, key: str) -> bytes | None:
        """The stored payload, or None when absent or damaged (a damaged entry is removed)."""
        if not knobs.get().cache:
            return None
        path = self._path(key)
        try:
            entry = path.read_bytes()
        except OSError:
            return None
        data = unframe(entry)
        if data is None:
            with contextlib.suppress(OSError):
                path.unlink()
        return data

    def put(self, key: str, data: bytes) -> None:
        if not knobs.get().cache:
            return
        path = self._path(key)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
            with os.fdopen(fd, "wb") as f:
                f.write(frame(data))
            os.replace(tmp, path)
        except OSError:
            pass  # a cache that cannot be written only costs time

    def get_json(self, key: str) -> Any | None:
        data = self.get(key)
        if data is None:
            return None
        try:
            return json.loads(data)
        except ValueError:
            return None  # a damaged entry is treated as missing

    def put_json(self, key: str, value: Any) -> None:
        self.put(key, json.dumps(value, sort_keys=True).encode())
