"""The content-addressed cache: what is read back is what was stored, or a miss.
A damaged, truncated, replaced or unframed entry is never returned (and is removed
so the result is rebuilt); entries written by concurrent processes stay whole."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

import pytest

from dnnc import knobs
from dnnc.cache import HEADER, ContentCache, content_key


@pytest.fixture
def cache(tmp_path: Path) -> ContentCache:
    return ContentCache("things", root=tmp_path)


def _entry_file(cache: ContentCache, key: str) -> Path:
    (path,) = [p for p in cache.directory.rglob(key)]
    return path


def test_a_stored_payload_reads_back(cache: ContentCache) -> None:
    key = content_key({"source": "x", "n": 1})
    assert cache.get(key) is None
    cache.put(key, b"\x00payload\n")
    assert cache.get(key) == b"\x00payload\n"
    cache.put_json(key, {"a": [1, 2]})
    assert cache.get_json(key) == {"a": [1, 2]}
    assert _entry_file(cache, key).read_bytes().startswith(HEADER)


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param(lambda b: b[:-3], id="truncated"),
        pytest.param(lambda b: b[:-1] + bytes([b[-1] ^ 1]), id="one-bit-flipped"),
        pytest.param(lambda b: b"\x7fELF garbage cubin", id="replaced-without-header"),
        pytest.param(lambda b: b[: len(HEADER) + 64] + b"\nother payload", id="payload-swapped"),
        pytest.param(lambda b: b"", id="empty"),
    ],
)
def test_a_damaged_entry_is_a_miss_and_is_removed(cache: ContentCache, damage) -> None:
    key = content_key({"k": 1})
    cache.put(key, b"the real kernel binary")
    path = _entry_file(cache, key)
    path.write_bytes(damage(path.read_bytes()))
    assert cache.get(key) is None
    assert cache.get_json(key) is None
    assert not path.exists(), "a damaged entry is removed so it is rebuilt"
    cache.put(key, b"rebuilt")
    assert cache.get(key) == b"rebuilt"


def test_the_cache_knob_turns_reads_and_writes_off(cache: ContentCache) -> None:
    key = content_key({"k": 2})
    with knobs.override(cache=False):
        cache.put(key, b"x")
        assert cache.get(key) is None
    assert cache.get(key) is None, "nothing was written while the cache was off"


def _writer(root: str, n: int) -> None:
    c = ContentCache("things", root=Path(root))
    for i in range(200):
        c.put(content_key({"k": i % 5}), bytes([n]) * (1000 + i % 5))


def test_concurrent_writers_leave_whole_entries(tmp_path: Path) -> None:
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(str(tmp_path), n)) for n in range(1, 4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    cache = ContentCache("things", root=tmp_path)
    for i in range(5):
        data = cache.get(content_key({"k": i}))
        assert data is not None and len(data) == 1000 + i and len(set(data)) == 1, "one writer's whole payload"
    assert not list(tmp_path.rglob(".tmp-*")), "no temporary file is left behind"


def test_every_cache_keys_by_one_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """A library upgrade changes the keys of measured times (and of plans, configs and
    compiled kernels, which build theirs from the same ``environment``)."""
    from dnnc import cache, version
    from dnnc.partition.measure import timing_environment

    before = timing_environment()
    assert before["dnnc"] == version.__version__ and "torch" in before["versions"]
    assert set(cache.environment()) <= set(before)
    monkeypatch.setattr(version, "library_versions", lambda: {**version._installed(), "triton": "99.0"})
    assert timing_environment() != before


def test_caches_key_by_the_code_not_only_its_version(tmp_path: Path) -> None:
    """Two trees of the package that differ in one file (the same version string) key
    every cache apart; compiled bytecode does not count, and the same tree gives the same
    digest."""
    from dnnc import cache, version

    for tree in ("a", "b"):
        (tmp_path / tree / "backends").mkdir(parents=True)
        (tmp_path / tree / "backends" / "kernels.py").write_text("BLOCK = 64\n")
        (tmp_path / tree / "specs.toml").write_text("schema = 1\n")
    (tmp_path / "b" / "backends" / "kernels.py").write_text("BLOCK = 128\n")
    (tmp_path / "a" / "__pycache__").mkdir()
    (tmp_path / "a" / "__pycache__" / "kernels.cpython-312.pyc").write_bytes(b"\0")
    a, b = version.source_digest(tmp_path / "a"), version.source_digest(tmp_path / "b")
    assert a != b
    (tmp_path / "b" / "backends" / "kernels.py").write_text("BLOCK = 64\n")
    assert version.source_digest.__wrapped__(tmp_path / "b") == a
    assert cache.environment()["source"] == version.source_digest() != a
