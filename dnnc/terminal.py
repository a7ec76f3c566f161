"""Text from files shown on a terminal as the characters it holds: an artifact's
manifest, kernel, model and device names are whatever its author wrote. A terminal
obeys escape sequences in what it prints (an ESC can move the cursor, rewrite
earlier lines or set the window title), bidirectional overrides reorder a line,
and rich reads ``[...]`` as markup (a lone ``[/]`` raises) and ``:name:`` as emoji."""

from __future__ import annotations

import re
from typing import Any

from rich.console import Console

_BIDI = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
"""Bidirectional marks and overrides, which change how the rest of a line reads."""
_UNSAFE = re.compile(f"[\x00-\x1f\x7f-\x9f{_BIDI}]")
_UNSAFE_IN_LINES = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f{_BIDI}]")  # all but tab (\x09) and line feed (\x0a)


def _escaped(match: re.Match[str]) -> str:
    return repr(match.group())[1:-1]  # \x1b, \n, \u202e: as Python writes the character


def printable(value: Any, lines: bool = False) -> str:
    """``value`` as text with every control character written as an escape (``\\x1b``);
    ``lines`` keeps line breaks and tabs, for messages of several lines."""
    return (_UNSAFE_IN_LINES if lines else _UNSAFE).sub(_escaped, str(value))


def print_plain(console: Console, line: str) -> None:
    """Print a line built from ``printable`` values with no markup or emoji codes read in it."""
    console.print(line, markup=False, emoji=False)
