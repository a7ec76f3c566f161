"""Triton tests run on the interpreter unless a GPU is present: TRITON_INTERPRET is
read when a kernel is decorated, so it is set here, before any test imports Triton."""

from __future__ import annotations

import os

import pytest
import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")


@pytest.fixture(autouse=True, scope="session")
def _private_cache(tmp_path_factory: pytest.TempPathFactory):
    """Compiled kernels and generated modules go to a fresh directory per session."""
    from dnnc import knobs

    with knobs.override(cache_dir=tmp_path_factory.mktemp("dnnc-cache")):
        yield
