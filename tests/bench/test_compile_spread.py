"""bench/compile_spread.py without a GPU: each compile runs in a child with caches of its
own, its artifact is loaded in as many more children, and a failed compile is a row."""

from __future__ import annotations

from typing import Any

import pytest

import bench.compile_spread as spread_module


def test_each_compile_has_its_own_caches_and_loads(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[list[str], dict[str, str]]] = []

    def child(command: list[str], env: dict[str, str] | None = None, timeout_s: float = 600) -> dict[str, Any]:
        calls.append((command, dict(env or {})))
        what = command[command.index("--child") + 1]
        return {"ms": [0.3, 0.31, 0.3]} if what == "load" else {"ms": [0.3, 0.3, 0.3], "steps": {"triton": 3}}

    monkeypatch.setattr(spread_module, "last_json", child)
    result = spread_module.spread("conv-block-b1", compiles=2, loads=3)
    assert result["workload"] == "conv-block-b1" and len(result["compiles"]) == 2
    assert all(len(row["loads"]) == 3 for row in result["compiles"])
    compiles = [env for command, env in calls if "compile" in command]
    assert len(compiles) == 2 and compiles[0]["DNNC_CACHE_DIR"] != compiles[1]["DNNC_CACHE_DIR"]
    for command, env in calls:  # a compile's loads read its artifact, with its caches
        artifact = command[-1]
        assert artifact.endswith("conv-block-b1.dnnc") and artifact.startswith(str(env["DNNC_CACHE_DIR"]).rsplit("/", 1)[0])


def test_a_failed_compile_is_a_row_and_loads_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[list[str]] = []

    def child(command: list[str], env: dict[str, str] | None = None, timeout_s: float = 600) -> dict[str, Any]:
        calls.append(command)
        return {"status": "failed: exit 1: out of memory"}

    monkeypatch.setattr(spread_module, "last_json", child)
    result = spread_module.spread("conv-block-b1", compiles=1, loads=2)
    assert result["compiles"] == [{"status": "failed: exit 1: out of memory"}]
    assert len(calls) == 1
