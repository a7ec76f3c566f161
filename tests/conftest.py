"""Shared test setup: a fresh random seed per session (reproducible with --seed),
and GPU tests that skip cleanly on machines without one."""

from __future__ import annotations

import os
import random
import zlib

# JAX shares the GPU with torch in the tests: without this, XLA takes 75% of its memory at start.
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
# Tests compile: a whole compile found in the compile cache (an earlier test's or run's,
# through the shared cache directory) would be loaded instead. tests/test_compile_cache.py
# turns it on where it is what is tested.
os.environ.setdefault("DNNC_COMPILE_CACHE", "0")

import pytest
import torch

# Generated kernels run on Triton's interpreter where there is no GPU. Triton reads this
# when it decorates a function, its own library's included, which happens at its import:
# set before any test module (of any directory) imports Triton.
if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--seed", type=int, default=None, help="seed for random test inputs (default: fresh each run)")


def pytest_configure(config: pytest.Config) -> None:
    seed = config.getoption("--seed")
    if seed is None:
        seed = int(os.environ.get("DNNC_TEST_SEED", random.randrange(2**31)))
    config._dnnc_seed = seed  # type: ignore[attr-defined]


def pytest_report_header(config: pytest.Config) -> str:
    return f"dnnc test seed: {config._dnnc_seed} (rerun with --seed {config._dnnc_seed})"  # type: ignore[attr-defined]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs an NVIDIA GPU")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def rng(request: pytest.FixtureRequest) -> torch.Generator:
    """A generator seeded from the session seed and the test's id: fresh inputs
    every run, the same inputs when a failing run is repeated with --seed."""
    seed = request.config._dnnc_seed ^ zlib.crc32(request.node.nodeid.encode())  # type: ignore[attr-defined]
    return torch.Generator().manual_seed(seed)


class _CompiledModels:
    """The test models, exported and canonicalized on first use, once per session."""

    def __init__(self) -> None:
        self._cache: dict[str, tuple] = {}

    def __getitem__(self, name: str) -> tuple:
        if name not in self._cache:
            from dnnc.models import FACTORIES
            from dnnc.pipeline import to_canonical_tcp

            model, inputs = FACTORIES[name]()
            self._cache[name] = (to_canonical_tcp(model, inputs), model, inputs)
        return self._cache[name]


@pytest.fixture(scope="session")
def canonical_models() -> _CompiledModels:
    return _CompiledModels()
