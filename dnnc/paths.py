"""Output paths checked before any work: a compile that ends in ``FileNotFoundError``
after a minute of tuning is worse than an error at once."""

from __future__ import annotations

import os
from pathlib import Path

from dnnc.errors import DnncError


def check_writable(path: str | Path, what: str = "output") -> Path:
    """``path`` can be written: it is not a directory, and its nearest existing
    ancestor is a directory this process may write into (missing directories below
    it are created when writing). Returns the path."""
    path = Path(path)
    if path.is_dir():
        raise DnncError(f"{what} {path} is a directory; give a file name")
    parent = path.parent
    while not parent.exists():
        parent = parent.parent
    if not parent.is_dir():
        raise DnncError(f"{what} {path}: {parent} is a file, not a directory")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise DnncError(f"{what} {path}: directory {parent} is not writable")
    if path.exists() and not os.access(path, os.W_OK):
        raise DnncError(f"{what} {path} exists and is not writable")
    return path
