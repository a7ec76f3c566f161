"""One compile's memo of candidate groups.

A compile decides the partition more than once (``auto``, then the contest's
``cudnn-only`` and ``triton-only`` contenders on copies of the module), and each
decision checks its cuDNN candidates (pricing) and times some of them (measure).
Each distinct group — backend, kind and name-free text, equal for the repeated
blocks of a model — is extracted for its text and lowered alone once here; the
decisions and the checks and the timings all take it from the memo. The lowered
programs are kept for the compile (small: one group each, weights shared with
the model's store until a layout pass rewrites them)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Any

from xdsl.ir import Operation

from dnnc.errors import DnncError
from dnnc.ir.program import Program
from dnnc.partition.candidates import Candidate
from dnnc.partition.cover import Cover
from dnnc.partition.extract import extract, identity_text
from dnnc.partition.measure import lower_alone

Identity = tuple[str, str, str]
"""Backend, kind, the group's name-free text."""


class CandidateMemo:
    def __init__(self) -> None:
        self._texts: dict[tuple[str, str, tuple[Operation, ...]], Identity] = {}
        self._lowered: dict[Identity, Program | str] = {}
        self.covers: dict[tuple[tuple[int, ...], tuple[tuple[int, float], ...]], Cover] = {}
        """Cover searches by graph and weighted candidates: a decision record asks
        again for covers the measuring rounds found."""
        self.wide: set[tuple[int, ...]] = set()
        """Graphs (their nodes' predecessor masks) whose exact cover search was too
        wide: the later searches of the compile run in program order (``cover``)."""

    def identity(self, c: Candidate, params: Any) -> Identity:
        """Equal for equal groups; extracted once per set of ops."""
        if c.identity is None:
            ops_key = (c.backend, c.kind, tuple(c.ops))
            if ops_key not in self._texts:
                self._texts[ops_key] = (c.backend, c.kind, identity_text(extract(c.ops, params)))
            c.identity = self._texts[ops_key]
        return c.identity

    def lowered(self, c: Candidate, params: Any) -> Program:
        """The group lowered alone for its backend (``measure.lower_alone``), once per
        distinct group; a group that does not lower raises the same error each time."""
        key = self.identity(c, params)
        found = self._lowered.get(key)
        if found is None:
            try:
                found = lower_alone(c, params)
            except DnncError as e:
                found = str(e)
            self._lowered[key] = found
        if isinstance(found, str):
            raise DnncError(found)
        return found


_ACTIVE: ContextVar[CandidateMemo | None] = ContextVar("dnnc_candidate_memo", default=None)


@contextlib.contextmanager
def one_compile() -> Iterator[CandidateMemo]:
    """The memo of the compile in progress, or a new one for the span of this block
    (nested partitions of the same compile share the outermost one)."""
    active = _ACTIVE.get()
    if active is not None:
        yield active
        return
    memo = CandidateMemo()
    token = _ACTIVE.set(memo)
    try:
        yield memo
    finally:
        _ACTIVE.reset(token)


def current() -> CandidateMemo:
    """The compile's memo; outside one (a single pricing call), a memo of its own."""
    return _ACTIVE.get() or CandidateMemo()
