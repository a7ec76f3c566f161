"""The zip container: named members written atomically with their SHA-256 in the
manifest, and read back with every failure named (not a zip, truncated, a
missing member, a member whose bytes changed)."""

from __future__ import annotations

import hashlib
import os
import tempfile
import zipfile
import zlib
from collections.abc import Mapping
from pathlib import Path

from dnnc.errors import ArtifactError

MANIFEST = "manifest.json"
STORED_AS_IS = (".safetensors",)
"""Weights are stored uncompressed: they barely compress and are the bulk of the file."""


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def write_archive(path: Path, members: Mapping[str, bytes]) -> None:
    """Write every member (the manifest first) to a temporary file renamed into place."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        with zipfile.ZipFile(tmp, "w") as z:
            for name in sorted(members, key=lambda n: n != MANIFEST):
                compression = zipfile.ZIP_STORED if name.endswith(STORED_AS_IS) else zipfile.ZIP_DEFLATED
                z.writestr(name, members[name], compress_type=compression)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class Archive:
    """Members of an artifact opened for reading; ``read`` checks the recorded hash."""

    def __init__(self, path: Path):
        self.path = path
        if not path.is_file():
            raise ArtifactError(f"artifact {path} does not exist")
        try:
            self._zip = zipfile.ZipFile(path)
        except (zipfile.BadZipFile, OSError) as e:
            raise ArtifactError(f"artifact {path} is not a readable zip archive (truncated or corrupt?): {e}") from None
        self.names = set(self._zip.namelist())

    def raw(self, name: str) -> bytes:
        if name not in self.names:
            raise ArtifactError(f"artifact {self.path} has no member {name!r}")
        try:
            return self._zip.read(name)
        except (zipfile.BadZipFile, zlib.error, OSError, EOFError) as e:
            raise ArtifactError(f"artifact {self.path}: member {name!r} cannot be read (truncated or corrupt?): {e}") from None

    def read(self, name: str, expected_sha256: str) -> bytes:
        data = self.raw(name)
        if sha256(data) != expected_sha256:
            raise ArtifactError(f"artifact {self.path}: member {name!r} is corrupt (its SHA-256 differs from the manifest's)")
        return data

    def close(self) -> None:
        self._zip.close()
