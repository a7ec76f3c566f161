"""Which kernels ``precompile_groups`` hands to the worker processes: every config of
a group that will autotune, only the first without autotuning, the first and the most
parallel for a launch-bound group, only the remembered one once a choice is cached (the GPU and the compiler are replaced, so this runs on
the CPU)."""

from __future__ import annotations

import pytest
import torch

from dnnc import knobs
from dnnc.backends.triton import compiler, launch
from dnnc.backends.triton.configs import candidates
from dnnc.backends.triton.fusion import TritonFuse
from dnnc.backends.triton.kernels import GroupInfo
from dnnc.ir import tcp
from dnnc.pipeline import run_passes
from tests.backends.triton.cases import CASES


@pytest.fixture
def group() -> tcp.IsolatedGroupOp:
    program = next(c for c in CASES if c.name.startswith("matmul")).program("f16")
    run_passes(program, [TritonFuse()])
    return next(g for g in program.entry.body.walk() if isinstance(g, tcp.IsolatedGroupOp))


@pytest.fixture
def handed(monkeypatch: pytest.MonkeyPatch, tmp_path) -> list[list[str]]:
    calls: list[list[str]] = []
    monkeypatch.setattr(compiler, "interpreting", lambda: False)
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: (9, 0))
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda device=None: "a GPU")
    monkeypatch.setattr(compiler, "precompile", lambda sources, target: calls.append([s.text for s in sources]) or 0)
    with knobs.override(cache_dir=tmp_path):
        yield calls


def test_autotuned_groups_compile_every_config(group: tcp.IsolatedGroupOp, handed: list[list[str]]) -> None:
    configs = candidates(GroupInfo.of(group))
    assert len(configs) > 1
    with knobs.override(autotune=True):
        launch.precompile_groups([group, group], "cuda")
    assert len(handed) == 1 and len(handed[0]) == 2 * len(configs), "one call for every group of the round"


def test_untuned_groups_compile_their_first_config(group: tcp.IsolatedGroupOp, handed: list[list[str]]) -> None:
    with knobs.override(autotune=False):
        launch.precompile_groups([group], "cuda")
    assert len(handed[0]) == 1


def test_a_remembered_choice_compiles_only_that_config(group: tcp.IsolatedGroupOp, handed: list[list[str]]) -> None:
    configs = launch.spec_or_candidates(GroupInfo.of(group), 90)  # the configs timed on the (replaced) sm_90 GPU
    with knobs.override(autotune=True):
        launch._choices.put_json(launch._choice_key(group, torch.device("cuda"), configs, GroupInfo.of(group)), 1)
        launch.precompile_groups([group], "cuda")
    assert len(handed[0]) == 1


def test_launch_bound_groups_compile_two_configs(group: tcp.IsolatedGroupOp, handed: list[list[str]]) -> None:
    """The case's matmul moves a few kilobytes, far under a floor of 4 us: its first
    config and its most parallel one are compiled to be timed."""
    from dnnc.backends.triton.configs import launch_bound_pair
    from dnnc.ir.work import kernel_work
    from dnnc.roofline import H100, floor_us

    assert floor_us(kernel_work(group), H100) < 4.0
    configs = candidates(GroupInfo.of(group))
    pair = launch_bound_pair(configs)
    assert len(pair) == 2 and pair[0] == configs[0]
    with knobs.override(autotune=True, tune_floor_us=4.0):
        launch.precompile_groups([group], "cuda")
    assert len(handed[0]) == 2


def test_a_group_is_printed_once_for_all_its_configs(
    group: tcp.IsolatedGroupOp, handed: list[list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each source's header quotes the group's IR; printing it again for every config
    was a tenth of a cold compile. The sources are the same as those made one by one."""
    from dnnc.backends.triton import skeleton
    from dnnc.backends.triton.kernels import generate

    one_by_one = [generate(group, config).text for config in launch.spec_or_candidates(GroupInfo.of(group), 90)]
    printed: list[object] = []
    print_ir = skeleton.print_ir
    monkeypatch.setattr(skeleton, "print_ir", lambda op: printed.append(op) or print_ir(op))
    with knobs.override(autotune=True):
        launch.precompile_groups([group], "cuda")
    assert handed == [one_by_one]
    assert printed == [group]
