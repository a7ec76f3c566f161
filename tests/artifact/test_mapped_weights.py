"""Weights loaded in place: an artifact's params member starts on an aligned offset,
loading maps it (tensors are views of the file, copy-on-write), an older unaligned
artifact is read as before, and a damaged header or byte is refused by name."""

from __future__ import annotations

import hashlib
import json
import zipfile
from pathlib import Path

import pytest
import torch
from safetensors.torch import save as save_safetensors

import dnnc
from dnnc.artifact.mapped import ALIGN, stored_view, tensors
from dnnc.artifact.store import read_artifact
from dnnc.errors import ArtifactError


@pytest.fixture
def artifact(tmp_path: Path) -> Path:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.GELU(), torch.nn.Linear(32, 4)).eval()
    return dnnc.compile(model, (torch.randn(2, 16),), device="cpu").save(tmp_path / "mlp.dnnc")


def _info(path: Path) -> zipfile.ZipInfo:
    with zipfile.ZipFile(path) as z:
        return z.getinfo("params.safetensors")


def test_weights_are_aligned_in_the_file_and_loaded_as_views_of_it(artifact: Path) -> None:
    assert stored_view(artifact, _info(artifact)) is not None
    params = read_artifact(artifact).program.params
    for t in params.values():
        assert not t.untyped_storage().resizable(), "a tensor of its own, not a view of the mapped file"
    before = artifact.read_bytes()
    next(iter(params.values())).add_(1.0)  # copy-on-write: this process's page changes, the file does not
    assert artifact.read_bytes() == before


def test_a_mapped_load_runs_as_the_compiled_module(artifact: Path) -> None:
    x = torch.randn(2, 16)
    torch.testing.assert_close(dnnc.load(artifact)(x), dnnc.load(artifact)(x))


def _rewrite(src: Path, dst: Path, params: bytes, aligned: bool) -> None:
    with zipfile.ZipFile(src) as z:
        members = {n: z.read(n) for n in z.namelist()}
    manifest = json.loads(members["manifest.json"])
    manifest["members"]["params.safetensors"] = hashlib.sha256(params).hexdigest()
    members["manifest.json"] = json.dumps(manifest).encode()
    members["params.safetensors"] = params
    with zipfile.ZipFile(dst, "w") as z:
        for name, data in members.items():
            compression = zipfile.ZIP_STORED if name.endswith(".safetensors") else zipfile.ZIP_DEFLATED
            info = zipfile.ZipInfo(name)
            info.compress_type = compression
            if aligned and name.endswith(".safetensors"):
                from dnnc.artifact.mapped import aligned_extra

                info.extra = aligned_extra(z.fp.tell(), name)
            z.writestr(info, data)


def test_an_unaligned_artifact_is_read_as_before(artifact: Path, tmp_path: Path) -> None:
    with zipfile.ZipFile(artifact) as z:
        params = z.read("params.safetensors")
    old = tmp_path / "old.dnnc"
    _rewrite(artifact, old, params, aligned=False)
    info = _info(old)
    if (info.header_offset + 30 + len(info.filename) + len(info.extra)) % ALIGN == 0:
        pytest.skip("the rewrite happened to align the member")
    assert stored_view(old, info) is None
    got, want = read_artifact(old).program.params, read_artifact(artifact).program.params
    assert got.keys() == want.keys() and all(torch.equal(got[k], want[k]) for k in got)


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda raw: (10**9).to_bytes(8, "little") + raw[8:], "its header declares 1000000000 bytes"),
        (lambda raw: raw[:8] + b"[" + raw[9:], "its header is not JSON"),
    ],
)
def test_a_damaged_header_is_refused_by_name(artifact: Path, tmp_path: Path, damage, message: str) -> None:
    with zipfile.ZipFile(artifact) as z:
        params = z.read("params.safetensors")
    bad = tmp_path / "bad.dnnc"
    _rewrite(artifact, bad, damage(params), aligned=True)
    with pytest.raises(ArtifactError, match=f"member 'params.safetensors' is not a readable safetensors file: {message}"):
        read_artifact(bad)


def test_tensor_entries_outside_the_data_are_refused() -> None:
    raw = bytearray(save_safetensors({"w": torch.ones(4)}))
    header_length = int.from_bytes(raw[:8], "little")
    header = json.loads(raw[8 : 8 + header_length])
    header["w"]["data_offsets"] = [0, 64]
    text = json.dumps(header, separators=(",", ":")).encode().ljust(header_length)
    raw[8 : 8 + header_length] = text[:header_length]
    with pytest.raises(ArtifactError, match=r"tensor 'w' \(F32 \[4\]\) does not fit bytes 0..64"):
        tensors(memoryview(bytes(raw)), "here")


def test_a_changed_weight_byte_fails_the_hash(artifact: Path, tmp_path: Path) -> None:
    data = bytearray(artifact.read_bytes())
    info = _info(artifact)
    start = info.header_offset + 30 + len(info.filename) + len(info.extra)
    data[start + info.file_size - 1] ^= 0xFF
    bad = tmp_path / "flipped.dnnc"
    bad.write_bytes(bytes(data))
    with pytest.raises(ArtifactError, match="member 'params.safetensors' is corrupt"):
        read_artifact(bad)
