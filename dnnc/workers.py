"""Long-lived worker processes that do a compile's side-by-side work: Triton kernels
compiled, cuDNN's runtime-compiled plans built.

Each worker is ``python -m dnnc.workers``, started with
``subprocess`` rather than ``multiprocessing``: a multiprocessing child started by
spawn (the only safe start method once the parent holds a CUDA context) imports the
user's main script again, and a script without an ``if __name__ == "__main__"``
guard would run its whole compile once per worker, each of which starts workers of
its own. A worker imports what its jobs' functions need: Triton's compile workers
never touch the GPU; cuDNN's build workers hold a CUDA context of their own (they
build plans, they run none).

Protocol: the parent writes one pickled job to a worker's stdin and reads one
pickled reply from its stdout (the worker's own stdout is moved to stderr, so what
Triton prints never corrupts the stream). A worker's stderr goes to a log file
(``log_directory``), kept when the worker dies and quoted in the pool's error. The jobs of one ``map`` are handed out
as workers free up. A worker that dies or answers garbage breaks the pool:
``map`` raises ``PoolBroken`` and the pool starts fresh workers next time; a job
that raises is reported by ``map`` and the workers stay.
"""

from __future__ import annotations

import atexit
import collections
import contextlib
import os
import pickle
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, BinaryIO

from dnnc.collection import fewer_collections

WORKER_NICENESS = 10
"""Workers run at a lower CPU priority than the compile that started them: their start
(24 interpreters importing torch and Triton on 16 cores) and their compiles otherwise
take cores from the compile's own critical path (its export ran 2 s slower beside
them on an H200 host), and the compile only ever waits for them when it has nothing
else to do."""

CLOSE_TIMEOUT_S = 5.0
"""How long closing a pool waits for its workers to exit before killing the rest."""

_PACKAGE_ROOT = str(Path(__file__).resolve().parents[1])
"""The directory holding the ``dnnc`` package, so workers import this same copy."""


class PoolBroken(RuntimeError):
    """A worker exited or its reply could not be read."""


LOG_TAIL_LINES = 20
"""Lines of a dead worker's log quoted in the error."""


def log_directory() -> Path:
    """Where workers write what they print: ``<cache_dir>/worker-logs``. A worker's log is
    removed when it exits cleanly, so what is left is the logs of workers that died."""
    from dnnc import knobs

    return knobs.get().cache_dir / "worker-logs"


class _Worker:
    def __init__(self) -> None:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (_PACKAGE_ROOT, env.get("PYTHONPATH", "")) if p)
        self.log: Path | None = None
        stderr: Any = subprocess.DEVNULL
        try:
            folder = log_directory()
            folder.mkdir(parents=True, exist_ok=True)
            fd, name = tempfile.mkstemp(dir=folder, prefix=f"worker-{os.getpid()}-", suffix=".log")
            stderr, self.log = fd, Path(name)
        except OSError:  # no writable cache: the worker's prints are dropped
            pass
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "dnnc.workers"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, env=env
            )
        finally:
            if isinstance(stderr, int) and stderr >= 0:
                os.close(stderr)

    def call(self, fn: Callable[[Any], Any], arg: Any) -> Any:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        try:
            pickle.dump((fn, arg), self.proc.stdin)
            self.proc.stdin.flush()
            ok, value = pickle.load(self.proc.stdout)
        except (OSError, EOFError, pickle.UnpicklingError) as e:
            raise PoolBroken(
                f"compile worker {self.proc.pid} stopped answering ({type(e).__name__}: {e}){self._log_tail()}"
            ) from None
        if not ok:
            raise RuntimeError(f"compile worker {self.proc.pid}: {value}")
        return value

    def end_input(self) -> None:
        """The worker's loop ends at end of input; it then exits on its own."""
        try:
            if self.proc.stdin is not None:
                self.proc.stdin.close()
        except OSError:
            pass

    def _log_tail(self) -> str:
        """The end of the worker's log, for the error that says it died."""
        if self.log is None:
            return ""
        with contextlib.suppress(OSError):
            self.proc.wait(timeout=1.0)  # what a dying worker prints is all written once it has exited
        try:
            lines = self.log.read_text(errors="replace").splitlines()[-LOG_TAIL_LINES:]
        except OSError:
            return ""
        shown = "".join(f"\n  | {line}" for line in lines) if lines else " (it printed nothing)"
        return f"; its log, {self.log}:{shown}"

    def wait_exit(self, timeout: float) -> None:
        try:
            self.proc.wait(timeout=max(timeout, 0.0))
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        if self.proc.returncode == 0 and self.log is not None:
            self.log.unlink(missing_ok=True)  # a clean exit: its prints are of no use


def worth_sending(jobs: int, pool: WorkerPool | None) -> bool:
    """Whether ``jobs`` jobs go to ``pool`` rather than being done in this process: two
    or more, or one to workers already running (starting workers costs more than one
    compile or build)."""
    return jobs >= 2 or (jobs == 1 and pool is not None and pool.started)


class WorkerPool:
    """``count`` workers, started on the first ``map`` and kept for the next ones."""

    def __init__(self, count: int):
        self.count = count
        self._workers: list[_Worker] = []
        self._lock = threading.Lock()
        atexit.register(self.close)

    @property
    def started(self) -> bool:
        """Whether its workers are running (or being started): a job handed to them then
        costs no start."""
        return bool(self._workers) or self._lock.locked()

    def map(self, fn: Callable[[Any], Any], args: Sequence[Any]) -> list[Any]:
        """``[fn(a) for a in args]``, computed in the workers. ``fn`` must be a
        module-level function (it is pickled by name)."""
        with self._lock:
            if not self._workers:
                self._workers = [_Worker() for _ in range(self.count)]
            pending = collections.deque(enumerate(args))
            results: list[Any] = [None] * len(args)
            errors: list[Exception] = []
            take = threading.Lock()

            def drive(worker: _Worker) -> None:
                while not errors:
                    with take:
                        if not pending:
                            return
                        index, arg = pending.popleft()
                    try:
                        results[index] = worker.call(fn, arg)
                    except Exception as e:
                        errors.append(e)

            self._on_each_worker(drive)
            if any(isinstance(e, PoolBroken) for e in errors):
                self._close_workers()
            if errors:
                raise errors[0]
            return results

    def start_ahead(self, fn: Callable[[Any], Any], arg: Any) -> None:
        """Start the workers now, in a background thread, each running ``fn(arg)`` once
        (the imports its jobs need: seconds per worker), so that the first ``map``, which
        waits for this, finds them ready. A warm-up that fails leaves ``map`` to start
        fresh workers."""

        def start() -> None:
            with self._lock:
                if self._workers:
                    return
                self._workers = [_Worker() for _ in range(self.count)]
                failed: list[Exception] = []

                def ready(worker: _Worker) -> None:
                    try:
                        worker.call(fn, arg)
                    except Exception as e:
                        failed.append(e)

                self._on_each_worker(ready)
                if failed:
                    self._close_workers()

        threading.Thread(target=start, daemon=True).start()

    def _on_each_worker(self, work: Callable[[_Worker], None]) -> None:
        """``work(worker)`` for every worker, side by side (a thread each: they wait on pipes)."""
        threads = [threading.Thread(target=work, args=(w,), daemon=True) for w in self._workers]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

    def close(self) -> None:
        with self._lock:
            self._close_workers()

    def _close_workers(self) -> None:
        """Every worker told to stop before any is waited for: each takes most of a second
        to exit (the interpreter's teardown, a cuDNN worker's CUDA context), and waiting
        for them one by one kept a finished user's script alive for ten seconds and more."""
        for worker in self._workers:
            worker.end_input()
        deadline = time.monotonic() + CLOSE_TIMEOUT_S
        for worker in self._workers:
            worker.wait_exit(deadline - time.monotonic())
        self._workers = []


def _serve(requests: BinaryIO, replies: BinaryIO) -> None:
    """Answer jobs until the parent closes our stdin."""
    while True:
        try:
            fn, arg = pickle.load(requests)
        except EOFError:
            return
        try:
            reply = (True, fn(arg))
        except Exception as e:  # the job's own failure is the job's answer, not the pool's
            reply = (False, f"{type(e).__name__}: {e}")
        pickle.dump(reply, replies)
        replies.flush()


def main() -> None:
    with contextlib.suppress(AttributeError, OSError):  # no nice() here: the same priority
        os.nice(WORKER_NICENESS)
    replies = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # prints go to stderr, never into the replies
    with fewer_collections():  # a worker compiles for as long as it lives
        _serve(sys.stdin.buffer, replies)


if __name__ == "__main__":
    main()
