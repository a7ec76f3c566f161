"""The zip container refuses what it cannot read safely, before decompressing it:
members that declare more than their limit or an absurd compression ratio (zip
bombs), streams longer than they declare, duplicate and path-like names, and
members the manifest does not list or dnnc does not write."""

from __future__ import annotations

import hashlib
import json
import os
import resource
import stat
import struct
import time
import tracemalloc
import warnings
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest
import torch

import dnnc
from dnnc.artifact import archive
from dnnc.artifact.archive import Limits, MiB
from dnnc.errors import ArtifactError


@pytest.fixture
def artifact(tmp_path: Path, rng: torch.Generator) -> Path:
    """A CPU artifact whose weights (256 KiB) outweigh its other members."""
    model = torch.nn.Linear(256, 256).eval()
    return dnnc.compile(model, (torch.randn(2, 256, generator=rng),), device="cpu").save(tmp_path / "lin.dnnc")


def _members(path: Path) -> dict[str, tuple[bytes, int]]:
    with zipfile.ZipFile(path) as z:
        return {i.filename: (z.read(i), i.compress_type) for i in z.infolist()}


def _write(path: Path, members: dict[str, tuple[bytes, int]], list_in_manifest: bool = True) -> None:
    """Write the members (bytes, compression) with the manifest's hashes made to match them."""
    manifest = json.loads(members["manifest.json"][0])
    if list_in_manifest:
        manifest["members"] = {n: hashlib.sha256(d).hexdigest() for n, (d, _) in members.items() if n != "manifest.json"}
    members = {**members, "manifest.json": (json.dumps(manifest).encode(), zipfile.ZIP_DEFLATED)}
    with zipfile.ZipFile(path, "w") as z:
        for name, (data, compression) in members.items():
            z.writestr(name, data, compress_type=compression)


def _refused(path: Path, *expected: str) -> str:
    with pytest.raises(ArtifactError) as e:
        dnnc.load(path)
    message = str(e.value)
    assert "\n" not in message and str(path) in message, message
    for part in expected:
        assert part in message, message
    return message


def _patch_central_sizes(path: Path, member: str, compressed: int | None = None, uncompressed: int | None = None) -> None:
    """Rewrite the sizes a member's central-directory entry declares (what zipfile trusts)."""
    with zipfile.ZipFile(path) as z:
        entry = z.start_dir  # the first central-directory entry
    data = bytearray(path.read_bytes())
    while True:
        name_len = struct.unpack_from("<H", data, entry + 28)[0]
        if data[entry + 46 : entry + 46 + name_len] == member.encode():
            break
        entry += 46 + name_len + sum(struct.unpack_from("<HH", data, entry + 30))
    if compressed is not None:
        struct.pack_into("<I", data, entry + 20, compressed)
    if uncompressed is not None:
        struct.pack_into("<I", data, entry + 24, uncompressed)
    path.write_bytes(bytes(data))


# sizes --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def bomb(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A ~1 MB artifact whose program.mlir declares, and inflates to, 1 GiB of zeros."""
    path = tmp_path_factory.mktemp("bomb") / "bomb.dnnc"
    manifest = {"format": "dnnc-artifact", "schema": 1, "members": {"program.mlir": "0" * 64}}
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as z:
        z.writestr("manifest.json", json.dumps(manifest))
        with z.open("program.mlir", "w", force_zip64=True) as f:
            chunk = bytes(MiB)
            for _ in range(1024):
                f.write(chunk)
    return path


@pytest.mark.slow
def test_zip_bomb_is_refused_quickly_in_bounded_memory(bomb: Path) -> None:
    assert bomb.stat().st_size < 2 * MiB
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    tracemalloc.start()
    started = time.perf_counter()
    try:
        message = _refused(bomb, "member 'program.mlir'", "declares 1073741824 bytes (1024.0 MiB) uncompressed", "limit")
    finally:
        elapsed = time.perf_counter() - started
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    assert elapsed < 2.0, message
    assert peak < 16 * MiB
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss_before < 256 * 1024


@pytest.mark.slow
def test_zip_bomb_under_the_size_limit_is_refused_by_its_ratio(bomb: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(archive, "LIMITS", Limits(member=2 * 1024 * MiB))
    _refused(bomb, "member 'program.mlir'", "compressed (ratio ", "over 200:1", "zip bomb")


def test_small_deflated_member_may_have_any_ratio(artifact: Path, rng: torch.Generator) -> None:
    members = _members(artifact)
    members["metadata.json"] = (json.dumps({"pad": " " * (MiB - 100)}).encode(), zipfile.ZIP_DEFLATED)  # ~1000:1
    _write(artifact, members)
    assert dnnc.load(artifact).program.metadata["pad"].startswith(" ")


def test_deflated_member_with_absurd_ratio_is_refused(artifact: Path) -> None:
    members = _members(artifact)
    members["metadata.json"] = (json.dumps({"pad": " " * 4 * MiB}).encode(), zipfile.ZIP_DEFLATED)
    _write(artifact, members)
    _refused(artifact, "member 'metadata.json'", "compressed (ratio", "over 200:1): refused as a zip bomb")


def test_member_over_its_limit_is_refused(artifact: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(archive, "LIMITS", Limits(member=100))
    _refused(artifact, "member 'program.mlir'", "uncompressed, over the 100 bytes limit for a compressed member")


def test_manifest_over_its_limit_is_refused(artifact: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(archive, "LIMITS", Limits(manifest=100))
    _refused(artifact, "member 'manifest.json'", "over the 100 bytes limit for the manifest")


def test_stored_weights_may_be_large_but_not_deflated(artifact: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    members = _members(artifact)
    weights, compression = members["params.safetensors"]
    others = max(len(d) for n, (d, _) in members.items() if n != "params.safetensors")
    assert compression == zipfile.ZIP_STORED and len(weights) > 4 * others
    monkeypatch.setattr(archive, "LIMITS", Limits(member=2 * others))
    assert dnnc.load(artifact).program.params  # stored weights: over the member limit, under the weights limit
    members["params.safetensors"] = (weights, zipfile.ZIP_DEFLATED)
    _write(artifact, members)
    _refused(artifact, "member 'params.safetensors'", f"over the {2 * others} bytes limit for a compressed member")


def test_stored_weights_over_their_limit_are_refused(artifact: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(archive, "LIMITS", Limits(stored_weights=1000))
    _refused(artifact, "member 'params.safetensors'", "over the 1000 bytes limit for stored weights")


def test_stored_member_whose_sizes_differ_is_refused(artifact: Path) -> None:
    size = len(_members(artifact)["params.safetensors"][0])
    _patch_central_sizes(artifact, "params.safetensors", uncompressed=size + 1)
    _refused(artifact, "member 'params.safetensors'", "is stored uncompressed but declares", f"{size} bytes")


def test_stream_longer_than_declared_is_refused_in_bounded_memory(artifact: Path) -> None:
    """A bomb that declares 1000 bytes to pass the checks: reading stops at 1000."""
    members = _members(artifact)
    members["metadata.json"] = (bytes(16 * MiB), zipfile.ZIP_DEFLATED)
    _write(artifact, members)
    _patch_central_sizes(artifact, "metadata.json", uncompressed=1000)
    tracemalloc.start()
    try:
        _refused(artifact, "member 'metadata.json' cannot be read", "Bad CRC-32")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 4 * MiB


def test_stream_shorter_than_declared_is_refused(artifact: Path) -> None:
    size = len(_members(artifact)["metadata.json"][0])
    _patch_central_sizes(artifact, "metadata.json", uncompressed=size + 10)
    _refused(artifact, "member 'metadata.json'")


def test_unsupported_compression_is_refused(artifact: Path) -> None:
    members = _members(artifact)
    members["metadata.json"] = (members["metadata.json"][0], zipfile.ZIP_BZIP2)
    _write(artifact, members)
    _refused(artifact, "member 'metadata.json' uses zip compression method 12")


# names --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name,message",
    [
        ("../evil.mlir", "has a '..' component"),
        ("kernels/extern/../../../etc/passwd", "has a '..' component"),
        ("kernels\\..\\evil", "has a '..' component"),
        ("/etc/passwd", "is an absolute path"),
        ("\\\\server\\share\\x", "is an absolute path"),
        ("C:/evil", "is an absolute path"),
    ],
    ids=["parent", "nested-parent", "backslash-parent", "absolute", "unc", "drive"],
)
def test_path_like_member_names_are_refused(artifact: Path, name: str, message: str) -> None:
    members = _members(artifact)
    members[name] = (b"x", zipfile.ZIP_DEFLATED)
    _write(artifact, members)
    _refused(artifact, f"member name {name!r}", message)


def test_path_like_name_listed_in_the_manifest_is_refused(artifact: Path) -> None:
    members = _members(artifact)
    manifest = json.loads(members["manifest.json"][0])
    manifest["members"]["kernels/extern/../x"] = "0" * 64  # listed only, not in the zip
    members["manifest.json"] = (json.dumps(manifest).encode(), zipfile.ZIP_DEFLATED)
    _write(artifact, members, list_in_manifest=False)
    _refused(artifact, "member name 'kernels/extern/../x' has a '..' component")


def test_duplicate_member_names_are_refused(artifact: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # zipfile warns of the duplicate it writes
        with zipfile.ZipFile(artifact, "a") as z:
            z.writestr("program.mlir", "func.func @forward() {}")
    _refused(artifact, "member 'program.mlir' appears twice")


def test_unlisted_member_is_refused(artifact: Path) -> None:
    with zipfile.ZipFile(artifact, "a") as z:
        z.writestr("kernels/extern/k/sm_90.ptx", "// not listed")
    _refused(artifact, "member 'kernels/extern/k/sm_90.ptx' is not listed in the manifest")


@pytest.mark.parametrize("name", ["notes.txt", "kernels/sm_90/triton.json", "kernels/extern/k", "manifest.json/x"])
def test_listed_member_of_an_unknown_kind_is_refused(artifact: Path, name: str) -> None:
    members = _members(artifact)
    members[name] = (b"{}", zipfile.ZIP_DEFLATED)
    _write(artifact, members)
    _refused(artifact, f"manifest field 'members' lists {name!r}, which is not a member dnnc writes")


def test_user_kernel_objects_are_a_known_kind(artifact: Path, rng: torch.Generator) -> None:
    members = _members(artifact)
    members["kernels/extern/k/sm_90.ptx"] = (b"// ptx", zipfile.ZIP_DEFLATED)
    _write(artifact, members)
    loaded = dnnc.load(artifact)
    x = torch.randn(2, 256, generator=rng)
    assert loaded(x).shape == (2, 256)


# what inspect formats -----------------------------------------------------------------


def _edit_manifest(path: Path, edit: Callable[[dict], None]) -> None:
    members = _members(path)
    manifest = json.loads(members["manifest.json"][0])
    edit(manifest)
    members["manifest.json"] = (json.dumps(manifest).encode(), zipfile.ZIP_DEFLATED)
    _write(path, members, list_in_manifest=False)


@pytest.mark.parametrize(
    "field,value,message",
    [
        ("summary", [1], "manifest field 'summary' must be an object"),
        ("summary", {"memory_peak_bytes": "big"}, "'summary.memory_peak_bytes' must be an integer or null"),
        ("summary", {"fallbacks": ["x"]}, "'summary.fallbacks' must be a list of objects"),
        ("summary", {"user_kernels": []}, "'summary.user_kernels' must be an object"),
        ("versions", "torch 2", "manifest field 'versions' must be an object"),
    ],
)
def test_summary_fields_of_the_wrong_type_are_refused(artifact: Path, field: str, value: object, message: str) -> None:
    _edit_manifest(artifact, lambda m: m.__setitem__(field, value))
    _refused(artifact, message)


def test_metadata_that_is_not_an_object_is_refused(artifact: Path) -> None:
    members = _members(artifact)
    members["metadata.json"] = (b"[1, 2]", zipfile.ZIP_DEFLATED)
    _write(artifact, members)
    _refused(artifact, "member 'metadata.json' must hold a JSON object, got list")


@pytest.mark.parametrize(("umask", "mode"), [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_an_artifact_gets_the_mode_any_new_file_gets(tmp_path: Path, umask: int, mode: int) -> None:
    """Not the 0600 of the private temporary file it is written to first: a served
    artifact is read by other users (a server's account, a container)."""
    previous = os.umask(umask)
    try:
        path = tmp_path / "m.dnnc"
        archive.write_archive(path, {archive.MANIFEST: b"{}"})
    finally:
        os.umask(previous)
    assert stat.S_IMODE(path.stat().st_mode) == mode
