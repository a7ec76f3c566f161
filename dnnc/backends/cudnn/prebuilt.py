"""cuDNN plans built ahead of tuning, in this process's memory: ``prebuild`` keeps
them, tuning (``runtime._tune``) takes them, by graph signature and rank."""

from __future__ import annotations

import collections
from dataclasses import dataclass

KEPT = 4096
"""Plans kept (the oldest go first): a compile's pricing and its contest ask for the
same graphs' plans."""


@dataclass(frozen=True)
class Prebuilt:
    """A ranked plan as a worker built it: its engine tag and the plan serialized."""

    name: str
    blob: bytes


_KEPT: collections.OrderedDict[tuple[str, int], Prebuilt] = collections.OrderedDict()


def keep(signature: str, rank: int, plan: Prebuilt) -> None:
    _KEPT[(signature, rank)] = plan
    while len(_KEPT) > KEPT:
        _KEPT.popitem(last=False)


def has(signature: str, rank: int) -> bool:
    return (signature, rank) in _KEPT


def prebuilt_for(signature: str) -> dict[int, Prebuilt]:
    """The plans kept for the graph with this ``graph_signature``, by rank."""
    return {rank: p for (sig, rank), p in _KEPT.items() if sig == signature}


def forget() -> None:
    _KEPT.clear()
