"""torch.export's failures told as one short dnnc error: export's own reason (its
first lines) and the user's source line, with what torch printed and the full
traceback kept for the debug log."""

from __future__ import annotations

import io
import linecache
import logging
import re
import sys
import sysconfig
import threading
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import torch

from dnnc.errors import ExportError
from dnnc.frontend.source_location import SourceLocation

log = logging.getLogger("dnnc.export")

REASON_LINES = 3
"""Lines of export's message shown: its first paragraph states the failure; what
follows is advice on torch's logging flags and links, kept for the debug log."""

LINE_WIDTH = 240
"""Characters of one line of export's message shown (some carry a whole repr)."""

_FRAME = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+)')
_NOT_USER = (str(Path(torch.__file__).parent), str(Path(__file__).parent), sysconfig.get_paths()["stdlib"])
"""Frames in torch, in this frontend or in Python's library are not the user's code."""


def export_error(e: BaseException, inputs: str | None = None) -> ExportError:
    """The dnnc error for an exception ``torch.export.export`` raised (``inputs``:
    the example inputs it was given, described)."""
    reason = _first_lines(str(e)) or "(no message)"
    if not type(e).__module__.startswith("torch"):
        reason = f"{type(e).__name__}: {reason}"  # the model's own exception: its type says much
    given = f" with example inputs ({inputs})" if inputs else ""
    lines = [f"torch.export could not trace the model{given}: {reason}"]
    where = _user_location(e)
    if where is not None:
        lines.append(f"  at {where.brief()}")
    if _is_data_dependent(e):
        lines.append(
            "  (Python control flow on a tensor's value: export traces one path for all inputs; "
            "use torch.where, or torch.cond for real branches)"
        )
        if where is not None and "float16" in where.code:
            lines.append(
                "  (this branch is taken only in float16, as in the overflow clamps of transformers' "
                "BART-style layers: compile the model in bfloat16, as fast on tensor cores and with "
                "float32's range, or in float32)"
            )
    return ExportError("\n".join(lines))


def _first_lines(message: str) -> str:
    paragraph = message.strip().split("\n\n", 1)[0].splitlines()
    shown = [line if len(line) <= LINE_WIDTH else line[: LINE_WIDTH - 3] + "..." for line in paragraph[:REASON_LINES]]
    if len(paragraph) > REASON_LINES:
        shown.append("...")
    return "\n  ".join(line.strip() for line in shown)


def _is_data_dependent(e: BaseException) -> bool:
    from torch.fx.experimental.symbolic_shapes import GuardOnDataDependentSymNode

    return isinstance(e, GuardOnDataDependentSymNode)


def _user_location(e: BaseException) -> SourceLocation | None:
    """Where the user's code was when export failed: the call export's message names,
    else the innermost frame of the traceback that is not torch's (the model raising)."""
    named = [(m["file"], int(m["line"])) for m in _FRAME.finditer(str(e)) if not m["file"].startswith(_NOT_USER)]
    frames = [(f.filename, f.lineno or 0) for f in traceback.extract_tb(e.__traceback__)]
    found = named[-1:] or [f for f in frames if not f[0].startswith(_NOT_USER)][-1:]
    if not found:
        return None
    file, line = found[0]
    return SourceLocation(file, line, linecache.getline(file, line).strip())


@contextmanager
def held_torch_output() -> Iterator[None]:
    """Hold back what torch logs and prints on this thread while exporting (on a failure it
    prints the partial graph, possibly hundreds of lines). It is passed on unchanged if
    export succeeds, and goes to the debug log if it fails."""
    handlers = {h for name in _torch_loggers() for h in logging.getLogger(name).handlers}
    held = _HeldRecords()
    stderr = _ThreadCapture(sys.stderr, threading.current_thread())
    for h in handlers:
        h.addFilter(held)
    sys.stderr = stderr  # type: ignore[assignment]
    failed = False
    try:
        yield
    except BaseException:
        failed = True
        raise
    finally:
        sys.stderr = stderr.through
        for h in handlers:
            h.removeFilter(held)
        if failed:
            text = "\n".join(r.getMessage() for r in held.records) + "\n" + stderr.held.getvalue()
            log.debug("torch.export failed; what torch said:\n%s", text)
        else:
            for record in held.records:
                logging.getLogger(record.name).handle(record)
            stderr.through.write(stderr.held.getvalue())


def _torch_loggers() -> list[str]:
    return ["torch", *(n for n in logging.root.manager.loggerDict if n.startswith("torch."))]


class _HeldRecords(logging.Filter):
    """On torch's handlers: keeps each record once (it may reach several handlers)."""

    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []
        self._held: set[int] = set()

    def filter(self, record: logging.LogRecord) -> bool:
        if id(record) not in self._held:  # the records are kept alive, so ids stay unique
            self._held.add(id(record))
            self.records.append(record)
        return False


class _ThreadCapture(io.TextIOBase):
    """``sys.stderr`` that holds what one thread writes and passes the rest through
    (a progress display drawn by another thread stays live)."""

    def __init__(self, through: Any, thread: threading.Thread):
        self.through = through
        self.thread = thread
        self.held = io.StringIO()

    def write(self, text: str) -> int:
        if threading.current_thread() is self.thread:
            return self.held.write(text)
        return self.through.write(text)

    def flush(self) -> None:
        self.through.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.through, name)
