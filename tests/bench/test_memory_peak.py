"""``bench/memory_peak.py`` on a made-up allocator trace: the peak of allocated bytes,
and what was live then, summed by the line in dnnc that allocated it."""

from __future__ import annotations

from bench.memory_peak import at_peak, place

MB = 2**20


def _frames(*where: tuple[str, int, str]) -> list[dict]:
    return [{"filename": f, "line": line, "name": name} for f, line, name in where]


TORCH = ("/venv/lib/python3.12/site-packages/torch/cuda/memory.py", 10, "empty")
ARENA = ("/repo/dnnc/runtime/arena.py", 77, "__init__")
WORKSPACE = ("/repo/dnnc/backends/cudnn/runtime.py", 489, "_plan_at")
WEIGHTS = ("/repo/dnnc/runtime/gpu_executor.py", 54, "_upload")


def _event(action: str, addr: int, mb: int, *where: tuple[str, int, str]) -> dict:
    return {"action": action, "addr": addr, "size": mb * MB, "frames": _frames(*where)}


def test_the_peak_and_what_was_live_then_by_place() -> None:
    trace = [
        _event("alloc", 1, 50, TORCH, WEIGHTS),
        _event("alloc", 2, 300, TORCH, WORKSPACE),  # a plan's workspace while tuning
        _event("alloc", 3, 400, TORCH, ARENA),
        _event("free_completed", 2, 300),
        _event("alloc", 4, 100, TORCH, WORKSPACE),
        _event("free_completed", 9, 20),  # allocated before the recording began
    ]
    found = at_peak({"device_traces": [trace]}, top=2)
    assert found["peak_mb"] == 750 and found["peak_event"] == 2 and found["before_mb"] == 20
    assert found["live_at_peak"] == [
        {"place": "dnnc/runtime/arena.py:77 __init__", "mb": 400.0},
        {"place": "dnnc/backends/cudnn/runtime.py:489 _plan_at", "mb": 300.0},
    ]
    assert found["other_mb"] == 50.0


def test_a_place_is_our_innermost_frame_else_the_innermost() -> None:
    assert place(_frames(TORCH, WEIGHTS, ARENA)) == "dnnc/runtime/gpu_executor.py:54 _upload"
    assert place(_frames(TORCH)) == f"{TORCH[0]}:10 empty"
    assert place([]) == "?:? ?"
