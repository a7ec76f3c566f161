"""The compile's garbage-collection threshold is raised inside and put back after."""

from __future__ import annotations

import gc
import threading
from pathlib import Path

import pytest
import torch

import dnnc
from dnnc import knobs
from dnnc.collection import YOUNG_THRESHOLD, fewer_collections


@pytest.fixture
def default_threshold():
    saved = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    yield
    gc.set_threshold(*saved)


def test_raised_inside_and_restored_after(default_threshold: None) -> None:
    with fewer_collections():
        assert gc.get_threshold() == (YOUNG_THRESHOLD, 10, 10)
        with fewer_collections():
            assert gc.get_threshold()[0] == YOUNG_THRESHOLD
        assert gc.get_threshold()[0] == YOUNG_THRESHOLD, "the inner use ending does not restore it"
    assert gc.get_threshold() == (700, 10, 10)


def test_restored_after_an_error(default_threshold: None) -> None:
    with pytest.raises(ValueError), fewer_collections():
        raise ValueError("a compile that fails")
    assert gc.get_threshold() == (700, 10, 10)


def test_a_process_without_automatic_collection_keeps_it(default_threshold: None) -> None:
    gc.set_threshold(0, 10, 10)
    with fewer_collections():
        assert gc.get_threshold()[0] == 0
    assert gc.get_threshold()[0] == 0


def test_overlapping_uses_in_threads_restore_once_both_end(default_threshold: None) -> None:
    entered, release = threading.Event(), threading.Event()

    def other() -> None:
        with fewer_collections():
            entered.set()
            release.wait(10)

    thread = threading.Thread(target=other)
    thread.start()
    entered.wait(10)
    with fewer_collections():
        pass
    assert gc.get_threshold()[0] == YOUNG_THRESHOLD, "the other thread's use is still running"
    release.set()
    thread.join()
    assert gc.get_threshold() == (700, 10, 10)


def test_dnnc_compile_runs_inside_and_restores(default_threshold: None, tmp_path: Path) -> None:
    seen = []
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU()).eval()

    def spy(*args):  # the forward runs while export traces it, inside the compile
        seen.append(gc.get_threshold()[0])
        return args[-1]

    model.register_forward_hook(lambda m, i, o: spy(o))
    with knobs.override(cache_dir=tmp_path):
        dnnc.compile(model, (torch.randn(2, 4),), device="cpu")
    assert seen and set(seen) == {YOUNG_THRESHOLD}
    assert gc.get_threshold() == (700, 10, 10)
