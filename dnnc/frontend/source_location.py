"""Where in the user's code an exported node came from, for error messages."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.fx

_FRAME = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<fn>[^\n]+)\n(?P<code>[^\n]*)')
_TORCH_DIR = str(Path(torch.__file__).parent)
_GENERATED = (_TORCH_DIR, "<eval_with_key>")
"""Frames that are torch's: its files, and the code fx generates for a traced graph."""

CODE_WIDTH = 60
"""Characters of a source line shown in a table row: enough for the start of a
statement (the call in it), short enough that a row stays about one terminal line."""


@dataclass(frozen=True)
class SourceLocation:
    file: str
    line: int
    code: str
    module: str | None = None

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}"
        if self.code:
            where += f": {self.code}"
        if self.module:
            where += f" (in module {self.module})"
        return where

    def brief(self, code_width: int = CODE_WIDTH) -> str:
        """For one row of a table: the file as ``short_path`` gives it, the code cut to ``code_width``."""
        where = f"{short_path(self.file)}:{self.line}"
        if self.code:
            code = self.code if len(self.code) <= code_width else self.code[: code_width - 3].rstrip() + "..."
            where += f": {code}"
        if self.module:
            where += f" (in module {self.module})"
        return where


def short_path(file: str) -> str:
    """A path as the user recognizes it: relative to the working directory when
    inside it, from the package on when installed (``transformers/models/...``)."""
    try:
        relative = os.path.relpath(file)
    except ValueError:  # another drive (Windows)
        relative = file
    if not relative.startswith(".."):
        return relative
    _, sep, inside = file.rpartition("site-packages" + os.sep)
    return inside if sep else file


def locate(node: torch.fx.Node) -> SourceLocation | None:
    """The innermost frame of the node's stack trace that is the user's, not torch's."""
    trace = node.meta.get("stack_trace") or ""
    frames = [m for m in _FRAME.finditer(trace)]
    if not frames:
        return None
    user = [m for m in frames if not m["file"].startswith(_GENERATED)] or frames
    m = user[-1]
    return SourceLocation(m["file"], int(m["line"]), m["code"].strip(), _module_path(node))


def _module_path(node: torch.fx.Node) -> str | None:
    stack = node.meta.get("nn_module_stack")
    if not stack:
        return None
    path, cls = list(stack.values())[-1]
    name = cls.__name__ if isinstance(cls, type) else str(cls).rsplit(".", 1)[-1].rstrip("'>")
    path = path.removeprefix("L['self'].").removeprefix("L__self__.")
    return f"{path} ({name})" if path and path != "L['self']" else name
