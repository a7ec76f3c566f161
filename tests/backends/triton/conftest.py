"""Triton tests run on the interpreter unless a GPU is present (``TRITON_INTERPRET``,
set by ``tests/conftest.py`` before any test module imports Triton)."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True, scope="session")
def _private_cache(tmp_path_factory: pytest.TempPathFactory):
    """Compiled kernels and generated modules go to a fresh directory per session."""
    from dnnc import knobs

    with knobs.override(cache_dir=tmp_path_factory.mktemp("dnnc-cache")):
        yield
