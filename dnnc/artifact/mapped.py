"""Weights read in place: an artifact's ``params.safetensors`` is stored uncompressed,
so its tensors can be views of the file mapped into memory rather than copies of
bytes read from it (loading a model then costs no second copy of its weights, and
pages are read as they are used).

The file is mapped copy-on-write: a tensor written to changes this process's pages,
never the file. As with any mapped file, the artifact must not be truncated or
rewritten in place while a module loaded from it lives (``write_archive`` renames a
new file into place, which leaves the mapped one intact). The weights' SHA-256 is checked on the mapped bytes as it is on read
ones. A member whose data does not start on a ``ALIGN``-byte boundary in the file
(artifacts written before members were aligned) is read the ordinary way.
"""

from __future__ import annotations

import json
import math
import mmap
import zipfile
from pathlib import Path

import torch

from dnnc.errors import ArtifactError

ALIGN = 64
"""Where a stored member's data starts in files dnnc writes (``aligned_extra``)."""
_LOCAL_HEADER = 30
_ALIGN_ID = 0xD935
"""The extra-field id of the padding that aligns a member's data (the one zipalign uses)."""

DTYPES = {
    "F64": torch.float64,
    "F32": torch.float32,
    "F16": torch.float16,
    "BF16": torch.bfloat16,
    "I64": torch.int64,
    "I32": torch.int32,
    "I16": torch.int16,
    "I8": torch.int8,
    "U8": torch.uint8,
    "BOOL": torch.bool,
}


def aligned_extra(offset: int, name: str) -> bytes:
    """The extra field that puts a member's data, whose local header starts at
    ``offset``, on an ``ALIGN``-byte boundary."""
    start = offset + _LOCAL_HEADER + len(name.encode()) + 4  # the padding record's own id and size
    pad = -start % ALIGN
    return _ALIGN_ID.to_bytes(2, "little") + pad.to_bytes(2, "little") + bytes(pad)


def stored_view(path: Path, info: zipfile.ZipInfo) -> memoryview | None:
    """The bytes of a stored member, mapped from the file; None where it is compressed or unaligned."""
    if info.compress_type != zipfile.ZIP_STORED:
        return None
    with open(path, "rb") as f:
        f.seek(info.header_offset)
        header = f.read(_LOCAL_HEADER)
        if len(header) != _LOCAL_HEADER or header[:4] != b"PK\x03\x04":
            return None
        name_length = int.from_bytes(header[26:28], "little")
        extra_length = int.from_bytes(header[28:30], "little")
        start = info.header_offset + _LOCAL_HEADER + name_length + extra_length
        if start % ALIGN or start + info.file_size > Path(path).stat().st_size:
            return None
        if info.file_size == 0:
            return memoryview(b"")
        mapped = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_COPY)
    return memoryview(mapped)[start : start + info.file_size]


def tensors(view: memoryview, where: str) -> dict[str, torch.Tensor]:
    """The tensors of a safetensors file in ``view``, as views of it; every header
    field checked (an ``ArtifactError`` naming ``where``)."""

    def bad(reason: str) -> ArtifactError:
        return ArtifactError(f"{where} is not a readable safetensors file: {reason}")

    if len(view) < 8:
        raise bad(f"{len(view)} bytes, shorter than its header's length")
    length = int.from_bytes(view[:8], "little")
    if length > len(view) - 8:
        raise bad(f"its header declares {length} bytes, more than the {len(view) - 8} that follow")
    try:
        header = json.loads(bytes(view[8 : 8 + length]))
    except (ValueError, UnicodeDecodeError) as e:
        raise bad(f"its header is not JSON ({e})") from None
    if not isinstance(header, dict):
        raise bad("its header is not a JSON object")
    data = view[8 + length :]
    out: dict[str, torch.Tensor] = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        try:
            dtype = DTYPES[entry["dtype"]]
            shape = [int(d) for d in entry["shape"]]
            begin, end = (int(o) for o in entry["data_offsets"])
        except (KeyError, TypeError, ValueError):
            raise bad(f"tensor {name!r} has no valid dtype, shape and data_offsets ({entry!r})") from None
        count = math.prod(shape)
        size = count * torch.empty((), dtype=dtype).element_size()
        if min(shape, default=0) < 0 or not 0 <= begin <= end <= len(data) or end - begin != size:
            raise bad(f"tensor {name!r} ({entry['dtype']} {shape}) does not fit bytes {begin}..{end} of {len(data)}")
        if count == 0:
            out[name] = torch.empty(shape, dtype=dtype)
            continue
        out[name] = torch.frombuffer(data, dtype=dtype, count=count, offset=begin).view(shape)
    return out
