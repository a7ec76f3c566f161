"""The compile worker pool: results in order, a script without a main guard runs
once (workers never import it), a dead worker breaks the pool only until the next
``map``, and a job that raises is reported without losing the workers."""

from __future__ import annotations

import math
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from dnnc.workers import PoolBroken, WorkerPool

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def pool():
    p = WorkerPool(2)
    yield p
    p.close()


def test_results_come_back_in_order(pool: WorkerPool) -> None:
    assert not pool.started
    args = list(range(12))
    assert pool.map(math.factorial, args) == [math.factorial(a) for a in args]
    assert pool.started
    pool.close()
    assert not pool.started


def test_an_unguarded_script_runs_once(tmp_path: Path) -> None:
    marks = tmp_path / "marks.txt"
    script = tmp_path / "user_script.py"
    script.write_text(
        textwrap.dedent(
            f"""
            import math
            from dnnc.workers import WorkerPool
            with open({str(marks)!r}, "a") as f:
                f.write("ran\\n")
            print(sum(WorkerPool(2).map(math.factorial, [3, 4, 5])))
            """
        )
    )
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    run = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.strip() == "150"
    assert marks.read_text().count("ran") == 1, "a worker ran the user's script"


def test_a_dead_worker_breaks_the_pool_until_the_next_map(pool: WorkerPool) -> None:
    with pytest.raises(PoolBroken, match="stopped answering"):
        pool.map(os._exit, [3, 3])
    assert pool.map(math.factorial, [4, 5]) == [24, 120]


def test_a_job_that_raises_keeps_the_workers(pool: WorkerPool) -> None:
    assert pool.map(math.factorial, [1, 2]) == [1, 2]
    pids = [w.proc.pid for w in pool._workers]
    with pytest.raises(RuntimeError, match="ValueError"):
        pool.map(math.factorial, [-1])
    assert [w.proc.pid for w in pool._workers] == pids
    assert pool.map(math.factorial, [3]) == [6]


def test_workers_started_ahead_are_the_ones_map_uses(pool: WorkerPool) -> None:
    pool.start_ahead(math.factorial, 3)
    assert pool.map(math.factorial, [4, 5]) == [24, 120]  # (waits for the warm-up)
    pids = [w.proc.pid for w in pool._workers]
    assert len(pids) == 2
    pool.start_ahead(math.factorial, 3)  # started already: nothing happens
    assert pool.map(math.factorial, [6]) == [720]
    assert [w.proc.pid for w in pool._workers] == pids


def test_a_warm_up_that_fails_leaves_map_to_start_fresh_workers(pool: WorkerPool) -> None:
    pool.start_ahead(os._exit, 3)
    assert pool.map(math.factorial, [4, 5]) == [24, 120]


_EXIT_DELAY: list[float] = []


def _slow_to_exit(seconds: float) -> int:
    """In a worker: make its exit take ``seconds`` (once per worker), after a short job."""
    import atexit
    import time

    if not _EXIT_DELAY:
        _EXIT_DELAY.append(seconds)
        atexit.register(time.sleep, seconds)
    time.sleep(0.2)
    return os.getpid()


def test_closing_waits_for_the_workers_side_by_side() -> None:
    import time

    pool = WorkerPool(6)
    pids = pool.map(_slow_to_exit, [1.0] * 24)
    assert len(set(pids)) == 6, "every worker ran a job, so every one is slow to exit"
    started = time.perf_counter()
    pool.close()
    took = time.perf_counter() - started
    assert 1.0 <= took < 4.0, f"six workers that each take 1 s to exit closed in {took:.1f} s (one by one: 6 s)"


@pytest.mark.skipif(not hasattr(os, "nice"), reason="no process priorities here")
def test_workers_run_below_the_compile_s_priority(pool: WorkerPool) -> None:
    """The compile's own work (export, building and timing kernels) goes first; the
    workers take the cores it leaves."""
    from dnnc.workers import WORKER_NICENESS

    assert pool.map(os.nice, [0, 0]) == [min(os.nice(0) + WORKER_NICENESS, 19)] * 2


def test_one_job_goes_only_to_workers_already_running(pool: WorkerPool) -> None:
    from dnnc.workers import worth_sending

    assert not worth_sending(0, pool) and not worth_sending(1, pool) and not worth_sending(1, None)
    assert worth_sending(2, pool) and worth_sending(2, None)
    pool.map(math.factorial, [3])
    assert worth_sending(1, pool) and not worth_sending(0, pool)


def _say_and_die(code: int) -> None:
    print("about to fail: the kernel compiler crashed", flush=True)  # a worker's stdout goes to its log
    os._exit(code)


def test_a_dead_worker_leaves_its_log_and_the_error_quotes_it(tmp_path: Path) -> None:
    from dnnc import knobs
    from dnnc.workers import log_directory

    with knobs.override(cache_dir=tmp_path):
        pool = WorkerPool(1)
        try:
            with pytest.raises(PoolBroken, match=r"(?s)stopped answering.*its log, .*worker-.*\.log:\n  \| about to fail"):
                pool.map(_say_and_die, [3])
            assert [p.read_text() for p in log_directory().iterdir()] == ["about to fail: the kernel compiler crashed\n"]
            assert pool.map(math.factorial, [4]) == [24]
        finally:
            pool.close()
        assert len(list(log_directory().iterdir())) == 1  # the clean exit's log is gone, the dead one's kept
