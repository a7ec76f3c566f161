"""A pytest plugin for runs on the GPU machine: every test's outcome goes to
``$OUT/live.jsonl`` (and a failure's report to ``$OUT/failures.txt``) as it ends, so a
run cut short by the device's time limit still says what passed, failed and took how
long. ``-p scripts.pytest_live`` from the repository root; with pytest-xdist only the
workers write (the controller sees every report again)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any


def _out() -> Path:
    return Path(os.environ.get("OUT", "/tmp"))


_IS_XDIST_WORKER = False


def pytest_configure(config: Any) -> None:
    """An xdist worker's config carries ``workerinput``; the environment does not tell,
    since a run started from inside another run's worker inherits its variables."""
    global _IS_XDIST_WORKER
    _IS_XDIST_WORKER = hasattr(config, "workerinput")


def pytest_runtest_logreport(report: Any) -> None:
    if not _IS_XDIST_WORKER and _controller_of_workers(report):
        return
    if report.when != "call" and not (report.failed or report.skipped):
        return
    line = {"id": report.nodeid, "when": report.when, "outcome": report.outcome, "s": round(report.duration, 2)}
    with (_out() / "live.jsonl").open("a") as f:
        f.write(json.dumps(line) + "\n")
    if report.failed:
        with (_out() / "failures.txt").open("a") as f:
            f.write(f"==== {report.nodeid} ({report.when})\n{report.longreprtext[-6000:]}\n")


def _controller_of_workers(report: Any) -> bool:
    """True in the xdist controller (reports carry the worker's node)."""
    return getattr(report, "node", None) is not None
