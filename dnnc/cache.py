"""A content-addressed, on-disk cache shared by the backends.

The key is a hash of everything that changes the stored result (source text,
config, target, library versions ...), given as a mapping. Only successes are
ever stored: callers ``put`` after a compile or a measurement worked, so a
failure is retried next time rather than remembered. Writes are atomic (a
temporary file renamed into place), so concurrent compiles never see half a file.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from dnnc import knobs


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
        if not knobs.get().cache:
            return None
        try:
            return self._path(key).read_bytes()
        except OSError:
            return None

    def put(self, key: str, data: bytes) -> None:
        if not knobs.get().cache:
            return
        path = self._path(key)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
            with os.fdopen(fd, "wb") as f:
                f.write(data)
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
