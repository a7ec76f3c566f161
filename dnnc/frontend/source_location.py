"""Where in the user's code an exported node came from, for error messages."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.fx

_FRAME = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<fn>[^\n]+)\n(?P<code>[^\n]*)')
_TORCH_DIR = str(Path(torch.__file__).parent)


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


def locate(node: torch.fx.Node) -> SourceLocation | None:
    """The innermost frame of the node's stack trace that is the user's, not torch's."""
    trace = node.meta.get("stack_trace") or ""
    frames = [m for m in _FRAME.finditer(trace)]
    if not frames:
        return None
    user = [m for m in frames if not m["file"].startswith(_TORCH_DIR)] or frames
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
