"""The zip container: named members written atomically with their SHA-256 in the
manifest, and read back with every failure named (not a zip, truncated, a
missing member, a member whose bytes changed).

An artifact may come from anywhere, so nothing in it is trusted before it is
checked: every member's name and declared sizes are checked when the archive is
opened, before a byte is decompressed (a zip bomb declares gigabytes that a
megabyte of deflate expands to), duplicate and path-like names are refused, and a
member is read by asking for its declared size and no more.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import zipfile
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath, PureWindowsPath

from dnnc.artifact.mapped import aligned_extra, stored_view
from dnnc.errors import ArtifactError

MANIFEST = "manifest.json"
STORED_AS_IS = (".safetensors",)
"""Weights are stored uncompressed: they barely compress and are the bulk of the file."""

MiB = 1 << 20
GiB = 1 << 30


@dataclass(frozen=True)
class Limits:
    """What an artifact's members may declare. The bounds are far above what dnnc
    writes (a manifest of kilobytes, IR of megabytes) and far below what would
    exhaust a machine; only weights stored as is may be large, since reading them
    costs no more memory than their size on disk."""

    manifest: int = 4 * MiB
    member: int = 256 * MiB
    """Any compressed member, and any stored one that is not weights."""
    stored_weights: int = 64 * GiB
    ratio: int = 200
    """Deflate reaches ~5:1 on IR and JSON; ~1000:1 only on repeated bytes (a bomb)."""
    ratio_floor: int = 1 * MiB
    """Members smaller than this may have any ratio: they cannot exhaust memory."""


LIMITS = Limits()


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def file_mode() -> int:
    """The mode a newly created file gets here: 0o666 less the process's umask."""
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def write_archive(path: Path, members: Mapping[str, bytes]) -> None:
    """Write every member (the manifest first) to a temporary file renamed into place,
    with the mode any new file gets (the temporary file is private until then)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        with zipfile.ZipFile(tmp, "w") as z:
            for name in sorted(members, key=lambda n: n != MANIFEST):
                if name.endswith(STORED_AS_IS):  # uncompressed and aligned, so loading can map it (``mapped``)
                    info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
                    info.compress_type = zipfile.ZIP_STORED
                    info.extra = aligned_extra(z.fp.tell(), name)  # type: ignore[union-attr]
                    z.writestr(info, members[name])
                else:
                    z.writestr(name, members[name], compress_type=zipfile.ZIP_DEFLATED)
        os.chmod(tmp, file_mode())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _size(n: int) -> str:
    return f"{n} bytes" if n < MiB else f"{n} bytes ({n / MiB:.1f} MiB)"


def check_name(path: Path, name: str) -> None:
    """Refuse names that would point outside a folder the archive was extracted to."""
    parts = name.replace("\\", "/").split("/")
    if not name or PurePosixPath(name).is_absolute() or PureWindowsPath(name).is_absolute() or PureWindowsPath(name).drive:
        raise ArtifactError(f"artifact {path}: member name {name!r} is an absolute path; member names are relative")
    if ".." in parts:
        raise ArtifactError(f"artifact {path}: member name {name!r} has a '..' component; member names stay inside the artifact")


def check_sizes(path: Path, info: zipfile.ZipInfo, limits: Limits) -> None:
    """Refuse a member by what its zip entry declares, before it is decompressed."""
    name, declared, packed = info.filename, info.file_size, info.compress_size
    if info.flag_bits & 0x1:
        raise ArtifactError(f"artifact {path}: member {name!r} is encrypted; dnnc writes no encrypted members")
    if info.compress_type == zipfile.ZIP_STORED:
        if packed != declared:
            raise ArtifactError(
                f"artifact {path}: member {name!r} is stored uncompressed but declares {_size(declared)} "
                f"uncompressed and {_size(packed)} stored"
            )
        weights = name.endswith(STORED_AS_IS) and name != MANIFEST
        limit, kind = (limits.stored_weights, "stored weights") if weights else (limits.member, "a member")
    elif info.compress_type == zipfile.ZIP_DEFLATED:
        limit, kind = limits.member, "a compressed member"
    else:
        raise ArtifactError(
            f"artifact {path}: member {name!r} uses zip compression method {info.compress_type}; "
            "dnnc reads stored and deflated members only"
        )
    if name == MANIFEST:
        limit, kind = limits.manifest, "the manifest"
    if declared > limit:
        raise ArtifactError(
            f"artifact {path}: member {name!r} declares {_size(declared)} uncompressed, over the {_size(limit)} limit for {kind}"
        )
    if info.compress_type == zipfile.ZIP_DEFLATED and declared > limits.ratio_floor and declared > limits.ratio * max(packed, 1):
        raise ArtifactError(
            f"artifact {path}: member {name!r} declares {_size(declared)} uncompressed from {_size(packed)} compressed "
            f"(ratio {declared / max(packed, 1):.0f}:1, over {limits.ratio}:1): refused as a zip bomb"
        )


class Archive:
    """Members of an artifact opened for reading; ``read`` checks the recorded hash.
    Opening checks every member's name and declared sizes (``Limits``)."""

    def __init__(self, path: Path, limits: Limits | None = None):
        self.path = path
        if not path.is_file():
            raise ArtifactError(f"artifact {path} does not exist")
        try:
            self._zip = zipfile.ZipFile(path)
        except (zipfile.BadZipFile, OSError, ValueError) as e:
            raise ArtifactError(f"artifact {path} is not a readable zip archive (truncated or corrupt?): {e}") from None
        try:
            self._infos = self._checked(limits or LIMITS)
        except BaseException:
            self._zip.close()
            raise
        self.names = set(self._infos)

    def _checked(self, limits: Limits) -> dict[str, zipfile.ZipInfo]:
        infos: dict[str, zipfile.ZipInfo] = {}
        for info in self._zip.infolist():
            name = info.filename
            check_name(self.path, name)
            if name in infos:
                raise ArtifactError(f"artifact {self.path}: member {name!r} appears twice; each member name must be unique")
            check_sizes(self.path, info, limits)
            infos[name] = info
        return infos

    def raw(self, name: str) -> bytes:
        """The member's bytes. Asking for exactly the declared size allocates that once
        (zipfile yields no more); a stream that still has bytes after it, or ends
        before it, is refused."""
        if name not in self._infos:
            raise ArtifactError(f"artifact {self.path} has no member {name!r}")
        declared = self._infos[name].file_size
        try:
            with self._zip.open(self._infos[name]) as stream:
                data = stream.read(declared)
                longer = stream.read(1)
        except (zipfile.BadZipFile, zlib.error, OSError, EOFError, RuntimeError, NotImplementedError) as e:
            raise ArtifactError(f"artifact {self.path}: member {name!r} cannot be read (truncated or corrupt?): {e}") from None
        if longer or len(data) != declared:
            got = "more than" if longer else f"{_size(len(data))}, not"
            raise ArtifactError(f"artifact {self.path}: member {name!r} decompresses to {got} its declared {_size(declared)}")
        return data

    def read(self, name: str, expected_sha256: str) -> bytes:
        data = self.raw(name)
        if sha256(data) != expected_sha256:
            raise ArtifactError(f"artifact {self.path}: member {name!r} is corrupt (its SHA-256 differs from the manifest's)")
        return data

    def mapped(self, name: str, expected_sha256: str) -> memoryview | None:
        """A stored member's bytes mapped from the file (``mapped.stored_view``), its
        hash checked; None where it cannot be mapped (then ``read`` it)."""
        if name not in self._infos:
            raise ArtifactError(f"artifact {self.path} has no member {name!r}")
        view = stored_view(self.path, self._infos[name])
        if view is not None and hashlib.sha256(view).hexdigest() != expected_sha256:
            raise ArtifactError(f"artifact {self.path}: member {name!r} is corrupt (its SHA-256 differs from the manifest's)")
        return view

    def close(self) -> None:
        self._zip.close()
